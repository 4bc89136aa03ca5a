"""The read-only commands start lean: no torch anywhere, and on a SQLite store at head
`report` and `query` read through the standard library without importing SQLAlchemy."""

import json
import os
import subprocess
import sys

import pytest

from seqbench.store.store import open_store

PROBE = """
import sys
from seqbench.cli.main import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    heavy = [m for m in ("torch", "sqlalchemy", "alembic", "numba", "matplotlib")
             if m in sys.modules]
    print("MODULES=" + ",".join(heavy), file=sys.stderr)
"""


def _modules(*args, env=None) -> set[str]:
    r = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    line = [x for x in r.stderr.splitlines() if x.startswith("MODULES=")][-1]
    return {m for m in line.removeprefix("MODULES=").split(",") if m}


@pytest.fixture(scope="module")
def store_at_head(tmp_path_factory):
    path = tmp_path_factory.mktemp("lean") / "runs.db"
    open_store(path).dispose()
    return str(path)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["report", "--format", "json"],
        ["report", "--compare", "rnn", "tcn", "--format", "csv"],
        ["query", "SELECT COUNT(*) AS n FROM runs", "--format", "json"],
    ],
)
def test_read_commands_import_neither_torch_nor_sqlalchemy(store_at_head, args):
    assert _modules("--db", store_at_head, *args) == set()


@pytest.mark.parametrize("args", [["runs"], ["show", "1"], ["sweep", "status"], ["db", "current"]])
def test_store_commands_do_not_import_torch(store_at_head, args):
    assert "torch" not in _modules("--db", store_at_head, *args)


def test_query_on_a_new_path_still_goes_through_open_store(tmp_path):
    """The fast path only reads stores at head; a new file is created at head as before."""
    db = tmp_path / "new.db"
    assert "sqlalchemy" in _modules("--db", str(db), "query", "SELECT 1 AS x")
    r = subprocess.run(
        [sys.executable, "-m", "seqbench", "--db", str(db), "query", "SELECT 1 AS x", "-f", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(r.stdout) == [{"x": 1}]


def test_report_and_query_leave_the_store_byte_identical(cli, tmp_path):
    from tests.conftest import sha256

    db = tmp_path / "runs.db"
    s = open_store(db)
    run = s.create_run(model="rnn", task="adding", config={}, config_hash="h", status="completed")
    s.set_summaries(run.id, {"test_metric": 0.1})
    s.dispose()
    before = sha256(db)
    assert cli("--db", db, "report", "--format", "csv").exit_code == 0
    assert cli("--db", db, "query", "SELECT COUNT(*) FROM runs").exit_code == 0
    assert sha256(db) == before
