"""Checking a store's file must not drop this process's SQLite locks. Closing any descriptor of
a file drops every POSIX lock the process holds on it, SQLite's included
(sqlite.org/howtocorrupt.html §2.2); the last writer to close then finds no other lock,
checkpoints and deletes the -wal and -shm files under this process's open connections, and
they read "database disk image is malformed" (the dashboard beside writers:
tests/test_ui_soak.py). Measured from the outside: the -wal file outlives a writer process
that closes while a reader here is open, after the check ran."""

import sqlite3
import subprocess
import sys

from seqbench.store.sqlite_file import check_sqlite_file, sqlite_uri


def _write_once(db) -> None:
    code = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('INSERT INTO t VALUES (1)'); c.commit(); c.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True)


def test_checking_a_store_file_keeps_the_locks_of_open_readers(tmp_path):
    db = tmp_path / "s.db"
    w = sqlite3.connect(db)
    w.execute("PRAGMA journal_mode = WAL")
    w.execute("CREATE TABLE t (x)")
    w.commit()
    w.close()
    reader = sqlite3.connect(sqlite_uri(db), uri=True)
    try:
        reader.execute("SELECT count(*) FROM t").fetchone()
        _write_once(db)
        wal = db.with_name(db.name + "-wal")
        assert wal.exists()  # the open reader's lock keeps the writer from deleting it
        assert check_sqlite_file(db, writable=False)  # what every new reader runs first
        _write_once(db)
        assert wal.exists(), "the check dropped the reader's lock: the writer deleted the WAL"
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (2,)
    finally:
        reader.close()
