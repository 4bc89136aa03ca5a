import contextlib
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from seqbench.store.opening import open_store
from seqbench.sweep.runner import sweep_status
from tests.conftest import popen, seqbench_cmd

GRID = (
    "--models rnn,tcn --tasks adding --k 2,4 --seeds 0 --set steps=15 --set hidden=8 --set "
    "seq_len=20 --set eval_size=32 --quiet"
).split()


def _completed_per_hash(store):
    with store.engine.connect() as c:
        rows = c.exec_driver_sql(
            "SELECT config_hash, COUNT(*) FROM runs WHERE status = 'completed' GROUP BY 1"
        ).fetchall()
    return dict(rows)


def test_sweep_runs_resumes_and_reports(cli, tmp_path):
    first = cli("sweep", *GRID, "--name", "s1", "--workers", "2")
    assert first.exit_code == 0, first.output
    assert "4 points, 0 already done or skipped, ran 4: 4 completed" in first.stdout
    again = cli("sweep", *GRID, "--name", "s1", "--workers", "2")
    assert "4 already done or skipped, ran 0" in again.stdout
    store = open_store(tmp_path / "seqbench.db")
    assert set(_completed_per_hash(store).values()) == {1}
    (st,) = sweep_status(store, "s1")
    assert (st["total"], st["completed"], st["remaining"], st["status"]) == (4, 4, 0, "completed")
    runs = store.list_runs(sweep="s1")
    assert len(runs) == 4 and all(r.config["steps"] == 15 for r in runs)
    assert all(store.metrics(r.id, "valid_metric") for r in runs)
    rep = cli("report", "--compare", "rnn", "tcn", "--sweep", "s1", "--by", "k", "--format", "csv")
    assert rep.exit_code == 0 and rep.stdout.count("\n") == 3
    forced = cli("sweep", *GRID, "--name", "s1", "--workers", "1", "--force")
    assert "ran 4: 4 completed" in forced.stdout
    assert set(_completed_per_hash(store).values()) == {2}


def test_failed_and_diverged_points_are_recorded_and_the_sweep_goes_on(cli, tmp_path):
    # Every bad config is refused before a row exists, so the failure here is one that only
    # running shows: the checkpoint directory is taken by a file when the trained model is
    # saved. lr 1e12 diverges first and saves nothing.
    blocker = tmp_path / "checkpoints"
    blocker.write_text("not a directory")
    grid = (
        "--models rnn --tasks adding --seeds 0,1 --set steps=10 --set hidden=8 --set "
        "seq_len=16 --set lr=1e-3,1e12 --set optimizer=sgd --set nonlinearity=relu --set "
        "eval_size=16 --set save_checkpoint=true --quiet --name mixed --workers 2"
    ).split()
    out = cli("sweep", *grid)
    assert out.exit_code == 1, out.output  # points without a result: sweep && check fails
    assert "2 of 4 point(s) of sweep 'mixed' have no result" in out.stderr
    store = open_store(tmp_path / "seqbench.db")
    (st,) = sweep_status(store, "mixed")
    assert st["failed"] == 2 and st["completed"] + st["diverged"] == 2 and st["diverged"] >= 1
    failed = [r for r in store.list_runs(sweep="mixed") if r.status == "failed"]
    assert all("checkpoints" in r.error for r in failed)
    again = cli("sweep", *grid, "--allow-failed")
    assert "ran 0" in again.stdout and again.exit_code == 0  # failed points wait for a retry
    blocker.unlink()
    retry = cli("sweep", *grid, "--retry-failed")
    assert "ran 2" in retry.stdout
    (st,) = sweep_status(store, "mixed")
    assert st["failed"] == 0 and st["remaining"] == 0


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--models", "", "--tasks", "adding"], "empty grid"),
        (["--seeds", "1"], "give --models and --tasks"),
        (["--models", "rnn", "--tasks", "adding", "--k", "1:0:x2"], "stop is below start"),
        (["--models", "rnn", "--tasks", "adding", "--set", "lrr=1,2"], "unknown sweep axis"),
        (["--spec", "missing.toml"], "spec file 'missing.toml' not found"),
        (["--preset", "bai-tcn", "--models", "rnn"], "not several"),
        (
            "--models rnn --tasks adding --executor ray --address 127.0.0.1:1".split(),
            "cannot reach the Ray cluster",
        ),
        (["--models", "rnn", "--tasks", "adding", "--workers", "0"], "--workers must be"),
        (
            ["--models", "rnn", "--tasks", "adding", "--set", "lr=1e-3,inf"],
            "lr must be a finite number",
        ),
        (
            ["--models", "lstm", "--tasks", "adding", "--set", "hidden=8,1000000"],
            "GiB is available",
        ),
        (["--models", "rnn", "--tasks", "text", "--set", "path=/nonexistent.txt"], "no such file"),
    ],
)
def test_bad_input_leaves_the_store_untouched(cli, tmp_path, args, msg):
    db = tmp_path / "seqbench.db"
    result = cli("sweep", *args)
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], result.output
    assert not db.exists()


def test_unparsable_spec_file(cli, tmp_path):
    (tmp_path / "bad.toml").write_text("models = [")
    r = cli("sweep", "--spec", tmp_path / "bad.toml")
    assert r.exit_code == 2 and "does not parse" in r.stderr


def test_spec_file(cli, tmp_path):
    (tmp_path / "s.toml").write_text(
        'name = "from-file"\nmodels = ["rnn"]\ntasks = ["adding"]\nk = "1:2:x2"\n'
        "seeds = [0]\n[set]\nsteps = [5]\nhidden = [4]\nseq_len = [10]\neval_size = [8]\n"
    )
    r = cli("sweep", "--spec", tmp_path / "s.toml", "--quiet", "--workers", "1")
    assert r.exit_code == 0, r.output and "'from-file': 2 points" in r.stdout


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ('models = ["rnn"]\ntasks = ["adding"]\nseed = [0, 1]\n', "Did you mean 'seeds'?"),
        ('models = ["rnn"]\ntasks = ["adding"]\nks = [1, 2]\n', "unknown key 'ks'"),
        ('models = ["rnn"]\ntasks = ["adding"]\n[sets]\nsteps = [5]\n', "Did you mean 'set'?"),
        ('[[grid]]\nmodels = ["rnn"]\ntasks = ["adding"]\nseed = [1]\n', "unknown grid key"),
        ('models = ["rnn"]\n[[grid]]\ntasks = ["adding"]\n', "not both"),
        ("grid = 3\n", "array of tables"),
        ('models = ["rnn"]\ntasks = ["adding"]\nset = 5\n', "set must be a table"),
    ],
)
def test_unknown_keys_in_a_spec_file_are_refused(cli, tmp_path, text, msg):
    """Typos used to be dropped silently: one point at the default steps instead of six."""
    (tmp_path / "s.toml").write_text(text)
    r = cli("sweep", "--spec", tmp_path / "s.toml", "--dry-run")
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert not (tmp_path / "seqbench.db").exists()


def test_reused_name_with_another_spec_is_refused(cli, tmp_path):
    assert cli("sweep", *GRID, "--name", "same", "--workers", "2").exit_code == 0
    db = tmp_path / "seqbench.db"
    before = sqlite3.connect(db).execute("SELECT COUNT(*), MAX(id) FROM runs").fetchone()
    other = [*GRID[:-1], "--seeds", "1", "--quiet"]
    r = cli("sweep", *other, "--name", "same")
    assert r.exit_code == 2 and "exists with a different spec" in r.stderr
    assert sqlite3.connect(db).execute("SELECT COUNT(*), MAX(id) FROM runs").fetchone() == before
    assert cli("sweep", *other, "--name", "same", "--force").exit_code == 0


def test_replan_takes_an_extended_spec_and_runs_only_its_new_points(cli, tmp_path):
    """A preset that a newer seqbench extended: --replan keeps the done points' runs."""
    assert cli("sweep", *GRID, "--name", "grown", "--workers", "2").exit_code == 0
    db = tmp_path / "seqbench.db"
    done = sqlite3.connect(db).execute("SELECT id, config_hash FROM runs ORDER BY id").fetchall()
    grown = [*GRID[:-1], "--seeds", "0,1", "--quiet"]  # the same points, and seed 1's
    r = cli("sweep", *grown, "--name", "grown", "--replan", "--workers", "2")
    assert r.exit_code == 0, r.output
    after = sqlite3.connect(db).execute("SELECT id, config_hash FROM runs ORDER BY id").fetchall()
    assert after[: len(done)] == done and len(after) == len(done) + 4
    (st,) = [s for s in sweep_status(open_store(db), "grown")]
    assert st["total"] == 8 and st["completed"] == 8


def test_dry_run_prints_the_grid_and_writes_nothing(cli, tmp_path):
    r = cli("sweep", *GRID, "--dry-run", "--format", "csv")
    assert r.exit_code == 0
    lines = r.stdout.strip().splitlines()
    assert lines[0].startswith("#,model,task,k") and len(lines) == 5
    assert "4 points" in r.stderr and not (tmp_path / "seqbench.db").exists()
    # the cost before it is spent: a timing probe of each model here, which writes nothing
    assert re.search(r"about \d+ s to train them all here \(a timing probe", r.stderr)


def test_the_probe_gives_up_rather_than_make_a_dry_run_slow():
    """Past its budget of probing time, the estimate is None (said as "no time estimate")
    instead of a dry run that trains for minutes."""
    from seqbench.configure import make_config
    from seqbench.sweep.cost import probe_cost

    points = [make_config("lstm", "adding", {"seq_len": 10, "steps": 50, "seed": s})
              for s in range(2)]  # fmt: skip
    assert probe_cost(points, 1, budget=0.0) is None
    assert probe_cost(points, 1) > 0
    assert probe_cost([], 1) == 0.0


def test_a_shipped_preset_is_named_after_itself(cli):
    r = cli("sweep", "--preset", "bai-tcn", "--scale", "tiny", "--dry-run")
    assert r.exit_code == 0 and "sweep 'bai-tcn-tiny': 17 points" in r.stderr
    custom = cli("sweep", "--preset", "bai-tcn", "--scale", "tiny", "--seeds", "0,1", "--dry-run")
    assert "sweep 'sweep-" in custom.stderr  # other seeds: another spec, another name


def test_sweep_status_unknown_name(cli, store):
    r = cli("sweep", "status", "nope")
    assert r.exit_code == 1 and "no sweep named 'nope'" in r.stderr


CRASH_GRID = (
    "sweep --models rnn,gru,tcn --tasks adding --k 2,4 --set steps=40 --set hidden=8 --set "
    "seq_len=30 --set eval_size=64 --name crash --workers 2 --quiet"
).split()


@pytest.mark.slow
def test_sigkill_at_random_points_then_resume(tmp_path):
    db = tmp_path / "crash.db"
    cmd = seqbench_cmd(db, *CRASH_GRID)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    rng = random.Random(1234)
    kills = 0
    for _ in range(4):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(1.5, 6.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
    assert kills >= 1
    final = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    points = con.execute(
        "SELECT config_hash FROM sweep_points sp JOIN sweeps s ON s.id = sp.sweep_id "
        "WHERE s.name = 'crash'"
    ).fetchall()
    assert len(points) == 6
    per = dict(
        con.execute(
            "SELECT config_hash, COUNT(*) FROM runs WHERE status = 'completed' GROUP BY 1"
        ).fetchall()
    )
    assert {h for (h,) in points} == set(per) and set(per.values()) == {1}
    assert con.execute("SELECT COUNT(*) FROM runs WHERE status = 'running'").fetchone() == (0,)
    stale = con.execute("SELECT COUNT(*) FROM runs WHERE error LIKE 'stale:%'").fetchone()[0]
    completed_without_summary = con.execute(
        "SELECT COUNT(*) FROM runs r WHERE status = 'completed' AND NOT EXISTS "
        "(SELECT 1 FROM summaries s WHERE s.run_id = r.id AND s.key = 'test_metric')"
    ).fetchone()
    assert completed_without_summary == (0,)
    con.close()
    assert stale >= 0


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (Linux /proc)."""
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo += list(kids - out)
            out |= kids
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_promptly_and_the_point_runs_again(tmp_path, sig, code):
    # one long point (about a minute): Ctrl-C (or SIGTERM) must not wait for it to finish,
    # and no worker or fork server may outlive the driver
    db = tmp_path / "int.db"
    cmd = seqbench_cmd(
        db,
        "sweep --models lstm --tasks adding --set steps=100000 --set hidden=8 --set",
        "seq_len=20 --workers 1 --quiet --name int",
    )
    proc = popen(cmd)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if db.exists():
            with sqlite3.connect(db) as con:
                try:
                    if con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:
                        break
                except sqlite3.OperationalError:  # tables not created yet
                    pass
    time.sleep(1)  # the pool may still be starting: the run must be marked all the same
    children = _descendants(proc.pid)
    t0 = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 15
    assert proc.returncode == code and "interrupted" in err
    deadline = time.monotonic() + 10
    while any(_alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert children and not [c for c in children if _alive(c)]
    con = sqlite3.connect(db)
    assert con.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
    con.close()
    store = open_store(db)
    try:
        (row,) = sweep_status(store, "int")
        assert (row["completed"], row["running"], row["remaining"]) == (0, 0, 1)
        assert row["status"] == "interrupted"  # not "running" after Ctrl-C or SIGTERM
    finally:
        store.dispose()


@pytest.mark.postgres
def test_sweep_on_postgres(cli, pg_url):
    r = cli("--db", pg_url, "sweep", *GRID, "--name", "pg", "--workers", "2")
    assert r.exit_code == 0, r.output
    again = cli("--db", pg_url, "sweep", *GRID, "--name", "pg", "--workers", "2")
    assert "4 already done or skipped" in again.stdout
    store = open_store(pg_url)
    (st,) = sweep_status(store, "pg")
    assert st["completed"] == 4
    assert set(_completed_per_hash(store).values()) == {1}
    rep = cli(
        "--db", pg_url, "report", "--compare", "rnn", "tcn", "--sweep", "pg", "--format", "json"
    )
    assert rep.exit_code == 0, rep.output
    store.dispose()


def test_two_drivers_of_one_sweep_share_its_points(tmp_path):
    # e.g. two machines on one PostgreSQL store; here two processes on one SQLite file
    db = tmp_path / "two.db"
    cmd = seqbench_cmd(
        db,
        "sweep --models rnn,gru --tasks adding --k 2,4,8 --seeds 0 --set steps=60 --set",
        "hidden=8 --set seq_len=20 --set eval_size=32 --workers 1 --quiet --name two",
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.run([*cmd, "--dry-run"], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    procs = [
        subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    con = sqlite3.connect(db)
    per_hash = con.execute(
        "SELECT config_hash, COUNT(*) FROM runs WHERE status = 'completed' GROUP BY 1"
    ).fetchall()
    con.close()
    assert len(per_hash) == 6 and {n for _, n in per_hash} == {1}  # each point ran once
    ran = [int(o[0].split(" ran ")[1].split(":")[0]) for o in outs]
    assert sum(ran) == 6


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_two_sweeps_of_one_grid_under_different_names_run_each_config_once(
    tmp_path, backend, request
):
    """The claim is unique per config hash on every backend: on PostgreSQL two sweeps of the
    same grid under different names ran one config twice (13 runs for 12 points)."""
    db = tmp_path / "names.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    grid = (
        "sweep --models rnn,gru --tasks adding --k 2,4,8 --seeds 0 --set steps=60 --set "
        "hidden=8 --set seq_len=20 --set eval_size=32 --workers 1 --quiet"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            seqbench_cmd(db, grid, f"--name {name}"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("one", "other")
    ]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    from seqbench.store.query import run_query

    _cols, per_hash = run_query(
        str(db), "SELECT config_hash, COUNT(*) FROM runs WHERE kind = 'train' GROUP BY 1"
    )
    assert len(per_hash) == 6 and {n for _, n in per_hash} == {1}  # each config ran once


def test_threads_per_worker_honours_omp_num_threads_and_affinity(monkeypatch):
    from seqbench.sweep import executors

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(executors.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert executors.usable_cpus() == 4
    assert [executors.threads_per_worker(w) for w in (1, 2, 3, 8)] == [4, 2, 1, 1]
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # two sweeps side by side, as the user asked
    assert executors.threads_per_worker(1) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")
    assert executors.threads_per_worker(2) == 2


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _pool_workers(driver: int) -> list[int]:
    """A sweep driver's pool workers: the fork server's children, the driver's grandchildren
    (not deeper: a worker's own short-lived subprocesses, such as `git` reading the commit,
    are its children and may be gone by the time the test sends its signal)."""
    children = {p for p in _descendants(driver) if _ppid(p) == driver}
    return [p for p in _descendants(driver) if _ppid(p) in children]


def test_a_killed_worker_is_a_crash_not_a_failure(tmp_path):
    """SIGKILL of one pool worker (what the OOM killer does): the points in flight are
    recorded `crashed`, not failed, the pool is rebuilt, they run again, the sweep ends with
    every point completed and exit 0."""
    db = tmp_path / "kill.db"
    cmd = seqbench_cmd(
        db,
        "sweep --models rnn --tasks adding --seeds 0,1,2,3 --set steps=1500 --set hidden=16",
        "--set seq_len=50 --set eval_size=64 --workers 2 --quiet --name kill",
    )
    proc = popen(cmd)
    deadline, workers = time.monotonic() + 120, []
    while time.monotonic() < deadline and not workers:
        time.sleep(0.3)
        if db.exists():
            with sqlite3.connect(db) as con:
                try:
                    running = con.execute(
                        "SELECT COUNT(*) FROM runs WHERE status = 'running'"
                    ).fetchone()[0]
                except sqlite3.OperationalError:
                    running = 0
            if running:
                workers = _pool_workers(proc.pid)
    assert workers, "no pool worker found"
    time.sleep(1.0)
    killed = False
    for pid in workers + _pool_workers(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        killed = True
        break
    assert killed, "every pool worker found had already exited"
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    con = sqlite3.connect(db)
    statuses = [s for (s,) in con.execute("SELECT status FROM runs ORDER BY id")]
    assert "crashed" in statuses and "failed" not in statuses
    crashed = con.execute("SELECT error FROM runs WHERE status = 'crashed'").fetchall()
    assert all("worker process died" in e for (e,) in crashed)
    per = con.execute(
        "SELECT config_hash, COUNT(*) FROM runs WHERE status = 'completed' GROUP BY 1"
    ).fetchall()
    assert len(per) == 4 and {n for _, n in per} == {1}
    con.close()
    assert "4 completed" in out


def test_a_plain_rerun_runs_crashed_points_again(cli, tmp_path):
    grid = (
        "--models rnn --tasks adding --seeds 0,1 --set steps=3 --set hidden=4 --set "
        "seq_len=8 --set eval_size=8 --quiet --workers 1 --name again"
    ).split()
    assert cli("sweep", *grid).exit_code == 0
    con = sqlite3.connect(tmp_path / "seqbench.db")
    with con:  # as a sweep leaves a point whose worker died more often than it retries
        con.execute("UPDATE runs SET status = 'crashed' WHERE id = 1")
    con.close()
    r = cli("sweep", *grid)
    assert r.exit_code == 0 and "ran 1: 1 completed" in r.stdout, r.output


def test_metrics_reach_the_store_while_a_point_runs_and_survive_ctrl_c(tmp_path):
    db = tmp_path / "stream.db"
    proc = popen(
        seqbench_cmd(
            db,
            "sweep --models rnn --tasks adding --set steps=100000 --set eval_every=20 --set",
            "hidden=8 --set seq_len=20 --set eval_size=32 --workers 1 --quiet --name stream",
        )
    )
    seen, deadline = 0, time.monotonic() + 90
    while time.monotonic() < deadline and not seen:
        time.sleep(0.5)
        if db.exists():
            # OperationalError: the schema is still being created
            with sqlite3.connect(db) as con, contextlib.suppress(sqlite3.OperationalError):
                seen = con.execute(
                    "SELECT COUNT(*) FROM metrics m JOIN runs r ON r.id = m.run_id "
                    "WHERE r.status = 'running' AND m.key = 'valid_metric'"
                ).fetchone()[0]
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert seen > 0  # logged while the point was still running
    con = sqlite3.connect(db)
    statuses = con.execute("SELECT status FROM runs").fetchall()
    (kept,) = con.execute("SELECT COUNT(*) FROM metrics WHERE key = 'valid_metric'").fetchone()
    con.close()
    assert statuses == [("interrupted",)]
    status = statuses[0][0]
    assert status == "interrupted" and kept >= seen


def test_a_sweep_worker_takes_one_thread_for_small_fused_steps(tmp_path):
    """One worker on every core: a TCN point takes the worker's share (less what is busy), a
    small fused RNN point one thread, as `train` gives it outside a sweep; before, the share
    was passed on as SEQBENCH_THREADS and overrode that rule."""
    from seqbench.training.threads import usable_cpus

    db = tmp_path / "t.db"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "SEQBENCH_THREADS")}
    cmd = seqbench_cmd(
        db,
        "sweep --models rnn,tcn --tasks adding --set steps=3 --set hidden=8 --set seq_len=20",
        "--set eval_size=16 --workers 1 --quiet --name th",
    )
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    store = open_store(db)
    envs = {r.model: r.environment for r in store.list_runs()}
    store.dispose()
    assert (envs["rnn"]["threads"], envs["rnn"]["threads_from"]) == ("1", "auto")
    assert envs["tcn"]["threads_from"] == "sweep share"
    assert 1 <= int(envs["tcn"]["threads"]) <= usable_cpus()


def _alive_not_zombie(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("attempt", range(3))
def test_workers_exit_when_their_driver_is_killed(tmp_path, attempt):
    """kill -9 of a `sweep --workers 2` driver, its parent not reaping it (a zombie, as under
    a shell or a scheduler that waits later): every pool worker is gone within 5 s. Before,
    the workers' watch asked os.kill(driver, 0), which a zombie answers, and in 2 of 5 kills
    they were still alive 16 s later."""
    db = tmp_path / "orphan.db"
    cmd = seqbench_cmd(
        db,
        "sweep --models rnn --tasks adding --seeds 0,1,2,3 --set steps=5000 --set hidden=16",
        "--set seq_len=50 --set eval_size=64 --workers 2 --quiet --name orphan",
    )
    proc = popen(cmd)
    deadline, workers = time.monotonic() + 120, []
    while time.monotonic() < deadline and len(workers) < 2:
        time.sleep(0.3)
        workers = _pool_workers(proc.pid)
    assert len(workers) >= 2, "no pool workers found"
    time.sleep(0.5 * attempt)  # at different moments of the workers' start
    os.kill(proc.pid, signal.SIGKILL)
    killed = time.monotonic()
    try:
        while any(_alive_not_zombie(p) for p in workers) and time.monotonic() - killed < 5:
            time.sleep(0.1)
        alive = [p for p in workers if _alive_not_zombie(p)]
        assert _alive_not_zombie(proc.pid) is False  # the driver is a zombie, not reaped yet
        assert not alive, f"workers {alive} outlived their driver by 5 s"
    finally:
        for p in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        proc.wait(timeout=30)


def test_a_refused_sweep_says_only_why(cli, db):
    """A name that exists with another spec is refused in one line: the budget line that a
    stored plan prints is not said first."""
    grid = ["sweep", "--models", "tcn", "--tasks", "adding", "--k", "2,4", "--set",
            "seq_len=8", "--set", "eval_size=16", "--name", "s", "-q"]  # fmt: skip
    first = cli(*grid, "--set", "steps=2")
    assert first.exit_code == 0, first.output
    assert "parameters at every k" in first.stderr  # said once the plan was stored
    again = cli(*grid, "--set", "steps=3")
    assert again.exit_code != 0
    assert len(again.output.strip().splitlines()) == 1, again.output
    assert "parameters at every k" not in again.output
