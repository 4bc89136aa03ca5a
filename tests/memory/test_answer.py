"""The answer's rules on runs whose outcome is set by hand: each verdict, the interval over
seeds, the direction of the metric, and a diverged run counted as learning nothing."""

import math

import pandas as pd
import pytest

from seqbench.memory.answer import derive
from seqbench.memory.plan import k_grid, next_k


def runs(cells: dict, baseline: float = 1.0) -> pd.DataFrame:
    """cells: {(model, k or None): [value per seed]}."""
    rows, rid = [], 0
    for (model, k), values in cells.items():
        for seed, v in enumerate(values):
            rid += 1
            rows.append((rid, model, k, seed, v, baseline))
    return pd.DataFrame(rows, columns=["run_id", "model", "k", "seed", "value", "baseline"])


def answer(cells, baseline=1.0, higher=False, **kw):
    return derive(
        runs(cells, baseline), task="t", higher_is_better=higher, max_k=8, metric="mse", **kw
    )


FLAT = [1.0, 0.99, 1.01]
LOW = [0.010, 0.011, 0.009]


def test_matches_at_the_first_k_within_epsilon_of_the_best():
    a = answer(
        {("tcn", 1): FLAT, ("tcn", 2): FLAT, ("tcn", 4): LOW, ("tcn", 8): LOW, ("lstm", None): LOW}
    )
    assert a.verdict == "matches"
    assert (a.k_star, a.k_low, a.k_high) == (4, 4, 4)
    assert "k* = 4" in a.sentence and a.warnings == []
    assert sorted(a.run_ids) == list(range(1, 16))


def test_epsilon_sets_how_close_is_close_enough():
    cells = {("tcn", 1): FLAT, ("tcn", 2): [0.2] * 3, ("tcn", 4): LOW, ("tcn", 8): LOW}
    assert answer(cells).k_star == 4  # 0.2 is 19% of the gap above the best
    assert answer(cells, epsilon=0.25).k_star == 2


def test_the_interval_spans_what_the_seeds_allow():
    """One seed of k = 2 failed: k = 2 misses on average, but resamples without that seed
    match there, so the interval reaches down to 2 while k* is 4."""
    a = answer({("tcn", 1): FLAT, ("tcn", 2): [0.05, 0.9, 0.04], ("tcn", 4): LOW, ("tcn", 8): LOW})
    assert (a.verdict, a.k_star, a.k_low, a.k_high) == ("matches", 4, 2, 4)


def test_an_interval_past_the_largest_k_is_open():
    """k = 8 matches the reference on average, but a quarter of the resamples draw its bad
    seed twice and then no k tried matches: the interval's upper end is past the largest k."""
    a = answer({("tcn", 4): FLAT, ("tcn", 8): [0.02, 0.02, 0.3], ("lstm", None): [0.1] * 3})
    assert (a.verdict, a.k_star, a.k_low, a.k_high) == ("matches", 8, 8, None)
    assert "8–more than 8" in a.sentence


def test_needs_recurrence_when_the_reference_is_ahead_beyond_noise():
    a = answer({("tcn", 1): FLAT, ("tcn", 8): [0.40, 0.41, 0.39], ("lstm", None): LOW})
    assert a.verdict == "needs-recurrence" and a.k_star is None
    assert "Needs recurrence" in a.sentence and "lstm" in a.sentence


def test_needs_more_when_the_reference_is_ahead_within_noise():
    a = answer(
        {("tcn", 1): FLAT, ("tcn", 8): [0.40, 0.41, 0.39], ("lstm", None): [0.01, 0.9, 0.01]}
    )
    assert a.verdict == "needs-more" and a.k_star is None
    assert "Needs more than k = 8" in a.sentence


def test_nothing_learned_when_every_cell_is_at_the_baseline():
    a = answer({("tcn", 1): FLAT, ("tcn", 8): [0.98, 0.99, 1.0], ("lstm", None): FLAT})
    assert a.verdict == "nothing-learned" and a.k_star is None
    assert not any(c.matches for c in a.cells)


def test_a_reference_that_learned_nothing_is_named():
    a = answer({("tcn", 1): FLAT, ("tcn", 4): LOW, ("gru", None): FLAT})
    assert a.verdict == "matches" and a.k_star == 4
    assert len(a.warnings) == 1 and "gru did not learn" in a.warnings[0]


def test_higher_is_better_for_accuracy():
    a = answer(
        {("tcn", 1): [0.5, 0.51, 0.49], ("tcn", 2): [0.97, 0.98, 0.97], ("tcn", 4): [0.98] * 3},
        baseline=0.5,
        higher=True,
    )
    assert a.verdict == "matches" and a.k_star == 2
    assert math.isclose(a.best, 0.98)


def test_a_diverged_run_counts_as_learning_nothing():
    a = answer({("tcn", 2): [0.01, math.nan, 0.01], ("tcn", 4): LOW, ("tcn", 1): FLAT})
    assert a.k_star == 4  # k = 2's mean is (0.01 + 1 + 0.01) / 3, far from the best


def test_the_grid_and_the_bisection():
    assert k_grid(16) == [1, 2, 4, 8, 16]
    assert k_grid(20) == [1, 2, 4, 8, 16, 20]
    assert k_grid(2) == [1, 2]
    assert next_k([1, 2, 4, 8], 8) == 6
    assert next_k([1, 2, 4, 6, 8], 6) == 5
    assert next_k([1, 2, 4, 5, 6, 8], 5) is None  # 4 fell short, 5 matches: exact
    assert next_k([1, 2], 1) is None and next_k([1, 2], None) is None


@pytest.mark.parametrize("m", [3, 5, 6, 7, 12, 13])
def test_bisection_lands_on_the_exact_boundary(m):
    """A boundary anywhere between grid points is found in log2 of the gap rounds."""
    tried, k = k_grid(16), None
    rounds = 0
    while True:
        k_star = min(k for k in tried if k >= m)
        k = next_k(tried, k_star)
        if k is None:
            break
        tried, rounds = sorted({*tried, k}), rounds + 1
    assert k_star == m and rounds <= 3
