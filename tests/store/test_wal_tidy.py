"""Read commands leave no -wal or -shm file beside a store, and no byte of it changed.

SQLite deletes a WAL store's -wal and -shm files when the last connection closes, but only
a connection that may write: the read commands' read-only connections (mode=ro) left an empty
-wal and a 32 KB -shm after every `seqbench runs`. Measured from the outside: the directory's
files and the store's sha256 before and after each command; and the cases where the files
must stay: another connection still open (SQLite leaves them to the last), and a WAL with
frames in it (its checkpoint would write the file)."""

from __future__ import annotations

import sqlite3

import pytest

from seqbench.store.sqlite_file import tidy_wal
from tests.conftest import add_run, sha256

# each read, and the exit code it ends with (curves: the run logged no curve, an error that
# must tidy too)
READS = [
    (["runs"], 0),
    (["runs", "--format", "json"], 0),
    (["show", "1"], 0),
    (["report"], 0),
    (["query", "SELECT COUNT(*) FROM runs"], 0),
    (["memory", "list"], 0),
    (["baseline", "list"], 0),
    (["db", "current"], 0),
    (["curves", "1"], 1),
    (["show", "99"], 1),
]


@pytest.fixture
def filled(store, db):
    add_run(store, {"test_loss": 0.5, "test_metric": 0.5})
    store.dispose()
    assert not db.with_name(db.name + "-wal").exists()  # a writer's close removed it
    return db


def _beside(db) -> set[str]:
    return {p.name for p in db.parent.iterdir() if p.name.startswith(db.name)}


@pytest.mark.parametrize("args,code", READS, ids=[" ".join(a) for a, _ in READS])
def test_a_read_command_leaves_the_store_alone_and_nothing_beside_it(cli, filled, args, code):
    before = sha256(filled)
    result = cli("--db", filled, *args)
    assert result.exit_code == code, result.output
    assert sha256(filled) == before
    assert _beside(filled) == {filled.name}


def test_the_files_stay_while_another_connection_is_open(cli, filled):
    """A reader elsewhere keeps them: SQLite deletes them for the last connection alone; the
    last one, closing, takes them (here a connection that may write)."""
    other = sqlite3.connect(filled)
    assert other.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)
    before = sha256(filled)
    assert cli("--db", filled, "runs").exit_code == 0
    assert sha256(filled) == before
    assert {f"{filled.name}-wal", f"{filled.name}-shm"} <= _beside(filled)
    assert other.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)
    other.close()
    assert _beside(filled) == {filled.name}


def test_a_wal_with_frames_is_left_alone(filled):
    """Frames a writer has not checkpointed: tidying them would write the store, so the read
    leaves the -wal as it is, and the store's bytes with it."""
    writer = sqlite3.connect(filled)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE runs SET name = 'x'")
    writer.commit()
    wal = filled.with_name(filled.name + "-wal")
    size, before = wal.stat().st_size, sha256(filled)
    assert size > 0
    tidy_wal(filled)
    assert wal.stat().st_size == size and sha256(filled) == before
    writer.close()


def test_tidy_wal_without_a_wal_creates_nothing(tmp_path):
    tidy_wal(tmp_path / "none.db")
    tidy_wal(None)
    assert not list(tmp_path.glob("none.db*"))
