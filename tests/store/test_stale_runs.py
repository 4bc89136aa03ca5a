"""A run is never left `running` forever: its process keeps a heartbeat, and any later command
marks a run whose process is gone, or whose heartbeat is older than its stale limit, crashed."""

from __future__ import annotations

import csv
import io
import signal
import sqlite3
import time
from datetime import timedelta

from seqbench.store.values import utcnow
from tests.conftest import add_run, popen, seqbench_cmd


def _runs_csv(cli, *args) -> list[dict]:
    r = cli("runs", "-f", "csv", *args)
    assert r.exit_code == 0, r.output
    return list(csv.DictReader(io.StringIO(r.stdout)))


def test_kill_9_of_train_is_crashed_at_the_next_command_and_can_be_deleted(db, cli):
    # evaluating every 20 steps, its first metrics (the sign that it is mid-run) land within a
    # second; at the default, a tenth of its steps, they took 70 s of CI to come
    cmd = "train -m lstm -t adding --seq-len 50 --steps 100000 --set eval_every=20 -q"
    proc = popen(seqbench_cmd(db, cmd))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if db.exists():
            with sqlite3.connect(db) as con:
                try:
                    if con.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]:
                        break
                except sqlite3.OperationalError:  # the schema is still being created
                    continue
    proc.send_signal(signal.SIGKILL)  # what the OOM killer does
    proc.communicate(timeout=30)
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("running",)]
    assert _runs_csv(cli, "--status", "running") == []
    (row,) = _runs_csv(cli)
    assert row["status"] == "crashed"
    r = cli("show", row["id"], "--format", "json")
    assert "stale: its process" in r.stdout
    r = cli("runs", "delete", row["id"], "-y")
    assert r.exit_code == 0, r.output
    assert _runs_csv(cli) == []


def test_a_heartbeat_older_than_its_stale_limit_is_crashed(store, cli):
    """Another host's process (no pid to check): only its heartbeat tells."""
    old = add_run(
        store,
        status="running",
        environment={"host": "elsewhere", "pid": 1, "stale_after": 5},
        heartbeat_at=utcnow() - timedelta(seconds=30),
    )
    fresh = add_run(
        store,
        status="running",
        environment={"host": "elsewhere", "pid": 1, "stale_after": 60},
        heartbeat_at=utcnow(),
    )
    store.dispose()
    status = {int(r["id"]): r["status"] for r in _runs_csv(cli)}
    assert status == {old.id: "crashed", fresh.id: "running"}


def test_the_heartbeat_thread_beats_while_the_run_lives(store, monkeypatch):
    monkeypatch.setenv("SEQBENCH_HEARTBEAT_S", "0.1")
    rec = store.recorder()
    run_id = rec.start(
        kind="train", model="rnn", task="adding", config={}, config_hash="h", status="running"
    )
    run = store.get_run(run_id)
    assert abs(run.environment["stale_after"] - 0.6) < 1e-9 and run.environment["pid"]
    first = store.get_run(run_id).heartbeat_at
    time.sleep(0.5)
    assert store.get_run(run_id).heartbeat_at > (first or utcnow() - timedelta(days=1))
    assert store.stale_runs() == []
    rec.finish("completed")
    beat = store.get_run(run_id).heartbeat_at
    time.sleep(0.3)
    assert store.get_run(run_id).heartbeat_at == beat  # it stopped with the run


def test_a_live_train_is_never_reaped(db, cli):
    """A command beside a running train leaves it running (its pid is alive)."""
    proc = popen(seqbench_cmd(db, "train -m rnn -t adding --seq-len 20 --steps 100000 -q"))
    try:
        deadline = time.monotonic() + 120
        rows = []
        while time.monotonic() < deadline and not rows:
            time.sleep(0.3)
            # the file appears a moment before its schema is committed: until then a reader
            # is told there is no seqbench database there yet
            r = cli("runs", "-f", "csv")
            if r.exit_code == 0:
                rows = list(csv.DictReader(io.StringIO(r.stdout)))
            else:
                assert "no seqbench database" in r.output, r.output
        assert rows and rows[0]["status"] == "running"
        r = cli("runs", "delete", rows[0]["id"], "-y")
        assert r.exit_code == 2 and "is running" in r.output
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert _runs_csv(cli)[0]["status"] == "interrupted"
