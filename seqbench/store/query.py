"""`seqbench query`: SQL over the results, kept read-only by the database itself.

The walls are the database's, not a parser's:
- SQLite: the file is opened with mode=ro, PRAGMA query_only is on, and an authorizer (what
  datasette does) denies every action that writes whatever the statement text (including
  ATTACH, which could create a file, and pragmas given a value); the sqlite3 module runs one
  statement per call and refuses a second.
- PostgreSQL (`pg_query.py`): the extended query protocol (the server refuses a second
  statement), a READ ONLY transaction that is always rolled back, server-side timeouts,
  streamed rows, and a least-privilege reader role for shared stores.

The scanner below stays as a friendly early message (one statement per call; a write keyword
is refused before the database sees it), not as what keeps the store safe: the tests switch
it off and throw the escapes at the databases alone. Both backends stop a statement after
`timeout` seconds and refuse results of more than `max_rows` rows (flags raise both).
"""

from __future__ import annotations

import math
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seqbench.errors import ReadOnlyError, StoreError, UsageError
from seqbench.store.sql_text import skip_quoted
from seqbench.store.sqlite_file import open_readable_sqlite, readable_sqlite, sqlite_uri

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
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_ROWS = 100_000
# bytes of result values (text and blobs by their length, numbers as 8): 32 MiB, the default
# row cap at 300 bytes a row. Printing a result takes several times its size (a 100 MB value
# peaked at 721 MB as CSV, 834 MB and two minutes as a table), so the cap bounds that too.
DEFAULT_MAX_BYTES = 32 * 2**20
# SQLite's own ceiling on one string or blob (SQLITE_MAX_LENGTH, compiled in)
_SQLITE_MAX_LENGTH = 1_000_000_000
# First keywords of statements that change something (or a session or transaction): refused
# before the database sees them. Anything else not a read goes to the database, which then
# reports a syntax error for a typo ("SELEC 1") instead of a refused write.
_WRITE_WORDS = {
    "INSERT",
    "UPDATE",
    "DELETE",
    "REPLACE",
    "UPSERT",
    "MERGE",
    "CREATE",
    "DROP",
    "ALTER",
    "TRUNCATE",
    "ATTACH",
    "DETACH",
    "VACUUM",
    "REINDEX",
    "ANALYZE",
    "ANALYSE",
    "BEGIN",
    "START",
    "COMMIT",
    "END",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "GRANT",
    "REVOKE",
    "COPY",
    "SET",
    "RESET",
    "LOCK",
    "CALL",
    "DO",
    "EXECUTE",
    "PREPARE",
    "DEALLOCATE",
    "LISTEN",
    "NOTIFY",
    "UNLISTEN",
    "LOAD",
    "DISCARD",
    "CLUSTER",
    "REFRESH",
    "COMMENT",
    "SECURITY",
    "IMPORT",
    "CHECKPOINT",
    "DECLARE",
    "FETCH",
    "MOVE",
    "CLOSE",
    "ABORT",
}
_WORD = re.compile(r"[A-Za-z_]+")


def split_statement(sql: str) -> tuple[str, str]:
    """(the statement without leading comments or a trailing `;`, its first keyword upper-case).

    Raises StoreError for an empty text, more than one statement, or an unterminated quote or
    comment. Skips '…' strings, "…" names, $tag$…$tag$ bodies and -- / /* */ comments, so a
    `;` inside them does not count.
    """
    i, n = 0, len(sql)
    start = None  # index of the statement's first character (after comments and spaces)
    end = None  # index of the first top-level ';'
    while i < n:
        c = sql[i]
        if c in " \t\r\n\f":
            i += 1
        elif sql.startswith(("--", "/*"), i):
            i = skip_quoted(sql, i)
        elif end is not None:
            raise StoreError(
                "seqbench query runs one statement per call; found more after the first ';'"
            )
        elif c == ";":
            if start is None:
                raise StoreError("SQL error: a ';' with no statement before it")
            end, i = i, i + 1
        else:
            if start is None:
                start = i
            j = skip_quoted(sql, i)  # past a quote, or the next character
            i = j if j > i else i + 1
    if start is None:
        raise StoreError("no SQL given")
    statement = sql[start:end].rstrip()
    word = _WORD.match(statement)
    return statement, (word.group(0).upper() if word else "")


def _authorizer(action: int, arg1, arg2, _db, _trigger) -> int:
    if action in _WRITE_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        if name in _SIDE_EFFECT_PRAGMAS or (
            arg2 is not None and name not in _READ_PRAGMAS_WITH_ARG
        ):
            return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def coerce_param(value: str) -> Any:
    """Bound parameters from the command line: int, then float, else the string itself."""
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


MAX_TIMEOUT_S = 2_147_483  # PostgreSQL's statement_timeout is a 32-bit count of ms
FETCH_BATCH = 1000


def run_query(
    db: Any,
    sql: str,
    params: dict[str, Any] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_bytes: int = DEFAULT_MAX_BYTES,
    note: Callable[[str], None] | None = None,
) -> tuple[list[str], list[tuple]]:
    """Run one read-only statement; return (column names, rows). Writes raise ReadOnlyError;
    a statement running past `timeout` seconds or returning more than `max_rows` rows raises
    StoreError naming the flag that raises the limit, and so does a result whose values
    pass `max_bytes` (SQLite refuses to build one string or blob longer than that; PostgreSQL's
    rows are streamed one at a time and counted as they come). `note` (if given) is told, in one
    line, which wall holds on a PostgreSQL role that could write. `db`: a path or URL (None:
    the default store), or a Reader (a store's one connection; ReadStore.query)."""
    reader = db if isinstance(db, Reader) else None
    db = reader.db if reader is not None else getattr(db, "url", db)  # a Store: its URL
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT_S):
        raise UsageError(
            f"--timeout must be a number of seconds in (0, {MAX_TIMEOUT_S}], got {timeout:.6g}"
        )
    if max_rows < 1:
        raise UsageError(f"--max-rows must be at least 1, got {max_rows}")
    if max_bytes < 1:
        raise UsageError(f"--max-bytes must be at least 1, got {max_bytes}")
    _check_text(sql, "the SQL text")
    for name, value in (params or {}).items():
        _check_text(name, "a parameter name")
        if isinstance(value, str):
            _check_text(value, f"parameter {name!r}")
        elif isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise UsageError(f"parameter {name!r} does not fit in a 64-bit integer")
    sql, word = split_statement(sql)
    if word in _WRITE_WORDS:
        raise ReadOnlyError(f"seqbench query is read-only: {word} statements are refused")
    if reader is not None and reader.connection is not None:
        return _run_sqlite(
            reader.path, sql, params or {}, _Limits(timeout, max_rows, max_bytes), reader
        )
    checked = reader is not None and reader.checked
    return _run_scanned(db, sql, params or {}, _Limits(timeout, max_rows, max_bytes), note, checked)


class Reader:
    """A store's reads over one connection. A SQLite store at head is opened read-only once,
    its revision read once on that connection, and every statement given to run_query with
    this reader runs on it behind the walls of `seqbench query` (query_only, the authorizer,
    the deadline). Any other store (PostgreSQL, or a SQLite file store.open_store must check
    first): each statement by run_query's own path, the store checked first unless
    `checked` (an open Store's reader: it was checked when it was opened). The ReadStore that
    holds it closes it."""

    def __init__(self, db: Any, opened=None, *, checked: bool = False):

        self.db = getattr(db, "url", db)
        self.checked = checked
        opened = opened if opened is not None else open_readable_sqlite(self.db)
        self.path, self.connection = opened if opened else (None, None)
        if self.connection is not None:
            self.connection.execute("PRAGMA query_only = ON")
            self.connection.set_authorizer(_authorizer)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def _check_text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(f"{what} is not valid UTF-8 (byte at position {e.start})") from None


def _run_scanned(db, sql: str, params: dict[str, Any], limits: _Limits, note=None, checked=False):
    """The statement, past the scanner, to the database, whose own walls hold it read-only
    (the tests call this directly to show that they hold without the scanner)."""
    # A SQLite store at head is read with the standard library alone (no SQLAlchemy import);
    # anything else is checked by open_store first (read-only: it creates nothing), unless
    # an open Store's reader says it was checked when it was opened.
    path = readable_sqlite(db)
    if path is None:
        from seqbench.store.engine import check_readable, resolve_url, sqlite_path

        url = resolve_url(db) if checked else check_readable(db)  # raises for an unusable one
        path = sqlite_path(url)
        if path is None:
            from sqlalchemy.engine import make_url

            if make_url(url).get_backend_name() != "postgresql":
                raise StoreError("seqbench query reads SQLite and PostgreSQL stores")
            from seqbench.store.pg_query import run_postgres

            return run_postgres(url, sql, params, limits, note)
    return _run_sqlite(path, sql, params, limits)


@dataclass(frozen=True)
class _Limits:
    timeout: float
    max_rows: int
    max_bytes: int = DEFAULT_MAX_BYTES

    def rows(self, batches) -> list[tuple]:
        """Rows from an iterator of batches, stopping (and refusing) past max_rows or
        max_bytes: memory is bounded by the caps, not by the result."""
        out: list[tuple] = []
        size = 0
        for batch in batches:
            for r in batch:
                size += self.row_bytes(r)
                out.append(tuple(r))
            if len(out) > self.max_rows:
                raise self.too_many()
            if size > self.max_bytes:
                raise self.too_big()
        return out

    @staticmethod
    def row_bytes(row) -> int:
        """A row's size as the byte cap counts it: text and blobs by length, the rest as 8."""
        return sum(len(v) if isinstance(v, (str, bytes, bytearray, memoryview)) else 8 for v in row)

    def too_big(self) -> StoreError:
        return StoreError(
            f"the query's result is larger than {self.max_bytes} bytes; select fewer or "
            "shorter values, or raise --max-bytes"
        )

    def too_many(self) -> StoreError:
        return StoreError(
            f"the query returned more than {self.max_rows} rows; add a LIMIT or raise --max-rows"
        )

    def timed_out(self) -> StoreError:
        return StoreError(
            f"the query ran longer than {self.timeout:g} s and was stopped; raise --timeout"
        )


def _batches(fetchmany, size: int = FETCH_BATCH):
    while batch := fetchmany(size):
        yield batch


def _run_sqlite(path, sql: str, params: dict[str, Any], limits: _Limits, reader=None):
    """One statement on `reader`'s connection, or on a connection of its own."""
    if reader is not None:
        con = reader.connection
    else:
        con = sqlite3.connect(sqlite_uri(path, "ro"), uri=True, timeout=30)
        con.execute("PRAGMA query_only = ON")
        con.set_authorizer(_authorizer)
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
