"""The regression gate sees a regression on a solved point: every committed baseline's
tolerance scales with the point's error (the loss itself; 1 − accuracy), so doubling any
point's error fails while a 5% change passes (the gate re-runs the baselines' own seeds, which
reproduce their values; docs/reproductions.md). The old rule, max(10%·value, 0.01), let the
solved points regress 17–123x as a pass."""

import json
from pathlib import Path

import pytest

from seqbench.report.baseline_file import load_file
from seqbench.report.check import Point, judge, point_error, tolerance

FILES = sorted(Path(__file__).parents[2].glob("baselines/*.json"))


def _worse(p: Point, factor: float) -> float:
    """The value whose error is `factor` times the point's."""
    err = point_error(p.value, p.metric, p.task)
    return p.value + (factor - 1) * err * (1 if p.direction == "lower" else -1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_doubling_any_points_error_fails_and_five_percent_passes(path):
    _name, points = load_file(path)
    assert points
    for p in points:
        assert judge(p, _worse(p, 2.0), p.tolerance) == "regressed", p
        assert judge(p, _worse(p, 1.05), p.tolerance) == "pass", p
        assert judge(p, p.value, p.tolerance) == "pass"


def test_the_old_floor_passed_a_hundredfold_regression_of_a_solved_point():
    solved = [
        p
        for path in FILES
        for p in load_file(path)[1]
        if p.direction == "lower" and p.value < 1e-3  # TCN adding and copy, IndRNN T = 100
    ]
    assert solved
    for p in solved:
        old = max(0.01, 0.1 * p.value)
        assert judge(p, _worse(p, 10.0), old) == "pass"  # what the gate could not see
        assert judge(p, _worse(p, 10.0), p.tolerance) == "regressed"


def test_accuracy_tolerances_scale_with_the_error_rate():
    assert point_error(0.96, "test_metric", "digits") == pytest.approx(0.04)
    assert tolerance(0.96, 0.1, 0.0, point_error(0.96, "test_metric", "digits")) == (
        pytest.approx(0.004)
    )
    p = Point("tcn", "digits", None, "test_metric", 0.96, 0.004, "higher")
    assert judge(p, 0.92, p.tolerance) == "regressed"  # twice the errors
    assert judge(p, 0.86, p.tolerance) == "regressed"  # the RNN-64's accuracy
    assert point_error(0.1, "test_metric", "adding") == 0.1  # a loss is its own error


def test_saved_tolerances_are_what_the_rule_gives(cli, tmp_path):
    from seqbench.store.opening import open_store
    from tests.conftest import add_run

    db = tmp_path / "g.db"
    s = open_store(db)
    add_run(s, {"test_metric": 2e-4}, model="tcn", task="adding", seed=0)
    add_run(s, {"test_metric": 0.95}, model="tcn", task="digits", seed=0)
    s.dispose()
    r = cli("--db", db, "baseline", "save", "b", "--rtol", "0.1")
    assert r.exit_code == 0, r.output
    out = tmp_path / "b.json"
    assert cli("--db", db, "baseline", "export", "b", out).exit_code == 0
    tol = {p["task"]: p["tolerance"] for p in json.loads(out.read_text())["points"]}
    assert tol == {"adding": pytest.approx(2e-5), "digits": pytest.approx(0.005)}
