"""User SQL on a PostgreSQL store, kept read-only by the server, not by seqbench's scanner.

The walls, each enforced by PostgreSQL itself:
- the statement goes over the **extended query protocol** (one Parse message), so the server
  refuses a text that holds a second statement ("cannot insert multiple commands into a
  prepared statement"), whatever quotes or comments hide the `;` from a scanner;
- it runs in a **READ ONLY transaction** (the session's default is read-only too, set at
  connection start), which is always rolled back; a store's reader keeps its connection for
  its next statement, any other is closed after it;
- `statement_timeout` and `idle_in_transaction_session_timeout`, set for its transaction,
  bound it in time, and rows
  are **streamed** one at a time, stopping past `--max-rows` or `--max-bytes`, so memory is
  bounded by the caps (and one row);
- for shared stores, a **reader role** (`seqbench db reader-role`, store/roles.py) holds SELECT
  on seqbench's tables and views and nothing else: no table write, no temporary table, no
  signal to (cancel or terminate) the writers' sessions, bounded connections and temporary
  files; a client that turns read-only off can still NOTIFY (no privilege covers the
  command). `query` says in one line when its role could write.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

from seqbench.errors import ReadOnlyError, StoreError, first_line
from seqbench.store.names import READ_TABLES
from seqbench.store.sql_text import skip_quoted


def connect_args(url: str, **options: Any) -> dict[str, Any]:
    """psycopg.connect() keyword arguments for a SQLAlchemy PostgreSQL URL, with server
    settings `options` given at connection start (they hold from the first statement on)."""
    from sqlalchemy.engine import make_url

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


def load_psycopg():
    try:
        import psycopg
    except ModuleNotFoundError as e:
        raise StoreError(
            "seqbench query on PostgreSQL needs psycopg: pip install 'seqbench[postgres]'"
        ) from e
    return psycopg


def _connect(url: str, timeout_ms: int):
    psycopg = load_psycopg()
    kw = connect_args(
        url,
        default_transaction_read_only="on",
        statement_timeout=timeout_ms,
        idle_in_transaction_session_timeout=timeout_ms + 10_000,
        lock_timeout=timeout_ms,
    )
    try:
        conn = psycopg.connect(**kw, autocommit=False, connect_timeout=30)
    except psycopg.Error as e:
        raise StoreError(f"cannot connect to PostgreSQL: {first_line(e)}") from e
    conn.read_only = True  # BEGIN READ ONLY before the statement
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot throughout
    return conn


def write_wall(conn) -> str | None:
    """A one-line note when the connected role could write to the store (a superuser, or
    INSERT/UPDATE/DELETE on a seqbench table): the read-only transaction, not the role, is then
    the wall. None for a reader role."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT current_user, r.rolsuper, bool_or(has_table_privilege("
            "c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE')) "
            "FROM pg_roles r LEFT JOIN pg_class c ON c.relname = ANY(%s) "
            "AND c.relnamespace = current_schema()::regnamespace "
            "WHERE r.rolname = current_user GROUP BY current_user, r.rolsuper",
            [list(READ_TABLES)],
        )
        row = cur.fetchone()
    if row is None:
        return None
    role, superuser, writes = row
    if not (superuser or writes):
        return None
    what = "is a superuser" if superuser else "can write to seqbench's tables"
    return (
        f"role {role!r} {what}: a read-only transaction keeps this query from writing; "
        "hand analysts a reader role instead (seqbench db reader-role, whose help says how)"
    )


_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def bind_parameters(sql: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`:name` parameters to psycopg's `%(name)s`, and every literal `%` doubled (psycopg reads
    `%` anywhere in the text). A `:name` is a parameter only where the server would read one:
    not inside '…', E'…', "…" or $tag$…$tag$ quotes, nor comments, nor a `::type` cast (so
    `SELECT ':x'` is the string, and `'{"a":1}'::jsonb` is a cast). Raises StoreError naming
    a parameter the statement uses and `params` does not give."""
    out: list[str] = []
    used: dict[str, Any] = {}
    i, n = 0, len(sql)

    def copy(j: int) -> None:  # sql[i:j] verbatim, its % doubled
        out.append(sql[i:j].replace("%", "%%"))

    while i < n:
        j = skip_quoted(sql, i)
        if j == i:  # not in a quote or a comment
            if sql.startswith("::", i):
                j = i + 2
            elif sql[i] == ":" and (m := _PARAM.match(sql, i + 1)):
                name = m.group(0)
                if name not in params:
                    raise StoreError(
                        f"SQL error: no value for the parameter :{name} (`param` {name}=VALUE)"
                    )
                used[name] = params[name]
                out.append(f"%({name})s")
                i = m.end()
                continue
            else:
                j = i + 1
        copy(j)
        i = j
    return "".join(out), used


def _timeouts(conn, ms: int) -> None:
    """This statement's time limits, for its transaction alone: a kept connection serves
    statements with other limits (the library's reads, a user's `query`)."""
    conn.execute(
        "SELECT set_config('statement_timeout', %(ms)s, true), "
        "set_config('lock_timeout', %(ms)s, true), "
        "set_config('idle_in_transaction_session_timeout', %(idle)s, true)",
        {"ms": str(ms), "idle": str(ms + 10_000)},
    )


def _open(reader, url: str, ms: int):
    """A connection whose READ ONLY transaction has this statement's time limits: the
    reader's kept one (a server restarted since its last statement: a new one, once), or a
    new one of this statement's own."""
    psycopg = load_psycopg()
    conn = reader.connection if reader is not None else None
    if conn is not None and not (conn.closed or conn.broken):
        try:
            _timeouts(conn, ms)
            return conn
        except psycopg.OperationalError:
            conn.close()
    conn = _connect(url, ms)
    if reader is not None:
        reader.connection = conn
    try:
        _timeouts(conn, ms)
    except psycopg.Error as e:
        conn.close()
        raise StoreError(f"cannot read from PostgreSQL: {first_line(e)}") from e
    return conn


def run_postgres(
    url: str,
    sql: str,
    params: dict[str, Any],
    limits,
    note: Callable[[str], None] | None = None,
    reader=None,
) -> tuple[list[str], list[tuple]]:
    """One statement, read-only by the server's rules (module docstring). `reader` (a
    store's query.Reader): its connection is kept for the next statement, each one a READ
    ONLY transaction rolled back, as a SQLite store's is (a connection per statement costs
    a server process each: a sweep's page reads every running point's metrics); without
    one, the connection is closed after the statement."""
    psycopg = load_psycopg()
    query, bound = bind_parameters(sql, params)
    ms = max(1, round(limits.timeout * 1000))
    conn = _open(reader, url, ms)
    try:
        message = write_wall(conn) if note is not None else None
        try:
            fetched = _fetch_uncapped(conn, query, bound, limits)
            if fetched is None:
                fetched = _fetch_by_cursor(conn, query, bound, limits, sql)
            if fetched is not None:
                if message:
                    note(message)
                return fetched
            with conn.cursor() as cur:
                stream = cur.stream(query, bound, size=1)  # one row at a time: max_bytes holds
                try:
                    rows = limits.rows(_chunks(stream))
                finally:  # past --max-rows: psycopg cancels the query on the server
                    stream.close()
                if cur.description is None and not rows:
                    # a stream of no rows keeps no description: ask again, in the same
                    # snapshot (REPEATABLE READ), as a prepared (one-statement) query
                    cur.execute(query, bound, prepare=True)
                    rows = limits.rows([cur.fetchmany(limits.max_rows + 1)])
                cols = [d.name for d in cur.description or []]
            if message:
                note(message)
            return cols, rows
        except psycopg.errors.ReadOnlySqlTransaction as e:
            raise ReadOnlyError(
                "seqbench query is read-only: the statement would write and was refused"
            ) from e
        except psycopg.errors.QueryCanceled as e:
            raise limits.timed_out() from e
        except psycopg.errors.InsufficientPrivilege as e:
            raise ReadOnlyError(f"refused by the server: {first_line(e)}") from e
        except psycopg.errors.SyntaxError as e:
            if "multiple commands" in str(e):
                raise StoreError(
                    "seqbench query runs one statement per call; the server refused a second"
                ) from e
            raise StoreError(f"SQL error: {first_line(e)}") from e
        except psycopg.Error as e:
            raise StoreError(f"SQL error: {first_line(e)}") from e
    finally:
        _end(conn, kept=reader is not None)


def _end(conn, kept: bool) -> None:
    """Roll the statement's transaction back; close the connection, or, kept, drop what a
    statement can leave in a session past its transaction (a session advisory lock, a
    prepared statement: DISCARD ALL), so that the next statement finds it as it was opened."""
    psycopg = load_psycopg()
    try:
        conn.rollback()
        if kept and not conn.broken:
            conn.autocommit = True  # DISCARD ALL cannot run in a transaction
            conn.execute("DISCARD ALL")
            conn.autocommit = False
            return
    except psycopg.Error:
        pass  # whatever failed, the connection goes: the next statement opens another
    conn.close()


def _fetch_uncapped(conn, query: str, bound: dict, limits):
    """(columns, rows) in one round trip, for a read with no byte cap to keep (the
    library's own, of every row a store holds); None otherwise."""
    if not limits.uncapped:
        return None
    with conn.cursor() as cur:
        cur.execute(query, bound)
        rows = limits.rows([cur.fetchall()]) if cur.description is not None else []
        return [d.name for d in cur.description or []], rows


_CURSOR_WORDS = {"SELECT", "WITH", "VALUES", "TABLE"}


def _fetch_by_cursor(conn, query: str, bound: dict, limits, sql: str):
    """A query through a server-side cursor, fetched in batches sized so that the rows held
    stay within max_bytes: the server makes only the rows asked for, so a result of huge
    values is refused after one of them, not after the client library has buffered all it
    could read (a plain stream buffers ahead: 5 rows of 100 MB peaked at 0.8 GB). (columns,
    rows), or None for a statement a cursor cannot hold (SHOW, EXPLAIN, a WITH that writes),
    which the caller streams."""
    psycopg = load_psycopg()
    first = re.match(r"\s*([A-Za-z]+)", sql)  # run_query hands the statement without comments
    if first is None or first.group(1).upper() not in _CURSOR_WORDS:
        return None
    conn.execute("SAVEPOINT seqbench_cursor")
    cur = conn.cursor(name="seqbench_query")
    try:
        cur.execute(capped(query, limits.max_bytes), bound)
    except (psycopg.errors.FeatureNotSupported, psycopg.errors.SyntaxError):
        conn.execute("ROLLBACK TO SAVEPOINT seqbench_cursor")
        return None
    try:
        rows = limits.rows(_cursor_batches(cur, limits))
        return [d.name for d in cur.description or []], rows
    except psycopg.errors.InvalidTextRepresentation as e:
        if OVER_CAP in str(e):
            raise limits.too_big() from None
        raise
    finally:
        with contextlib.suppress(psycopg.Error):
            cur.close()


OVER_CAP = "seqbench: a row over the byte cap"


def capped(query: str, max_bytes: int) -> str:
    """`query` wrapped so that the server refuses a row larger than `max_bytes` before sending
    it: the client never holds such a value (SELECT repeat('x', 10^9) grew `query` to 2.9 GB
    before it was refused; the server still builds the row, within its own limits). The error
    is a failed cast whose text is OVER_CAP."""
    return (
        f"SELECT q.* FROM ({query}) AS q WHERE CASE WHEN pg_column_size(q.*) > {int(max_bytes)} "
        f"THEN ('{OVER_CAP} ' || pg_column_size(q.*))::int ELSE 1 END = 1"
    )  # the row in the cast's text: a constant would be folded, and refused, at planning


def _cursor_batches(cur, limits):
    """A server-side cursor's rows in batches: one row first, then as many as half the bytes
    left under max_bytes hold at the mean row size so far (1 to 1000)."""
    size = count = 0
    batch = 1
    while True:
        got = cur.fetchmany(batch)
        yield got
        if len(got) < batch:
            return
        count += len(got)
        size += sum(limits.row_bytes(r) for r in got)
        each = max(1, size // count)
        batch = max(1, min(1000, (limits.max_bytes - size) // each // 2))


def _chunks(stream, size: int = 1000):
    batch: list = []
    for row in stream:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
