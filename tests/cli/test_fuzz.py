"""Property-based fuzzing of the command line (hypothesis): adversarial values (0, negatives,
nan, inf, huge, wrong types, unicode, empty) in every option of the commands a user types.

The property, for every example (one test's examples share a store): the command exits 0, or
it prints one error and exits 1 or 2
(typer's own usage box for a value the option's type rejects); never a traceback; and unless
it trained a run (exit 0, completed or diverged), the store is byte-identical.
Budgeted for CI: derandomized, about a minute in all. The examples found are kept as regular
tests in test_bad_input.py and beside each command's tests.
"""

import sqlite3

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from seqbench.store.opening import open_store
from tests.conftest import sha256

ADVERSARIAL = [
    "0",
    "-1",
    "1",
    "2",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "-0",
    "1000000000000",
    "",
    "abc",
    "²",
    "😀",
    "[1, 2]",
    "true",
    "none",
    "1.5",
    " ",
    "0x10",
    "1_000",
    "'",
    ";",
]
# RunConfig fields fuzzed through --set: every one except those whose huge-but-valid values
# would simply run for a long time (steps, epochs, eval_every, lr_decay_every, subset)
FIELDS = [
    "seq_len",
    "k",
    "hidden",
    "params",
    "layers",
    "batch_size",
    "lr",
    "optimizer",
    "clip",
    "lr_decay",
    "weight_decay",
    "seed",
    "device",
    "stable",
    "lam",
    "eval_size",
    "eval_batch_size",
    "dropout",
    "kernel_size",
    "levels",
    "nonlinearity",
    "base",
    "magnitude",
    "deep",
    "heads",
    "backend",
    "forget_bias",
    "marker",
    "path",
    "teacher_lam",
    "nosuch",
]
FAST = ["--steps", "2", "--hidden", "4", "--seq-len", "8", "--set", "eval_size=8", "-q"]

values = st.sampled_from(ADVERSARIAL) | st.text(max_size=8)
fuzz = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def filled(db):
    s = open_store(db)
    r = s.create_run(
        model="rnn",
        task="adding",
        seed=0,
        seq_len=10,
        config={"hidden": 4},
        config_hash="h",
        status="completed",
    )
    s.set_summaries(r.id, {"test_metric": 0.2, "baseline": 1 / 6})
    s.dispose()
    return db


def _runs(db) -> int:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    finally:
        con.close()


def _last_status(db) -> str:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT status FROM runs ORDER BY id DESC LIMIT 1").fetchone()[0]
    finally:
        con.close()


def _check(result, db, before: str, trains: bool, runs_before: int = 0) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{result.output}"
    )
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1, 2), result.output
    new = _runs(db) - runs_before if trains else 0
    if trains and result.exit_code == 1 and new == 1:  # `train` exits 1 for a diverged run
        assert _last_status(db) == "diverged" and "diverged" in result.stderr
        return
    if result.exit_code != 0:
        ours = [x for x in result.stderr.splitlines() if x.startswith("Error: ")]
        usage = "Usage:" in result.output or "─ Error ─" in result.output
        assert usage or (len(ours) == 1 and len(result.stderr.strip().splitlines()) == 1), (
            result.stderr
        )
        assert sha256(db) == before, "a refused command changed the store"
    elif trains:
        assert new == 1 and _last_status(db) == "completed"  # exactly the one new run
    else:
        assert sha256(db) == before


@fuzz
@given(field=st.sampled_from(FIELDS), value=values)
@example(field="heads", value="0")
@example(field="lr", value="inf")
@example(field="eval_batch_size", value="0")
@example(field="hidden", value="1000000000000")
@example(field="lr", value="1_000")  # diverged after training: the CLI read a missing key
@example(field="weight_decay", value="1e308")  # float32 overflow in the optimiser
@example(field="layers", value="1000000000000")  # building it hung
@example(field="layers", value="none")  # None compared with an int
def test_train_with_any_set_value(cli, filled, field, value):
    before, n = sha256(filled), _runs(filled)
    r = cli("train", "-m", "rnn", "-t", "adding", *FAST, "--set", f"{field}={value}")
    _check(r, filled, before, trains=True, runs_before=n)


COMMANDS = [
    ("show", "{v}"),
    ("runs", "--limit", "{v}"),
    ("runs", "--status", "{v}"),
    ("runs", "--model", "{v}"),
    ("report", "--by", "{v}"),
    ("report", "--metric", "{v}"),
    ("report", "--compare", "rnn", "{v}"),
    ("report", "--where", "{v}"),
    ("query", "{v}"),
    ("query", "SELECT * FROM runs WHERE id = :x", "-p", "x={v}"),
    ("sweep", "status", "{v}"),
    ("sweep", "--models", "rnn", "--tasks", "adding", "--k", "{v}", "--dry-run"),
    ("sweep", "--models", "rnn", "--tasks", "adding", "--seeds", "{v}", "--dry-run"),
    ("sweep", "--models", "rnn", "--tasks", "adding", "--set", "lr={v}", "--dry-run"),
    ("sweep", "--models", "{v}", "--tasks", "adding", "--dry-run"),
    ("sweep", "--models", "rnn", "--tasks", "adding", "--stale-after", "{v}", "--dry-run"),
    ("check", "--baseline", "{v}"),
    ("baseline", "save", "x", "--rtol", "{v}"),
    ("stress", "--models", "rnn", "--seq-len", "{v}", "--hidden", "4"),
    ("stress", "--models", "rnn", "--seq-len", "16", "--hidden", "{v}"),
    ("stress", "--models", "{v}", "--seq-len", "16"),
    ("bench", "kernels", "--seq-len", "{v}", "--batch", "1", "--hidden", "2", "--repeat", "1"),
]


@fuzz
@given(cmd=st.sampled_from(COMMANDS), value=values)
@example(cmd=("show", "{v}"), value="²")
@example(cmd=COMMANDS[15], value="nan")
@example(cmd=("report", "--where", "{v}"), value="\x1e")  # a line break inside the message
@example(cmd=COMMANDS[-1], value="1000000000000")  # bench allocated 8 TB
def test_read_and_plan_commands_with_any_value(cli, filled, cmd, value):
    before = sha256(filled)
    args = [a.replace("{v}", value) for a in cmd]
    r = cli(*args)
    writes = cmd[0] in ("stress", "bench") or cmd[:2] == ("baseline", "save")
    if writes and r.exit_code == 0:
        return  # a stress, bench or baseline that ran is a new row: that is its job
    _check(r, filled, before, trains=False)
