"""A least-privilege reader role on a PostgreSQL store (`seqbench db reader-role`): created or
re-granted, and what it still lacks (server-held limits, functions with effects outside a
transaction). The SQL is pg_query.py's; this resolves the store and checks the flags first."""

from __future__ import annotations

from typing import Any

from seqbench.errors import UsageError
from seqbench.store.opening import open_store


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
    store/pg_query.reader_role_sql). Returns the SQL (the password masked); `execute=False`
    only renders it."""
    from seqbench.store.engine import resolve_url
    from seqbench.store.pg_query import create_reader_role, valid_role_name

    if not 1 <= limits.get("connection_limit", 1) <= 10_000:  # the flags first, then the store
        raise UsageError(
            f"--connection-limit must be in 1..10000, got {limits['connection_limit']}"
        )
    url = resolve_url(db)
    if not url.startswith("postgresql"):
        raise UsageError("a reader role is for a PostgreSQL store (--db postgresql+psycopg://…)")
    valid_role_name(role)
    if execute:
        open_store(db, "read").dispose()  # a seqbench store at head
    return create_reader_role(url, role, password, execute=execute, **limits)


def reader_role_limits_left(db: str | None, role: str) -> list[str]:
    """The server-held bounds the reader role `role` lacks (temp_file_limit: a superuser's
    setting, left out when another role created it)."""
    from seqbench.store.engine import resolve_url
    from seqbench.store.pg_query import limits_left

    return limits_left(resolve_url(db), role)


def reader_role_effects_left(db: str | None, role: str) -> list[str]:
    """The functions with effects outside a transaction (WAL messages, notifications, advisory
    locks, large objects, xid assignment) that the reader role `role` may still call: [] once
    a superuser has run `db reader-role`."""
    from seqbench.store.engine import resolve_url
    from seqbench.store.pg_query import effects_left, valid_role_name

    return effects_left(resolve_url(db), valid_role_name(role))
