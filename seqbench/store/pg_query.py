"""User SQL on a PostgreSQL store, kept read-only by the server, not by seqbench's scanner.

The walls, each enforced by PostgreSQL itself:
- the statement goes over the **extended query protocol** (one Parse message), so the server
  refuses a text that holds a second statement ("cannot insert multiple commands into a
  prepared statement"), whatever quotes or comments hide the `;` from a scanner;
- it runs in a **READ ONLY transaction** (the session's default is read-only too, set at
  connection start), which is always rolled back, and the connection is closed after it;
- `statement_timeout` and `idle_in_transaction_session_timeout` bound it in time, and rows
  are **streamed** one at a time, stopping past `--max-rows` or `--max-bytes`, so memory is
  bounded by the caps (and one row);
- for shared stores, a **reader role** (`seqbench db reader-role`) holds SELECT on seqbench's
  tables and views and nothing else: no table write, no temporary table, no signal to (cancel or
  terminate) the writers' sessions, bounded connections and temporary files; a client that
  turns read-only off can still NOTIFY (no privilege covers the command). `query` says in one
  line when its role could write.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any

from seqbench.errors import ReadOnlyError, StoreError, UsageError, first_line
from seqbench.store.engine import LATER_TABLES, SEQBENCH_TABLES, connect_args
from seqbench.store.names import VERSION_TABLE
from seqbench.store.sql_text import skip_quoted

# every relation a reader needs: `open_store` reads the version table, users the rest
READ_TABLES = (*sorted(SEQBENCH_TABLES | LATER_TABLES), VERSION_TABLE)
READ_VIEWS = ("v_results", "v_results_all", "v_summaries")


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
                        f"SQL error: no value for the parameter :{name} (--param {name}=VALUE)"
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


def run_postgres(
    url: str,
    sql: str,
    params: dict[str, Any],
    limits,
    note: Callable[[str], None] | None = None,
) -> tuple[list[str], list[tuple]]:
    """One statement, read-only by the server's rules (module docstring)."""
    psycopg = _psycopg()
    query, bound = bind_parameters(sql, params)
    ms = max(1, round(limits.timeout * 1000))
    conn = _connect(url, ms)
    try:
        message = write_wall(conn) if note is not None else None
        try:
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
        with contextlib.suppress(psycopg.Error):
            conn.rollback()
        conn.close()


_CURSOR_WORDS = {"SELECT", "WITH", "VALUES", "TABLE"}


def _fetch_by_cursor(conn, query: str, bound: dict, limits, sql: str):
    """A query through a server-side cursor, fetched in batches sized so that the rows held
    stay within max_bytes: the server makes only the rows asked for, so a result of huge
    values is refused after one of them, not after the client library has buffered all it
    could read (a plain stream buffers ahead: 5 rows of 100 MB peaked at 0.8 GB). (columns,
    rows), or None for a statement a cursor cannot hold (SHOW, EXPLAIN, a WITH that writes),
    which the caller streams."""
    psycopg = _psycopg()
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


def valid_role_name(role: str) -> str:

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", role):
        raise UsageError(
            f"role name {role!r}: use letters, digits and '_' (at most 63, not starting "
            "with a digit)"
        )
    return role


# Functions PostgreSQL grants to PUBLIC whose effects reach outside a read-only transaction
# that is rolled back, or that the rollback cannot undo: a WAL message (written and kept:
# 10 calls of 10 MB filled pg_wal by 100 MB), notifications, advisory locks (session locks
# outlive the transaction), large objects, and xid assignment (burns transaction ids, writes
# WAL). `db reader-role` revokes them from PUBLIC in the store's database (seqbench's writers
# call none of them; nothing is granted back, since a grant gives a role a right it may not
# have had: lo_import and lo_export, the server-file ones, are not PUBLIC's to begin with,
# and granting them would hand out the server's files). Table locks, REINDEX,
# VACUUM and ANALYZE need rights a reader does not hold (owner, UPDATE/DELETE/TRUNCATE).
EFFECT_FUNCTIONS = (
    "pg_logical_emit_message",
    "pg_notify",
    "pg_advisory_lock",
    "pg_advisory_lock_shared",
    "pg_advisory_xact_lock",
    "pg_advisory_xact_lock_shared",
    "pg_try_advisory_lock",
    "pg_try_advisory_lock_shared",
    "pg_try_advisory_xact_lock",
    "pg_try_advisory_xact_lock_shared",
    "pg_advisory_unlock",
    "pg_advisory_unlock_shared",
    "pg_advisory_unlock_all",
    "lo_create",
    "lo_creat",
    "lo_from_bytea",
    "lo_open",
    "lowrite",
    "lo_put",
    "lo_unlink",
    "lo_truncate",
    "lo_truncate64",
    "txid_current",
    "pg_current_xact_id",
)


def _revoke_effects_sql():
    from psycopg import sql as q

    names = q.SQL(", ").join(q.Literal(n) for n in EFFECT_FUNCTIONS)
    return q.SQL(
        "DO $$ DECLARE f regprocedure; BEGIN "
        "FOR f IN SELECT p.oid::regprocedure FROM pg_proc p "
        "WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname = ANY(ARRAY[{names}]) "
        "LOOP EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f); END LOOP; END $$"
    ).format(names=names)


def effects_left(url: str, role: str) -> list[str]:
    """The functions of EFFECT_FUNCTIONS that `role` may still call (the server let the
    revocation through only where the role that ran it owns them: a superuser)."""
    psycopg = _psycopg()
    try:
        with psycopg.connect(**connect_args(url), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT DISTINCT p.proname FROM pg_proc p WHERE p.pronamespace = "
                "'pg_catalog'::regnamespace AND p.proname = ANY(%s) "
                "AND has_function_privilege(%s, p.oid, 'EXECUTE') ORDER BY 1",
                [list(EFFECT_FUNCTIONS), role],
            ).fetchall()
    except psycopg.Error as e:
        raise StoreError(f"cannot read the reader role's rights: {first_line(e)}") from e
    return [r[0] for r in rows]


# What one reader role may take of a shared server (`db reader-role` options): sessions at
# once (97 idle ones left the writers no slot), temp-file space per session (a count over
# 3·10⁸ rows spilled 4.2 GB in 25 s) and work_mem per sort or hash before it spills.
CONNECTION_LIMIT = 10
TEMP_FILE_LIMIT = "256MB"
WORK_MEM = "16MB"
# Defaults of the role's sessions that a careless client keeps and a determined one can SET
# (PostgreSQL holds a user-settable parameter per role only as a default): pg_sleep(65) ran
# 65 s, and a reader idle in a transaction held the writers' ALTER TABLE for as long as it
# liked (the writers' own lock_timeout then names it: store/engine.py).
STATEMENT_TIMEOUT = "5min"
IDLE_IN_TRANSACTION_TIMEOUT = "1min"
READER_LOCK_TIMEOUT = "10s"


def limits_left(url: str, role: str) -> list[str]:
    """The server-held bounds `role` lacks: temp_file_limit, unless a superuser set it."""
    psycopg = _psycopg()
    try:
        with psycopg.connect(**connect_args(url), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT unnest(s.setconfig) FROM pg_db_role_setting s JOIN pg_roles r "
                "ON r.oid = s.setrole WHERE r.rolname = %s",
                [role],
            ).fetchall()
    except psycopg.Error as e:
        raise StoreError(f"cannot read the reader role's settings: {first_line(e)}") from e
    have = {r[0].split("=", 1)[0] for r in rows}
    return [] if "temp_file_limit" in have else ["temp_file_limit"]


def reader_role_sql(
    role: str,
    database: str,
    password: str | None = None,
    *,
    connection_limit: int = CONNECTION_LIMIT,
    temp_file_limit: str = TEMP_FILE_LIMIT,
    work_mem: str = WORK_MEM,
    statement_timeout: str = STATEMENT_TIMEOUT,
    idle_in_transaction_timeout: str = IDLE_IN_TRANSACTION_TIMEOUT,
    lock_timeout: str = READER_LOCK_TIMEOUT,
    lock_other_databases: bool = False,
) -> list[str]:
    """The statements that create (or re-grant) a least-privilege reader role: it may log in
    and SELECT seqbench's tables and views, its sessions are read-only by default, and it
    holds no other right (no writes, no role membership, so it cannot signal the writers),
    and the functions with effects beyond its transaction are revoked from PUBLIC
    (EFFECT_FUNCTIONS). Bounds the server enforces whatever the role's client sets: at most
    `connection_limit` sessions (a role attribute), `temp_file_limit` of temporary files per
    session (a superuser's setting: the role cannot SET it), no temporary tables (TEMPORARY
    on the database revoked from PUBLIC; the owner keeps it). work_mem is a default the role
    could raise with SET, bounded in effect by the temp-file limit once a sort spills; so are
    statement_timeout, idle_in_transaction_session_timeout and lock_timeout.
    `lock_other_databases`: CONNECT on the server's other databases is revoked from PUBLIC
    and granted to every login role that had it through PUBLIC, so that the reader alone
    loses it (PUBLIC may connect to every database, `postgres` included, and make
    temporary tables, emit WAL and hold large objects there)."""
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
    stmts += [
        q.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(ident, q.Literal(connection_limit)),
        # a superuser's setting: another creator gets the role without it, and a note
        q.SQL(
            "DO $$ BEGIN EXECUTE format('ALTER ROLE %I SET temp_file_limit = %L', {name}, {v}); "
            "EXCEPTION WHEN insufficient_privilege THEN NULL; END $$"
        ).format(name=q.Literal(role), v=q.Literal(temp_file_limit)),
        q.SQL("ALTER ROLE {} SET work_mem = {}").format(ident, q.Literal(work_mem)),
        q.SQL("ALTER ROLE {} SET statement_timeout = {}").format(
            ident, q.Literal(statement_timeout)
        ),
        q.SQL("ALTER ROLE {} SET idle_in_transaction_session_timeout = {}").format(
            ident, q.Literal(idle_in_transaction_timeout)
        ),
        q.SQL("ALTER ROLE {} SET lock_timeout = {}").format(ident, q.Literal(lock_timeout)),
        q.SQL("REVOKE TEMPORARY ON DATABASE {} FROM PUBLIC").format(q.Identifier(database)),
        q.SQL("REVOKE TEMPORARY ON DATABASE {} FROM {}").format(q.Identifier(database), ident),
    ]
    stmts.append(_revoke_effects_sql())
    if lock_other_databases:
        stmts.append(_lock_other_databases_sql(role))
    if password is not None:
        stmts.insert(2, q.SQL("ALTER ROLE {} PASSWORD {}").format(ident, q.Literal(password)))
    return stmts


def _lock_other_databases_sql(role: str):
    """Every other database the role may connect to: CONNECT granted by name to each login
    role (not a superuser, not the reader) that has it now, then revoked from PUBLIC and from
    the reader. Nobody but the reader loses a database."""
    from psycopg import sql as q

    return q.SQL(
        "DO $$ DECLARE d name; r name; BEGIN "
        "FOR d IN SELECT datname FROM pg_database WHERE datallowconn "
        "AND datname <> current_database() AND has_database_privilege({name}, datname, "
        "'CONNECT') LOOP "
        "FOR r IN SELECT rolname FROM pg_roles WHERE rolcanlogin AND NOT rolsuper "
        "AND rolname <> {name} AND has_database_privilege(rolname, d, 'CONNECT') LOOP "
        "EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', d, r); END LOOP; "
        "EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC', d); "
        "EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM %I', d, {name}); "
        "END LOOP; END $$"
    ).format(name=q.Literal(role))


def _other_databases(conn, role: str) -> list[str]:
    """The server's other databases `role` may connect to."""
    rows = conn.execute(
        "SELECT datname FROM pg_database WHERE datallowconn AND datname <> current_database() "
        "AND has_database_privilege(%s, datname, 'CONNECT') ORDER BY 1",
        [role],
    ).fetchall()
    return [r[0] for r in rows]


def create_reader_role(
    url: str,
    role: str,
    password: str | None = None,
    *,
    execute: bool = True,
    **limits: Any,
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
    stmts = reader_role_sql(role, database, password, **limits)
    shown = reader_role_sql(role, database, "***" if password is not None else None, **limits)
    if execute:
        try:
            with psycopg.connect(**connect_args(url), autocommit=False) as conn:
                for stmt in stmts:
                    conn.execute(stmt)
                others = _other_databases(conn, role)
                if others:
                    conn.rollback()
        except psycopg.Error as e:
            raise StoreError(f"cannot create the reader role: {first_line(e)}") from e
        if others:
            raise StoreError(
                f"nothing was changed: role {role!r} could connect to the server's other "
                f"database(s) {', '.join(others)} (PUBLIC may) and take resources there; run "
                "again with --lock-other-databases as a superuser (CONNECT there is revoked "
                "from PUBLIC and granted to each login role that had it), or have an "
                f"administrator run REVOKE CONNECT ON DATABASE <name> FROM PUBLIC for each"
            )
    return [s.as_string(None) + ";" for s in shown]
