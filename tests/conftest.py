import contextlib
import fcntl
import hashlib
import importlib.util
import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seqbench.cli.main import app


def pytest_configure(config):
    """A suite started in the background by a shell without job control (`bash .ci/run &`)
    inherits SIGINT ignored, and so would every seqbench process a test starts: the Ctrl-C
    tests would send a signal their command never sees. Ctrl-C is restored here (children
    then start with its default, which Python turns into KeyboardInterrupt)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def loads_module(code: str, module: str) -> bool:
    """Whether a fresh Python process that runs `code` ends with `module` imported: what a
    code path costs in imports, measured from the outside."""
    import subprocess
    import sys

    probe = f"{code}\nimport sys\nprint({module!r} in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1] == "True"


@contextlib.contextmanager
def script_module(name: str):
    """scripts/NAME.py loaded as module NAME, in sys.modules while the block runs (its
    dataclasses look their module up, and a process pool's workers unpickle by it)."""
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def _isolate(tmp_path, monkeypatch):
    """Every test runs in its own directory with no SEQBENCH_DB from the environment, so the
    default ./seqbench.db is a fresh file in tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SEQBENCH_DB", raising=False)
    monkeypatch.setenv("SEQBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "seqbench.db"


@pytest.fixture
def store(db):
    from seqbench.store.opening import open_store

    s = open_store(db)
    yield s
    s.dispose()


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(app, [str(a) for a in args], input=input)

    return invoke


@contextlib.contextmanager
def held_alone(resource: str):
    """An exclusive lock on `resource`, one of the machine's (a server, Ray's processes), held
    while the block runs: a file lock in the temporary directory, so that the tests of every
    pytest-xdist worker (scripts/test.sh) that share the resource take it one at a time."""
    with open(Path(tempfile.gettempdir()) / f"seqbench-test-{resource}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


@pytest.fixture
def pg_url():
    """A real PostgreSQL database started by .ci/run (SEQBENCH_TEST_PG_URL); dropped clean.
    The server is the suite's one shared resource (a database, and roles and grants that are
    the whole server's): a test holds it alone (`held_alone`) from this fixture to its
    teardown."""
    url = os.environ.get("SEQBENCH_TEST_PG_URL")
    if not url:
        pytest.skip("SEQBENCH_TEST_PG_URL not set (.ci/run starts a PostgreSQL server)")
    from sqlalchemy import create_engine, text

    with held_alone(f"pg-{hashlib.sha256(url.encode()).hexdigest()[:12]}"):
        engine = create_engine(url)
        with engine.begin() as c:
            c.execute(text("DROP SCHEMA public CASCADE"))
            c.execute(text("CREATE SCHEMA public"))
        engine.dispose()
        yield url


def seqbench_cmd(db, *args: str) -> list[str]:
    """The command line of `python -m seqbench --db DB ARGS...` for a subprocess; each arg
    holds one or more space-separated words ("sweep --models rnn")."""
    import sys

    return [
        sys.executable,
        "-m",
        "seqbench",
        "--db",
        str(db),
        *(w for a in args for w in a.split()),
    ]


def add_run(store, summaries: dict | None = None, **fields):
    """A finished training run row (rnn on adding, completed, empty config unless given),
    with its summaries: reports and checks read nothing else."""
    defaults = {
        "model": "rnn",
        "task": "adding",
        "config": {},
        "config_hash": "h",
        "status": "completed",
    }
    run = store.create_run(**{**defaults, **fields})
    if summaries:
        store.set_summaries(run.id, summaries)
    return run


def popen(cmd: list[str]):
    """A command started in the background with one torch thread, its output captured as
    text."""
    import subprocess

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def one_line_error(r, code: int = 2) -> str:
    """The single line a refused command printed (exit `code`, no traceback)."""
    assert r.exit_code == code, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]
