"""User SQL on a PostgreSQL store, kept read-only by the server, not by seqbench's scanner.

The walls, each enforced by PostgreSQL itself:
- the statement goes over the **extended query protocol** (one Parse message), so the server
  refuses a text that holds a second statement ("cannot insert multiple commands into a
  prepared statement"), whatever quotes or comments hide the `;` from a scanner;
- it runs in a **READ ONLY transaction** (the session's default is read-only too, set at
  connection start), which is always rolled back, and the connection is closed after it;
- `statement_timeout` and `idle_in_transaction_session_timeout` bound it in time, and rows
  are **streamed** in batches, stopping past `--max-rows`, so memory is bounded by the cap;
- for shared stores, a **reader role** (`seqbench db reader-role`) holds SELECT on seqbench's
  tables and views and nothing else: it cannot write through any client, nor signal (cancel or
  terminate) the writers' sessions. `query` says in one line when its role could write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from seqbench.errors import ReadOnlyError, StoreError
from seqbench.store.common import VERSION_TABLE
from seqbench.store.engine import SEQBENCH_TABLES

# every relation a reader needs: `open_store` reads the version table, users the rest
READ_TABLES = (*sorted(SEQBENCH_TABLES | {"sweep_points"}), VERSION_TABLE)
READ_VIEWS = ("v_results", "v_results_all", "v_summaries")


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


def _psycopg():
    try:
        import psycopg
    except ModuleNotFoundError as e:
        raise StoreError(
            "seqbench query on PostgreSQL needs psycopg: pip install 'seqbench[postgres]'"
        ) from e
    return psycopg


def _connect(url: str, timeout_ms: int):
    psycopg = _psycopg()
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
        raise StoreError(f"cannot connect to PostgreSQL: {_first_line(e)}") from e
    conn.read_only = True  # BEGIN READ ONLY before the statement
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # one snapshot throughout
    return conn


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


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
    conn.rollback()
    if row is None:
        return None
    role, superuser, writes = row
    if not (superuser or writes):
        return None
    what = "is a superuser" if superuser else "can write to seqbench's tables"
    return (
        f"role {role!r} {what}: a read-only transaction keeps this query from writing; "
        "hand analysts a reader role instead (seqbench db reader-role --help)"
    )


def run_postgres(
    url: str,
    sql: str,
    params: dict[str, Any],
    limits,
    note: Callable[[str], None] | None = None,
) -> tuple[list[str], list[tuple]]:
    """One statement, read-only by the server's rules (module docstring)."""
    psycopg = _psycopg()
    from sqlalchemy import text
    from sqlalchemy.dialects import postgresql

    # :name parameters, as SQLAlchemy's text() spells them, to psycopg's %(name)s
    from sqlalchemy.exc import SQLAlchemyError

    compiled = text(sql).compile(dialect=postgresql.psycopg.dialect())
    query = str(compiled)  # a literal % is %% here: always send a dict, so psycopg undoes it
    try:
        bound = compiled.construct_params(params)
    except SQLAlchemyError as e:
        raise StoreError(f"SQL error: {str(e).splitlines()[0]} (--param NAME=VALUE)") from e
    ms = max(1, round(limits.timeout * 1000))
    conn = _connect(url, ms)
    try:
        message = write_wall(conn) if note is not None else None
        try:
            with conn.cursor() as cur:
                stream = cur.stream(query, bound, size=_chunk())
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
            raise ReadOnlyError(f"refused by the server: {_first_line(e)}") from e
        except psycopg.errors.SyntaxError as e:
            if "multiple commands" in str(e):
                raise StoreError(
                    "seqbench query runs one statement per call; the server refused a second"
                ) from e
            raise StoreError(f"SQL error: {_first_line(e)}") from e
        except psycopg.Error as e:
            raise StoreError(f"SQL error: {_first_line(e)}") from e
    finally:
        with contextlib.suppress(psycopg.Error):
            conn.rollback()
        conn.close()


def _chunk() -> int:
    """Rows per streamed result: libpq 17 sends them in chunks, older ones one at a time."""
    psycopg = _psycopg()
    return 1000 if psycopg.pq.version() >= 170000 else 1


def _chunks(stream, size: int = 1000):
    batch: list = []
    for row in stream:
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def valid_role_name(role: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", role):
        from seqbench.errors import UsageError

        raise UsageError(
            f"role name {role!r}: use letters, digits and '_' (at most 63, not starting "
            "with a digit)"
        )
    return role


def reader_role_sql(role: str, database: str, password: str | None = None) -> list[str]:
    """The statements that create (or re-grant) a least-privilege reader role: it may log in
    and SELECT seqbench's tables and views, its sessions are read-only by default, and it
    holds no other right (no writes, no role membership, so it cannot signal the writers)."""
    from psycopg import sql as q

    ident = q.Identifier(role)
    stmts = [
        q.SQL(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = {name}) THEN "
            "CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
            "NOREPLICATION NOBYPASSRLS; END IF; END $$"
        ).format(name=q.Literal(role), role=ident),
        q.SQL("ALTER ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT").format(ident),
        q.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(ident),
        q.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(q.Identifier(database), ident),
        q.SQL("GRANT USAGE ON SCHEMA public TO {}").format(ident),
        q.SQL("GRANT SELECT ON {} TO {}").format(
            q.SQL(", ").join(q.Identifier(t) for t in (*READ_TABLES, *READ_VIEWS)), ident
        ),
    ]
    if password is not None:
        stmts.insert(2, q.SQL("ALTER ROLE {} PASSWORD {}").format(ident, q.Literal(password)))
    return stmts


def create_reader_role(
    url: str, role: str, password: str | None = None, *, execute: bool = True
) -> list[str]:
    """Create (or re-grant) the reader role on the store at `url` (a role that may create
    roles and grant on seqbench's tables: the owner with CREATEROLE, or a superuser), in one
    transaction; or with execute=False only render the statements. Returns them as text
    (a password shown as '***')."""
    from sqlalchemy.engine import make_url

    psycopg = _psycopg()
    database = make_url(url).database
    if not database:
        raise StoreError("the PostgreSQL URL names no database")
    stmts = reader_role_sql(role, database, password)
    shown = reader_role_sql(role, database, "***" if password is not None else None)
    if execute:
        try:
            with psycopg.connect(**connect_args(url), autocommit=False) as conn:
                for stmt in stmts:
                    conn.execute(stmt)
        except psycopg.Error as e:
            raise StoreError(f"cannot create the reader role: {_first_line(e)}") from e
    return [s.as_string(None) + ";" for s in shown]
