"""Run identity that cannot be confused: names that read as uuid prefixes, tags set during a
sweep point, a sweep's status after its rows are deleted."""

from __future__ import annotations

import json

from seqbench.store.opening import open_store
from tests.conftest import add_run, one_line_error


def test_a_name_that_reads_as_a_uuid_prefix_is_refused(cli, store):
    # uuids fixed: a random one's first 8 characters are all digits 2.3% of the time, and
    # such a name is refused as a run id instead (below)
    a = add_run(store, uuid="54895539-0000-4000-8000-00000000000a")
    b = add_run(store, uuid="5a8f9e21-3c4d-4e5f-8a6b-7c8d9e0f1a2b")
    prefix = b.uuid[:8]
    store.dispose()
    for name in (prefix, b.uuid, "cafe", "12ab-cd"):
        assert "uuid prefix" in one_line_error(cli("runs", "name", str(a.id), name))
    assert "run id" in one_line_error(cli("runs", "name", str(b.id), a.uuid[:8]))
    assert cli("runs", "name", str(a.id), "baseline-run").exit_code == 0
    r = cli("runs", "delete", prefix, "-y")
    assert r.exit_code == 0 and f"{b.id}" in r.stdout
    assert [x.id for x in open_store(store.url).list_runs()] == [a.id]


def test_tags_set_during_a_sweep_point_survive_its_end(store):
    """The result write keeps the row's tags (runs tag while the point runs)."""

    run = add_run(store, status="running", tags={"cfg": "1"})
    store.retag_runs([run.id], {"owner": "alice"})
    record = {
        "fields": {"status": "completed", "tags": {"cfg": "1"}},
        "metrics": [],
        "summaries": {"test_metric": 0.1},
    }
    store.write_point_result(run.id, record)
    assert store.get_run(run.id).tags == {"cfg": "1", "owner": "alice"}


def test_sweep_status_follows_the_rows_after_a_delete(cli, tmp_path):
    grid = (
        "sweep --models rnn --tasks adding --seeds 0,1 --set steps=3 --set hidden=4 "
        "--set seq_len=8 --set eval_size=8 --quiet --name st"
    ).split()
    assert cli(*grid).exit_code == 0
    (row,) = json.loads(cli("sweep", "status", "-f", "json").stdout)
    assert row["status"] == "completed"
    run_id = json.loads(cli("runs", "-f", "json").stdout)[0]["id"]
    assert cli("runs", "delete", str(run_id), "-y").exit_code == 0
    (row,) = json.loads(cli("sweep", "status", "-f", "json").stdout)
    assert (row["status"], row["remaining"]) == ("incomplete", 1)
