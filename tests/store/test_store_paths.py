"""Store paths with any character, URLs that cannot hold results, and a damaged store that
`db check` finds and nothing writes to."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import one_line_error, sha256

TINY = "-m rnn -t adding --seq-len 8 --steps 3 --hidden 4 --set eval_size=8 -q".split()


@pytest.mark.parametrize("name", ["exp#1.db", "q?x.db", "a%20b.db", "sp ace;'x.db"])
def test_paths_with_any_character_work(cli, tmp_path, name):
    db = tmp_path / name
    assert cli("--db", db, "train", *TINY).exit_code == 0
    for args in (["runs", "-f", "csv"], ["report"], ["query", "SELECT COUNT(*) FROM runs"]):
        r = cli("--db", db, *args)
        assert r.exit_code == 0, r.output
    assert name in {p.name for p in tmp_path.iterdir()}
    assert {p.name for p in tmp_path.iterdir()} <= {name, f"{name}-wal", f"{name}-shm", "cache"}


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("sqlite://", "in-memory"),
        ("sqlite:///:memory:", "in-memory"),
        ("sqlite:////tmp/seqbench-x.db?mode=ro", "no URL options"),
    ],
)
def test_urls_that_cannot_hold_results_are_refused(cli, url, words):
    r = cli("--db", url, "train", *TINY)
    assert words in one_line_error(r, 1)


# -- a damaged store -----------------------------------------------------------------------------
def test_a_damaged_store_is_found_by_db_check_and_never_written(cli, db):
    assert cli("train", *TINY).exit_code == 0
    assert cli("train", *TINY).exit_code == 0
    assert cli("db", "check").stdout.strip() == "ok"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = con.execute("PRAGMA page_size").fetchone()[0]
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'metrics'").fetchone()[0]
    con.close()
    data = bytearray(db.read_bytes())
    start = (root - 1) * page
    data[start + 8 : start + page] = b"\x5a" * (page - 8)  # the table's root page, scrambled
    db.write_bytes(bytes(data))
    before = sha256(db)
    assert "damaged" in one_line_error(cli("db", "check"), 1)
    assert "damaged" in one_line_error(cli("train", *TINY), 1)
    assert sha256(db) == before
