"""A SQLite store as a file, through the standard library alone: is it a SQLite file, may this
process read or write it, its schema revision read without SQLAlchemy, a read-only connection,
and the WAL files a reader leaves behind. The read-only commands (`report`, `query`) check a
store at head and read it here; anything else (a new, old or non-SQLite store) goes through
store.opening.open_store."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from seqbench.errors import StoreError
from seqbench.store.names import DEFAULT_DB, HEAD_REVISION, VERSION_TABLE


def check_sqlite_file(path: Path, *, writable: bool = True) -> bool:
    """Raise StoreError if `path` cannot hold a seqbench database; True if it exists with data.
    `writable=False` accepts a read-only file (for commands that only read)."""
    if path.is_dir():
        raise StoreError(f"database path {str(path)!r} is a directory, not a file")
    if path.exists():
        if path.stat().st_size == 0:
            return False
        if not _is_sqlite(path):
            raise StoreError(f"{str(path)!r} is not a SQLite database")
        if writable and not os.access(path, os.W_OK):
            raise StoreError(f"database file {str(path)!r} is not writable")
        return True
    parent = path.parent
    if not parent.is_dir():
        raise StoreError(f"cannot create database {str(path)!r}: directory {str(parent)!r} missing")
    if not os.access(parent, os.W_OK):
        raise StoreError(f"cannot create database {str(path)!r}: directory is not writable")
    return False


SQLITE_MAGIC = b"SQLite format 3\x00"


# One read-only descriptor per store file (device, inode), opened on its first check and never
# closed: closing any descriptor of a file drops every POSIX lock this process holds on it,
# SQLite's included (sqlite.org/howtocorrupt.html, §2.2).
_HEADER_FDS: dict[tuple[int, int], int] = {}


def _is_sqlite(path: Path) -> bool:
    """Whether the file starts with SQLite's header, read through a descriptor this process
    keeps. The dashboard checked each new reader's file with open() and close(): its open
    connections lost their shared lock, the last writer process to close then took itself for
    the only user, checkpointed and deleted the -wal and -shm files under them, and they read
    "database disk image is malformed" until closed (thousands of answers in 90 s beside a
    sweep, a memory command and short train runs; none since: tests/test_ui_soak.py,
    tests/store/test_reader_locks.py)."""
    try:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        fd = _HEADER_FDS.get(key)
        if fd is None:
            fd = _HEADER_FDS[key] = os.open(path, os.O_RDONLY)
        return os.pread(fd, len(SQLITE_MAGIC), 0) == SQLITE_MAGIC
    except OSError as e:
        raise StoreError(f"cannot read database file {str(path)!r}: {e.strerror}") from e


def sqlite_uri(path: Path | str, mode: str = "ro") -> str:
    """The `file:` URI of a SQLite file for sqlite3.connect(..., uri=True): the path
    percent-encoded, so a '?', '#' or '%' in a file name is part of the name, not the URI's
    query or fragment."""
    from urllib.parse import quote

    return f"file:{quote(str(path), safe='/')}?mode={mode}"


def connect_readonly(path: Path, timeout: float = 5.0) -> sqlite3.Connection:
    """A read-only connection to a SQLite file (mode=ro: it writes no byte). One thread uses
    it at a time (ReadStore keeps one per thread), but it may be closed from another."""
    try:
        return sqlite3.connect(sqlite_uri(path), uri=True, timeout=timeout, check_same_thread=False)
    except sqlite3.Error as e:
        raise StoreError(f"cannot open {str(path)!r}: {e}") from e


def tidy_wal(path: Path | None) -> None:
    """Remove the empty -wal and -shm files that reading a WAL store left beside it.

    SQLite deletes them when the last connection to the file closes, but only a connection
    that may write does: a read-only one (mode=ro, every read command's) leaves an empty -wal
    and a 32 KB -shm behind. So once a reader is closed, an empty WAL gets one connection
    that may write, which reads the schema version and closes: where it is the last, SQLite
    deletes both files; where another connection is open (a writer, another reader), it
    leaves them to that one, as SQLite would. A WAL with frames in it is left alone: its
    checkpoint writes to the file, and a read writes no byte of it. A file the user may not
    write is opened read-only by SQLite and nothing changes."""
    if path is None:
        return
    try:
        if os.stat(f"{path}-wal").st_size != 0:
            return
        con = sqlite3.connect(sqlite_uri(path, "rw"), uri=True, timeout=0)
    except (OSError, sqlite3.Error):  # no WAL: nothing to tidy
        return
    try:
        con.execute("PRAGMA schema_version").fetchone()
    except sqlite3.Error:
        pass
    finally:
        con.close()


def sqlite_revision_readonly(
    path: Path, con: sqlite3.Connection | None = None
) -> tuple[str | None, set[str]]:
    """Read the alembic revision and table names without writing a byte to the file (on
    `con` if given, which stays open; else on a connection of its own)."""
    own = con is None
    if con is None:
        con = connect_readonly(path)
    try:
        tables = {
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        }
        rev = None
        if VERSION_TABLE in tables:
            row = con.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
            rev = row[0] if row else None
        return rev, tables
    except sqlite3.OperationalError as e:
        if "disk I/O" in str(e) or "full" in str(e):  # SQLite needs room even to read a WAL
            raise StoreError(f"cannot read {str(path)!r}: {e} (is the disk full?)") from e
        raise StoreError(f"{str(path)!r} is not a usable SQLite database: {e}") from e
    except sqlite3.DatabaseError as e:
        raise StoreError(f"{str(path)!r} is not a usable SQLite database: {e}") from e
    finally:
        if own:
            con.close()


def plain_sqlite_path(db: str | os.PathLike | None) -> Path | None:
    """The file behind `db` when it is a plain path or a plain sqlite:/// URL, else None."""
    db = str(db) if db is not None else DEFAULT_DB
    if "://" not in db:
        return Path(db).expanduser().resolve()
    prefix = "sqlite:///"
    if db.startswith(prefix) and "?" not in db and len(db) > len(prefix):
        from urllib.parse import unquote

        return Path(unquote(db[len(prefix) :]))
    return None


def readable_sqlite(db: str | os.PathLike | None) -> Path | None:
    """The SQLite file behind `db` if it is a seqbench store at head, checked read-only and
    without SQLAlchemy; None when `store.open_store` must decide (a URL of another kind, a
    missing or empty file, a store at another revision). Bad files raise StoreError."""
    path = plain_sqlite_path(db)
    if path is None or not check_sqlite_file(path, writable=False):
        return None
    rev, _tables = sqlite_revision_readonly(path)
    return path if rev == HEAD_REVISION else None


def open_readable_sqlite(db: str | os.PathLike | None) -> tuple[Path, sqlite3.Connection] | None:
    """readable_sqlite's check on the connection the reads will use: (path, an open
    read-only connection) for a SQLite store at head, its revision read once; None where
    store.open_store must decide."""
    path = plain_sqlite_path(db)
    if path is None or not check_sqlite_file(path, writable=False):
        return None
    con = connect_readonly(path, timeout=30)
    try:
        rev, _tables = sqlite_revision_readonly(path, con)
    except BaseException:
        con.close()
        raise
    if rev != HEAD_REVISION:
        con.close()
        return None
    return path, con
