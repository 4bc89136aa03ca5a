"""The read-only commands start lean: no torch anywhere, and on a SQLite store at head
`report` and `query` read through the standard library without importing SQLAlchemy."""

import os
import subprocess
import sys

import pytest

from seqbench.store.opening import open_store
from tests.conftest import add_run

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


@pytest.mark.parametrize(
    "args",
    [
        ["query", "SELECT 1 AS x"],
        ["report"],
        ["runs"],
        ["show", "1"],
        ["sweep", "status"],
        ["check", "--baseline", "nightly"],
        ["baseline", "list"],
    ],
)
def test_read_commands_never_create_a_store(cli, tmp_path, args):
    db = tmp_path / "new.db"
    r = cli("--db", db, *args)
    assert r.exit_code != 0 and "no seqbench database at" in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert not db.exists()


def test_report_and_query_leave_the_store_byte_identical(cli, tmp_path):
    from tests.conftest import add_run, sha256

    db = tmp_path / "runs.db"
    s = open_store(db)
    run = add_run(s)
    s.set_summaries(run.id, {"test_metric": 0.1})
    s.dispose()
    before = sha256(db)
    assert cli("--db", db, "report", "--format", "csv").exit_code == 0
    assert cli("--db", db, "query", "SELECT COUNT(*) FROM runs").exit_code == 0
    assert sha256(db) == before


def _delete_journal_store(path):
    """A store in rollback-journal mode (as another tool, or an older SQLite, leaves it)."""
    import sqlite3

    s = open_store(path)
    run = add_run(s)
    s.set_summaries(run.id, {"test_metric": 0.1})
    s.create_run(model="rnn", task="adding", config={}, config_hash="h2", status="running")
    s.dispose()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    con.close()


@pytest.mark.parametrize(
    "args",
    [
        ["runs"],
        ["runs", "--status", "running"],
        ["show", "1"],
        ["show", "1", "-f", "json"],
        ["sweep", "status"],
        ["query", "SELECT * FROM runs"],
        ["report"],
        ["baseline", "list"],
    ],
)
def test_read_commands_leave_a_rollback_journal_store_unchanged(cli, tmp_path, args):
    """They used to switch the file to WAL (a writer's connection pragma)."""
    import sqlite3

    from tests.conftest import sha256

    db = tmp_path / "journal.db"
    _delete_journal_store(db)
    before = sha256(db)
    r = cli("--db", db, *args)
    assert r.exit_code == 0, r.output
    assert sha256(db) == before
    assert not (tmp_path / "journal.db-wal").exists()
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    con.close()


def test_another_applications_database_is_not_taken_over(cli, tmp_path):
    import sqlite3

    from tests.conftest import sha256

    db = tmp_path / "app.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.commit()
    con.close()
    before = sha256(db)
    r = cli("--db", db, "runs")
    assert r.exit_code == 1 and "no seqbench database" in r.stderr
    r = cli("--db", db, "train", "-m", "rnn", "-t", "adding", "--steps", "1", "-q")
    assert r.exit_code == 1 and "another application's tables (users)" in r.stderr
    assert "seqbench db upgrade" in r.stderr and sha256(db) == before
    assert cli("--db", db, "db", "upgrade").exit_code == 0  # asked: the tables are added
    assert cli("--db", db, "runs").exit_code == 0
    con = sqlite3.connect(db)
    assert con.execute("SELECT COUNT(*) FROM users").fetchone() == (0,)
    con.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write any file")
def test_read_commands_work_on_a_read_only_file(cli, tmp_path):
    db = tmp_path / "ro.db"
    _delete_journal_store(db)
    db.chmod(0o444)
    for args in (["runs"], ["show", "1"], ["query", "SELECT 1"], ["report"]):
        r = cli("--db", db, *args)
        assert r.exit_code == 0, (args, r.output)


HELP_PROBE = """
import sys
from seqbench.cli.main import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    # the api itself imports nothing of seqbench; the library is what its names load
    bare = ("seqbench", "seqbench._version", "seqbench.api", "seqbench.errors", "seqbench.memory")
    library = [m for m in sys.modules if m.startswith("seqbench.")
               and not m.startswith("seqbench.cli") and m not in bare]
    config = "seqbench.config" in sys.modules
    print(f"API={bool(library)} CONFIG={config}", file=sys.stderr)
    rich = ",".join(m for m in ("rich", "markdown_it") if m in sys.modules)
    print(f"RICH={rich}", file=sys.stderr)
"""


@pytest.mark.parametrize(("args", "loads"), [(["--help"], False), (["train", "--help"], True)])
def test_the_top_level_help_does_not_load_the_library(args, loads):
    """`seqbench --help` lists the commands without loading the library under seqbench.api
    (whose names import it on first use) or the config and registries; a command's own help
    and every command load it (train's help lists every default, read from the registries)."""
    r = subprocess.run([sys.executable, "-c", HELP_PROBE, *args], capture_output=True,
                       text=True, timeout=120)  # fmt: skip
    line = [x for x in r.stderr.splitlines() if x.startswith("API=")][-1]
    assert line == f"API={loads} CONFIG={loads}", r.stderr[-2000:]
    assert "Usage" in r.stdout
    if not loads:
        # click's plain help layout (the root app's rich_markup_mode=None): typer's rich
        # panels would import rich, markdown-it and rich's traceback printer, ~0.1 s
        assert "RICH=\n" in r.stderr + "\n", r.stderr[-2000:]
