"""answers and answer_runs: what `seqbench memory` concluded (k* with its interval, or a
verdict) and the runs it rests on, so that an answer is queryable with SQL beside its evidence.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "answers",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("task", sa.String(50), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("verdict", sa.String(20), nullable=False),
        sa.Column("k_star", sa.Integer(), nullable=True),
        sa.Column("k_low", sa.Integer(), nullable=True),
        sa.Column("k_high", sa.Integer(), nullable=True),
        sa.Column("max_k", sa.Integer(), nullable=False),
        sa.Column("epsilon", sa.Float(), nullable=False),
        sa.Column("metric", sa.String(100), nullable=False),
        sa.Column("n_runs", sa.Integer(), nullable=False),
        sa.Column("sentence", sa.Text(), nullable=False),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.UniqueConstraint("name"),
    )
    op.create_index("ix_answers_task", "answers", ["task"])
    op.create_table(
        "answer_runs",
        sa.Column(
            "answer_id",
            sa.Integer(),
            sa.ForeignKey("answers.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True
        ),
    )
    op.create_index("ix_answer_runs_run_id", "answer_runs", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_answer_runs_run_id", table_name="answer_runs")
    op.drop_table("answer_runs")
    op.drop_index("ix_answers_task", table_name="answers")
    op.drop_table("answers")
