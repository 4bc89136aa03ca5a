"""A failure of the database or the disk under it, told apart by class from a bug and said in one
line (the CLI prints it and exits 1). SQLAlchemy and the drivers are imported only when a
failure is described."""

from __future__ import annotations

import sqlite3

from seqbench.errors import first_line


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
