"""A PostgreSQL store's reader keeps one connection (pg_query.run_postgres with a reader), as a
SQLite store's does: measured on the server from outside (the backend's pid, its session
closed with the store, the locks left), each statement still behind its walls and its own limits,
and a connection the server dropped replaced on the next read."""

# ruff: noqa: F811  (the fixtures imported from test_query_walls are parameters here)
from __future__ import annotations

import contextlib
import time

import pytest

from seqbench.errors import ReadOnlyError, StoreError
from seqbench.store import query as q
from seqbench.store.opening import open_store
from tests.store.test_query_walls import (  # noqa: F401 (fixtures)
    _pg_conn,
    pg_admin_url,
    pg_checksum,
    pg_filled,
)

pytestmark = pytest.mark.postgres


def _alive(admin_url: str, pid: int) -> bool:
    """Whether the server still has the session of backend `pid`."""
    with _pg_conn(admin_url) as conn:
        sql = "SELECT count(*) FROM pg_stat_activity WHERE pid = %s"
        return conn.execute(sql, (pid,)).fetchone()[0] == 1


def _gone(admin_url: str, pid: int) -> bool:
    """Whether the session of backend `pid` ends within 10 s (a closed connection's backend
    leaves the server's list a moment after the client has gone)."""
    deadline = time.monotonic() + 10
    while _alive(admin_url, pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def pg_run(pg_filled):
    """(the store's URL, a run with metrics, summaries and a curve)."""
    with open_store(pg_filled) as store:
        run_id = store.list_runs(limit=1)[0].id
        store.write_run(
            run_id,
            {},
            metrics=[("loss", 1, 0.5), ("loss", 2, float("inf"))],
            curves={"grad_norm": ([1.0, 2.0], [0.1, float("nan")])},
        )
    return pg_filled, run_id


def _unscanned(store, sql: str):
    """A statement past seqbench's scanner, on the store's kept connection."""
    return q._run_scanned(store.url, sql, {}, q._Limits(10.0, 100), reader=store._target())


def _pid(store) -> int:
    return store.query("SELECT pg_backend_pid()")[1][0][0]


def test_a_stores_reads_share_one_connection(pg_run, pg_admin_url):
    """Before: each read opened a connection (a server process) and closed it; a store's reads
    now run on one, closed with the store."""
    url, run_id = pg_run
    with open_store(url, "read") as store:
        first = _pid(store)
        for _ in range(5):
            assert store.summaries(run_id) == {"test_metric": 0.5}
            assert store.metrics(run_id) == [("loss", 1, 0.5), ("loss", 2, float("inf"))]
            assert store.last_metrics(run_id) == {"loss": (2, float("inf"))}
            (x1, y1), (x2, y2) = store.curve(run_id, "grad_norm")
            assert (x1, y1, x2, y2 != y2) == (1.0, 0.1, 2.0, True)  # nan kept
        assert _pid(store) == first
        assert _alive(pg_admin_url, first)
    assert _gone(pg_admin_url, first)  # closed with the store


def test_each_statement_keeps_its_own_limits_on_the_kept_connection(pg_filled):
    with open_store(pg_filled, "read") as store:
        pid = _pid(store)
        with pytest.raises(StoreError, match=r"ran longer than 0\.2 s"):
            store.query("SELECT pg_sleep(2)", timeout=0.2)
        # the next statement on the same session: the library's own limit, not the last one
        assert store.query("SELECT pg_sleep(0.5), current_setting('statement_timeout')")[1] == [
            ("", "1min")
        ]
        assert _pid(store) == pid


def test_what_a_statement_leaves_in_a_session_does_not_reach_the_next(pg_filled, pg_admin_url):
    """A statement that turns the session's read-only default off, takes a session advisory
    lock or prepares a statement (a superuser may): the next statement on the same connection
    is read-only all the same, and no lock or prepared statement is left."""
    before = pg_checksum(pg_admin_url)
    with open_store(pg_admin_url, "read") as store:
        pid = _pid(store)
        _unscanned(store, "SELECT set_config('default_transaction_read_only', 'off', false)")
        _unscanned(store, "SELECT pg_advisory_lock(42)")
        with contextlib.suppress(StoreError):  # prepared, then refused for its lack of rows
            _unscanned(store, "PREPARE p AS SELECT 1")
        with pytest.raises(ReadOnlyError):
            _unscanned(store, "DELETE FROM runs")
        assert store.query("SHOW default_transaction_read_only")[1] == [("on",)]
        assert store.query("SELECT count(*) FROM pg_prepared_statements")[1] == [(0,)]
        assert _pid(store) == pid
        with _pg_conn(pg_admin_url) as conn:
            locks = conn.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
            ).fetchone()[0]
        assert locks == 0
    assert pg_checksum(pg_admin_url) == before


def test_a_connection_the_server_dropped_is_replaced(pg_run, pg_admin_url):
    url, run_id = pg_run
    with open_store(url, "read") as store:
        expected = store.summaries(run_id)
        pid = _pid(store)
        with _pg_conn(pg_admin_url) as conn:
            assert conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        assert store.summaries(run_id) == expected
        assert _pid(store) != pid
        assert _gone(pg_admin_url, pid)
