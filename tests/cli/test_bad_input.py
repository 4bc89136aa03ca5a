"""Bad input found by trying every command as a user would: one line on stderr, exit 1 or 2,
no traceback, no new row, the store byte-identical. And output files whose directory does
not exist yet: created before the work, not a traceback after it."""

from pathlib import Path

import pytest

from seqbench.store.opening import open_store
from tests.conftest import add_run, sha256

BASELINE = str(Path(__file__).resolve().parents[2] / "baselines" / "bai-tcn-tiny.json")


@pytest.fixture
def one_run(db):
    s = open_store(db)
    r = add_run(s, k=None, seed=0, seq_len=10)
    s.set_summaries(r.id, {"test_metric": 0.2})
    s.dispose()
    return db


@pytest.mark.parametrize(
    ("args", "code", "msg"),
    [
        (["show", "²"], 1, "no run '²'"),
        (
            ["train", "--model", "rnn", "--task", "teacher", "--set", "teacher_lam=1e20"],
            2,
            "teacher_lam must be in (0, 10]",
        ),
        (
            ["sweep", "--models", "rnn", "--tasks", "adding", "--stale-after", "nan"],
            2,
            "--stale-after must be a number of seconds in (0, 2592000]",
        ),
        (["runs", "--status", "complete"], 2, "Did you mean 'completed'?"),
        (["runs", "--kind", "trian"], 2, "Did you mean 'train'?"),
        (["runs", "--limit", "-1"], 2, "--limit must be ≥ 0"),
        (
            ["stress", "--models", "rnn", "--seq-len", "50", "--hidden", "100000000"],
            2,
            "GiB is available",
        ),
        (["report", "--plot", "."], 2, "is a directory"),
        (["check", "--baseline", BASELINE, "--rtol", "nan"], 2, "must be finite"),
        (["query", "SELECT 1; SELECT 2"], 1, "one statement per call"),
        (["train", "-m", "rnn", "-t", "adding", "--lr", "inf"], 2, "finite number"),
        # sizes past any experiment, refused before work and naming the field (issue 62)
        (["train", "-m", "tcn", "-t", "adding", "--k", "1000000000"], 2,
         "k = 1000000000 is longer than the 100 steps a sequence of adding has"),
        (["train", "-m", "tcn", "-t", "copy", "--k", "121"], 2, "longer than the 120 steps"),
        (["train", "-m", "rnn", "-t", "adding", "--steps", "1000000000000000"], 2,
         "steps must be at most 1000000000"),
        (["train", "-m", "rnn", "-t", "digits", "--epochs", "1000000000000"], 2,
         "--epochs 1000000000000 is 34,000,000,000,000 steps of digits"),
        (["train", "-m", "rnn", "-t", "adding", "--set", "eval_size=1000000000"], 2,
         "lower hidden, layers, batch_size, seq_len or eval_size"),  # 2.2 TB of evaluation sets
        (["train", "-m", "rnn", "-t", "memory-function", "--set", "noise=1e20"], 2,
         "noise (the output noise's sd) must be at most 1e+06"),
        (["sweep", "--models", "rnn", "--tasks", "adding", "--stale-after", "1e20", "--dry-run"],
         2, "--stale-after must be a number of seconds in (0, 2592000]"),
        (["sweep", "--models", "rnn", "--tasks", "adding", "--workers", "0", "--dry-run"],
         2, "--workers must be in 1..4096"),
        (["sweep", "--models", "rnn", "--tasks", "adding", "--runs-per-gpu", "0", "--dry-run"],
         2, "--runs-per-gpu must be in 1..4096"),
        (["baseline", "save", "b", "--rtol", "-1"], 2, "--rtol and --atol must be finite"),
        (["stress", "--models", "rnn", "--seq-len", "20", "--seeds", "-1"], 2,
         "--seeds: a seed must be in [0, 2^32)"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_changes_nothing(cli, one_run, args, code, msg):
    before = sha256(one_run)
    r = cli(*args)
    assert r.exit_code == code, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert "Traceback" not in r.output
    assert sha256(one_run) == before


def test_output_files_get_their_directories(cli, one_run, tmp_path):
    assert cli("baseline", "save", "b").exit_code == 0
    r = cli("baseline", "export", "b", tmp_path / "new" / "b.json")
    assert r.exit_code == 0 and (tmp_path / "new" / "b.json").is_file()
    r = cli("check", "--baseline", "b", "--junit", tmp_path / "ci" / "out" / "j.xml")
    assert r.exit_code == 0 and (tmp_path / "ci" / "out" / "j.xml").is_file()
    r = cli("report", "--plot", tmp_path / "plots" / "k.png")
    assert r.exit_code == 0 and (tmp_path / "plots" / "k.png").is_file()


@pytest.mark.parametrize(
    "args",
    [["baseline", "save", "b"], ["runs", "tag", "1", "--tag", "a=b"], ["runs", "name", "1", "x"],
     ["runs", "archive", "1"], ["runs", "delete", "1", "--yes"]],
)  # fmt: skip
def test_writes_to_a_store_that_is_not_there_make_none(cli, db, args):
    """A baseline or a run's name needs runs: on a path with no store, one line and no file
    (they opened the store as `train` does, creating an empty one first)."""
    r = cli(*args)
    assert r.exit_code == 1 and r.stderr.strip() == f"Error: no seqbench database at {db}"
    assert not db.exists()


def test_an_evaluation_batch_past_the_set_is_the_whole_set(cli, one_run):
    """eval_batch_size = 1e9 means one batch of the evaluation set: the time estimate's probe
    draws min(eval_batch_size, eval_size) sequences, not a billion."""
    r = cli("sweep", "--models", "rnn", "--tasks", "adding", "--dry-run", "--set", "steps=5",
            "--set", "eval_batch_size=1000000000", "--set", "eval_size=64")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "s to train them all here" in r.stderr
