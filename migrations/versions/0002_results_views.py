"""Views for people who query by hand (v_results, v_summaries) and an index on summaries.key,
which the reports filter on.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Summary keys that every training run writes, pivoted into columns of v_results. Non-finite
# values show as NULL here; v_summaries keeps value_kind for them.
PIVOT = (
    "test_metric",
    "test_loss",
    "best_valid_metric",
    "final_valid_metric",
    "final_train_loss",
    "steps",
    "throughput",
    "peak_memory_mb",
    "diverged_step",
)


def _pivot_columns() -> str:
    return ",\n".join(
        f"  MAX(CASE WHEN s.key = '{key}' THEN s.value END) AS {key}" for key in PIVOT
    )


V_RESULTS = f"""
CREATE VIEW v_results AS
SELECT
  r.id AS run_id, r.uuid, r.kind, r.status, r.model, r.task, r.k, r.seq_len, r.seed,
  sw.name AS sweep, r.config_hash, r.created_at, r.wall_seconds, r.n_params,
{_pivot_columns()}
FROM runs r
LEFT JOIN sweeps sw ON sw.id = r.sweep_id
LEFT JOIN summaries s ON s.run_id = r.id
GROUP BY r.id, r.uuid, r.kind, r.status, r.model, r.task, r.k, r.seq_len, r.seed, sw.name,
  r.config_hash, r.created_at, r.wall_seconds, r.n_params
"""

V_SUMMARIES = """
CREATE VIEW v_summaries AS
SELECT
  r.id AS run_id, r.kind, r.status, r.model, r.task, r.k, r.seq_len, r.seed,
  sw.name AS sweep, s.key, s.value, s.value_kind
FROM summaries s
JOIN runs r ON r.id = s.run_id
LEFT JOIN sweeps sw ON sw.id = r.sweep_id
"""


def upgrade() -> None:
    op.create_index("ix_summaries_key", "summaries", ["key"])
    op.execute(V_RESULTS)
    op.execute(V_SUMMARIES)


def downgrade() -> None:
    op.execute("DROP VIEW v_summaries")
    op.execute("DROP VIEW v_results")
    op.drop_index("ix_summaries_key", table_name="summaries")
