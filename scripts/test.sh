#!/usr/bin/env bash
# The test command: set up from scratch, start PostgreSQL on loopback, lint, then the test-suite
# (the Triton kernel tests run in their own pytest invocation under TRITON_INTERPRET=1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
eval "$(bash scripts/start-postgres.sh)"
export SEQBENCH_TEST_PG_URL

.venv/bin/ruff check .
.venv/bin/ruff format --check .

# pytest exits 5 when it collected nothing: for us that means the suite went missing, a failure.
run_pytest() {
  local rc=0
  "$@" || rc=$?
  if [ "$rc" = 5 ]; then echo "error: pytest collected no tests for: $*" >&2; return 1; fi
  return "$rc"
}
run_pytest .venv/bin/python -m pytest -m "not triton" "$@"
if ls tests/ops/test_*triton*.py >/dev/null 2>&1; then
  TRITON_INTERPRET=1 run_pytest .venv/bin/python -m pytest -m triton tests/ops
fi

# The regression gate: a tiny preset sweep (fixed seeds; deterministic on CPU) checked against
# the baseline committed in baselines/ci.json. Exit 1 on a regression.
ci_dir=$(mktemp -d)
.venv/bin/seqbench --db "$ci_dir/ci.db" sweep --preset bai-tcn --scale tiny --workers 2 --quiet
.venv/bin/seqbench --db "$ci_dir/ci.db" check --baseline baselines/ci.json \
  --junit "$ci_dir/check.xml" --fail-on-missing --format csv
