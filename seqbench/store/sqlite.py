"""SQLite, the default backend (store/dialect.py's Dialect for a file store): its engines (a
writer that takes the write lock up front in WAL mode, a reader that cannot change the file), the
walls that hold user SQL read-only (the file opened mode=ro, PRAGMA query_only, and an authorizer,
as datasette does, that denies every action that writes whatever the statement text, ATTACH and
pragmas given a value included; the sqlite3 module runs one statement per call), its revision
read without SQLAlchemy, its backup and its integrity check.

Standard library only at import: the lean read path (`report`, `query` on a store at head) runs
user SQL here without SQLAlchemy, which the engines import when they are made."""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqbench.errors import ReadOnlyError, StoreError, StoreUnwritableError, UsageError
from seqbench.store.sqlite_file import check_sqlite_file, sqlite_revision_readonly, sqlite_uri

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

BUSY_TIMEOUT_S = 30.0
# SQLite's own ceiling on one string or blob (SQLITE_MAX_LENGTH, compiled in)
_SQLITE_MAX_LENGTH = 1_000_000_000
FETCH_BATCH = 1000

_WRITE_ACTIONS = {
    sqlite3.SQLITE_INSERT: "INSERT",
    sqlite3.SQLITE_UPDATE: "UPDATE",
    sqlite3.SQLITE_DELETE: "DELETE",
    sqlite3.SQLITE_ATTACH: "ATTACH",
    sqlite3.SQLITE_DETACH: "DETACH",
    sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE",
    sqlite3.SQLITE_REINDEX: "REINDEX",
    sqlite3.SQLITE_ANALYZE: "ANALYZE",
    sqlite3.SQLITE_CREATE_INDEX: "CREATE INDEX",
    sqlite3.SQLITE_CREATE_TABLE: "CREATE TABLE",
    sqlite3.SQLITE_CREATE_TEMP_INDEX: "CREATE INDEX",
    sqlite3.SQLITE_CREATE_TEMP_TABLE: "CREATE TABLE",
    sqlite3.SQLITE_CREATE_TEMP_TRIGGER: "CREATE TRIGGER",
    sqlite3.SQLITE_CREATE_TEMP_VIEW: "CREATE VIEW",
    sqlite3.SQLITE_CREATE_TRIGGER: "CREATE TRIGGER",
    sqlite3.SQLITE_CREATE_VIEW: "CREATE VIEW",
    sqlite3.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE",
    sqlite3.SQLITE_DROP_INDEX: "DROP INDEX",
    sqlite3.SQLITE_DROP_TABLE: "DROP TABLE",
    sqlite3.SQLITE_DROP_TEMP_INDEX: "DROP INDEX",
    sqlite3.SQLITE_DROP_TEMP_TABLE: "DROP TABLE",
    sqlite3.SQLITE_DROP_TEMP_TRIGGER: "DROP TRIGGER",
    sqlite3.SQLITE_DROP_TEMP_VIEW: "DROP VIEW",
    sqlite3.SQLITE_DROP_TRIGGER: "DROP TRIGGER",
    sqlite3.SQLITE_DROP_VIEW: "DROP VIEW",
    sqlite3.SQLITE_DROP_VTABLE: "DROP VIRTUAL TABLE",
    sqlite3.SQLITE_TRANSACTION: "a transaction statement",
    sqlite3.SQLITE_SAVEPOINT: "SAVEPOINT",
}
# Pragmas that change state even without "= value".
_SIDE_EFFECT_PRAGMAS = {
    "optimize",
    "wal_checkpoint",
    "incremental_vacuum",
    "shrink_memory",
    "vacuum",
}
# Pragmas whose argument names a schema object rather than setting a value.
_READ_PRAGMAS_WITH_ARG = {
    "table_info",
    "table_xinfo",
    "table_list",
    "index_info",
    "index_xinfo",
    "index_list",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
}


def authorizer(action: int, arg1, arg2, _db, _trigger) -> int:
    if action in _WRITE_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _SIDE_EFFECT_PRAGMAS or (
            arg2 is not None and name not in _READ_PRAGMAS_WITH_ARG
        ):
            return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _batches(fetchmany, size: int = FETCH_BATCH):
    while batch := fetchmany(size):
        yield batch


def run_sqlite(path, sql: str, params: dict[str, Any], limits, reader=None):
    """One statement on `reader`'s connection, or on a connection of its own."""
    if reader is not None:
        con = reader.connection
    else:
        con = sqlite3.connect(sqlite_uri(path, "ro"), uri=True, timeout=30)
        con.execute("PRAGMA query_only = ON")
        con.set_authorizer(authorizer)
    deadline = time.monotonic() + limits.timeout
    try:
        # called every 10k virtual-machine steps; a true result interrupts the statement
        con.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
        # no single string or blob longer than the byte cap is ever built
        length = con.setlimit(
            sqlite3.SQLITE_LIMIT_LENGTH, min(limits.max_bytes, _SQLITE_MAX_LENGTH)
        )
        try:
            cur = con.execute(sql, params)
            rows = limits.rows(_batches(cur.fetchmany))
        except sqlite3.OperationalError as e:
            if str(e) == "interrupted":
                raise limits.timed_out() from e
            raise StoreError(f"SQL error: {e}") from e
        except sqlite3.DataError as e:
            if "too big" in str(e):
                raise limits.too_big() from e
            raise StoreError(f"SQL error: {e}") from e
        except sqlite3.DatabaseError as e:
            msg = str(e)
            if "too big" in msg:
                raise limits.too_big() from e
            if "not authorized" in msg or "readonly" in msg:
                raise ReadOnlyError(
                    "seqbench query is read-only: the statement would write and was refused"
                ) from e
            raise StoreError(f"SQL error: {msg}") from e
        except (sqlite3.ProgrammingError, OverflowError) as e:
            raise StoreError(f"SQL error: {e}") from e
        cols = [d[0] for d in cur.description or []]
        return cols, rows
    finally:
        con.set_progress_handler(None, 0)
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, length)
        if reader is None:
            con.close()


def _reader_engine(path: Path) -> Engine:
    """An engine that cannot change the file: opened with mode=ro, query_only on, and no
    journal-mode switch (a writer's connection turns a rollback-journal file into WAL).

    The pool is named: for a "sqlite://" URL SQLAlchemy would pick its SingletonThreadPool,
    which closes one thread's connection when a sixth thread connects, while the first may
    still be reading it (the dashboard's concurrent requests crashed in libsqlite3 and read
    "database disk image is malformed" that way). A QueuePool hands each connection to one
    thread at a time."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import QueuePool

    engine = create_engine(
        "sqlite://",
        poolclass=QueuePool,
        creator=lambda: sqlite3.connect(
            sqlite_uri(path), uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False
        ),
    )
    _session(engine, "BEGIN", "PRAGMA query_only = ON")  # a read snapshot, no lock
    return engine


def check_writable(path: Path) -> None:
    """Refuse, in one line, a transaction on a store whose files can no longer be written
    (made immutable or read-only under a running command). SQLite maps the -shm file into
    memory and writes to it on every transaction; once the file is immutable, that write is a
    SIGBUS that kills the process ("Bus error", exit 135) where no error can be caught. So
    each writer transaction looks first: a few microseconds."""
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if f.exists() and not os.access(f, os.W_OK):
            raise StoreUnwritableError(
                f"the store {path} can no longer be written ({f.name} is not writable: made "
                "read-only or immutable while this command ran); nothing half-written was kept"
            )


def _session(
    engine: Engine, begin: str, *pragmas: str, guard: Callable[[], None] | None = None
) -> None:
    """Every SQLite connection of `engine`: SQLAlchemy, not pysqlite, decides when
    transactions begin (with `begin`, after `guard`, which may refuse), and each connection
    gets the busy timeout and `pragmas`."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_con, _record):
        dbapi_con.isolation_level = None
        cur = dbapi_con.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        for pragma in pragmas:
            cur.execute(pragma)
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        if guard is not None:
            guard()
        conn.exec_driver_sql(begin)


def backup_sqlite(path: Path) -> Path:
    """Copy a SQLite database (WAL-safe, via the backup API) to a timestamped file beside it."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    dest = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while dest.exists():
        dest = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    src = sqlite3.connect(sqlite_uri(path), uri=True)
    try:
        dst = sqlite3.connect(dest)
        with dst:
            src.backup(dst)
        dst.close()
    finally:
        src.close()
    return dest


def file_of(url: str) -> Path:
    """The file behind a SQLite URL (resolve_url refuses in-memory ones)."""
    from sqlalchemy.engine import make_url

    return Path(make_url(url).database)


class SQLite:
    """The Dialect of a SQLite file store."""

    name = "sqlite"

    def engine(self, url: str, *, readonly: bool = False) -> Engine:
        """A writer: every transaction BEGIN IMMEDIATE (a deferred one that later needs the
        write lock can fail with "database is locked" without waiting for busy_timeout), WAL,
        foreign keys, and a look first that the file can still be written (check_writable).
        A reader: _reader_engine."""
        path = file_of(url)
        if readonly:
            return _reader_engine(path)
        from sqlalchemy import create_engine

        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})
        _session(
            engine,
            "BEGIN IMMEDIATE",
            "PRAGMA journal_mode = WAL",
            "PRAGMA foreign_keys = ON",
            "PRAGMA synchronous = NORMAL",
            guard=functools.partial(check_writable, path),
        )
        return engine

    def inspect(self, url: str, *, writable: bool = True) -> tuple[str | None, set[str]]:
        """(revision, table and view names), read with the standard library, changing nothing;
        (None, set()) for a file not there yet or empty. `writable=False` accepts a file the
        user may not write."""
        path = file_of(url)
        if not check_sqlite_file(path, writable=writable):
            return None, set()
        return sqlite_revision_readonly(path)

    def config_field(self, name: str, kind: str) -> str:
        return f"json_extract(r.config, '$.{name}')"

    def tag_equals(self, key: str, value: str, name: str) -> tuple[str, dict[str, str]]:
        # the path's label as the stored JSON spells the key (json.dumps, as SQLAlchemy
        # wrote it: é as \u00e9), which SQLite's path compares as it stands; a `"` ends the
        # label whatever escapes it
        if '"' in key:
            raise UsageError(
                f"a tag key with a double quote ({key!r}) cannot be matched in a SQLite store"
            )
        sql = f"json_extract(r.tags, :{name}_path) = :{name}_value"
        return sql, {f"{name}_path": "$." + json.dumps(key), f"{name}_value": value}

    def run_sql(self, url: str, sql: str, params: dict[str, Any], limits, note=None, reader=None):
        """On a connection of its own: a reader of a file at head holds one from its start
        (query.Reader), and this file was not one."""
        return run_sqlite(file_of(url), sql, params, limits)

    def backup(self, url: str) -> Path | None:
        return backup_sqlite(file_of(url))

    def integrity(self, url: str, *, quick: bool = False) -> list[str]:
        """What SQLite's integrity_check (or the cheaper quick_check) finds wrong in the file,
        read-only: [] when sound, and for a file not there yet."""
        path = file_of(url)
        if not path.is_file() or path.stat().st_size == 0:
            return []
        pragma = "quick_check" if quick else "integrity_check"
        try:
            con = sqlite3.connect(sqlite_uri(path), uri=True, timeout=BUSY_TIMEOUT_S)
            try:
                rows = [r[0] for r in con.execute(f"PRAGMA {pragma}")]
            finally:
                con.close()
        except sqlite3.DatabaseError as e:
            return [str(e)]
        return [] if rows == ["ok"] else rows


DIALECT = SQLite()
