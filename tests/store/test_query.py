import math

import pytest

from seqbench.errors import ReadOnlyError, StoreError
from seqbench.store.query import coerce_param, run_query
from tests.conftest import sha256


@pytest.fixture
def filled(store, db):
    for model, v in [("rnn", 0.2), ("tcn", 0.01), ("tcn", math.nan)]:
        run = store.create_run(model=model, task="adding", config={}, config_hash="h")
        store.set_summaries(run.id, {"test_metric": v})
    return db


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM runs",
        "INSERT INTO runs (uuid) VALUES ('x')",
        "UPDATE runs SET model = 'x'",
        "DROP TABLE runs",
        "CREATE TABLE t (x)",
        "ALTER TABLE runs ADD COLUMN x",
        "ATTACH DATABASE 'other.db' AS o",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA user_version = 7",
        "PRAGMA wal_checkpoint",
        "VACUUM",
        "REINDEX",
        "BEGIN",
        "WITH x AS (SELECT 1) DELETE FROM runs",
        "WITH x AS (SELECT 1) INSERT INTO sweeps (name) SELECT 'a' FROM x",
        "SELECT 1; DELETE FROM runs",
        "  delete from runs;",
    ],
)
def test_writes_are_refused_and_the_file_is_unchanged(filled, tmp_path, sql):
    before = sha256(filled)
    with pytest.raises(StoreError):
        run_query(str(filled), sql)
    assert sha256(filled) == before
    assert not (tmp_path / "other.db").exists()
    _cols, rows = run_query(str(filled), "SELECT COUNT(*) AS n FROM runs")
    assert rows == [(3,)]


def test_write_refusal_is_a_read_only_error(filled):
    with pytest.raises(ReadOnlyError, match="read-only"):
        run_query(str(filled), "DELETE FROM runs")


def test_select_with_bound_parameters(filled):
    cols, rows = run_query(
        str(filled),
        "SELECT model, COUNT(*) AS n FROM v_results WHERE task = :task"
        " GROUP BY model ORDER BY model",
        {"task": "adding"},
    )
    assert cols == ["model", "n"]
    assert rows == [("rnn", 1), ("tcn", 2)]


def test_read_pragmas_are_allowed(filled):
    _cols, rows = run_query(str(filled), "PRAGMA table_info(runs)")
    assert "model" in [r[1] for r in rows]


def test_bad_sql_is_a_one_line_error(filled):
    with pytest.raises(StoreError, match="SQL error"):
        run_query(str(filled), "SELECT nope FROM runs")


@pytest.mark.parametrize(("raw", "value"), [("3", 3), ("0.5", 0.5), ("adding", "adding")])
def test_coerce_param(raw, value):
    assert coerce_param(raw) == value


@pytest.mark.postgres
def test_postgres_query_is_read_only(pg_url):
    from seqbench.store.store import open_store

    s = open_store(pg_url)
    s.create_run(model="rnn", task="adding", config={}, config_hash="h")
    s.dispose()
    with pytest.raises(ReadOnlyError):
        run_query(pg_url, "WITH x AS (DELETE FROM runs RETURNING id) SELECT * FROM x")
    assert run_query(pg_url, "SELECT COUNT(*) FROM runs")[1] == [(1,)]
