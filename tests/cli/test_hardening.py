"""Hardening II: a gate that cannot pass on nothing, run identity that cannot be confused,
paths with any character, and one line (never a traceback) for each bad input found."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from seqbench.store.opening import open_store
from tests.conftest import add_run, sha256

TINY = "-m rnn -t adding --seq-len 8 --steps 3 --hidden 4 --set eval_size=8 -q".split()


def _one_line_error(r, code: int = 2) -> str:
    assert r.exit_code == code, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]


# -- the gate ------------------------------------------------------------------------------------
def test_a_sweep_whose_points_all_failed_exits_1(cli, tmp_path):
    (tmp_path / "checkpoints").write_text("a file where the checkpoint directory goes")
    args = (
        "sweep --models rnn --tasks adding --seeds 0,1 --set steps=3 --set hidden=4 --set "
        "seq_len=8 --set eval_size=8 --set save_checkpoint=true --quiet --name allfail"
    ).split()
    r = cli(*args)
    assert r.exit_code == 1, r.output
    assert "ran 2: 0 completed, 0 diverged, 2 failed" in r.stdout
    assert "2 of 2 point(s) of sweep 'allfail' have no result" in r.stderr
    assert cli(*args, "--allow-failed").exit_code == 0


@pytest.mark.parametrize("points", ["[]", "{}"])
def test_check_against_an_empty_baseline_is_refused(cli, store, tmp_path, points):
    add_run(store, {"test_metric": 0.1})
    path = tmp_path / "empty.json"
    path.write_text(f'{{"name": "e", "points": {points}}}')
    assert "pass on nothing" in _one_line_error(cli("check", "--baseline", path)) or points == "{}"
    assert cli("check", "--baseline", path).exit_code == 2
    assert cli("baseline", "import", path).exit_code == 2


POINT = {"model": "rnn", "task": "adding", "k": 4, "metric": "test_metric", "value": 0.1}


@pytest.mark.parametrize(
    "change",
    [
        {"value": "-Infinity"},
        {"value": "Infinity"},
        {"value": "NaN"},
        {"value": "nan"},
        {"k": [4]},
        {"k": "4"},
        {"k": True},
        {"metric": ["test_metric"]},
        {"model": ["rnn"]},
        {"task": {"name": "adding"}},
        {"direction": ["lower"]},
    ],
)
def test_a_baseline_file_with_a_bad_field_is_refused(cli, store, tmp_path, change):
    add_run(store, {"test_metric": 0.1}, k=4)
    point = {**POINT, "tolerance": 0.01, "direction": "lower", **change}
    text = json.dumps({"name": "b", "points": [point]})
    for word in ("Infinity", "NaN"):  # JSON's non-standard numbers, as Python writes them
        text = text.replace(f'"{word}"', word).replace('"-Infinity"', "-Infinity")
    path = tmp_path / "b.json"
    path.write_text(text)
    before = sha256(store.url.removeprefix("sqlite:///"))
    _one_line_error(cli("check", "--baseline", path))
    _one_line_error(cli("baseline", "import", path))
    assert sha256(store.url.removeprefix("sqlite:///")) == before


def test_a_baseline_path_that_is_a_directory_or_not_utf8(cli, store, tmp_path):
    add_run(store, {"test_metric": 0.1})
    (tmp_path / "dir.json").mkdir()
    assert "is a directory" in _one_line_error(cli("check", "--baseline", tmp_path / "dir.json"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"points": ["\xff"]}')
    _one_line_error(cli("check", "--baseline", bad))


def test_a_diverged_run_is_never_a_baseline_value_and_its_point_regresses(cli, store):
    for seed, status, value in [
        (0, "completed", 0.1),
        (1, "diverged", 255.17),
        (2, "completed", 0.2),
    ]:
        add_run(store, {"test_metric": value}, seed=seed, status=status, k=4)
    add_run(store, {"test_metric": 0.3}, model="tcn", k=4)
    r = cli("baseline", "save", "b")
    assert r.exit_code == 0, r.output
    assert "left out 1 point(s) whose runs diverged" in r.stderr
    check = json.loads(cli("check", "--baseline", "b", "-f", "json").stdout)
    assert [(c["model"], c["baseline"]) for c in check] == [("tcn", 0.3)]
    # a point saved when all seeds completed regresses once one of them diverges
    path = "b.json"
    assert cli("baseline", "export", "b", path).exit_code == 0
    data = json.loads(Path(path).read_text())
    data["points"][0]["model"] = "rnn"
    data["points"][0]["config"] = {}
    data["points"][0]["value"] = 0.15
    Path(path).write_text(json.dumps(data))
    rows = json.loads(cli("check", "--baseline", path, "-f", "json").stdout)
    assert [r["status"] for r in rows] == ["regressed"]


def test_baseline_and_sweep_names_must_be_printable(cli, store):
    add_run(store, {"test_metric": 0.1})
    for name in ("", "  ", "a\nb"):
        _one_line_error(cli("baseline", "save", name))
        _one_line_error(cli("sweep", "--models", "rnn", "--tasks", "adding", "--name", name))
    assert cli("baseline", "list", "-f", "csv").stdout.strip() == "name,points,created"


# -- run identity --------------------------------------------------------------------------------
def test_a_name_that_reads_as_a_uuid_prefix_is_refused(cli, store):
    # uuids fixed: a random one's first 8 characters are all digits 2.3% of the time, and
    # such a name is refused as a run id instead (below)
    a = add_run(store, uuid="54895539-0000-4000-8000-00000000000a")
    b = add_run(store, uuid="5a8f9e21-3c4d-4e5f-8a6b-7c8d9e0f1a2b")
    prefix = b.uuid[:8]
    store.dispose()
    for name in (prefix, b.uuid, "cafe", "12ab-cd"):
        assert "uuid prefix" in _one_line_error(cli("runs", "name", str(a.id), name))
    assert "run id" in _one_line_error(cli("runs", "name", str(b.id), a.uuid[:8]))
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


# -- paths and URLs ------------------------------------------------------------------------------
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
    assert words in _one_line_error(r, 1)


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
    assert "damaged" in _one_line_error(cli("db", "check"), 1)
    assert "damaged" in _one_line_error(cli("train", *TINY), 1)
    assert sha256(db) == before


# -- tracebacks and hangs ------------------------------------------------------------------------
HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    "args",
    [
        ["show", HUGE],
        ["runs", "name", HUGE, "x-run"],
        ["runs", "delete", HUGE, "-y"],
        ["diff", "1", HUGE],
        ["curves", HUGE],
        ["train", "-m", "rnn", "-t", "adding", "--from-run", HUGE],
    ],
)
def test_ids_past_64_bits_are_unknown_runs(cli, store, args):
    add_run(store)
    store.dispose()
    assert "no run" in _one_line_error(cli(*args), 1)


def test_limits_past_64_bits(cli, store):
    add_run(store)
    store.dispose()
    assert cli("runs", "--limit", HUGE).exit_code == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--hidden", HUGE], "64-bit"),
        (["--hidden", "3000000000"], "at most"),
        (["--set", "seed=9223372036854775807"], "seed must be in [0, 2^32)"),
        (["--set", "lr=1e38"], "lr must be at most"),
        (["--steps", "3", "--set", "steps=banana"], "given twice"),
        (["--steps", "3", "--set", "steps=5"], "given twice"),
    ],
)
def test_bad_sizes_and_seeds_are_refused_before_any_row(cli, db, args, words):
    r = cli("train", "-m", "rnn", "-t", "adding", "--steps", "2", *args)
    if "--steps" in args[:1]:
        r = cli("train", "-m", "rnn", "-t", "adding", *args)
    assert words in _one_line_error(r)
    assert not db.exists() or not open_store(db).list_runs()


@pytest.mark.parametrize(
    "model", ["rnn", "lstm", "gru", "indrnn", "tcn", "gcnn", "window", "transformer"]
)
def test_every_family_refuses_a_width_that_cannot_fit(cli, db, model):
    for hidden in ("3000000000", "1000000"):
        r = cli("train", "-m", model, "-t", "adding", "--hidden", hidden, "--steps", "2")
        assert "at most" in _one_line_error(r) or "needs about" in r.output
    assert not db.exists() or not open_store(db).list_runs()


def test_a_toml_size_that_is_a_float_is_refused(cli, tmp_path):
    (tmp_path / "h.toml").write_text("hidden = 1e20\n")
    _one_line_error(cli("train", "-m", "rnn", "-t", "adding", "--config", tmp_path / "h.toml"))


def test_huge_workers_and_grids_are_refused_before_any_row(cli, db):
    grid = ["sweep", "--models", "rnn", "--tasks", "adding", "--set", "steps=2"]
    assert "--workers" in _one_line_error(cli(*grid, "--workers", "1000000000000"))
    assert "at most 100,000" in _one_line_error(
        cli(*grid, "--seeds", "0:1000000000:+1", "--dry-run")
    )
    assert "at most 100,000" in _one_line_error(
        cli(*grid, "--seeds", "0:999:+1", "--k", "1:999:+1", "--dry-run")
    )
    assert not db.exists()


def test_a_diverged_run_says_why(cli, db):
    args = "train -m rnn -t adding --seq-len 8 --steps 20 --hidden 4 --set lr=1e12"
    r = cli(*args.split(), *"--set optimizer=sgd --set nonlinearity=relu -q".split())
    assert r.exit_code == 1 and "diverged" in r.output, r.output
    (run,) = open_store(db).list_runs()
    assert run.status == "diverged" and "loss became" in run.error


def test_repeats_of_one_seed_are_one_sample(cli, store):
    """The same (config, seed) trained three times is one sample in report --ci, not three."""
    for value in (0.1, 0.1, 0.1):
        add_run(store, {"test_metric": value}, seed=0, config_hash="h0", k=4)
    add_run(store, {"test_metric": 0.3}, seed=1, config_hash="h1", k=4)
    for extra in ([], ["--ci"]):
        args = ["report", "--compare", "rnn", "--by", "k", "-f", "json", *extra]
        (row,) = json.loads(cli(*args).stdout)
        assert (row["rnn_n"], row["rnn_mean"]) == (2, pytest.approx(0.2))
