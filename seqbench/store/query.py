"""`seqbench query`: SQL over the results, kept read-only by the database itself.

The walls are the database's, not a parser's:
- SQLite (`sqlite.py`): the file is opened with mode=ro, PRAGMA query_only is on, and an
  authorizer (what datasette does) denies every action that writes whatever the statement text
  (including ATTACH, which could create a file, and pragmas given a value); the sqlite3 module
  runs one statement per call and refuses a second.
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seqbench.errors import ReadOnlyError, StoreError, UsageError
from seqbench.store.sql_text import skip_quoted
from seqbench.store.sqlite import authorizer, run_sqlite
from seqbench.store.sqlite_file import open_readable_sqlite, readable_sqlite

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_ROWS = 100_000
# bytes of result values (text and blobs by their length, numbers as 8): 32 MiB, the default
# row cap at 300 bytes a row. Printing a result takes several times its size (a 100 MB value
# peaked at 721 MB as CSV, 834 MB and two minutes as a table), so the cap bounds that too.
DEFAULT_MAX_BYTES = 32 * 2**20
NO_BYTE_CAP = 2**62  # the library's own reads (results.py): every row, whatever its size
# The library's read API reads everything a store holds: no row or time limit of `query`.
API_LIMITS = {"timeout": 24 * 3600.0, "max_rows": 2**31 - 2, "max_bytes": NO_BYTE_CAP}
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


def coerce_param(value: str) -> Any:
    """Bound parameters from the command line: int, then float, else the string itself."""
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return value


MAX_TIMEOUT_S = 2_147_483  # PostgreSQL's statement_timeout is a 32-bit count of ms


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
            f"`timeout` must be a number of seconds in (0, {MAX_TIMEOUT_S}], got {timeout:.6g}"
        )
    if max_rows < 1:
        raise UsageError(f"`max_rows` must be at least 1, got {max_rows}")
    if max_bytes < 1:
        raise UsageError(f"`max_bytes` must be at least 1, got {max_bytes}")
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
    limits = _Limits(timeout, max_rows, max_bytes)
    if reader is not None and reader.path is not None:
        return run_sqlite(reader.path, sql, params or {}, limits, reader)
    return _run_scanned(db, sql, params or {}, limits, note, reader)


class Reader:
    """A store's reads over one connection. A SQLite store at head is opened read-only once,
    its revision read once on that connection, and every statement given to run_query with
    this reader runs on it behind the walls of `seqbench query` (query_only, the authorizer,
    the deadline). A PostgreSQL store: the backend's connection, opened on the first
    statement and kept (pg_query.run_postgres), each statement behind its walls. A SQLite
    file store.open_store must check first: each statement by run_query's own path. The store
    is checked before the first statement unless `checked` (an open Store's reader: it was
    checked when it was opened). The ReadStore that holds it closes it."""

    def __init__(self, db: Any, opened=None, *, checked: bool = False):

        self.db = getattr(db, "url", db)
        self.checked = checked
        opened = opened if opened is not None else open_readable_sqlite(self.db)
        self.path, self.connection = opened if opened else (None, None)
        if self.connection is not None:
            self.connection.execute("PRAGMA query_only = ON")
            self.connection.set_authorizer(authorizer)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def _check_text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(f"{what} is not valid UTF-8 (byte at position {e.start})") from None


def _run_scanned(db, sql: str, params: dict[str, Any], limits: _Limits, note=None, reader=None):
    """The statement, past the scanner, to the database, whose own walls hold it read-only
    (the tests call this directly to show that they hold without the scanner)."""
    # A SQLite store at head is read with the standard library alone (no SQLAlchemy import);
    # anything else is checked by open_store first (read-only: it creates nothing), unless
    # its reader says it was checked (an open Store's, or one that has read before).
    path = readable_sqlite(db)
    if path is not None:
        return run_sqlite(path, sql, params, limits)
    from seqbench.store.dialect import dialect_of
    from seqbench.store.engine import check_readable, resolve_url

    checked = reader is not None and reader.checked
    url = resolve_url(db) if checked else check_readable(db)  # raises for an unusable one
    if reader is not None:
        reader.checked = True
    return dialect_of(url).run_sql(url, sql, params, limits, note, reader)


@dataclass(frozen=True)
class _Limits:
    timeout: float
    max_rows: int
    max_bytes: int = DEFAULT_MAX_BYTES

    @property
    def uncapped(self) -> bool:
        """No byte cap to keep: the rows may be read in one go."""
        return self.max_bytes >= NO_BYTE_CAP

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
            "shorter values, or raise `max_bytes`"
        )

    def too_many(self) -> StoreError:
        return StoreError(
            f"the query returned more than {self.max_rows} rows; add a LIMIT or raise `max_rows`"
        )

    def timed_out(self) -> StoreError:
        return StoreError(
            f"the query ran longer than {self.timeout:g} s and was stopped; raise `timeout`"
        )
