"""A least-privilege reader role on a PostgreSQL store (`seqbench db reader-role`): its SQL (LOGIN,
SELECT on seqbench's tables and views, read-only sessions, bounds on what it may take of the
server, the functions with effects outside a transaction revoked from PUBLIC), created or
re-granted after the store and the flags are checked, and what a role still lacks."""

from __future__ import annotations

import re
from typing import Any

from seqbench.errors import StoreError, UsageError, first_line
from seqbench.store.names import READ_TABLES, VIEWS
from seqbench.store.opening import open_store
from seqbench.store.pg_query import connect_args, load_psycopg


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
    psycopg = load_psycopg()
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
    psycopg = load_psycopg()
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
            q.SQL(", ").join(q.Identifier(t) for t in (*READ_TABLES, *VIEWS)), ident
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

    psycopg = load_psycopg()
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
                "again with `lock_other_databases` as a superuser (CONNECT there is revoked "
                "from PUBLIC and granted to each login role that had it), or have an "
                f"administrator run REVOKE CONNECT ON DATABASE <name> FROM PUBLIC for each"
            )
    return [s.as_string(None) + ";" for s in shown]


def reader_role(
    db: str | None,
    role: str,
    password: str | None = None,
    *,
    execute: bool = True,
    **limits: Any,
) -> list[str]:
    """Create (or re-grant) a least-privilege reader role on a PostgreSQL store: LOGIN,
    SELECT on seqbench's tables and views, read-only sessions, nothing else, and bounds on
    what it may take of the server (`limits`: connection_limit, temp_file_limit, work_mem;
    reader_role_sql). Returns the SQL (the password masked); `execute=False`
    only renders it."""
    from seqbench.store.engine import resolve_url

    if not 1 <= limits.get("connection_limit", 1) <= 10_000:  # the flags first, then the store
        raise UsageError(
            f"`connection_limit` must be in 1..10000, got {limits['connection_limit']}"
        )
    url = resolve_url(db)
    if not url.startswith("postgresql"):
        raise UsageError("a reader role is for a PostgreSQL store (`db` postgresql+psycopg://…)")
    valid_role_name(role)
    if execute:
        open_store(db, "read").dispose()  # a seqbench store at head
    return create_reader_role(url, role, password, execute=execute, **limits)


def reader_role_limits_left(db: str | None, role: str) -> list[str]:
    """The server-held bounds the reader role `role` lacks (temp_file_limit: a superuser's
    setting, left out when another role created it)."""
    from seqbench.store.engine import resolve_url

    return limits_left(resolve_url(db), role)


def reader_role_effects_left(db: str | None, role: str) -> list[str]:
    """The functions with effects outside a transaction (WAL messages, notifications, advisory
    locks, large objects, xid assignment) that the reader role `role` may still call: [] once
    a superuser has run `db reader-role`."""
    from seqbench.store.engine import resolve_url

    return effects_left(resolve_url(db), valid_role_name(role))
