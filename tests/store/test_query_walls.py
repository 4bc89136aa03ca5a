"""`seqbench query` is kept read-only by the databases themselves: every escape here goes past
seqbench's own scanner (switched off) straight to the server or to SQLite, and each leaves a
checksum of every table unchanged."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqbench.errors import StoreError, UsageError
from seqbench.store import query as q
from tests.conftest import add_run, seqbench_cmd, sha256

PWNED = "/tmp/seqbench-pwned"
LIMITS = q._Limits(timeout=10.0, max_rows=100_000)


def scanner_off(db, sql: str, params=None, note=None):
    """The statement to the database with seqbench's scanner switched off."""
    return q._run_scanned(db, sql, params or {}, LIMITS, note)


@pytest.fixture
def pg_admin_url(pg_url):
    url = os.environ.get("SEQBENCH_TEST_PG_ADMIN_URL")
    if not url:
        pytest.skip("SEQBENCH_TEST_PG_ADMIN_URL not set (.ci/run starts a PostgreSQL server)")
    return url


def _pg_conn(url: str):
    import psycopg

    from seqbench.store.pg_query import connect_args

    return psycopg.connect(**connect_args(url), autocommit=True)


def pg_checksum(admin_url: str) -> str:
    """md5 over every row of every table in the public schema, read as the superuser."""
    with _pg_conn(admin_url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            )
        ]
        parts = [",".join(tables)]
        for t in tables:
            agg = "coalesce(string_agg(x::text, '|' ORDER BY x::text), '')"
            row = conn.execute(f'SELECT md5({agg}) FROM "{t}" x').fetchone()
            parts.append(f"{t}:{row[0]}")
        seqs = conn.execute(
            "SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = 'public' "
            "ORDER BY 1"
        ).fetchall()
        parts.append(repr(seqs))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


@pytest.fixture
def pg_filled(pg_url):
    from seqbench.store.opening import open_store

    s = open_store(pg_url)
    for model in ("rnn", "tcn"):
        run = add_run(s, model=model, name=f"{model}-run")
        s.set_summaries(run.id, {"test_metric": 0.5})
    s.dispose()
    if os.path.exists(PWNED):
        os.remove(PWNED)
    return pg_url


INSERT_SWEEP = "INSERT INTO sweeps (name, spec, status, created_at) VALUES ('x', '{}', 'r', now())"

# The red team's escapes, then variants of our own: dollar quotes and escape strings that fool a
# tokenizer, comments and quoted names that hide a ';', and single statements that write,
# escalate or leave the transaction.
SERVER_ESCAPES = [
    "SELECT 1 AS a$x$; COMMIT; BEGIN READ WRITE; UPDATE runs SET name = 'pwned' WHERE id = 1; "
    "COMMIT; SELECT 1 AS b$x$",
    f"SELECT E'\\''; COMMIT; BEGIN READ WRITE; {INSERT_SWEEP}; --'",
    "SELECT 1 AS x; COMMIT; DELETE FROM runs",
    "SELECT 1; COMMIT; BEGIN READ WRITE; DELETE FROM runs",
    "COMMIT; DELETE FROM runs",
    "ROLLBACK; BEGIN READ WRITE; DELETE FROM runs; COMMIT",
    "SELECT $$;$$; DELETE FROM runs",
    "SELECT $a$ $b$ $a$; DELETE FROM runs; SELECT $b$",
    "SELECT $$ $$$; DELETE FROM runs",
    "SELECT 1 /* ; */; DELETE FROM runs",
    "SELECT 1 /* /* nested ; */ */; DELETE FROM runs",
    "SELECT 1 -- ;\n; DELETE FROM runs",
    'SELECT 1 AS "x;"; DELETE FROM runs',
    'SELECT "a""b" FROM (SELECT 1 AS "a""b") t; DELETE FROM runs',
    "SELECT 'a'';'; DELETE FROM runs",
    "SELECT E'\\\\'; DELETE FROM runs; --",
    "SELECT U&'\\0027'; DELETE FROM runs; --",
    "SELECT e'\\x27'; UPDATE runs SET model = 'p'",
    "DELETE FROM runs",
    "UPDATE runs SET name = 'pwned'",
    INSERT_SWEEP,
    "TRUNCATE runs CASCADE",
    "DROP TABLE metrics",
    "ALTER TABLE runs ADD COLUMN pwned int",
    "CREATE TABLE t (x int)",
    "CREATE TEMP TABLE t AS SELECT 1",
    "SELECT * INTO copied FROM runs",
    "WITH x AS (DELETE FROM runs RETURNING id) SELECT * FROM x",
    "WITH x AS (UPDATE runs SET name = 'p' RETURNING 1) SELECT * FROM x",
    "EXPLAIN ANALYZE DELETE FROM runs",
    "DO $$ BEGIN DELETE FROM runs; END $$",
    "DO $x$ BEGIN UPDATE runs SET name = 'p'; END $x$",
    "SELECT nextval('runs_id_seq')",
    "SELECT setval('runs_id_seq', 1)",
    "SELECT * FROM runs FOR UPDATE",
    "SELECT set_config('transaction_read_only', 'off', true)",
    "SET transaction_read_only = off",
    "COPY (SELECT 1) TO PROGRAM 'touch /tmp/seqbench-pwned'",
    "COPY runs TO PROGRAM 'touch /tmp/seqbench-pwned'",
    "COPY runs FROM STDIN",
    "SELECT lo_import('/etc/hostname')",
    "SELECT pg_read_file('/etc/hostname')",
    "GRANT ALL ON runs TO PUBLIC",
    "ALTER ROLE CURRENT_USER SUPERUSER",
    "SET ROLE postgres",
    "VACUUM runs",
    "DISCARD ALL",
    "LOCK TABLE runs IN ACCESS EXCLUSIVE MODE",
]


@pytest.mark.postgres
@pytest.mark.parametrize("sql", SERVER_ESCAPES)
def test_postgres_holds_without_the_scanner(pg_filled, pg_admin_url, sql):
    before = pg_checksum(pg_admin_url)
    with pytest.raises(StoreError):
        scanner_off(pg_filled, sql)
    assert pg_checksum(pg_admin_url) == before
    assert not os.path.exists(PWNED)


@pytest.mark.postgres
def test_a_session_setting_does_not_outlive_its_query(pg_filled, pg_admin_url):
    """A single statement may change the session's defaults; the session ends with it."""
    before = pg_checksum(pg_admin_url)
    scanner_off(pg_filled, "SELECT set_config('default_transaction_read_only', 'off', false)")
    with pytest.raises(StoreError, match="read-only"):
        scanner_off(pg_filled, "DELETE FROM runs")
    assert pg_checksum(pg_admin_url) == before


@pytest.mark.postgres
def test_the_red_team_strings_through_the_cli(pg_filled, pg_admin_url, cli):
    before = pg_checksum(pg_admin_url)
    for sql in SERVER_ESCAPES[:2]:
        r = cli("--db", pg_filled, "query", sql)
        assert r.exit_code == 1, r.output
        assert len(r.output.strip().splitlines()) == 1
    assert pg_checksum(pg_admin_url) == before


@pytest.mark.postgres
def test_reads_and_parameters_still_work(pg_filled):
    cols, rows = scanner_off(
        pg_filled,
        "SELECT model, test_metric FROM v_results WHERE model = :m",
        {"m": "tcn"},
    )
    assert cols == ["model", "test_metric"]
    assert rows == [("tcn", 0.5)]
    assert scanner_off(pg_filled, "SHOW transaction_read_only")[1] == [("on",)]
    assert scanner_off(pg_filled, "SELECT '%' || :x AS p", {"x": "s"})[1] == [("%s",)]
    with pytest.raises(StoreError, match=r"no value for the parameter :missing"):
        scanner_off(pg_filled, "SELECT :missing")


@pytest.mark.postgres
def test_a_huge_result_is_refused_with_bounded_memory(pg_filled):
    """3M rows of 1 kB: streamed in batches and refused past --max-rows, so the process never
    holds more than the cap (it buffered 4.25 GB before)."""
    code = (
        "import resource, sys\n"
        "from seqbench.store.query import run_query\n"
        "from seqbench.errors import StoreError\n"
        "def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024\n"
        f"url = {pg_filled!r}\n"
        "run_query(url, 'SELECT 1')\n"
        "base = rss()\n"
        "try:\n"
        "    run_query(url, \"SELECT repeat('x', 1000) FROM generate_series(1, 3000000)\",\n"
        "              max_bytes=2**30)\n"  # the row cap acts first
        "except StoreError as e:\n"
        "    print('refused:', e)\n"
        "print('grew', rss() - base)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    ).stdout
    assert "refused: the query returned more than 100000 rows" in out
    grew = int(out.rsplit("grew", 1)[1])
    # MiB: the 100,000 rows of the default cap (100 MB of text; 113 measured), not 3 GB
    assert grew < 160, out


@pytest.mark.postgres
def test_limits_past_the_servers_range_are_one_line(pg_filled, cli):
    for flag, value in (("--timeout", "2147484"), ("--timeout", "1e300")):
        r = cli("--db", pg_filled, "query", "SELECT 1", flag, value)
        assert r.exit_code == 2, r.output
        assert len(r.output.strip().splitlines()) == 1 and "--timeout" in r.output
    r = cli("--db", pg_filled, "query", "SELECT 1 AS x", "--max-rows", "2147483647")
    assert r.exit_code == 0, r.output


# -- the reader role --------------------------------------------------------------------------
READER = "seqbench_reader_test"


def _reader_url(admin_url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(admin_url).set(username=READER).render_as_string(hide_password=False)


@pytest.mark.postgres
def test_the_reader_role_reads_and_cannot_write(pg_filled, pg_admin_url, cli):
    r = cli("--db", pg_admin_url, "db", "reader-role", READER, "--lock-other-databases")
    assert r.exit_code == 0, r.output
    reader = _reader_url(pg_admin_url)
    r = cli("--db", reader, "query", "SELECT COUNT(*) AS n FROM runs", "--format", "csv")
    assert r.exit_code == 0, r.output
    assert r.stdout.split() == ["n", "2"]
    assert "role" not in r.stderr  # a reader role needs no note
    from seqbench.store.names import READ_TABLES, VIEWS

    with _pg_conn(pg_admin_url) as conn:  # every table and view of the schema is granted
        have = {
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        }
        have |= {
            r[0] for r in conn.execute("SELECT viewname FROM pg_views WHERE schemaname = 'public'")
        }
    assert have == {*READ_TABLES, *VIEWS}
    for table in have:
        assert scanner_off(reader, f"SELECT COUNT(*) FROM {table}")[1]
    # the writer's role is told which wall holds
    r = cli("--db", pg_filled, "query", "SELECT 1 AS x")
    assert r.exit_code == 0 and "note: role 'seqbench' can write" in r.stderr
    # through a plain client, outside seqbench's read-only transaction, it still cannot write
    import psycopg

    before = pg_checksum(pg_admin_url)
    with _pg_conn(reader) as conn:
        for sql in ("DELETE FROM runs", "UPDATE runs SET name = 'p'", INSERT_SWEEP):
            with pytest.raises(psycopg.Error):
                conn.execute("BEGIN READ WRITE")
                conn.execute(sql)
            conn.execute("ROLLBACK")
        assert conn.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
    assert pg_checksum(pg_admin_url) == before
    # printing the SQL changes nothing and shows no password
    r = cli("--db", pg_admin_url, "db", "reader-role", READER, "--print-sql")
    assert r.exit_code == 0 and "GRANT SELECT ON" in r.stdout


@pytest.mark.postgres
def test_a_reader_cannot_terminate_a_running_sweep(pg_filled, pg_admin_url, cli, tmp_path):
    """A query calling pg_terminate_backend on the writer's sessions, from the reader role,
    is refused by the server; the sweep beside it finishes every point."""
    assert (
        cli("--db", pg_admin_url, "db", "reader-role", READER, "--lock-other-databases").exit_code
        == 0
    )
    reader = _reader_url(pg_admin_url)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    sweep = subprocess.Popen(
        seqbench_cmd(
            pg_filled,
            "sweep --models rnn --tasks adding --seeds 0,1 --set steps=1500 --set seq_len=50",
            "--name survivor --quiet",
        ),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    kill = (
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE usename = 'seqbench' AND pid <> pg_backend_pid()"
    )
    refused = 0
    deadline = time.monotonic() + 120
    while sweep.poll() is None and time.monotonic() < deadline and refused < 3:
        r = cli("--db", reader, "query", kill)
        refused += r.exit_code == 1 and "refused by the server" in r.output
        time.sleep(0.2)
    _out, err = sweep.communicate(timeout=120)
    assert sweep.returncode == 0, err
    assert refused >= 1
    _cols, rows = q.run_query(
        pg_filled, "SELECT status, COUNT(*) FROM runs WHERE sweep_id IS NOT NULL GROUP BY status"
    )
    assert rows == [("completed", 2)]


# -- SQLite ----------------------------------------------------------------------------------
SQLITE_ESCAPES = [
    "SELECT 1; DELETE FROM runs",
    "DELETE FROM runs",
    "UPDATE runs SET name = 'p'",
    "INSERT INTO sweeps (name) VALUES ('x')",
    "WITH x AS (SELECT 1) DELETE FROM runs",
    "DROP TABLE runs",
    "CREATE TEMP TABLE t (x)",
    "ATTACH DATABASE 'other.db' AS o",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA user_version = 3",
    "VACUUM",
    "VACUUM INTO 'copy.db'",
    "BEGIN IMMEDIATE",
    "REPLACE INTO sweeps (name) VALUES ('x')",
    "SELECT load_extension('x')",
]


@pytest.mark.parametrize("sql", SQLITE_ESCAPES)
def test_sqlite_holds_without_the_scanner(store, db, tmp_path, sql):
    add_run(store)
    store.dispose()
    before = sha256(db)
    with pytest.raises(StoreError):
        scanner_off(db, sql)
    assert sha256(db) == before
    assert not (tmp_path / "other.db").exists() and not (tmp_path / "copy.db").exists()


FRAGMENTS = [
    "SELECT 1",
    "SELECT * FROM runs",
    ";",
    "; ",
    "'",
    "''",
    "'a;b'",
    "E'\\''",
    "$$",
    "$x$",
    "$x$;$x$",
    "a$x$",
    '"',
    '"q;"',
    "--",
    "-- c\n",
    "/*",
    "*/",
    "/* ; */",
    "\n",
    " ",
    "COMMIT",
    "BEGIN READ WRITE",
    "ROLLBACK",
    "DELETE FROM runs",
    "UPDATE runs SET name = 'pwned'",
    "INSERT INTO sweeps (name, spec, status) VALUES ('x', '{}', 'r')",
    "DROP TABLE runs",
    "WITH d AS (DELETE FROM runs RETURNING 1) SELECT * FROM d",
    "PRAGMA user_version = 9",
    "ATTACH 'x.db' AS x",
    "SET transaction_read_only = off",
]
texts = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8).map("".join)
PROPERTY = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPERTY
@given(sql=texts)
def test_property_no_query_text_changes_a_sqlite_store(store, db, sql):
    if not store.list_runs(limit=1):
        add_run(store)
    before = sha256(db)
    for run in (scanner_off, q.run_query):
        with contextlib.suppress(StoreError):
            run(db, sql)
        assert sha256(db) == before, sql


@pytest.mark.postgres
@PROPERTY
@given(sql=texts)
def test_property_no_query_text_changes_a_postgres_store(pg_filled, pg_admin_url, sql):
    before = pg_checksum(pg_admin_url)
    for run in (scanner_off, q.run_query):
        with contextlib.suppress(StoreError):
            run(pg_filled, sql)
    assert pg_checksum(pg_admin_url) == before, sql


def test_non_utf8_sql_is_one_line(store, db, cli):
    store.dispose()
    bad = b"SELECT '\xff'".decode("utf-8", "surrogateescape")
    with pytest.raises(UsageError, match="not valid UTF-8"):
        q.run_query(db, bad)
    r = cli("query", "-", input=b"SELECT '\xfe\xff'")
    assert r.exit_code == 2, r.output
    assert "not valid UTF-8" in r.output and len(r.output.strip().splitlines()) == 1


def test_huge_max_rows_and_limits(store, db, cli):
    add_run(store)
    store.dispose()
    r = cli("query", "SELECT COUNT(*) AS n FROM runs", "--max-rows", "99999999999999999999")
    assert r.exit_code == 0, r.output
    r = cli("query", "SELECT 1", "--timeout", "1e300")
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
