"""Runs and sweeps as the reads give them (store/records.py), on both backends: every column of
schema.Run decoded as the ORM decoded it, one filter for lists, counts and frames, tags
matched by any key, and a uuid prefix that is a prefix, not a LIKE pattern."""

from __future__ import annotations

from datetime import datetime

import pytest

from seqbench.errors import UsageError
from seqbench.store.opening import open_store
from seqbench.store.records import RUN_COLUMNS, RunRecord
from seqbench.store.schema import Run
from tests.conftest import add_run


@pytest.fixture(params=["sqlite", "postgresql"])
def any_store(request, db):
    """A writer Store on each backend (PostgreSQL when .ci/run started one)."""
    url = str(db) if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = open_store(url)
    yield store
    store.dispose()


def test_a_record_has_every_column_of_a_run_in_its_order():
    assert tuple(c.name for c in Run.__table__.columns) == RUN_COLUMNS


def test_a_record_reads_as_the_orm_wrote_it(any_store):
    run = add_run(
        any_store,
        config={"k": 4, "lr": 0.5},
        tags={"team": "a"},
        name="first",
        environment={"host": "h"},
    )
    any_store.update_run(run.id, started_at=datetime(2026, 1, 2, 3, 4, 5, 678901))
    with open_store(any_store.url, "read") as reader:
        got = reader.get_run(run.id)
    assert isinstance(got, RunRecord)
    assert got.config == {"k": 4, "lr": 0.5}
    assert (got.tags, got.environment, got.name) == ({"team": "a"}, {"host": "h"}, "first")
    assert got.started_at == datetime(2026, 1, 2, 3, 4, 5, 678901)
    assert isinstance(got.created_at, datetime) and got.finished_at is None
    assert got.uuid == run.uuid and got.status == "completed"


def test_tags_match_by_any_key(any_store):
    """A tag's key may hold a path's characters (a bare JSON path reads `a.b` as a nested
    key) and any letter (SQLite compares a label as the stored JSON spells it: é as
    \\u00e9)."""
    keys = ["a.b", "$[0]", "back\\slash", "é", "plain"]
    runs = [add_run(any_store, tags={key: "v", "other": "w"}) for key in keys]
    add_run(any_store, tags=None)
    for run, key in zip(runs, keys, strict=True):
        assert [r.id for r in any_store.list_runs(tags={key: "v"})] == [run.id]
        assert any_store.count_runs(tags={key: "v"}) == 1
        assert any_store.list_runs(tags={key: "w"}) == []
    assert any_store.count_runs(tags={"other": "w"}) == 5
    assert any_store.count_runs() == 6


def test_a_tag_key_sqlite_cannot_match_is_refused(db):
    """SQLite's JSON path ends a label at a `"` whatever escapes it: such a key would match
    nothing, silently (the ORM's filter did); it is refused in one line."""
    store = open_store(db)
    add_run(store, tags={'q"uote': "v"})
    with pytest.raises(UsageError, match="double quote"):
        store.list_runs(tags={'q"uote': "v"})
    store.dispose()


def test_one_filter_for_lists_counts_and_frames(any_store):
    grid = [("rnn", "adding", "completed"), ("tcn", "adding", "failed"),
            ("rnn", "copy", "completed"), ("gru", "copy", "running")]  # fmt: skip
    for model, task, status in grid:
        add_run(any_store, model=model, task=task, status=status)
    archived = add_run(any_store, model="rnn", task="adding")
    any_store.archive_runs([archived.id])
    cases = [
        ({}, 4),
        ({"model": "rnn"}, 2),
        ({"task": ["adding", "copy"], "status": "completed"}, 2),
        ({"model": ["tcn", "gru"]}, 2),
        ({"archived": True}, 1),
        ({"archived": None}, 5),
    ]
    for filters, n in cases:
        listed = any_store.list_runs(limit=None, **filters)
        assert len(listed) == any_store.count_runs(**filters) == n, filters
        assert [r.id for r in listed] == sorted((r.id for r in listed), reverse=True)
        oldest = any_store.list_runs(limit=None, oldest_first=True, **filters)
        assert oldest == listed[::-1]
        cols, rows = any_store.run_rows(**filters)
        assert [row[cols.index("run_id")] for row in rows] == [r.id for r in oldest]
    assert len(any_store.list_runs(limit=2)) == 2
    with pytest.raises(TypeError):
        any_store.list_runs(colour="red")


def test_a_uuid_prefix_is_a_prefix_not_a_pattern(any_store):
    """A prefix that ends in the uuid's first dash (digits alone would read as a run id, as
    they always have: 8 hex digits are all decimal one time in 43)."""
    run = add_run(any_store)
    assert any_store.get_run(run.uuid[:9]).id == run.id
    assert any_store.get_run("%") is None
    assert any_store.get_run("_" * 8) is None
    assert any_store.get_run(run.uuid[:2] + "%") is None
