import itertools
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from seqbench.store import migrate
from seqbench.store.schema import Base

ROOT = Path(__file__).resolve().parents[2]


def _tables(engine):
    return set(inspect(engine).get_table_names())


def test_upgrade_downgrade_upgrade_round_trip(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    migrate.upgrade(engine)
    assert {
        "runs",
        "metrics",
        "summaries",
        "curves",
        "sweeps",
        "sweep_points",
        "baselines",
    } <= _tables(engine)
    assert set(inspect(engine).get_view_names()) == {"v_results", "v_results_all", "v_summaries"}
    migrate.downgrade(engine, "base")
    assert _tables(engine) == {migrate.VERSION_TABLE}
    migrate.upgrade(engine)
    with engine.connect() as c:
        assert migrate.current_revision(c) == migrate.head_revision()
    engine.dispose()


def test_orm_matches_migrated_schema(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    migrate.upgrade(engine)
    with engine.connect() as c:
        ctx = MigrationContext.configure(
            c, opts={"compare_type": True, "version_table": migrate.VERSION_TABLE}
        )
        diff = compare_metadata(ctx, Base.metadata)
    engine.dispose()
    assert diff == []


def test_history_is_linear_and_ends_at_head():
    revs = migrate.history()
    assert [r.revision for r in revs][:3] == ["0001", "0002", "0003"]
    assert revs[-1].is_head and sum(r.is_head for r in revs) == 1
    for prev, cur in itertools.pairwise(revs):
        assert cur.down_revision == prev.revision


@pytest.mark.slow
def test_wheel_ships_the_migrations(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
    )
    (wheel,) = tmp_path.glob("seqbench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "seqbench/migrations/env.py" in names
    assert "seqbench/migrations/script.py.mako" in names
    shipped = {n for n in names if n.startswith("seqbench/migrations/versions/")}
    versions = (ROOT / "migrations" / "versions").glob("*.py")
    on_disk = {f"seqbench/migrations/versions/{p.name}" for p in versions}
    assert on_disk and on_disk <= shipped


def test_the_head_constant_is_alembic_head():
    """store/names.py holds the head revision, compared without alembic: it must be the head."""
    from seqbench.store.names import HEAD_REVISION

    assert migrate.head_revision() == HEAD_REVISION
