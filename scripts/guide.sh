#!/usr/bin/env bash
# Regenerate docs/guide.md's outputs: run the guide's commands, in its order, in a fresh
# directory (so the store is a new ./seqbench.db), write each console block and table under
# docs/guide/ and its plots beside them, then embed them into docs/guide.md
# (scripts/embed_tables.py). About 15 minutes on a 2-core CPU.
#
#   bash scripts/guide.sh
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/docs/guide"
# shellcheck source=scripts/docs-run.sh
source "$(dirname "$0")/docs-run.sh"

console 1-train.md train --model lstm --task adding --seq-len 200 -q --name lstm-seed0
{
  console tmp-a.md sweep --models lstm --tasks adding --seeds 0,1 --set seq_len=200 \
    --name guide-full --workers 2
  console tmp-b.md sweep --models tcn --tasks adding --k 16,64,200 --seeds 0,1 \
    --set seq_len=200 --name guide-k --workers 2
  sed '$d' "$out/tmp-a.md"
  sed '1d' "$out/tmp-b.md"
} >"$out/2-sweeps.md"
rm "$out"/tmp-*.md
"$sb" report --compare tcn lstm --task adding --by k --ci --plot "$out/k.png" -f markdown \
  >"$out/3-report.md" 2>"$out/3-report-notes.txt"
{
  echo '```console'
  echo '$ seqbench curves --sweep guide-k --metric valid_metric --plot curves.png -f csv'
  "$sb" curves --sweep guide-k --metric valid_metric --plot "$out/curves.png" -f csv \
    >curves.csv 2>/dev/null
  head -4 curves.csv  # (not a pipe: head would end curves with SIGPIPE)
  echo '…'
  echo '```'
} >"$out/4-curves.md"
"$sb" diff lstm-seed0 2 --plot "$out/diff.png" -f markdown >"$out/4-diff.md" 2>/dev/null
{
  echo '```console'
  echo '$ seqbench baseline save adding-t200 --rtol 0.1 --atol 0.01'
  "$sb" baseline save adding-t200 --rtol 0.1 --atol 0.01 2>&1
  echo '$ seqbench baseline export adding-t200 adding-t200.json'
  "$sb" baseline export adding-t200 adding-t200.json 2>&1
  echo '$ seqbench check --baseline adding-t200.json -f markdown'
  echo '```'
} >"$out/5-baseline.md"
"$sb" check --baseline adding-t200.json -f markdown >"$out/5-check.md" 2>/dev/null

cd "$repo"
.venv/bin/python scripts/embed_tables.py docs/guide.md
