"""Small things a user meets in the first hour, each fixed and held here."""

from __future__ import annotations

import csv
import io
import json

from tests.conftest import add_run


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


def test_check_lists_k_in_numeric_order(cli, store):
    for k in (1, 16, 2, 20, None):
        add_run(store, {"test_metric": 0.1}, model="tcn" if k else "rnn", k=k,
                config_hash=f"h{k}", config={"k": k})  # fmt: skip
    assert cli("baseline", "save", "ref").exit_code == 0
    r = cli("check", "--baseline", "ref", "-f", "csv")
    assert r.exit_code == 0, r.output
    ks = [row["k"] for row in csv.DictReader(io.StringIO(r.stdout)) if row["model"] == "tcn"]
    assert ks == ["1", "2", "16", "20"]


def test_v_results_leaves_archived_runs_out_and_v_results_all_keeps_them(cli, store):
    for seed, v in ((0, 0.1), (1, 0.3)):
        add_run(store, {"test_metric": v}, seed=seed, config_hash=f"h{seed}")
    assert cli("runs", "archive", "2").exit_code == 0
    q = "SELECT COUNT(*) AS n, AVG(test_metric) AS m FROM {}"
    got = json.loads(cli("query", q.format("v_results"), "-f", "json").stdout)
    assert got == [{"n": 1, "m": 0.1}]  # what report and check see too
    got = json.loads(cli("query", q.format("v_results_all"), "-f", "json").stdout)
    assert got[0]["n"] == 2


def test_memory_help_says_its_defaults_and_needs_no_command(cli):
    """`memory --help` showed `(tcn,window)` and `(lstm,gru)`, the defaults, where a reader
    sees a list of choices, and its usage line said a COMMAND was needed."""
    r = cli("memory", "--help")
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    assert "Usage: seqbench memory [OPTIONS] [list [ARGS]...]" in text
    assert "(default: tcn,window;" in text and "(default: lstm,gru)" in text
    assert "(tcn,window)" not in text
