#!/usr/bin/env bash
# IndRNN's headline (Li et al.): the adding problem at T = 5000, one marker in each half
# (docs/reproductions.md §1b). Three runs of 9000 steps, side by side, one core each: the
# IndRNN as the authors' script trains it (seqbench's indrnn/adding default), the IndRNN with
# seqbench's earlier variant (batch 50, norm clip 10) at 2x64, and an LSTM beside them. About
# 60 minutes for the longest on an idle core (the first IndRNN; benchmarks/RESULTS.md). Writes docs/reproductions/small/indrnn-t5000.{md,png}.
#
#   bash scripts/reproduce-t5000.sh [--report-only]
#
# The store is $SEQBENCH_DB (default ./seqbench.db); a run already in it (by name) is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
sb=${SEQBENCH:-.venv/bin/seqbench}
out=docs/reproductions/small
mkdir -p "$out"
common=(--task adding --seq-len 5000 --steps 9000 --set marker=halves --tag reproduction=t5000
  --threads 1 --quiet)
train() {
  local name=$1
  shift
  $sb show "$name" >/dev/null 2>&1 || $sb train --name "$name" "${common[@]}" "$@"
}
if [ "${1:-}" != "--report-only" ]; then
  # the authors' adding script (seqbench's indrnn/adding defaults, given here so that the
  # runs stay what they were): 2x128, batch 32, an element-wise clip at 10 and no norm clip,
  # the lr divided by 10 on a schedule (theirs every 20,100 of 60k steps; here once, at 5000)
  train indrnn-t5000 --model indrnn --batch-size 32 --set clip=none --set clip_value=10 \
    --set lr_decay_every=5000 &
  # seqbench's earlier indrnn/adding defaults (batch 50, the gradient's norm clipped at 10)
  # at 2x64, the lr divided by 10 at 6000
  train indrnn-t5000-64 --model indrnn --hidden 64 --batch-size 50 --set clip=10 \
    --set clip_value=none --set lr_decay_every=6000 &
  # the LSTM as the indrnn-adding preset has it (64 units, forget bias 1), on the first
  # IndRNN's batches and schedule
  train lstm-t5000 --model lstm --batch-size 32 --set forget_bias=1 --set lr_decay_every=5000 &
  wait
fi
names="name IN ('indrnn-t5000', 'indrnn-t5000-64', 'lstm-t5000')"
$sb report --compare indrnn lstm --task adding --by seq_len --format markdown \
  --where "$names" >"$out/indrnn-t5000.md"
$sb curves indrnn-t5000 indrnn-t5000-64 lstm-t5000 --metric valid_metric \
  --plot "$out/indrnn-t5000.png" >/dev/null
echo >>"$out/indrnn-t5000.md"
$sb query - -f markdown <scripts/sql/t5000-cost.sql >>"$out/indrnn-t5000.md"
echo "tables and plot in $out/indrnn-t5000.*"
