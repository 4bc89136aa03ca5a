"""Run names and archiving, and the experiment behind each baseline point.

- runs.name: a label people give a run (`train --name`, `runs name`); not unique, usable
  wherever a run is named, and refused there when it names several.
- runs.archived_at: set by `runs archive`, cleared by `runs restore`. Archived runs keep all
  their rows but leave lists, reports, checks and baselines.
- baselines.config: the canonical JSON of the config the point was measured on, seed aside,
  so `check` compares a point only with runs of that experiment ('' for points saved before).
- v_results gains name and archived_at.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _views():
    """0002's view definitions (the module name starts with a digit: load it by path)."""
    path = Path(__file__).with_name("0002_results_views.py")
    spec = importlib.util.spec_from_file_location("_seqbench_0002", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _v_results(extra: bool) -> str:
    cols = ", r.name, r.archived_at" if extra else ""
    v = _views()
    return f"""
CREATE VIEW v_results AS
SELECT
  r.id AS run_id, r.uuid, r.kind, r.status, r.model, r.task, r.k, r.seq_len, r.seed,
  sw.name AS sweep, r.config_hash, r.created_at, r.wall_seconds, r.n_params{cols},
{v._pivot_columns()}
FROM runs r
LEFT JOIN sweeps sw ON sw.id = r.sweep_id
LEFT JOIN summaries s ON s.run_id = r.id
GROUP BY r.id, r.uuid, r.kind, r.status, r.model, r.task, r.k, r.seq_len, r.seed, sw.name,
  r.config_hash, r.created_at, r.wall_seconds, r.n_params{cols}
"""


def upgrade() -> None:
    # SQLite's batch mode may rebuild runs, which a view over it would break: drop both first
    op.execute("DROP VIEW v_summaries")
    op.execute("DROP VIEW v_results")
    with op.batch_alter_table("runs") as b:
        b.add_column(sa.Column("name", sa.String(200), nullable=True))
        b.add_column(sa.Column("archived_at", sa.DateTime(), nullable=True))
        b.create_index("ix_runs_name", ["name"])
    with op.batch_alter_table("baselines") as b:
        b.add_column(sa.Column("config", sa.Text(), nullable=False, server_default=""))
    op.execute(_v_results(extra=True))
    op.execute(_views().V_SUMMARIES)


def downgrade() -> None:
    op.execute("DROP VIEW v_summaries")
    op.execute("DROP VIEW v_results")
    with op.batch_alter_table("baselines") as b:
        b.drop_column("config")
    with op.batch_alter_table("runs") as b:
        b.drop_index("ix_runs_name")
        b.drop_column("archived_at")
        b.drop_column("name")
    op.execute(_v_results(extra=False))
    op.execute(_views().V_SUMMARIES)
