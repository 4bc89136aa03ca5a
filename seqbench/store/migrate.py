"""Alembic, configured in code (no alembic.ini), with a version table of seqbench's own so that a
database shared with MLflow or Optuna (both alembic-based) does not collide."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from seqbench.store.names import VERSION_TABLE

__all__ = ["VERSION_TABLE"]


def migrations_dir() -> Path:
    """The alembic environment: inside the package in a wheel, at the repo top level otherwise."""
    here = Path(__file__).resolve().parent.parent  # seqbench/
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("seqbench's migrations directory is missing from this installation")


def _config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.attributes["connection"] = connection
    return cfg


def script() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


def head_revision() -> str:
    head = script().get_current_head()
    assert head is not None
    return head


def known_revisions() -> list[str]:
    return [rev.revision for rev in script().walk_revisions()]


@dataclass(frozen=True)
class Revision:
    revision: str
    down_revision: str | None
    message: str
    is_head: bool


def history() -> list[Revision]:
    """All revisions, oldest first."""
    head = head_revision()
    revs = [
        Revision(r.revision, r.down_revision, (r.doc or "").splitlines()[0], r.revision == head)
        for r in script().walk_revisions()
    ]
    return list(reversed(revs))


def current_revision(connection: Connection) -> str | None:
    ctx = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return ctx.get_current_revision()


def upgrade(engine: Engine, revision: str = "head") -> None:
    with engine.begin() as conn:
        command.upgrade(_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        command.downgrade(_config(conn), revision)
