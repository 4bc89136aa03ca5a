#!/usr/bin/env bash
# The test command: set up from scratch, start PostgreSQL on loopback, lint, then the test-suite
# (the Triton kernel tests run in their own pytest invocation under TRITON_INTERPRET=1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
eval "$(bash scripts/start-postgres.sh)"
export SEQBENCH_TEST_PG_URL SEQBENCH_TEST_PG_ADMIN_URL

.venv/bin/ruff check .
.venv/bin/ruff format --check .

# pytest exits 5 when it collected nothing: for us that means the suite went missing, a failure.
run_pytest() {
  local rc=0
  "$@" || rc=$?
  if [ "$rc" = 5 ]; then echo "error: pytest collected no tests for: $*" >&2; return 1; fi
  return "$rc"
}
# Two pytest-xdist workers (SEQBENCH_TEST_WORKERS to change; 0 runs in this process): most
# tests wait on one process at a time, and one worker left a core of the 2-core CI machine idle.
# `loadfile` keeps a file's tests on one worker, so a fixture built once per module is built
# once; the PostgreSQL and Ray tests take their server one at a time (tests/conftest.py,
# held_alone). --durations: the slowest tests at the end of the log.
run_pytest .venv/bin/python -m pytest -m "not triton" -n "${SEQBENCH_TEST_WORKERS:-2}" \
  --dist loadfile --durations=25 "$@"
if ls tests/ops/test_*triton*.py >/dev/null 2>&1; then
  TRITON_INTERPRET=1 run_pytest .venv/bin/python -m pytest -m triton tests/ops
fi

# The regression gate: the three reproduction presets at --scale tiny (fixed seeds; CPU), each
# checked against its committed baseline, baselines/<preset>-tiny.json. Exit 1 on a regression.
# At tiny size most of their points sit near their trivial baselines, so the canary preset
# gives every family they train a point that learns (a tenth of its trivial error or less): a
# family broken on purpose fails it (tests/report/test_gate_sees_every_family.py).
# The --scale small presets take 5-81 minutes each: docs/reproductions.md.
ci_dir=$(mktemp -d)
for preset in canary bai-tcn indrnn-adding miller-hardt zoology-mqar lru-stable; do
  .venv/bin/seqbench --db "$ci_dir/ci.db" sweep --preset "$preset" --scale tiny --workers 2 --quiet
  .venv/bin/seqbench --db "$ci_dir/ci.db" check --baseline "baselines/$preset-tiny.json" \
    --sweep "$preset-tiny" --junit "$ci_dir/$preset.xml" --fail-on-missing --format csv
done
