"""sweep_points: the expanded grid of each sweep, one row per point, keyed by config hash, so
that sweep status and `report --sweep` are one join (a point may be satisfied by a completed
run of another sweep with the same config).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sweep_points",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "sweep_id",
            sa.Integer(),
            sa.ForeignKey("sweeps.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("config_hash", sa.String(64), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.UniqueConstraint("sweep_id", "config_hash", name="uq_sweep_points_hash"),
    )
    op.create_index("ix_sweep_points_config_hash", "sweep_points", ["config_hash"])


def downgrade() -> None:
    op.drop_index("ix_sweep_points_config_hash", table_name="sweep_points")
    op.drop_table("sweep_points")
