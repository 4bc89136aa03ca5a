"""Bad input found by trying every command as a user would: one line on stderr, exit 1 or 2,
no traceback, no new row, the store byte-identical. And output files whose directory does
not exist yet: created before the work, not a traceback after it. Among them: click's usage
errors (they drew a box under the usage text), stress --rtol nan (it stored a run), train
--stable --lam 1.5 (it trained as "stable" with a bound above 1), TOML values a flag
overrides, baseline files nested too deep, with a 400-digit number or a point given twice,
and stress --run on checkpoints that are not seqbench's (tracebacks before)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

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


@pytest.mark.parametrize("url", ["mysql://u@127.0.0.1/db", "oracle+oracledb://u@127.0.0.1/db"])
@pytest.mark.parametrize("args", [["runs"], ["query", "SELECT 1"], ["train", "-m", "rnn",
                                  "-t", "adding", "--steps", "1"]])  # fmt: skip
def test_a_backend_without_a_dialect_is_one_line(cli, url, args):
    """A store lives in SQLite or PostgreSQL (store/dialect.dialect_of): a URL of another
    database is refused in one line, for a read, user SQL and a write alike, before any
    driver is looked for (before the seam, a write said its driver was not installed)."""
    r = cli("--db", url, *args)
    assert r.exit_code == 1, r.output
    assert r.stderr.strip() == (
        f"Error: unsupported database URL {url!r}: a seqbench store is a SQLite file or a "
        "PostgreSQL database"
    )


def test_an_evaluation_batch_past_the_set_is_the_whole_set(cli, one_run):
    """eval_batch_size = 1e9 means one batch of the evaluation set: the time estimate's probe
    draws min(eval_batch_size, eval_size) sequences, not a billion."""
    r = cli("sweep", "--models", "rnn", "--tasks", "adding", "--dry-run", "--set", "steps=5",
            "--set", "eval_batch_size=1000000000", "--set", "eval_size=64")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "s to train them all here" in r.stderr


SMALL = ["--set", "steps=2", "--set", "seq_len=10", "--set", "eval_size=16", "-q"]


def one_line(r, code: int, msg: str) -> None:
    assert r.exit_code == code, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert "Traceback" not in r.output and "╭" not in r.output


@pytest.fixture
def trained(cli, tmp_path) -> Path:
    r = cli("train", "-m", "rnn", "-t", "adding", "--save-checkpoint", "--hidden", "8", *SMALL)
    assert r.exit_code == 0, r.output
    return tmp_path / "seqbench.db"


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["train", "-m", "rnn", "-t", "adding", "--epochs", "nan"], "Invalid value for '--epochs'"),
        (["runs", "--format", "xml"], "'xml' is not one of"),
        (["show", "-1"], "No such option: -1"),
        (["--bogus", "runs"], "No such option: --bogus"),
        (["runs", "nosuch"], "No such command 'nosuch'"),
        (["query"], "Missing argument"),
    ],
)
def test_a_usage_error_is_one_line(cli, trained, args, msg):
    before = sha256(trained)
    r = cli(*args)
    one_line(r, 2, msg)
    assert "--help" in r.stderr  # it says where the help is
    assert sha256(trained) == before


def test_no_arguments_still_prints_the_help(cli):
    r = cli()
    assert "Usage" in r.output and "Commands" in r.output


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--rtol", "nan"], "--rtol must be a number in (0, 1)"),
        (["--rtol", "0"], "--rtol must be a number in (0, 1)"),
        (["--rtol", "2"], "--rtol must be a number in (0, 1)"),
        (["--eps", "nan"], "--eps must be a number in [0, 1)"),
        (["--eps", "-1"], "--eps must be a number in [0, 1)"),
    ],
)
def test_stress_tolerances_are_checked(cli, trained, args, msg):
    before = sha256(trained)
    r = cli("stress", "--models", "rnn", "--seq-len", "20", "--hidden", "4", *args)
    one_line(r, 2, msg)
    assert sha256(trained) == before


@pytest.mark.parametrize(
    ("lam", "msg"),
    [("1.5", "--stable needs lam in (0, 1)"), ("1", "--stable needs lam in (0, 1)"),
     ("0", "lam must be positive"), ("-0.5", "lam must be positive")],
)  # fmt: skip
def test_stable_needs_a_bound_below_one(cli, trained, lam, msg):
    before = sha256(trained)
    r = cli("train", "-m", "rnn", "-t", "adding", "--stable", "--lam", lam, *SMALL)
    one_line(r, 2, msg)
    assert sha256(trained) == before


def test_a_lam_without_stable_is_not_a_bound(cli, trained):
    """lam is read only by --stable: without it a lam of 1.5 trains (and is recorded)."""
    r = cli("train", "-m", "rnn", "-t", "adding", "--lam", "1.5", *SMALL)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(
    ("toml", "flag", "msg"),
    [
        ("steps = -5\n", ["--steps", "3"], "steps must be positive"),
        ("lr = nan\n", ["--lr", "0.01"], "lr must be a finite number"),
        ("hidden = 0\n", ["--set", "hidden=4"], "hidden must be positive"),
    ],
)
def test_a_toml_value_a_flag_overrides_is_checked(cli, trained, tmp_path, toml, flag, msg):
    path = tmp_path / "c.toml"
    path.write_text(toml)
    before = sha256(trained)
    r = cli("train", "-m", "rnn", "-t", "adding", "--config", path, *flag, "-q")
    one_line(r, 2, msg)
    assert "c.toml" in r.stderr
    r = cli("train", "--from-run", "1", "--config", path, *flag, "--dry-run")
    one_line(r, 2, msg)
    assert sha256(trained) == before


def _baseline_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    data = json.loads(Path(BASELINE).read_text())
    big = tmp_path / "big.json"
    data["points"][0]["value"] = 10**400
    big.write_text(json.dumps(data))
    data = json.loads(Path(BASELINE).read_text())
    dup = tmp_path / "dup.json"
    data["points"] = data["points"][:2] * 2
    dup.write_text(json.dumps(data))
    return {
        "deep": (deep, "its JSON nests too deep"),
        "big": (big, "int too large to convert to float"),
        "dup": (dup, "twice: keep one"),
    }


@pytest.mark.parametrize("which", ["deep", "big", "dup"])
def test_a_bad_baseline_file_is_one_line(cli, trained, tmp_path, which):
    path, msg = _baseline_files(tmp_path)[which]
    before = sha256(trained)
    one_line(cli("baseline", "import", path), 2, msg)
    one_line(cli("check", "--baseline", path), 2, msg)
    assert sha256(trained) == before


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("touch /tmp/seqbench-pwned-ckpt",))


def _break(path: Path, how: str) -> None:
    good = torch.load(path, weights_only=True)
    if how == "pickle":  # would run code when unpickled: weights_only refuses it
        path.write_bytes(pickle.dumps({"state_dict": _Evil()}))
    elif how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "directory":
        path.unlink()
        path.mkdir()
    elif how == "nan":
        good["state_dict"] = {k: torch.full_like(v, float("nan")) if v.is_floating_point() else v
                              for k, v in good["state_dict"].items()}  # fmt: skip
        torch.save(good, path)
    elif how == "shapes":
        good["state_dict"] = {k: torch.zeros(3, 3) for k in good["state_dict"]}
        torch.save(good, path)
    elif how == "list":
        torch.save([1, 2, 3], path)
    elif how == "empty":
        path.write_bytes(b"")


@pytest.mark.parametrize(
    ("how", "msg"),
    [
        ("pickle", "cannot be read as seqbench's weights"),
        ("truncated", "cannot be read as seqbench's weights"),
        ("empty", "cannot be read as seqbench's weights"),
        ("directory", "is a directory, not a file"),
        ("nan", "holds non-finite weights"),
        ("shapes", "does not fit the run's model"),
        ("list", "is not seqbench's"),
    ],
)
def test_stress_run_on_a_bad_checkpoint_is_one_line(cli, trained, how, msg):
    import sqlite3

    con = sqlite3.connect(trained)
    (path,) = con.execute("SELECT checkpoint FROM runs WHERE id = 1").fetchone()
    con.close()
    _break(Path(path), how)
    before = sha256(trained)
    r = cli("stress", "--run", "1", "--seq-len", "20")
    one_line(r, 1, msg)
    assert sha256(trained) == before
    assert not Path("/tmp/seqbench-pwned-ckpt").exists()


def test_a_huge_limit_is_no_limit(cli, trained):
    """`runs --limit` and `query --max-rows` past any store's size are accepted, as the
    documented 'a cap past the store's rows is no cap' (docs/reliability.md)."""
    huge = str(10**23)
    r = cli("runs", "--limit", huge, "--format", "csv")
    assert r.exit_code == 0 and len(r.stdout.strip().splitlines()) == 2, r.output
    r = cli("query", "SELECT COUNT(*) AS n FROM runs", "--max-rows", huge, "--format", "csv")
    assert r.exit_code == 0 and r.stdout.split() == ["n", "1"], r.output
