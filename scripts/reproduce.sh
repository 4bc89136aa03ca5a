#!/usr/bin/env bash
# Reproduce the seed papers' headline claims (docs/reproductions.md): run the three presets at
# one scale, then write each claim's markdown tables and plots under docs/reproductions/<scale>/
# and its regression baseline to baselines/<preset>-<scale>.json.
#
#   bash scripts/reproduce.sh [tiny|small|paper] [--report-only]
#
# The store is $SEQBENCH_DB (default ./seqbench.db); an interrupted sweep resumes where it
# stopped. --scale small takes about 90 minutes on a 2-core CPU (the three presets in turn).
# PRESETS="bai-tcn miller-hardt" runs (and writes the tables and baselines of) those alone.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-small}
sb=${SEQBENCH:-.venv/bin/seqbench}
out=docs/reproductions/$scale
mkdir -p "$out"
read -r -a presets <<<"${PRESETS:-indrnn-adding bai-tcn miller-hardt}"
wanted() { [[ " ${presets[*]} " == *" $1 "* ]]; }

if [ "${2:-}" != "--report-only" ]; then
  for preset in "${presets[@]}"; do
    $sb sweep --preset "$preset" --scale "$scale" --replan  # a store from an older preset: its new points only
  done
fi

md() { "$@" --format markdown; }
# 1. IndRNN (Li et al.): adding problem against T
if wanted indrnn-adding; then
  md $sb report --compare indrnn lstm irnn rnn --task adding --sweep "indrnn-adding-$scale" \
    --by seq_len --plot "$out/indrnn-adding.png" >"$out/indrnn-adding.md"
fi
# 2. Miller & Hardt: teacher with true λ, window(k) against the full RNN; chorales against k
if wanted miller-hardt; then
  # the unconstrained models only: the projected RNNs are for the test on their own weights
  # below (a SQLite store's JSON; the default store is SQLite)
  free=(--where "run_id IN (SELECT id FROM runs WHERE NOT json_extract(config, '\$.stable'))")
  md $sb report --compare window rnn --task teacher --sweep "miller-hardt-$scale" "${free[@]}" \
    --by teacher_lam,k >"$out/teacher-k.md"
  $sb report --compare window rnn --task teacher --sweep "miller-hardt-$scale" "${free[@]}" \
    --by k,teacher_lam --plot "$out/teacher-k.png" >/dev/null
  md $sb report --compare window rnn --task teacher --sweep "miller-hardt-$scale" "${free[@]}" \
    --by teacher_lam,k --fit-decay >"$out/teacher-decay.md"
  md $sb report --compare lstm rnn window tcn --task chorales --sweep "miller-hardt-$scale" \
    --by k,stable --plot "$out/chorales-k.png" >"$out/chorales-k.md"
  md $sb report --compare lstm rnn --task ptb-char --sweep "miller-hardt-$scale" --by stable \
    --ci >"$out/ptb-char.md"
  # the theorem's direct test: each trained teacher RNN's own truncation error against k
  # (stress --run on its checkpoint), its per-step decay beside the λ it was held to
  teacher_T=$(case $scale in tiny) echo 32 ;; small) echo 64 ;; *) echo 200 ;; esac)
  runs=()
  while read -r id; do runs+=(--run "$id"); done < <($sb query - -p sweep="miller-hardt-$scale" \
    -f csv <scripts/sql/teacher-runs.sql | tail -n +2)
  $sb stress --models '' "${runs[@]}" --seq-len "$teacher_T" --quiet >/dev/null
  $sb query - -p sweep="miller-hardt-$scale" -f markdown <scripts/sql/teacher-own-decay.sql \
    >"$out/teacher-own-decay.md"
fi
# 3. Bai et al.: TCN against LSTM/GRU/RNN on each task
if wanted bai-tcn; then
  md $sb report --compare tcn lstm gru rnn --sweep "bai-tcn-$scale" \
    --plot "$out/bai-tcn.png" >"$out/bai-tcn.md"
fi

for preset in "${presets[@]}"; do
  $sb baseline save "$preset-$scale" --sweep "$preset-$scale" --rtol 0.1
  $sb baseline export "$preset-$scale" "baselines/$preset-$scale.json"
done
echo "tables and plots in $out/, baselines in baselines/*-$scale.json"
if [ -f docs/reproductions.md ]; then
  .venv/bin/python scripts/embed_tables.py docs/reproductions.md
fi
