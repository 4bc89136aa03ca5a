"""What the user sees when the ground moves: the store file deleted under a running sweep, the
disk full under a store. One line and a non-zero exit, never a traceback; the database stays
consistent and the next command works once the cause is gone."""

import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import popen, seqbench_cmd

ROOT = Path(__file__).resolve().parents[2]


def _seqbench(db, *args, timeout=600):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        seqbench_cmd(db, *args), capture_output=True, text=True, timeout=timeout, env=env
    )


def test_a_store_deleted_under_a_running_sweep_is_one_line_and_exit_1(tmp_path):
    db = tmp_path / "gone.db"
    proc = popen(
        seqbench_cmd(
            db,
            "sweep --models rnn --tasks adding --seeds 0,1,2,3,4,5 --set steps=400 --set hidden=8",
            "--set seq_len=20 --set eval_size=32 --workers 1 --quiet --name gone",
        )
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.3)
        if db.exists():
            with sqlite3.connect(db) as con:
                try:
                    if con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                        break
                except sqlite3.OperationalError:
                    pass
    for f in tmp_path.glob("gone.db*"):
        f.unlink()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "was deleted or replaced" in lines[0], err
    assert "Traceback" not in err and "completed" not in out


@pytest.fixture
def tiny_disk(tmp_path):
    """A 16 MiB tmpfs (root only: mount)."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], capture_output=True
    )
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(path: Path) -> None:
    """Fill the file system of `path` to the last byte (unbuffered: nothing left to flush)."""
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 16, 1 << 10, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                pass


def test_disk_full_is_one_line_the_store_stays_consistent_and_recovers(tiny_disk):
    db = tiny_disk / "full.db"
    train = (
        "train -m rnn -t adding --seq-len 10 --steps 20 --hidden 4 --set eval_size=8 --set "
        "eval_every=1 -q"
    ).split()
    assert _seqbench(db, *train).returncode == 0
    _fill(tiny_disk / "filler")
    r = _seqbench(db, *train)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "full" in lines[0] or "No space" in lines[0], lines[0]
    (tiny_disk / "filler").unlink()  # space freed: (SQLite needs some even to read a WAL)
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    con.close()
    # no run is left `running`: the failed train marked itself failed, or (when even that
    # write found no room) the next command marks it crashed, its process being gone
    listed = _seqbench(db, "runs", "-f", "csv")
    assert listed.returncode == 0, listed.stderr
    con = sqlite3.connect(db)
    statuses = [s for (s,) in con.execute("SELECT status FROM runs ORDER BY id")]
    con.close()
    assert statuses[0] == "completed" and "running" not in statuses, statuses
    again = _seqbench(db, *train)
    assert again.returncode == 0, again.stderr
    assert _seqbench(db, "runs", "-f", "csv").returncode == 0


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_stress_stopped_midway_keeps_only_whole_runs(tmp_path, sig):
    """Each stress result is one transaction: stopped at any moment, the store holds whole
    runs (completed, with summaries and both curves) and nothing else; exit 143 or 130."""
    import signal

    db = tmp_path / "stress.db"
    open_db = _seqbench(db, "runs")  # creates nothing: the store does not exist yet
    assert open_db.returncode == 1
    from seqbench.store.opening import open_store

    open_store(db).dispose()
    proc = popen(
        seqbench_cmd(db, "stress --models rnn,lstm,gru,indrnn,tcn --seq-len 3000 --seeds 0,1,2")
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # stop it after the first result, mid-way through
        time.sleep(0.2)
        with sqlite3.connect(db) as con:
            if con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                break
    time.sleep(0.3)
    proc.send_signal(getattr(signal, sig))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == (143 if sig == "SIGTERM" else 130), err
    assert "nothing half-written" in err and "Traceback" not in err
    con = sqlite3.connect(db)
    runs = con.execute("SELECT id, status FROM runs").fetchall()
    assert runs and {s for _, s in runs} == {"completed"}
    for run_id, _ in runs:
        kinds = {
            k
            for (k,) in con.execute("SELECT DISTINCT kind FROM curves WHERE run_id = ?", (run_id,))
        }
        assert kinds == {"grad_norm", "truncation_error"}
        assert con.execute(
            "SELECT COUNT(*) FROM summaries WHERE run_id = ? AND key = 'gain'", (run_id,)
        ).fetchone() == (1,)
    assert len(runs) < 15  # it was stopped before the end
    con.close()
