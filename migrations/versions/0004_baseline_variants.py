"""baselines.variant: the config fields that tell apart points sharing (model, task, k), e.g.
seq_len for the adding problem at T = 100, 500 and 1000, or teacher_lam and stable in the
Miller & Hardt sweep. Canonical JSON text ('' for none), part of the point's unique key.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("baselines") as b:
        b.add_column(sa.Column("variant", sa.String(500), nullable=False, server_default=""))
        b.drop_constraint("uq_baselines_point", type_="unique")
        b.create_unique_constraint(
            "uq_baselines_point", ["name", "model", "task", "k", "metric", "variant"]
        )


def downgrade() -> None:
    with op.batch_alter_table("baselines") as b:
        b.drop_constraint("uq_baselines_point", type_="unique")
        b.create_unique_constraint("uq_baselines_point", ["name", "model", "task", "k", "metric"])
        b.drop_column("variant")
