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
            "--stale-after must be a positive number",
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
    ],
)
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
