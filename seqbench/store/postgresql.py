"""PostgreSQL, the shared backend (store/dialect.py's Dialect for a server store): its engines (a
writer whose sessions wait at most lock_timeout() for a lock and then name the sessions in their
way; a reader whose sessions are read-only from the start), its revision and tables read in one
snapshot, and user SQL through pg_query.py, whose walls the server holds. SQLAlchemy and psycopg
are imported when an engine or a connection is made."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from seqbench.errors import StoreError
from seqbench.store import migrate
from seqbench.store.pg_query import connect_args, run_postgres

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

# How long a PostgreSQL writer waits for a lock (a migration's ALTER TABLE behind a reader idle
# in a transaction, which would otherwise hold `db upgrade` for ever) before it gives up and
# names the sessions in its way. SEQBENCH_LOCK_TIMEOUT overrides it (a PostgreSQL interval).
LOCK_TIMEOUT = "30s"


def lock_timeout() -> str:
    return os.environ.get("SEQBENCH_LOCK_TIMEOUT") or LOCK_TIMEOUT


def _writer(url: str) -> Engine:
    """A writer engine whose sessions wait at most lock_timeout() for a lock; when one gives
    up, the error names the sessions holding locks on the store's tables (a reader idle in a
    transaction, most likely), read over a connection of its own."""
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url

    u = make_url(url)
    given = u.query.get("options")
    options = f"-c lock_timeout={lock_timeout()}"
    if isinstance(given, str) and given:
        options = f"{given} {options}"
    engine = create_engine(
        u.difference_update_query(["options"]), pool_pre_ping=True,
        connect_args={"options": options},
    )  # fmt: skip

    @event.listens_for(engine, "handle_error")
    def _name_blockers(context):
        orig = context.original_exception
        if getattr(orig, "sqlstate", None) != "55P03":  # lock_not_available
            return
        pid = None
        with contextlib.suppress(Exception):  # no connection to ask: every holder is named
            pid = context.connection.connection.dbapi_connection.info.backend_pid
        orig.add_note(f"seqbench-blockers: {lock_holders(url, pid)}")

    return engine


def lock_holders(url: str, pid: int | None) -> str:
    """The sessions (but `pid`) that hold a lock on a table of the store's database, in
    words: 'pid 123 (role seqbench_reader, idle in transaction for 41 s)'."""
    try:
        import psycopg

        with psycopg.connect(**connect_args(url), autocommit=True, connect_timeout=10) as c:
            rows = c.execute(
                "SELECT a.pid, a.usename, a.state, "
                "extract(epoch FROM now() - coalesce(a.xact_start, a.query_start))::int "
                "FROM pg_stat_activity a WHERE a.datname = current_database() "
                "AND a.pid <> pg_backend_pid() AND a.pid IS DISTINCT FROM %s "
                "AND a.pid IN (SELECT l.pid FROM pg_locks l JOIN pg_class c "
                "ON c.oid = l.relation WHERE l.granted AND c.relnamespace = "
                "'public'::regnamespace) ORDER BY 4 DESC NULLS LAST LIMIT 5",
                [pid],
            ).fetchall()
    except Exception as e:  # naming them is a courtesy: the lock error stands on its own
        return f"the sessions could not be read ({type(e).__name__})"
    if not rows:
        return "no session holds one now"
    return ", ".join(
        f"pid {p} (role {who}, {state or 'unknown state'} for {secs} s)"
        for p, who, state, secs in rows
    )


class PostgreSQL:
    """The Dialect of a PostgreSQL store."""

    name = "postgresql"

    def engine(self, url: str, *, readonly: bool = False) -> Engine:
        from sqlalchemy import create_engine

        try:
            if readonly:
                return create_engine(
                    url,
                    pool_pre_ping=True,
                    connect_args={"options": "-c default_transaction_read_only=on"},
                )
            return _writer(url)
        except ModuleNotFoundError as e:
            raise StoreError(
                f"the driver for PostgreSQL is not installed ({e.name}): "
                "pip install 'seqbench[postgres]'"
            ) from e

    def inspect(self, url: str, *, writable: bool = True) -> tuple[str | None, set[str]]:
        """(revision, table names), read in one snapshot: under READ COMMITTED each statement
        sees the commits made before it, so a creator committing between the two reads showed
        its tables without the version table read a moment earlier ("not created by seqbench"
        to the second of two sweeps started at once on a new database)."""
        from sqlalchemy import inspect
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import OperationalError

        engine = self.engine(url)
        try:
            with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn:
                rev = migrate.current_revision(conn)
                tables = set(inspect(conn).get_table_names())
        except OperationalError as e:
            where = make_url(url).render_as_string()
            raise StoreError(f"cannot connect to {where}: {e.orig}") from e
        finally:
            engine.dispose()
        return rev, tables

    def config_field(self, name: str, kind: str) -> str:
        cast = {"int": "bigint", "float": "double precision", "bool": "boolean"}.get(kind, "text")
        return f"CAST(r.config::jsonb ->> '{name}' AS {cast})"

    def tag_equals(self, key: str, value: str, name: str) -> tuple[str, dict[str, str]]:
        sql = f"(r.tags::jsonb ->> :{name}_key) = :{name}_value"
        return sql, {f"{name}_key": key, f"{name}_value": value}

    def run_sql(self, url: str, sql: str, params: dict[str, Any], limits, note=None, reader=None):
        return run_postgres(url, sql, params, limits, note, reader)

    def backup(self, url: str) -> None:
        """None: the server keeps its own (pg_dump); a migration is one transaction."""
        return None

    def integrity(self, url: str, *, quick: bool = False) -> list[str]:
        """[]: the server checks its own pages."""
        return []


DIALECT = PostgreSQL()
