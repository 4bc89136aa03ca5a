"""Initial schema: runs, metrics, summaries, curves, sweeps, baselines.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweeps",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("finished_at", sa.DateTime(), nullable=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("model", sa.String(50), nullable=False),
        sa.Column("task", sa.String(50), nullable=False),
        sa.Column("k", sa.Integer(), nullable=True),
        sa.Column("seq_len", sa.Integer(), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("config_hash", sa.String(64), nullable=False),
        sa.Column(
            "sweep_id", sa.Integer(), sa.ForeignKey("sweeps.id", ondelete="SET NULL"), nullable=True
        ),
        sa.Column("environment", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(), nullable=True),
        sa.Column("wall_seconds", sa.Float(), nullable=True),
        sa.Column("n_params", sa.Integer(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=True),
        sa.Column("checkpoint", sa.Text(), nullable=True),
        sa.UniqueConstraint("uuid"),
    )
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_index("ix_runs_model", "runs", ["model"])
    op.create_index("ix_runs_task", "runs", ["task"])
    op.create_index("ix_runs_config_hash", "runs", ["config_hash"])

    def float_cols():
        return [
            sa.Column("value", sa.Float(), nullable=True),
            sa.Column("value_kind", sa.String(8), nullable=False),
        ]

    def run_fk():
        return sa.Column(
            "run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False
        )

    op.create_table(
        "metrics",
        sa.Column("id", sa.Integer(), primary_key=True),
        run_fk(),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        *float_cols(),
    )
    op.create_index("ix_metrics_run_key_step", "metrics", ["run_id", "key", "step"])
    op.create_table(
        "summaries",
        sa.Column("id", sa.Integer(), primary_key=True),
        run_fk(),
        sa.Column("key", sa.String(100), nullable=False),
        *float_cols(),
        sa.UniqueConstraint("run_id", "key", name="uq_summaries_run_key"),
    )
    op.create_table(
        "curves",
        sa.Column("id", sa.Integer(), primary_key=True),
        run_fk(),
        sa.Column("kind", sa.String(50), nullable=False),
        sa.Column("x", sa.Float(), nullable=False),
        *float_cols(),
    )
    op.create_index("ix_curves_run_kind", "curves", ["run_id", "kind"])
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("model", sa.String(50), nullable=False),
        sa.Column("task", sa.String(50), nullable=False),
        sa.Column("k", sa.Integer(), nullable=True),
        sa.Column("metric", sa.String(100), nullable=False),
        *float_cols(),
        sa.Column("tolerance", sa.Float(), nullable=False),
        sa.Column("direction", sa.String(8), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("name", "model", "task", "k", "metric", name="uq_baselines_point"),
    )
    op.create_index("ix_baselines_name", "baselines", ["name"])


def downgrade() -> None:
    for table in ("baselines", "curves", "summaries", "metrics", "runs", "sweeps"):
        op.drop_table(table)
