"""What the store needs before (and often instead of) SQLAlchemy: the value codec for
non-finite floats, the SQLite file checks, and the schema's head revision.

Nothing here imports SQLAlchemy or alembic at import time (describe_database_error imports
it when a failure is described), so the read-only commands (`report`, `query`) can
check a SQLite store at head and read it through the standard library alone; anything else (a
new, old or non-SQLite store) goes through `store.open_store`.
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seqbench.errors import StoreError, UsageError, first_line

DEFAULT_DB = "seqbench.db"
VERSION_TABLE = "seqbench_alembic_version"
# The newest migration in migrations/versions (tests/store/test_migrations.py checks that this
# equals alembic's head): compared against a store's revision without importing alembic.
HEAD_REVISION = "0008"

# crashed: the process running it died (a signal, the OOM killer), not the config's fault; a
# plain re-run of the sweep runs it again
RUN_STATUSES = ("running", "completed", "failed", "diverged", "interrupted", "crashed")
RUN_KINDS = ("train", "stress", "bench")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def float_text(x: float) -> float | str:
    """The one codec of non-finite floats as text: nan, inf, -inf become 'nan', 'inf', '-inf'
    (JSON has none of them); a finite float is itself. The store's value_kind column, the
    baseline files and the CLI's json/csv output all use it."""
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def split_float(x: float) -> tuple[float | None, str]:
    """float -> (value or None, value_kind) so that nan/inf/-inf round-trip exactly."""
    text = float_text(x)
    return (text, "finite") if isinstance(text, float) else (None, text)


def join_float(value: float | None, kind: str) -> float:
    """Inverse of :func:`split_float`."""
    if kind == "finite":
        return float(value) if value is not None else math.nan
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[kind]


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


# A run's process sends a heartbeat every HEARTBEAT_S seconds (SEQBENCH_HEARTBEAT_S) from a
# thread of its own; a run whose last one is older than its stale limit (kept in its environment
# as stale_after, STALE_BEATS heartbeats) is stale. DEFAULT_STALE_S covers rows that say none.
HEARTBEAT_S = 10.0
STALE_BEATS = 6
DEFAULT_STALE_S = 120.0


def heartbeat_interval() -> float:
    raw = os.environ.get("SEQBENCH_HEARTBEAT_S", "")
    try:
        value = float(raw) if raw else HEARTBEAT_S
    except ValueError:
        return HEARTBEAT_S
    return value if 0 < value < 86_400 else HEARTBEAT_S


def decode_json(v: Any) -> dict:
    """A JSON column as a dict: SQLite hands JSON back as text, PostgreSQL's driver as a dict;
    NULL (or anything not an object) is {}."""
    if isinstance(v, str):
        v = json.loads(v) if v else {}
    return v if isinstance(v, dict) else {}


def describe_database_error(e: BaseException) -> str | None:
    """One line for a failure of the database itself (disk full, a file gone, a corrupt page,
    a lost server) or of the disk under it; None for anything else (a bug: the traceback).
    The drivers' and SQLAlchemy's exceptions are told apart here, in store/, by class."""
    import errno

    from sqlalchemy.exc import SQLAlchemyError

    orig = getattr(e, "orig", None)  # SQLAlchemy wraps the driver's exception
    if isinstance(e, SQLAlchemyError) and orig is not None:
        e = orig
    driver = isinstance(e, sqlite3.Error)
    if not driver:
        try:
            import psycopg

            driver = isinstance(e, psycopg.Error)
        except ImportError:
            pass
    if driver and getattr(e, "sqlstate", None) == "55P03":  # a PostgreSQL lock_timeout
        held = next((n.split(": ", 1)[1] for n in getattr(e, "__notes__", ())
                     if n.startswith("seqbench-blockers: ")), "not read")  # fmt: skip
        return (
            f"the database refused to wait longer for a lock ({first_line(e)}); held by: "
            f"{held}. End those sessions (SELECT pg_terminate_backend(pid)) or retry; nothing "
            "was written"
        )
    if driver:
        return (
            f"the database failed: {first_line(e)} (each write is one transaction; a run it left "
            "`running` is marked crashed by the next command)"
        )
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EROFS, errno.EDQUOT):
        return f"cannot write: {e.strerror}"
    return None


_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def _ident_char(c: str) -> bool:
    """True for a character that continues an identifier (a '$' after one is not a quote)."""
    return c.isalnum() or c in "_$"


def skip_quoted(sql: str, i: int) -> int:
    """The index just past the SQL quote or comment that starts at sql[i]: '…' and "…" (a
    doubled quote inside is the quote), E'…' (backslash escapes too), $tag$…$tag$, -- to the
    end of the line, /* … */ (nested, as PostgreSQL nests them); `i` itself when none starts
    there. Raises StoreError for one left open. The one reading of SQL text that `query`'s
    scanner (query.split_statement) and its PostgreSQL parameters (pg_query.bind_parameters)
    share."""
    n, c = len(sql), sql[i]
    prev = sql[i - 1] if i else " "
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return n if j < 0 else j + 1
    if sql.startswith("/*", i):
        depth, j = 1, i + 2
        while depth and j < n:  # PostgreSQL nests block comments
            if sql.startswith("/*", j):
                depth, j = depth + 1, j + 2
            elif sql.startswith("*/", j):
                depth, j = depth - 1, j + 2
            else:
                j += 1
        if depth:
            raise StoreError("SQL error: unterminated /* comment")
        return j
    if c == "'" and prev in "eE" and (i < 2 or not _ident_char(sql[i - 2])):
        j = i + 1  # E'...': backslash escapes as well as doubled quotes
        while (j < n and sql[j] != "'") or sql.startswith("''", j):
            j += 2 if sql[j] == "\\" or sql.startswith("''", j) else 1
        if j >= n:
            raise StoreError("SQL error: unterminated ' quote")
        return j + 1
    if c in "'\"":
        j = i + 1
        while True:  # a doubled quote is an escaped quote
            j = sql.find(c, j)
            if j < 0:
                raise StoreError(f"SQL error: unterminated {c} quote")
            if sql.startswith(c * 2, j):
                j += 2
                continue
            return j + 1
    if c == "$" and not _ident_char(prev) and (m := _DOLLAR_TAG.match(sql, i)):
        j = sql.find(m.group(0), m.end())
        if j < 0:
            raise StoreError(f"SQL error: unterminated {m.group(0)} quote")
        return j + len(m.group(0))
    return i


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (the state first, the start time
    at index 19); None when there is no such file (no such process, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def process_start(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot), which tells it from a later
    process given the same pid; None off Linux or for no such process."""
    fields = _proc_stat(pid)
    return fields[19] if fields else None


def process_alive(host: str | None, pid: Any, born: str | None = None) -> bool | None:
    """Whether the process `pid` on `host` is alive: None when it cannot be told from here
    (another host, no pid). On Linux a zombie (killed, its parent not yet reaping it) is dead,
    which os.kill(pid, 0) does not tell; with `born` (process_start's), so is another process
    given the same pid."""
    import socket

    if not host or host != socket.gethostname() or pid is None:
        return None
    try:
        pid = int(pid)
    except (ValueError, TypeError):
        return None
    if 0 < pid < 2**31 and os.path.isdir("/proc"):
        fields = _proc_stat(pid)
        if fields is None:
            return False
        return fields[0] not in ("Z", "X") and (born is None or fields[19] == born)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return None
    return True


def stale_reason(env: Mapping[str, Any] | None, beat, now) -> str | None:
    """Why a running run with environment `env` and last heartbeat `beat` is stale, or None."""
    env = env or {}
    host = env.get("driver_host") or env.get("host")
    pid = env.get("driver_pid", env.get("pid"))
    if process_alive(host, pid) is False:
        return f"stale: its process ({pid} on {host}) is gone (killed, or out of memory)"
    try:
        limit = float(env.get("stale_after") or DEFAULT_STALE_S)
    except (TypeError, ValueError):
        limit = DEFAULT_STALE_S
    if beat is None or (now - beat).total_seconds() > limit:
        return f"stale: no heartbeat for more than {limit:g} s (its process died or hung)"
    return None


def metric_rows(run_id: int, rows: Iterable[tuple[str, int, float]]) -> list[dict]:
    """(key, step, value) -> metrics rows; a non-finite value keeps its kind."""
    out = []
    for key, step, value in rows:
        v, kind = split_float(value)
        row = {"run_id": run_id, "key": key, "step": int(step), "value": v, "value_kind": kind}
        out.append(row)
    return out


# -- names people give to what the store keeps ----------------------------------------------------
def check_label(what: str, name: str) -> str:
    """A name people give (a run, a sweep, a baseline, an answer): 1-200 printable characters
    (the store's name columns hold 200), not all spaces; else a one-line UsageError."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or not name.isprintable():
        raise UsageError(f"a {what} name is 1-200 printable characters, got {name!r}")
    return name


def check_run_name(name: str | None) -> str | None:
    """A run name as given, or a one-line error: a label, not only digits (a number names a
    run by its id) and not hex and dashes alone (that names a run by its uuid prefix)."""
    if name is None:
        return None
    check_label("run", name)
    if name.isascii() and name.isdecimal():
        raise UsageError(f"a run name cannot be a number ({name!r} would read as a run id)")
    if re.fullmatch(r"[0-9a-fA-F-]+", name):
        raise UsageError(
            f"a run name cannot look like a uuid prefix ({name!r} could name another run by "
            "its uuid): add a letter outside a-f"
        )
    return name
