import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from seqbench.errors import StoreError
from seqbench.store import migrate
from seqbench.store.database import upgrade_store
from seqbench.store.engine import inspect_revision, resolve_url
from seqbench.store.opening import open_store
from tests.conftest import add_run, sha256

FROZEN_0001 = Path(__file__).parent / "data" / "seqbench_0001.db"


def test_new_database_is_created_at_head_with_sqlite_settings(db):
    s = open_store(db)
    assert inspect_revision(s.url) == (migrate.head_revision(), True)
    with s.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000
    s.dispose()


def test_resolve_url_accepts_paths_and_urls(tmp_path):
    assert resolve_url(None) == f"sqlite:///{tmp_path / 'seqbench.db'}"
    assert resolve_url("x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    assert resolve_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"


@pytest.mark.parametrize("value", [0.5, math.nan, math.inf, -math.inf, 0.0, -1e300])
def test_non_finite_values_round_trip(store, value):
    run = add_run(store, status="running")
    store.log_metrics(run.id, [("grad_norm", 0, value), ("grad_norm", 1, 1.0)])
    store.set_summaries(run.id, {"test_metric": value})
    store.write_run(run.id, {}, curves={"grad_norm": ([0, 1], [value, 2.0])})
    got = store.metrics(run.id, "grad_norm")[0][2]
    summ = store.summaries(run.id)["test_metric"]
    curve = store.curve(run.id, "grad_norm")[0][1]
    for v in (got, summ, curve):
        if math.isnan(value):
            assert math.isnan(v)
        else:
            assert v == value


def test_summaries_keep_one_row_per_key(store):
    run = add_run(store, status="running")
    store.set_summaries(run.id, {"a": 1.0, "b": 2.0})
    store.set_summaries(run.id, {"a": 3.0})
    assert store.summaries(run.id) == {"a": 3.0, "b": 2.0}


def test_directory_path_is_refused(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path)


def test_non_database_file_is_refused_and_unchanged(tmp_path):
    f = tmp_path / "README.md"
    f.write_text("# not a database\n")
    before = sha256(f)
    with pytest.raises(StoreError, match="not a SQLite database"):
        open_store(f)
    assert sha256(f) == before


@pytest.mark.parametrize("where", ["missing/dir/x.db", "file.txt/x.db"])
def test_uncreatable_path_is_refused(tmp_path, where):
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(StoreError, match="cannot create database"):
        open_store(tmp_path / where)
    assert not (tmp_path / "missing").exists()


def test_unwritable_directory_is_refused(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    with pytest.raises(StoreError, match="not writable"):
        open_store(d / "x.db")


def test_database_from_newer_seqbench_is_refused_and_unchanged(tmp_path):
    db = tmp_path / "new.db"
    open_store(db).dispose()
    con = sqlite3.connect(db)
    con.execute(f"UPDATE {migrate.VERSION_TABLE} SET version_num = 'ffff'")
    con.commit()
    con.close()
    before = sha256(db)
    with pytest.raises(StoreError, match="newer seqbench"):
        open_store(db)
    with pytest.raises(StoreError, match="unknown to this seqbench"):
        upgrade_store(db)
    assert sha256(db) == before


def test_old_database_is_never_upgraded_silently(tmp_path):
    db = tmp_path / "old.db"
    shutil.copy(FROZEN_0001, db)
    before = sha256(db)
    with pytest.raises(StoreError, match="seqbench db upgrade"):
        open_store(db)
    assert sha256(db) == before


def test_frozen_0001_database_upgrades_with_backup_and_is_usable(tmp_path):
    db = tmp_path / "old.db"
    shutil.copy(FROZEN_0001, db)
    before, after, backup = upgrade_store(db)
    assert (before, after) == ("0001", migrate.head_revision())
    assert backup is not None and backup.parent == db.parent
    con = sqlite3.connect(backup)  # the backup is the old database, as it was
    assert con.execute(f"SELECT version_num FROM {migrate.VERSION_TABLE}").fetchone() == ("0001",)
    assert con.execute("SELECT model FROM runs").fetchall() == [("lstm",)]
    con.close()
    s = open_store(db)
    # The old run is intact, including its non-finite values...
    assert s.summaries(1)["test_metric"] == 0.0042
    assert math.isnan(s.summaries(1)["best_valid_metric"])
    assert s.metrics(1, "train_loss")[1][2] == math.inf
    # ...and the new revision's views work over old and new data.
    run = s.create_run(model="tcn", task="adding", config={}, config_hash="x", status="completed")
    s.set_summaries(run.id, {"test_metric": 0.5})
    with s.engine.connect() as c:
        rows = c.exec_driver_sql(
            "SELECT model, test_metric FROM v_results ORDER BY run_id"
        ).fetchall()
    assert rows == [("lstm", 0.0042), ("tcn", 0.5)]
    s.dispose()
    assert upgrade_store(db)[2] is None  # already at head: no backup, no change


def test_foreign_alembic_table_does_not_collide(tmp_path):
    """A database that another alembic-based tool (MLflow, Optuna) already versions."""
    db = tmp_path / "shared.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    con.execute("INSERT INTO alembic_version VALUES ('mlflow_rev')")
    con.commit()
    con.close()
    before = sha256(db)
    with pytest.raises(StoreError, match=r"another application's tables \(alembic_version\)"):
        open_store(db)  # not without being asked
    assert sha256(db) == before
    upgrade_store(db)  # asked: seqbench's tables beside the other tool's
    s = open_store(db)
    with s.engine.connect() as c:
        assert c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "mlflow_rev"
    s.dispose()


@pytest.mark.postgres
def test_postgres_store_round_trip(pg_url):
    s = open_store(pg_url)
    run = s.create_run(model="lstm", task="adding", config={"a": 1}, config_hash="h")
    s.log_metrics(run.id, [("loss", 0, math.nan), ("loss", 1, -math.inf), ("loss", 2, 0.25)])
    s.set_summaries(run.id, {"test_metric": math.inf})
    vals = [v for _, _, v in s.metrics(run.id, "loss")]
    assert math.isnan(vals[0]) and vals[1:] == [-math.inf, 0.25]
    assert s.summaries(run.id) == {"test_metric": math.inf}
    s.dispose()
    assert inspect_revision(pg_url)[0] == migrate.head_revision()


def test_a_store_created_by_another_process_is_used_not_refused(tmp_path):
    """Two processes that meet one new file race to create it; the one that gets "database
    is locked" uses the schema the other created (and only for a lock, not other errors)."""
    import threading

    from sqlalchemy.exc import OperationalError

    from seqbench.store.database import _created_by_another

    url = resolve_url(tmp_path / "race.db")
    locked = OperationalError("CREATE TABLE", {}, sqlite3.OperationalError("database is locked"))
    other = OperationalError("CREATE TABLE", {}, sqlite3.OperationalError("disk I/O error"))
    assert not _created_by_another(url, other)
    # the winner finishes its creation while the loser waits
    winner = threading.Timer(0.3, lambda: open_store(tmp_path / "race.db").dispose())
    winner.start()
    assert _created_by_another(url, locked)
    winner.join()
    assert inspect_revision(url) == (migrate.head_revision(), True)


FROZEN_0004 = Path(__file__).parent / "data" / "seqbench_0004.db"


def test_frozen_0004_database_upgrades_and_its_runs_and_baseline_are_usable(tmp_path, cli):
    """0004 -> head adds run names, archiving and baseline configs: the old runs can be named
    and archived, and the old baseline (points without a config) still checks by variant."""
    import json

    db = tmp_path / "old.db"
    shutil.copy(FROZEN_0004, db)
    before, after, backup = upgrade_store(db)
    assert (before, after) == ("0004", migrate.head_revision()) and backup is not None
    assert cli("--db", db, "runs", "name", "1", "old-seed-0").exit_code == 0
    shown = json.loads(cli("--db", db, "show", "old-seed-0", "-f", "json").stdout)
    assert shown["config.steps"] == 50 and shown["name"] == "old-seed-0"
    r = cli("--db", db, "check", "--baseline", "old", "-f", "json")
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["status"] == "pass" and row["current"] == pytest.approx(0.015)
    assert cli("--db", db, "runs", "archive", "1").exit_code == 0
    rows = cli(
        "--db",
        db,
        "query",
        "SELECT run_id, name, archived_at IS NOT NULL AS a FROM v_results_all ORDER BY run_id",
        "-f",
        "json",
    )
    assert json.loads(rows.stdout) == [
        {"run_id": 1, "name": "old-seed-0", "a": 1},
        {"run_id": 2, "name": None, "a": 0},
    ]
