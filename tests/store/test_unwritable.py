"""A store made immutable under a running command (`chattr +i` on the file, its -wal and -shm
and the folder): one line and exit 1, not "Bus error" and exit 135 (SQLite writes to the -shm
file it maps into memory, and an immutable file's page is a SIGBUS); the file intact after.
Needs root and a filesystem with immutable files (ext4 here); skipped where chattr cannot."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "seqbench"


def _chattr(flag: str, *paths: Path) -> bool:
    exe = shutil.which("chattr")
    if exe is None:
        return False
    out = subprocess.run([exe, flag, *map(str, paths)], capture_output=True)
    return out.returncode == 0


@pytest.fixture
def folder(tmp_path):
    probe = tmp_path / "probe"
    probe.touch()
    if os.geteuid() != 0 or not _chattr("+i", probe):
        pytest.skip("needs root and a filesystem where chattr +i works")
    _chattr("-i", probe)
    where = tmp_path / "s"
    where.mkdir()
    yield where
    _chattr("-i", where, *where.iterdir())  # always: else nothing can remove it


@pytest.mark.parametrize(
    "args",
    [
        # evaluating every 50 steps: its next write comes soon after the store is made
        # immutable (at a tenth of its steps it came 25 s later)
        ["train", "--model", "rnn", "--task", "adding", "--steps", "100000", "--set",
         "seq_len=20", "--set", "eval_every=50", "-q"],
        ["sweep", "--models", "rnn,tcn", "--tasks", "adding", "--seeds", "0,1,2", "--set",
         "steps=100000", "--set", "seq_len=20", "--workers", "1", "-q"],
    ],
    ids=["train", "sweep"],
)  # fmt: skip
def test_a_store_made_immutable_mid_run_is_one_line(folder, args):
    db = folder / "s.db"
    proc = subprocess.Popen(
        [str(BIN), "--db", str(db), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    try:
        shm = Path(f"{db}-shm")
        deadline = time.monotonic() + 120
        while not shm.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert shm.exists(), "the command never opened its store"
        time.sleep(3)  # a few writes in
        assert _chattr("+i", db, Path(f"{db}-wal"), shm, folder)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
        _chattr("-i", folder, *folder.iterdir())
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert proc.returncode == 1, err
    assert errors == [
        f"Error: the store {db} can no longer be written (s.db is not writable: made read-only "
        "or immutable while this command ran); nothing half-written was kept"
    ], err
    assert "Traceback" not in err and "Warning" not in err
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
