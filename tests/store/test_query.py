import json
import math

import pytest

from seqbench.errors import ReadOnlyError, StoreError
from seqbench.store.query import coerce_param, run_query
from tests.conftest import add_run, sha256


@pytest.fixture
def filled(store, db):
    for model, v in [("rnn", 0.2), ("tcn", 0.01), ("tcn", math.nan)]:
        run = add_run(store, model=model, status="running")
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
        "SELECT 1 AS x; COMMIT; DELETE FROM runs",
        "-- a comment\nDELETE FROM runs",
        "/* one */ /* two */ DROP TABLE runs",
        "SELECT ';'; DELETE FROM runs",
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


def test_a_typo_is_a_syntax_error_not_a_refused_write(filled):
    with pytest.raises(StoreError, match='SQL error: near "SELEC": syntax error') as e:
        run_query(str(filled), "SELEC 1")
    assert not isinstance(e.value, ReadOnlyError)


@pytest.mark.parametrize(
    "sql",
    [
        "-- the models\nSELECT COUNT(*) FROM runs",
        "/* a block\n comment */ SELECT COUNT(*) FROM runs;",
        "\n\n  -- one\n  -- two\n  select count(*) from runs  ;  -- trailing\n",
        "SELECT COUNT(*) FROM runs WHERE model != 'a;b' AND model != \"x\" -- ; not a split",
    ],
)
def test_comments_and_whitespace_may_surround_the_statement(filled, sql):
    assert run_query(str(filled), sql)[1] == [(3,)]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT 1; SELECT 2", "one statement per call"),
        ("SELECT 'unterminated", "unterminated ' quote"),
        ("/* open", "unterminated /\\* comment"),
        ("-- only a comment", "no SQL given"),
        (";", "no statement"),
    ],
)
def test_malformed_text_is_a_one_line_error(filled, sql, message):
    with pytest.raises(StoreError, match=message):
        run_query(str(filled), sql)


def test_split_statement_skips_quotes_and_dollar_bodies():
    from seqbench.store.query import split_statement

    assert split_statement("/* c */ with x as (select 1) select * from x;") == (
        "with x as (select 1) select * from x",
        "WITH",
    )
    assert split_statement("SELECT $$a;b$$, $t$;$t$, 'it''s;'")[1] == "SELECT"


def test_a_statement_past_the_timeout_is_stopped(filled):
    endless = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT MAX(n) FROM c"
    with pytest.raises(StoreError, match=r"longer than 0.2 s .* raise `timeout`"):
        run_query(str(filled), endless, timeout=0.2)


def test_more_rows_than_the_limit_are_refused(filled):
    many = (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c LIMIT 50) SELECT n FROM c"
    )
    with pytest.raises(StoreError, match="more than 49 rows; add a LIMIT or raise `max_rows`"):
        run_query(str(filled), many, max_rows=49)
    assert len(run_query(str(filled), many, max_rows=50)[1]) == 50


@pytest.mark.parametrize(
    ("kw", "bad"), [("timeout", 0), ("timeout", float("nan")), ("max_rows", 0)]
)
def test_limits_must_be_positive(filled, kw, bad):
    from seqbench.errors import UsageError

    with pytest.raises(UsageError):
        run_query(str(filled), "SELECT 1", **{kw: bad})


@pytest.mark.parametrize(("raw", "value"), [("3", 3), ("0.5", 0.5), ("adding", "adding")])
def test_coerce_param(raw, value):
    assert coerce_param(raw) == value


@pytest.mark.postgres
def test_postgres_query_is_read_only(pg_url):
    from seqbench.store.opening import open_store

    s = open_store(pg_url)
    add_run(s, status="running")
    s.dispose()
    with pytest.raises(ReadOnlyError):
        run_query(pg_url, "WITH x AS (DELETE FROM runs RETURNING id) SELECT * FROM x")
    assert run_query(pg_url, "SELECT COUNT(*) FROM runs")[1] == [(1,)]


PG_ESCAPES = [
    "SELECT 1 AS x; COMMIT; DELETE FROM runs",
    "SELECT 1; DROP TABLE runs",
    "COMMIT; DELETE FROM runs",
    "SET transaction_read_only = off",
    "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
    "COPY (SELECT 1) TO PROGRAM 'touch /tmp/seqbench-pwned'",
    "DELETE FROM runs",
    "WITH x AS (DELETE FROM runs RETURNING id) SELECT * FROM x",
    "SELECT * INTO copied FROM runs",
    "EXPLAIN ANALYZE DELETE FROM runs",
    "CREATE TABLE t (x int)",
    "DO $$ BEGIN DELETE FROM runs; END $$",
    "SELECT $$;$$; DELETE FROM runs",
    "/* c */ DELETE FROM runs",
    "SELECT pg_terminate_backend(pg_backend_pid()) FROM runs WHERE false; DELETE FROM runs",
]


@pytest.mark.postgres
@pytest.mark.parametrize("sql", PG_ESCAPES)
def test_postgres_escapes_are_refused(pg_url, sql):
    """The escapes that a second statement used to open: each is refused, nothing changes."""
    import os

    from seqbench.store.opening import open_store

    s = open_store(pg_url)
    add_run(s, status="running")
    s.dispose()
    with pytest.raises(StoreError):
        run_query(pg_url, sql)
    assert run_query(pg_url, "SELECT COUNT(*) FROM runs")[1] == [(1,)]
    assert not os.path.exists("/tmp/seqbench-pwned")
    tables = run_query(pg_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    assert "copied" not in {r[0] for r in tables[1]}


@pytest.mark.postgres
def test_postgres_limits_and_comments(pg_url):
    from seqbench.store.opening import open_store

    open_store(pg_url).dispose()
    assert run_query(pg_url, "-- c\nSELECT 1 AS x")[1] == [(1,)]
    with pytest.raises(StoreError, match="raise `timeout`"):
        run_query(pg_url, "SELECT pg_sleep(5)", timeout=0.2)
    with pytest.raises(StoreError, match="more than 3 rows"):
        run_query(pg_url, "SELECT generate_series(1, 10)", max_rows=3)
    with pytest.raises(StoreError, match="SQL error: syntax error"):
        run_query(pg_url, "SELEC 1")


@pytest.mark.postgres
def test_the_test_role_is_not_a_superuser(pg_url):
    """COPY ... TO PROGRAM and friends need a superuser: the test server's role is not one."""
    from seqbench.store.opening import open_store

    open_store(pg_url).dispose()
    assert run_query(pg_url, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")[1] == [
        (False,)
    ]


def test_v_results_leaves_archived_runs_out_and_v_results_all_keeps_them(cli, store):
    for seed, v in ((0, 0.1), (1, 0.3)):
        add_run(store, {"test_metric": v}, seed=seed, config_hash=f"h{seed}")
    assert cli("runs", "archive", "2").exit_code == 0
    q = "SELECT COUNT(*) AS n, AVG(test_metric) AS m FROM {}"
    got = json.loads(cli("query", q.format("v_results"), "-f", "json").stdout)
    assert got == [{"n": 1, "m": 0.1}]  # what report and check see too
    got = json.loads(cli("query", q.format("v_results_all"), "-f", "json").stdout)
    assert got[0]["n"] == 2
