"""What a run ran on: seqbench's own commit and dirty flag (found from the package, not the
working directory), the installed packages, the threads; `diff` shows what differs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import seqbench
from seqbench import environment

TINY = "-m tcn -t adding --seq-len 8 --steps 2 --set eval_size=8 -q".split()
SOURCE = Path(seqbench.__file__).resolve().parents[1]


def _git(*args: str) -> str | None:
    out = subprocess.run(["git", "-C", str(SOURCE), *args], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def test_the_commit_is_seqbenchs_own_from_any_directory(cli, tmp_path):
    """The tests run in a tmp directory outside any checkout (conftest): the run still names
    the commit of the seqbench that ran, and whether its tracked files differed from it."""
    assert not (tmp_path / ".git").exists()
    assert cli("train", *TINY).exit_code == 0
    r = cli("show", "1", "--format", "json")
    env = {k.removeprefix("env."): v for k, v in json.loads(r.stdout).items()}
    sha = _git("rev-parse", "HEAD")  # None: seqbench is not running from a checkout
    assert env["git_sha"] == sha
    if sha is None:
        assert env["git_dirty"] is None
    else:
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
        assert env["git_dirty"] == ("true" if dirty else "false")
    n, digest = environment.packages()
    assert env["packages"] == str(n) and env["packages_sha256"] == digest and n > 10


def test_diff_shows_what_the_runs_ran_on_where_it_differs(cli, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("SEQBENCH_THREADS", "1")
    assert cli("train", *TINY).exit_code == 0
    monkeypatch.setenv("SEQBENCH_THREADS", "2")
    assert cli("train", *TINY).exit_code == 0
    r = cli("diff", "1", "2", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert "environment,run 1,run 2" in r.stdout and "threads,1,2" in r.stdout
    assert "packages_sha256" not in r.stdout  # the same packages: not a difference
