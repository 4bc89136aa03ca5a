"""v_results leaves archived runs out, as every seqbench command does; v_results_all keeps
them (with archived_at, to tell them apart).

A query right after `runs archive` averaged the archived run in; now `v_results` is what the
reports see, and `v_results_all` is every run.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

import importlib.util
from pathlib import Path

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _v0005():
    """0005's view definitions (the module name starts with a digit: load it by path)."""
    path = Path(__file__).with_name("0005_names_archive_baseline_configs.py")
    spec = importlib.util.spec_from_file_location("_seqbench_0005", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def upgrade() -> None:
    op.execute("DROP VIEW v_results")
    op.execute(
        _v0005()._v_results(extra=True).replace("VIEW v_results AS", "VIEW v_results_all AS")
    )
    op.execute("CREATE VIEW v_results AS SELECT * FROM v_results_all WHERE archived_at IS NULL")


def downgrade() -> None:
    op.execute("DROP VIEW v_results")
    op.execute("DROP VIEW v_results_all")
    op.execute(_v0005()._v_results(extra=True))
