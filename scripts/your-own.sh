#!/usr/bin/env bash
# Regenerate docs/your-own.md's outputs: run its commands, in its order, in a fresh directory
# (a new ./seqbench.db), write each console block under docs/your-own/ with the plot beside
# them, then embed them into the page (scripts/embed_tables.py). About 4 minutes on 2 cores.
#
#   bash scripts/your-own.sh
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/docs/your-own"
# shellcheck source=scripts/docs-run.sh
source "$(dirname "$0")/docs-run.sh"
py="$repo/.venv/bin/python"

# 1. a CSV as a package ships it: the yearly sunspot numbers
{
  echo '```console'
  echo '$ cp "$(python -c '"'"'import statsmodels.datasets.sunspots as d, os; print(os.path.dirname(d.__file__))'"'"')/sunspots.csv" .'
  cp "$("$py" -c 'import statsmodels.datasets.sunspots as d, os; print(os.path.dirname(d.__file__))')/sunspots.csv" .
  echo '$ head -3 sunspots.csv'
  head -3 sunspots.csv
  echo '```'
} >"$out/0-sunspots.md"
cols=(--set y_cols=SUNACTIVITY --set time_col=YEAR --set seq_len=32)
console 0b-tasks.md tasks --path sunspots.csv "${cols[@]}"
console 0c-memory.md memory --task file --path sunspots.csv "${cols[@]}" --families tcn \
  --references gru --workers 2 --quiet --plot sunspots.png
mv sunspots.png "$out/sunspots.png"

# 1b. a CSV whose time column is ISO dates, as most CSVs carry them: the CO2 record by month
monthly="import statsmodels.api as sm; d = sm.datasets.co2.load_pandas().data.resample('MS').mean().interpolate(); d.index.name = 'month'; d.to_csv('co2-monthly.csv')"
{
  echo '```console'
  echo "\$ python -c \"$monthly\""
  "$py" -c "$monthly"
  echo '$ head -3 co2-monthly.csv'
  head -3 co2-monthly.csv
  echo '```'
} >"$out/0d-dates.md"
dated=(--set y_cols=co2 --set time_col=month --set seq_len=24)
console 0e-dates-tasks.md tasks --task file --path co2-monthly.csv "${dated[@]}"
console 0f-dates-train.md train --model tcn --task file --path co2-monthly.csv "${dated[@]}" \
  --steps 300

# 2-6. arrays: the CO2 record cut into windows by a script
{
  echo '```console'
  echo '$ python examples/co2_arrays.py co2'
  "$py" "$repo/examples/co2_arrays.py" co2
  echo '```'
} >"$out/1-arrays.md"
console 2-tasks.md tasks --path co2
console 2b-memory.md memory --task file --path co2 --families tcn --references gru --workers 2 \
  --quiet --plot memory.png
mv memory.png "$out/memory.png"
console 3-train.md train --model gru --task file --path co2
console 4-sweep.md sweep --models tcn --tasks file --set path=co2 --k 1:32:x2 --seeds 0,1 \
  --name co2-k --workers 2 --quiet
console 5-full.md sweep --models gru --tasks file --set path=co2 --seeds 0,1 --name co2-full \
  --workers 2 --quiet
"$sb" report --compare gru tcn --sweep co2-k,co2-full --by k --ci --plot "$out/k.png" -f markdown \
  >"$out/6-report.md" 2>"$out/6-report-notes.txt"

cd "$repo"
"$py" scripts/embed_tables.py docs/your-own.md
