"""Connecting to a results database: URLs and paths, engines for writers and read-only
readers (SQLite pragmas, PostgreSQL read-only sessions), reading a database's schema revision
without changing it, and backing up a SQLite file. Opening a store (with its checks) is
`store.py`'s."""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import QueuePool

from seqbench.errors import StoreError, StoreUnwritableError
from seqbench.store import migrate
from seqbench.store.names import DEFAULT_DB, HEAD_REVISION, VERSION_TABLE
from seqbench.store.sqlite_file import check_sqlite_file, sqlite_revision_readonly, sqlite_uri

BUSY_TIMEOUT_S = 30.0
# How long a PostgreSQL writer waits for a lock (a migration's ALTER TABLE behind a reader idle
# in a transaction, which would otherwise hold `db upgrade` for ever) before it gives up and
# names the sessions in its way. SEQBENCH_LOCK_TIMEOUT overrides it (a PostgreSQL interval).
LOCK_TIMEOUT = "30s"
SEQBENCH_TABLES = {"runs", "metrics", "summaries", "curves", "sweeps", "baselines"}
LATER_TABLES = {"sweep_points", "answers", "answer_runs"}  # added by revisions 0003 and 0008


def resolve_url(db: str | os.PathLike | None) -> str:
    """A file path or a SQLAlchemy URL -> a SQLAlchemy URL. None means ./seqbench.db."""
    db = str(db) if db is not None else DEFAULT_DB
    if "://" in db:
        try:
            u = make_url(db)
        except ArgumentError as e:
            raise StoreError(f"not a valid database URL: {db!r}") from e
        if u.get_backend_name() == "sqlite":
            if u.database in (None, "", ":memory:") or "mode=memory" in db:
                raise StoreError(
                    f"{db!r} is an in-memory database: its results would vanish when the "
                    "command ends; give a file path"
                )
            if u.query:
                raise StoreError(
                    f"{db!r}: seqbench opens SQLite files itself and takes no URL options "
                    f"({', '.join(sorted(u.query))}); give the plain path (read commands never "
                    "write)"
                )
        return db
    # a plain path: percent-encoded in the URL, so '?', '#' and '%' stay part of the name
    path = str(Path(db).expanduser().resolve())
    return URL.create("sqlite", database=path).render_as_string(hide_password=False)


def sqlite_path(url: str) -> Path | None:
    """The file behind a sqlite URL, or None for other backends and in-memory databases."""
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or u.database in (None, "", ":memory:"):
        return None
    return Path(u.database)


def where(url: str) -> str:
    """The store as an error message names it: the SQLite file, or the URL without its
    password."""
    path = sqlite_path(url)
    return str(path) if path else make_url(url).render_as_string(hide_password=True)


def _make_engine(url: str, readonly: bool = False) -> Engine:
    u = make_url(url)
    path = sqlite_path(url)
    if readonly and path is not None:
        return _reader_engine(path)
    if u.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_S})
        # Take the write lock up front: a deferred transaction that later upgrades to a
        # writer can fail with "database is locked" without waiting for busy_timeout.
        _sqlite_session(
            engine,
            "BEGIN IMMEDIATE",
            "PRAGMA journal_mode = WAL",
            "PRAGMA foreign_keys = ON",
            "PRAGMA synchronous = NORMAL",
            guard=None if path is None else functools.partial(check_writable, path),
        )
        return engine
    try:
        if readonly and u.get_backend_name() == "postgresql":
            return create_engine(
                url,
                pool_pre_ping=True,
                connect_args={"options": "-c default_transaction_read_only=on"},
            )
        if u.get_backend_name() == "postgresql":
            return _postgres_writer(url)
        return create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError as e:
        raise StoreError(f"unsupported database URL {url!r}: {e}") from e
    except ModuleNotFoundError as e:
        raise StoreError(
            f"the driver for {u.get_backend_name()} is not installed ({e.name}); "
            "for PostgreSQL: pip install 'seqbench[postgres]'"
        ) from e


def connect_args(url: str, **options: Any) -> dict[str, Any]:
    """psycopg.connect() keyword arguments for a SQLAlchemy PostgreSQL URL, with server
    settings `options` given at connection start (they hold from the first statement on)."""
    u = make_url(url)
    kw: dict[str, Any] = {
        k: v
        for k, v in u.translate_connect_args(username="user", database="dbname").items()
        if v is not None
    }
    kw.update({k: v for k, v in u.query.items() if isinstance(v, str)})
    settings = " ".join(f"-c {k}={v}" for k, v in options.items())
    kw["options"] = f"{kw['options']} {settings}" if kw.get("options") else settings
    kw.setdefault("application_name", "seqbench-query")
    return kw


def lock_timeout() -> str:
    return os.environ.get("SEQBENCH_LOCK_TIMEOUT") or LOCK_TIMEOUT


def _postgres_writer(url: str) -> Engine:
    """A writer engine whose sessions wait at most lock_timeout() for a lock; when one gives
    up, the error names the sessions holding locks on the store's tables (a reader idle in a
    transaction, most likely), read over a connection of its own."""
    u = make_url(url)
    given = u.query.get("options")
    options = f"-c lock_timeout={lock_timeout()}"
    if isinstance(given, str) and given:
        options = f"{given} {options}"
    engine = create_engine(
        u.difference_update_query(["options"]), pool_pre_ping=True,
        connect_args={"options": options},
    )  # fmt: skip

    @event.listens_for(engine, "handle_error")
    def _name_blockers(context):
        orig = context.original_exception
        if getattr(orig, "sqlstate", None) != "55P03":  # lock_not_available
            return
        pid = None
        with contextlib.suppress(Exception):  # no connection to ask: every holder is named
            pid = context.connection.connection.dbapi_connection.info.backend_pid
        orig.add_note(f"seqbench-blockers: {lock_holders(url, pid)}")

    return engine


def lock_holders(url: str, pid: int | None) -> str:
    """The sessions (but `pid`) that hold a lock on a table of the store's database, in
    words: 'pid 123 (role seqbench_reader, idle in transaction for 41 s)'."""
    try:
        import psycopg

        with psycopg.connect(**connect_args(url), autocommit=True, connect_timeout=10) as c:
            rows = c.execute(
                "SELECT a.pid, a.usename, a.state, "
                "extract(epoch FROM now() - coalesce(a.xact_start, a.query_start))::int "
                "FROM pg_stat_activity a WHERE a.datname = current_database() "
                "AND a.pid <> pg_backend_pid() AND a.pid IS DISTINCT FROM %s "
                "AND a.pid IN (SELECT l.pid FROM pg_locks l JOIN pg_class c "
                "ON c.oid = l.relation WHERE l.granted AND c.relnamespace = "
                "'public'::regnamespace) ORDER BY 4 DESC NULLS LAST LIMIT 5",
                [pid],
            ).fetchall()
    except Exception as e:  # naming them is a courtesy: the lock error stands on its own
        return f"the sessions could not be read ({type(e).__name__})"
    if not rows:
        return "no session holds one now"
    return ", ".join(
        f"pid {p} (role {who}, {state or 'unknown state'} for {secs} s)"
        for p, who, state, secs in rows
    )


def _reader_engine(path: Path) -> Engine:
    """An engine that cannot change the file: opened with mode=ro, query_only on, and no
    journal-mode switch (a writer's connection turns a rollback-journal file into WAL).

    The pool is named: for a "sqlite://" URL SQLAlchemy would pick its SingletonThreadPool,
    which closes one thread's connection when a sixth thread connects, while the first may
    still be reading it (the dashboard's concurrent requests crashed in libsqlite3 and read
    "database disk image is malformed" that way). A QueuePool hands each connection to one
    thread at a time."""
    engine = create_engine(
        "sqlite://",
        poolclass=QueuePool,
        creator=lambda: sqlite3.connect(
            sqlite_uri(path), uri=True, timeout=BUSY_TIMEOUT_S, check_same_thread=False
        ),
    )
    _sqlite_session(engine, "BEGIN", "PRAGMA query_only = ON")  # a read snapshot, no lock
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


def _sqlite_session(
    engine: Engine, begin: str, *pragmas: str, guard: Callable[[], None] | None = None
) -> None:
    """Every SQLite connection of `engine`: SQLAlchemy, not pysqlite, decides when
    transactions begin (with `begin`, after `guard`, which may refuse), and each connection
    gets the busy timeout and `pragmas`."""

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


def _foreign_tables(url: str) -> list[str]:
    """Tables in the database that are not seqbench's (another application's data)."""
    ours = SEQBENCH_TABLES | LATER_TABLES | {"sqlite_sequence", VERSION_TABLE}
    path = sqlite_path(url)
    if path is not None:
        if not path.exists() or path.stat().st_size == 0:
            return []
        tables = sqlite_revision_readonly(path)[1]
        views = {"v_results", "v_results_all", "v_summaries"}
        return sorted(t for t in tables - ours - views if not t.startswith("sqlite_"))
    engine = _make_engine(url)
    try:
        with engine.connect() as conn:
            return sorted(set(inspect(conn).get_table_names()) - ours)
    finally:
        engine.dispose()


def inspect_revision(url: str, *, writable: bool = True) -> tuple[str | None, bool]:
    """(current revision, whether the database holds seqbench tables), read-only.
    `writable=False` accepts a SQLite file the user may not write."""
    path = sqlite_path(url)
    if path is not None:
        if not check_sqlite_file(path, writable=writable):
            return None, False
        rev, tables = sqlite_revision_readonly(path)
        return rev, bool(tables & SEQBENCH_TABLES)
    # One snapshot for both reads: under READ COMMITTED each statement sees the commits made
    # before it, so a creator committing between them showed its tables without the version
    # table read a moment earlier ("not created by seqbench" to the second of two sweeps
    # started at once on a new PostgreSQL database).
    engine = _make_engine(url)
    try:
        with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
            rev = migrate.current_revision(conn)
            tables = set(inspect(conn).get_table_names())
    except OperationalError as e:
        raise StoreError(f"cannot connect to {make_url(url).render_as_string()}: {e.orig}") from e
    finally:
        engine.dispose()
    return rev, bool(tables & SEQBENCH_TABLES)


def _check_revision(rev: str | None, has_tables: bool, where: str) -> bool:
    """True if the database must be created (migrated from empty); raise if it is unusable."""
    if rev == HEAD_REVISION:  # the common case decided without reading the migration scripts
        return False
    head = migrate.head_revision()
    if rev is None:
        if has_tables:
            raise StoreError(
                f"{where} has seqbench tables but no {migrate.VERSION_TABLE} table; "
                "it was not created by seqbench"
            )
        return True
    if rev not in migrate.known_revisions():
        raise StoreError(
            f"{where} is at revision {rev}, unknown to this seqbench (head {head}); "
            "it was written by a newer seqbench: upgrade seqbench"
        )
    raise StoreError(
        f"{where} is at revision {rev}, behind this seqbench's {head}: "
        "run `seqbench db upgrade` (SQLite files are backed up first)"
    )


def check_readable(db: str | os.PathLike | None) -> str:
    """The URL of the store at `db` once it is known to be readable as it is: what
    open_store(db, "read") checks (a missing store, another revision, a file that is not
    seqbench's raise StoreError), without building a Store. Creates and changes nothing."""
    url = resolve_url(db)
    named = where(url)
    rev, has_tables = inspect_revision(url, writable=False)
    if _check_revision(rev, has_tables, named):
        raise StoreError(f"no seqbench database at {named}")
    return url


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


def integrity_problems(db: str | os.PathLike | None, *, quick: bool = False) -> list[str]:
    """What SQLite's integrity_check (or the cheaper quick_check) finds wrong in the store's
    file, read-only: [] when sound, and for other backends or a file not there yet."""
    path = sqlite_path(resolve_url(db))
    if path is None or not path.is_file() or path.stat().st_size == 0:
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
