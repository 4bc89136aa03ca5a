"""Issue 37's bad inputs, each one line on stderr and a non-zero exit with the store unchanged:
click's usage errors (they drew a box under the usage text), stress --rtol nan (it stored a
run), train --stable --lam 1.5 (it trained as "stable" with a bound above 1), TOML values a
flag overrides, baseline files nested too deep, with a 400-digit number or a point given
twice, and stress --run on checkpoints that are not seqbench's (tracebacks before)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

from tests.conftest import sha256

BASELINE = Path(__file__).resolve().parents[2] / "baselines" / "bai-tcn-tiny.json"
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
        (["train", "-m", "rnn", "-t", "adding", "--steps", "nan"], "Invalid value for '--steps'"),
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
    data = json.loads(BASELINE.read_text())
    big = tmp_path / "big.json"
    data["points"][0]["value"] = 10**400
    big.write_text(json.dumps(data))
    data = json.loads(BASELINE.read_text())
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
