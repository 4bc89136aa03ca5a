"""`check` and `baseline`: a gate that cannot pass on nothing (a sweep whose points failed,
an empty or malformed baseline, a diverged run as a baseline value), and names that print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import add_run, one_line_error, sha256


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
    words = "pass on nothing" if points == "[]" else 'a list of "points"'
    assert words in one_line_error(cli("check", "--baseline", path))
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
    one_line_error(cli("check", "--baseline", path))
    one_line_error(cli("baseline", "import", path))
    assert sha256(store.url.removeprefix("sqlite:///")) == before


def test_a_baseline_path_that_is_a_directory_or_not_utf8(cli, store, tmp_path):
    add_run(store, {"test_metric": 0.1})
    (tmp_path / "dir.json").mkdir()
    assert "is a directory" in one_line_error(cli("check", "--baseline", tmp_path / "dir.json"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"points": ["\xff"]}')
    one_line_error(cli("check", "--baseline", bad))


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
        one_line_error(cli("baseline", "save", name))
        one_line_error(cli("sweep", "--models", "rnn", "--tasks", "adding", "--name", name))
    assert cli("baseline", "list", "-f", "csv").stdout.strip() == "name,points,created"
