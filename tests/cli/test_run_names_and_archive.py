"""Naming runs and archiving them (seqbench runs name / archive / restore, train --name), on
SQLite and PostgreSQL."""

import csv
import io
import json

import pytest

from seqbench import api
from tests.conftest import add_run


def _ids(cli, *args):
    return [r["id"] for r in json.loads(cli(*args, "-f", "json").stdout)]


def test_a_name_works_wherever_a_run_is_asked_for(cli, store):
    a, b = add_run(store, {"test_metric": 0.1}), add_run(store, {"test_metric": 0.2})
    assert cli("runs", "name", str(a.id), "lstm-baseline").stdout.strip() == (
        f"run {a.id}: named 'lstm-baseline'"
    )
    shown = json.loads(cli("show", "lstm-baseline", "-f", "json").stdout)
    assert shown["id"] == a.id and shown["name"] == "lstm-baseline"
    listed = json.loads(cli("runs", "-f", "json").stdout)
    assert {r["id"]: r["name"] for r in listed} == {a.id: "lstm-baseline", b.id: None}
    assert cli("diff", "lstm-baseline", str(b.id)).exit_code == 0
    # a shared name is refused where it would be ambiguous, with the runs it names
    assert cli("runs", "name", str(b.id), "lstm-baseline").exit_code == 0
    r = cli("show", "lstm-baseline")
    assert r.exit_code == 2 and f"matches several runs ({a.id}, {b.id})" in r.stderr
    assert cli("runs", "name", str(a.id), "--clear").exit_code == 0
    assert store.get_run(a.id).name is None
    assert json.loads(cli("show", "lstm-baseline", "-f", "json").stdout)["id"] == b.id


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (("7",), "cannot be a number"),
        (("",), "1-200 printable characters"),
        (("a\nb",), "1-200 printable characters"),
        (("x" * 201,), "1-200 printable characters"),
        ((), "give a name, or --clear"),
        (("x", "--clear"), "give a name, or --clear"),
    ],
)
def test_bad_names_are_one_line_errors_and_change_nothing(cli, store, args, msg):
    a = add_run(store, name="kept")
    r = cli("runs", "name", str(a.id), *args)
    assert r.exit_code == 2 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert store.get_run(a.id).name == "kept"
    assert cli("runs", "name", "nosuch", "x").exit_code == 1


def test_train_names_its_run(cli, store, db):
    out = api.train("rnn", "adding", db=store, name="first try", seq_len=10, steps=2, eval_size=8)
    assert store.get_run(out.run_id).name == "first try"
    r = cli("train", "-m", "rnn", "-t", "adding", "--steps", "2", "--name", "12", "-q")
    assert r.exit_code == 2 and "cannot be a number" in r.stderr
    assert len(store.list_runs()) == 1  # refused before any run was written


def test_archived_runs_leave_lists_reports_and_checks_and_come_back(cli, store, tmp_path):
    keep = add_run(store, {"test_metric": 0.1}, seed=0)
    old = add_run(store, {"test_metric": 0.9}, seed=1)
    assert cli("baseline", "save", "b").exit_code == 0  # median of both seeds: 0.5
    assert cli("runs", "archive", str(old.id)).stdout.strip() == f"archived 1 run(s): {old.id}"
    assert _ids(cli, "runs") == [keep.id]
    assert _ids(cli, "runs", "--archived") == [old.id]
    rep = json.loads(cli("report", "-f", "json").stdout)
    assert [(r["n"], r["mean"]) for r in rep] == [(1, pytest.approx(0.1))]
    check = cli("check", "--baseline", "b", "-f", "json")
    assert json.loads(check.stdout)[0]["current"] == pytest.approx(0.1)
    assert list(api.runs_frame(store.url).index) == [keep.id]
    assert store.get_run(old.id).archived_at is not None  # every row is still there
    assert store.summaries(old.id) == {"test_metric": 0.9}
    assert cli("runs", "restore", str(old.id)).exit_code == 0
    assert _ids(cli, "runs") == [old.id, keep.id]
    running = add_run(store, status="running")
    r = cli("runs", "archive", str(running.id))
    assert r.exit_code == 2 and "is running" in r.stderr


@pytest.mark.postgres
def test_names_and_archive_on_postgres(cli, pg_url):
    from seqbench.store.opening import open_store

    store = open_store(pg_url)
    try:
        a, b = add_run(store, {"test_metric": 0.1}), add_run(store, {"test_metric": 0.2})
        assert cli("--db", pg_url, "runs", "name", str(a.id), "pg-run").exit_code == 0
        assert cli("--db", pg_url, "runs", "archive", "pg-run").exit_code == 0
        assert _ids(cli, "--db", pg_url, "runs") == [b.id]
        assert _ids(cli, "--db", pg_url, "runs", "--archived") == [a.id]
        rep = json.loads(cli("--db", pg_url, "report", "-f", "json").stdout)
        assert [r["n"] for r in rep] == [1]
        assert cli("--db", pg_url, "runs", "restore", "pg-run").exit_code == 0
        assert _ids(cli, "--db", pg_url, "runs") == [b.id, a.id]
    finally:
        store.dispose()


def test_runs_in_csv_or_json_lists_every_run_and_names_its_metric(cli, store):
    for i in range(60):
        task = "digits" if i % 2 else "adding"
        add_run(store, {"test_metric": 0.5}, task=task, seed=i, config_hash=f"h{i}")
    r = cli("runs", "-f", "csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 60  # not the table's first 50
    assert {(x["task"], x["metric"]) for x in rows} == {("adding", "mse"), ("digits", "acc")}
    assert len(json.loads(cli("runs", "-f", "json").stdout)) == 60
    r = cli("runs")
    assert "showing 50 of 60 runs" in r.output  # a table stays short, and says so
