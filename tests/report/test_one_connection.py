"""A SQLite report is one connection: the store's revision read once, on the connection that
then reads the runs, the baselines and the rest (store/query.Reader). Once it is closed, one
connection that may write opens and closes only to remove the empty -wal and -shm files the
read left (store/sqlite_file.tidy_wal)."""

import sqlite3

import pytest

from seqbench.store import sqlite_file
from seqbench.store.opening import open_store
from tests.conftest import add_run


@pytest.fixture
def filled(db):
    s = open_store(db)
    for model, k, seed, v in [("rnn", None, 0, 0.1), ("rnn", None, 1, 0.12), ("tcn", 4, 0, 0.2),
                              ("tcn", 4, 1, 0.22), ("tcn", 8, 0, 0.15)]:  # fmt: skip
        add_run(s, {"test_metric": v, "baseline": 0.17}, model=model, k=k, seed=seed,
                config_hash=f"{model}{k}{seed}", config={"seed": seed})  # fmt: skip
    s.dispose()
    return db


@pytest.mark.parametrize(
    "args",
    [
        ["report"],
        ["report", "--compare", "rnn", "tcn", "--by", "k", "--ci"],
        ["report", "--compare", "rnn", "tcn", "--by", "k", "--fit-decay"],
        ["baseline", "list"],
    ],
)
def test_a_report_opens_one_connection_and_reads_the_revision_once(cli, filled, monkeypatch, args):
    connects, revisions = [], []
    real_connect, real_revision = sqlite3.connect, sqlite_file.sqlite_revision_readonly

    def connect(target, *a, **kw):
        connects.append(str(target))
        return real_connect(target, *a, **kw)

    def revision(*a, **kw):
        revisions.append(a[0])
        return real_revision(*a, **kw)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(sqlite_file, "sqlite_revision_readonly", revision)
    r = cli("--db", filled, *args)
    assert r.exit_code == 0, r.output
    assert len(connects) == 2 and connects[0].endswith("mode=ro"), connects
    assert connects[1].endswith("mode=rw")  # tidy_wal's, after the reads
    assert {p.name for p in filled.parent.iterdir() if p.name.startswith(filled.name)} == {
        filled.name
    }
    assert len(revisions) == 1
