"""What a reader can do beyond its transaction, measured on the server from outside: the WAL
position, pg_locks, pg_largeobject_metadata and the tables' statistics before and after each
call a reader role makes through `seqbench query`'s path (scanner off). Also the byte cap of
`query` on both backends (peak memory measured in a child process) and parameters bound only
where `:name` is one."""

# ruff: noqa: F811  (the fixtures imported from test_query_walls are parameters here)
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import pytest

from seqbench.errors import StoreError
from seqbench.store import query as q
from tests.store.test_query_walls import (  # noqa: F401 (fixtures)
    _pg_conn,
    pg_admin_url,
    pg_filled,
)

LIMITS = q._Limits(timeout=10.0, max_rows=100_000)

EFFECTS = [
    "SELECT pg_logical_emit_message(false, 'p', repeat('x', 10000000))",
    "SELECT pg_logical_emit_message(true, 'p', 'x')",
    "SELECT count(pg_logical_emit_message(false, 'p', repeat('x', 1000000))) "
    "FROM generate_series(1, 5)",
    "SELECT pg_notify('chan', 'x')",
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_advisory_lock_shared(2)",
    "SELECT pg_try_advisory_lock(3)",
    "SELECT pg_advisory_xact_lock(4)",
    "SELECT lo_create(0)",
    "SELECT lo_creat(-1)",
    "SELECT lo_from_bytea(0, 'x')",
    "SELECT lo_import('/etc/hostname')",
    "SELECT txid_current()",
    "SELECT pg_current_xact_id()",
    "LOCK TABLE runs IN ACCESS EXCLUSIVE MODE",
    "LOCK TABLE runs IN SHARE MODE",
    "REINDEX TABLE runs",
    "VACUUM runs",
]


ROLE = "seqbench_reader_fx"


def server_state(admin_url: str) -> tuple[int, int, int, tuple]:
    """(WAL insert position in bytes, locks held by the reader role's sessions and advisory
    locks held by anyone, large objects, the tables' analyze/vacuum counts).

    Relation locks of other sessions are not counted: autovacuum and the server's own workers
    take and drop them at any moment (a CI run saw 3 -> 6 across one refused call, none of them
    the reader's), so counting them made the test fail on the server's housekeeping."""
    with _pg_conn(admin_url) as conn:
        lsn = conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()[0]
        locks = conn.execute(
            "SELECT count(*) FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.pid IS DISTINCT FROM pg_backend_pid() "
            "AND (l.locktype = 'advisory' OR a.usename = %s)",
            (ROLE,),
        ).fetchone()[0]
        objects = conn.execute("SELECT count(*) FROM pg_largeobject_metadata").fetchone()[0]
        stats = conn.execute(
            "SELECT analyze_count, vacuum_count FROM pg_stat_user_tables WHERE relname = 'runs'"
        ).fetchone()
    return int(lsn), locks, objects, tuple(stats)


@pytest.fixture
def reader(pg_filled, pg_admin_url, cli):
    role = ROLE
    r = cli("--db", pg_admin_url, "db", "reader-role", role, "--lock-other-databases")
    assert r.exit_code == 0, r.output
    assert "note:" not in r.stderr  # a superuser revoked everything on the list
    from sqlalchemy.engine import make_url

    return make_url(pg_admin_url).set(username=role).render_as_string(hide_password=False)


@pytest.mark.postgres
@pytest.mark.parametrize("sql", EFFECTS)
def test_a_reader_has_no_effect_outside_its_transaction(reader, pg_admin_url, sql):
    """Before: pg_logical_emit_message wrote 10 MB of WAL a call that no rollback undoes
    (pg_wal 17 -> 113 MB for 10 calls), and lo_create, lo_from_bytea, advisory locks and
    txid_current ran. Now each is refused by the server and the WAL, the locks, the large
    objects and the statistics are as they were.

    The server writes WAL and takes locks of its own (autovacuum, checkpoints' full-page
    images: one CI run saw 229 kB across a single refused call), so the WAL bound is 1 MB,
    a fifth of the smallest emission above, and a call that shows any change is tried again,
    up to three times. A real effect recurs on every try (each call would write its
    megabytes, create its object, take its lock), so one clean try is proof."""
    seen = []
    for _ in range(3):
        wal, locks, objects, stats = server_state(pg_admin_url)
        with pytest.raises(StoreError):
            q._run_scanned(reader, sql, {}, LIMITS)
        wal2, locks2, objects2, stats2 = server_state(pg_admin_url)
        seen.append((wal2 - wal, (locks, objects, stats), (locks2, objects2, stats2)))
        if wal2 - wal < 1024 * 1024 and (locks2, objects2, stats2) == (locks, objects, stats):
            return
    pytest.fail(f"{sql}: (WAL bytes, state before, state after) on each try: {seen}")


@pytest.mark.postgres
def test_analyze_by_a_reader_changes_no_statistics(reader, pg_admin_url):
    """ANALYZE is not an error for a non-owner (the server skips the table with a warning):
    it must leave the statistics as they were."""
    before = server_state(pg_admin_url)
    with contextlib.suppress(StoreError):
        q._run_scanned(reader, "ANALYZE runs", {}, LIMITS)
    after = server_state(pg_admin_url)
    assert after[3] == before[3] and after[2] == before[2]


@pytest.mark.postgres
def test_the_reader_keeps_no_effect_function(reader, pg_admin_url):
    from seqbench import api

    role = "seqbench_reader_fx"
    assert api.reader_role_effects_left(pg_admin_url, role) == []
    # and still reads
    assert q._run_scanned(reader, "SELECT count(*) FROM runs", {}, LIMITS)[1] == [(2,)]


def _peak_growth(code: str) -> tuple[str, int]:
    """Run `code` in a fresh interpreter; (its output, how much its peak RSS grew in MiB after
    the line 'base')."""
    prelude = (
        "import resource\n"
        "def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024\n"
        "from seqbench.store.query import run_query\n"
        "from seqbench.errors import StoreError\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    return out, int(out.rsplit("grew", 1)[1])


@pytest.mark.postgres
def test_max_bytes_bounds_a_postgres_result(pg_filled):
    """Five values of 100 MB: refused after the first, the process growing by about that row
    (a server-side cursor fetches only the rows asked for). Before: 1.16 GB peak."""
    out, grew = _peak_growth(
        f"url = {pg_filled!r}\n"
        "run_query(url, 'SELECT 1')\n"
        "base = rss()\n"
        "try:\n"
        "    run_query(url, \"SELECT repeat('x', 100000000) FROM generate_series(1, 5)\",\n"
        "              max_bytes=10_000_000)\n"
        "except StoreError as e:\n"
        "    print('refused:', e)\n"
        "print('grew', rss() - base)\n"
    )
    assert "refused: the query's result is larger than 10000000 bytes" in out
    assert grew < 400, out


def test_max_bytes_bounds_a_sqlite_result(tmp_path):
    """SQLite builds no string or blob past the cap (its own length limit): a 100 MB hex
    string is refused before it exists."""
    from seqbench.store.opening import open_store

    db = tmp_path / "s.db"
    open_store(db).dispose()
    out, grew = _peak_growth(
        f"db = {str(db)!r}\n"
        "run_query(db, 'SELECT 1')\n"
        "base = rss()\n"
        "try:\n"
        "    run_query(db, 'SELECT hex(randomblob(50000000))', max_bytes=10_000_000)\n"
        "except StoreError as e:\n"
        "    print('refused:', e)\n"
        "print('grew', rss() - base)\n"
    )
    assert "refused: the query's result is larger than 10000000 bytes" in out
    assert grew < 30, out
    # many small rows are counted too
    with pytest.raises(StoreError, match="larger than 1000 bytes"):
        q.run_query(
            db,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) "
            "SELECT 'abcd' FROM n",
            max_bytes=1000,
        )
    assert q.run_query(db, "SELECT 'abcd' AS s", max_bytes=4)[1] == [("abcd",)]


def _query_peak_mb(db, *args: str) -> tuple[int, str, int]:
    """`seqbench query` in a child process: its exit code, stderr and peak RSS in MB."""
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, "
        "text=True)\n"
        "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
        "print(r.stderr, end='')\n"
    )
    cmd = [sys.executable, "-c", probe, os.path.join(os.path.dirname(sys.executable), "seqbench"),
           "--db", str(db), "query", *args]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    head, _, err = out.partition("\n")
    rc, peak = map(int, head.split())
    return rc, err, peak


def test_the_default_caps_refuse_the_docs_example_and_bound_what_is_printed(tmp_path):
    """`query "SELECT hex(randomblob(5e7))"` was not refused at the default cap (1e8 bytes under
    100 MiB): csv exit 0 at 721 MB, the table still rendering at 120 s (834 MB). Now 32 MiB:
    refused; a value just under it prints as csv, json and a table within a small multiple of
    the cap (a table shows its first 2,000 characters)."""
    from seqbench.store.opening import open_store

    db = tmp_path / "s.db"
    open_store(db).dispose()
    cap_mb = q.DEFAULT_MAX_BYTES / 2**20
    for fmt in ("table", "csv"):
        rc, err, peak = _query_peak_mb(db, "SELECT hex(randomblob(5e7))", "-f", fmt)
        assert rc == 1 and "larger than 33554432 bytes" in err and len(err.splitlines()) == 1
    for fmt in ("table", "csv", "json"):
        rc, err, peak = _query_peak_mb(db, "SELECT hex(randomblob(16000000)) AS v", "-f", fmt)
        assert rc == 0, err
        assert peak < 60 + 8 * cap_mb, (fmt, peak)  # the interpreter and torch-free CLI: ~40 MB


def test_the_timeout_covers_printing(tmp_path):
    """A result fetched in well under the timeout whose table takes longer to print is stopped
    at the timeout, in one line (the 60 s timeout did not cover rendering)."""
    from seqbench.store.opening import open_store

    db = tmp_path / "s.db"
    open_store(db).dispose()
    sql = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000) "
           "SELECT x, printf('%0100d', x) AS y FROM c")  # fmt: skip
    rc, err, _ = _query_peak_mb(db, sql, "--timeout", "1")
    assert rc == 1 and err.strip().splitlines() == [
        "Error: the query and its printing ran longer than 1 s and were stopped; raise "
        "--timeout, or print as --format csv"
    ], err


@pytest.mark.parametrize("flag", ["0", "-5"])
def test_a_bad_max_bytes_is_one_line(tmp_path, cli, flag):
    from seqbench.store.opening import open_store

    db = tmp_path / "s.db"
    open_store(db).dispose()
    r = cli("--db", str(db), "query", "SELECT 1", "--max-bytes", flag)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1
    assert "--max-bytes must be at least 1" in r.output


@pytest.mark.postgres
def test_parameters_are_bound_only_where_they_are_parameters(pg_filled):
    """`SELECT ':x'` is a string (it returned '$1'), a `::jsonb` cast of '{"a":1}' is no
    parameter (it was refused as a missing one), and `%` is itself."""

    def run(sql, **params):
        return q.run_query(pg_filled, sql, params)[1]

    assert run("SELECT ':x' AS v", x=1) == [(":x",)]
    assert run("""SELECT '{"a":1}'::jsonb ->> 'a' AS a""") == [("1",)]
    assert run("SELECT :x::int + 1 AS v, 7 % 4 AS m, '%s' AS s", x="2") == [(3, 3, "%s")]
    assert run('SELECT $$:x$$ AS d, "v" FROM (SELECT :x AS "v") t /* :y */ -- :z', x=5) == [
        (":x", 5)
    ]
    assert run("SELECT E'\\':x' AS e, :x AS v", x=1) == [("':x", 1)]
    with pytest.raises(StoreError, match=r"no value for the parameter :y"):
        run("SELECT :y AS v")


def test_sqlite_binds_the_same_way(tmp_path):
    from seqbench.store.opening import open_store

    db = tmp_path / "s.db"
    open_store(db).dispose()
    assert q.run_query(db, "SELECT ':x' AS v, :x AS w", {"x": 1})[1] == [(":x", 1)]


@pytest.mark.postgres
def test_a_cursor_cannot_hold_every_statement(pg_filled):
    """SHOW and EXPLAIN are streamed; a WITH that writes is still refused as a write."""
    assert q.run_query(pg_filled, "SHOW transaction_read_only")[1] == [("on",)]
    assert q.run_query(pg_filled, "EXPLAIN SELECT 1")[1]
    from seqbench.errors import ReadOnlyError

    with pytest.raises(ReadOnlyError):
        q._run_scanned(
            pg_filled, "WITH x AS (DELETE FROM runs RETURNING id) SELECT * FROM x", {}, LIMITS
        )
    assert os.environ.get("SEQBENCH_TEST_PG_URL")


@pytest.fixture
def tight_reader(pg_filled, pg_admin_url, cli):
    """A reader role with small bounds, so that reaching them is quick."""
    role = "seqbench_reader_tight"
    r = cli("--db", pg_admin_url, "db", "reader-role", role, "--connection-limit", "3",
            "--temp-file-limit", "1MB", "--work-mem", "64kB", "--statement-timeout", "1s",
            "--idle-in-transaction-timeout", "1s", "--lock-other-databases")  # fmt: skip
    assert r.exit_code == 0, r.output
    from sqlalchemy.engine import make_url

    return make_url(pg_admin_url).set(username=role).render_as_string(hide_password=False)


def _as(url: str):
    import psycopg

    from seqbench.store.pg_query import connect_args

    return psycopg.connect(**connect_args(url), autocommit=True)


@pytest.mark.postgres
def test_a_reader_role_cannot_starve_the_server(tight_reader, pg_admin_url):
    """The red team's cases, each held by the server whatever the reader's client sets. Before:
    97 idle reader sessions took the writers' connection slots; a count over 3·10⁸ generated
    rows wrote 4.2 GB of temporary files; SET default_transaction_read_only = off then CREATE
    TEMP TABLE made a 135 MB table."""
    import psycopg

    held = [_as(tight_reader) for _ in range(3)]
    try:
        with pytest.raises(psycopg.OperationalError, match="too many connections for role"):
            _as(tight_reader)
        with _as(pg_admin_url) as writer:  # the writers keep their slots
            assert writer.execute("SELECT 1").fetchone() == (1,)
    finally:
        for c in held:
            c.close()
    with _as(tight_reader) as c:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SET temp_file_limit = -1")  # a superuser's setting
        with pytest.raises(psycopg.errors.ConfigurationLimitExceeded, match="temp_file_limit"):
            c.execute("SELECT count(*) FROM (SELECT g FROM generate_series(1, 3000000) g "
                      "ORDER BY g DESC) s")  # fmt: skip
        c.execute("SET default_transaction_read_only = off")  # its client may; then:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="temporary"):
            c.execute("CREATE TEMP TABLE t AS SELECT 1")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("CREATE TABLE public.t (x int)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("ALTER ROLE seqbench_reader_tight CONNECTION LIMIT -1")


@pytest.mark.postgres
def test_max_bytes_refuses_a_huge_value_before_it_is_sent(pg_filled):
    """One value of 300 MB against a 10 MB cap: the server refuses the row before sending it,
    and the client does not grow by the value. Before: refused after 49 s, with the process at
    2.9 GB (a value of 10⁹ bytes)."""
    out, grew = _peak_growth(
        f"url = {pg_filled!r}\n"
        "run_query(url, 'SELECT 1')\n"
        "base = rss()\n"
        "try:\n"
        "    run_query(url, \"SELECT repeat('x', 300000000)\", max_bytes=10_000_000)\n"
        "except StoreError as e:\n"
        "    print('refused:', e)\n"
        "print('grew', rss() - base)\n"
    )
    assert "refused: the query's result is larger than 10000000 bytes" in out
    assert grew < 50, out


def _url_as(url: str, *, user: str | None = None, database: str | None = None) -> str:
    from sqlalchemy.engine import make_url

    u = make_url(url)
    u = u.set(username=user) if user else u
    u = u.set(database=database) if database else u
    return u.render_as_string(hide_password=False)


@pytest.mark.postgres
def test_the_reader_reaches_the_stores_database_and_no_other(pg_filled, pg_admin_url, cli):
    """PUBLIC may connect to every database of a server: as the reader, in `postgres`, a
    670 MB temporary table, 98 MB of WAL in 0.7 s through pg_logical_emit_message, a large
    object that outlived the session. `db reader-role` now refuses, changing nothing, while the
    reader could connect elsewhere; --lock-other-databases takes CONNECT from PUBLIC there and
    gives it to each login role that had it, so that the writer's role keeps `postgres`."""
    import psycopg

    role = "seqbench_reader_alone"
    with _pg_conn(pg_admin_url) as conn:  # a server as it comes: PUBLIC may connect anywhere
        for d in ("postgres", "template1"):
            conn.execute(f"GRANT CONNECT ON DATABASE {d} TO PUBLIC")
        if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")
    r = cli("--db", pg_admin_url, "db", "reader-role", role)
    assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1, r.output
    assert "nothing was changed" in r.stderr and "postgres, template1" in r.stderr
    with _pg_conn(pg_admin_url) as conn:
        assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone() is None
    r = cli("--db", pg_admin_url, "db", "reader-role", role, "--lock-other-databases")
    assert r.exit_code == 0, r.output
    for d in ("postgres", "template1"):
        with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
            _pg_conn(_url_as(pg_admin_url, user=role, database=d)).close()
        with _pg_conn(_url_as(pg_filled, database=d)) as conn:  # the writer's role keeps it
            assert conn.execute("SELECT 1").fetchone() == (1,)
    with _pg_conn(_url_as(pg_admin_url, user=role)) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (2,)
        settings = dict(conn.execute(
            "SELECT name, setting || coalesce(unit, '') FROM pg_settings WHERE name IN "
            "('statement_timeout', 'idle_in_transaction_session_timeout', 'lock_timeout', "
            "'work_mem')").fetchall())  # fmt: skip
    assert settings == {"statement_timeout": "300000ms", "work_mem": "16384kB",
                        "idle_in_transaction_session_timeout": "60000ms",
                        "lock_timeout": "10000ms"}  # fmt: skip


@pytest.mark.postgres
def test_a_careless_reader_keeps_the_roles_timeouts(tight_reader):
    """pg_sleep(65) ran 65 s and an idle transaction held its locks as long as it liked (both
    timeouts 0 for the role); through a plain client, outside seqbench query's own timeout,
    the role's defaults now stop both (1 s here)."""
    import psycopg

    with _pg_conn(tight_reader) as conn:
        t = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            conn.execute("SELECT pg_sleep(30)")
        assert time.monotonic() - t < 10
    conn = psycopg.connect(**_connect(tight_reader))
    conn.execute("SELECT count(*) FROM runs")  # a transaction is open, its lock held
    time.sleep(3)
    with pytest.raises(psycopg.Error, match="idle-in-transaction timeout"):
        conn.execute("SELECT 1")
    conn.close()


def _connect(url: str) -> dict:
    from seqbench.store.pg_query import connect_args

    return connect_args(url)


@pytest.mark.postgres
def test_a_reader_idle_in_a_transaction_cannot_hold_db_upgrade(pg_url, cli, monkeypatch):
    """A reader idle in a transaction blocked the writer's ALTER TABLE for as long as it
    stayed: `db upgrade` would wait for ever. The writers wait lock_timeout (30 s; 1 s here),
    then say in one line which sessions hold the store's locks; nothing is written."""
    from seqbench.store import migrate
    from seqbench.store.engine import _make_engine
    from seqbench.store.opening import open_store

    open_store(pg_url).dispose()
    engine = _make_engine(pg_url)
    migrate.downgrade(engine, "0006")  # 0007 drops and remakes the view v_results
    engine.dispose()
    with _pg_conn(pg_url) as blocker:
        blocker.execute("BEGIN")
        blocker.execute("SELECT count(*) FROM v_results")
        pid = blocker.info.backend_pid
        monkeypatch.setenv("SEQBENCH_LOCK_TIMEOUT", "1s")
        t = time.monotonic()
        r = cli("--db", pg_url, "db", "upgrade")
        took = time.monotonic() - t
        assert r.exit_code == 1 and len(r.stderr.strip().splitlines()) == 1, r.output
        assert (
            "lock timeout" in r.stderr
            and f"pid {pid} (role seqbench, idle in transaction" in r.stderr
        )
        assert took < 20, took
        blocker.execute("ROLLBACK")
    r = cli("--db", pg_url, "db", "upgrade")
    assert r.exit_code == 0, r.output
