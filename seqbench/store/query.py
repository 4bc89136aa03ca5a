"""`seqbench query`: SQL over the results on a read-only connection.

Defence in depth for SQLite: the file is opened with mode=ro, PRAGMA query_only is on, and an
authorizer refuses every action that writes (including ATTACH, which could create a file, and
pragmas given a value). PostgreSQL runs the statement in a READ ONLY transaction.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from seqbench.errors import ReadOnlyError, StoreError
from seqbench.store.common import readable_sqlite

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
_READ_START = re.compile(r"^\s*(SELECT|WITH|VALUES|EXPLAIN|PRAGMA)\b", re.IGNORECASE)


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


def run_query(
    db: str | None, sql: str, params: dict[str, Any] | None = None
) -> tuple[list[str], list[tuple]]:
    """Run one read-only statement; return (column names, rows). Writes raise ReadOnlyError."""
    sql = sql.strip().rstrip(";").strip()
    if not sql:
        raise StoreError("no SQL given")
    if not _READ_START.match(sql):
        word = sql.split(None, 1)[0].upper()
        raise ReadOnlyError(f"seqbench query is read-only: {word} statements are refused")
    params = params or {}
    # A SQLite store at head is read with the standard library alone (no SQLAlchemy import);
    # anything else is checked (or created at head) by open_store first.
    path = readable_sqlite(db)
    if path is None:
        from seqbench.store.store import open_store, resolve_url, sqlite_path

        open_store(db).dispose()
        url = resolve_url(db)
        path = sqlite_path(url)
        if path is None:
            return _run_other(url, sql, params)
    return _run_sqlite(path, sql, params)


def _run_sqlite(path, sql: str, params: dict[str, Any]) -> tuple[list[str], list[tuple]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        con.execute("PRAGMA query_only = ON")
        con.set_authorizer(_authorizer)
        try:
            cur = con.execute(sql, params)
            rows = cur.fetchall()
        except sqlite3.DatabaseError as e:
            msg = str(e)
            if "not authorized" in msg or "readonly" in msg:
                raise ReadOnlyError(
                    "seqbench query is read-only: the statement would write and was refused"
                ) from e
            raise StoreError(f"SQL error: {msg}") from e
        except sqlite3.ProgrammingError as e:
            raise StoreError(f"SQL error: {e}") from e
        cols = [d[0] for d in cur.description or []]
        return cols, rows
    finally:
        con.close()


def _run_other(url: str, sql: str, params: dict[str, Any]) -> tuple[list[str], list[tuple]]:
    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from seqbench.store.store import _make_engine

    engine = _make_engine(url)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            try:
                result = conn.execute(text(sql), params)
            except DBAPIError as e:
                if "read-only" in str(e.orig):
                    raise ReadOnlyError(
                        "seqbench query is read-only: the statement would write and was refused"
                    ) from e
                raise StoreError(f"SQL error: {str(e.orig).splitlines()[0]}") from e
            cols = list(result.keys())
            rows = [tuple(r) for r in result]
            conn.rollback()
            return cols, rows
    finally:
        engine.dispose()
