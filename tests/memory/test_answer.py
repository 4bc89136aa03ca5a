"""The answer's rules on runs whose outcome is set by hand: learned beyond noise and chance,
within the tolerance shown over seeds, each verdict, the interval, the caveats, the direction
of the metric, and a diverged run counted as learning nothing."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from seqbench.memory import gap_share, search_gap, search_rounds
from seqbench.memory.answer import derive
from seqbench.memory.plan import k_grid, next_k, next_ks
from seqbench.sweep.spec import parse_range
from seqbench.training.convergence import still_improving


def runs(cells: dict, baseline: float = 1.0, **columns) -> pd.DataFrame:
    """cells: {(model, k or None): [value per seed]}; columns: further per-run columns, one
    value for every run."""
    rows, rid = [], 0
    for (model, k), values in cells.items():
        for seed, v in enumerate(values):
            rid += 1
            rows.append((rid, model, k, seed, v, baseline))
    df = pd.DataFrame(rows, columns=["run_id", "model", "k", "seed", "value", "baseline"])
    return df.assign(**columns)


def answer(cells, baseline=1.0, higher=False, metric="mse", columns=None, **kw):
    return derive(
        runs(cells, baseline, **(columns or {})),
        task="t",
        higher_is_better=higher,
        max_k=8,
        metric=metric,
        **kw,
    )


FLAT = [1.0, 0.99, 1.01]
LOW = [0.010, 0.011, 0.009]


def test_matches_at_the_first_k_shown_within_the_tolerance():
    """k = 4 is within; 2 is shown outside, so k = 3 (never tried) is the interval's low end."""
    a = answer(
        {("tcn", 1): FLAT, ("tcn", 2): FLAT, ("tcn", 4): LOW, ("tcn", 8): LOW, ("lstm", None): LOW}
    )
    assert a.verdict == "matches"
    assert (a.k_star, a.k_low, a.k_high) == (4, 3, 4)
    assert [c.status for c in a.cells] == ["outside", "outside", "within", "within", ""]
    assert "k* = 4" in a.sentence and a.warnings == []
    assert "within 5% of the gap to the trivial baseline (trivial baseline 1)" in a.sentence
    assert sorted(a.run_ids) == list(range(1, 16))


def test_epsilon_sets_how_close_is_close_enough():
    cells = {("tcn", 1): FLAT, ("tcn", 2): [0.2] * 3, ("tcn", 4): LOW, ("tcn", 8): LOW}
    assert answer(cells).k_star == 4  # 0.2 is 19% of the gap above the best
    assert answer(cells, epsilon=0.25).k_star == 2


def test_a_tolerance_relative_to_the_best_and_the_excess_in_the_metrics_terms():
    """The climate case: k = 2 at 0.058 against the best 0.046 is +25%: within 5% of the gap
    (0.95), far outside 10% of the best."""
    cells = {
        ("tcn", 1): [0.30, 0.31, 0.29],
        ("tcn", 2): [0.058, 0.057, 0.059],
        ("tcn", 16): [0.046, 0.045, 0.047],
    }
    gap = answer(cells)
    assert (gap.k_star, gap.relative_to) == (2, "gap")
    assert "mse 0.058 against the best 0.046 (tcn at k=16, +26%)" in gap.sentence
    best = answer(cells, epsilon=0.1, relative_to="best")
    assert best.k_star == 16 and math.isclose(best.tolerance, 0.0046)
    assert "within 10% of the best's own value" in best.sentence
    assert best.to_dict()["relative_to"] == "best"
    with pytest.raises(ValueError, match="`relative_to` must be gap or best"):
        answer(cells, relative_to="baseline")


def test_noise_cannot_make_a_cell_match_and_widens_the_interval():
    """One seed of k = 2 failed: neither within nor outside at three seeds. k* is 4, and
    the interval reaches down to 2, with a warning that more seeds would narrow it."""
    a = answer({("tcn", 1): FLAT, ("tcn", 2): [0.05, 0.9, 0.04], ("tcn", 4): LOW, ("tcn", 8): LOW})
    assert (a.verdict, a.k_star, a.k_low, a.k_high) == ("matches", 4, 2, 4)
    assert a.cells[1].status == "undecided"
    assert any("cannot tell whether k = 2" in w for w in a.warnings)


def test_the_undecided_warning_names_only_contexts_inside_the_interval():
    """k = 1 and 2 are shown outside, k = 4 undecided: the interval starts at 3, and the
    warning names the undecided k = 4 … 7 below k* = 8, never k = 1 or 2 (the λ = 0.95
    teacher of benchmarks/answer_cost.py, run twice, said "k = 1 … 26" where k = 4 … 16 were
    shown outside). It says what twice the seeds would buy."""
    NOISY = [0.05, 0.9, 0.04]
    a = answer({("tcn", 1): FLAT, ("tcn", 2): FLAT, ("tcn", 4): NOISY, ("tcn", 8): LOW,
                ("tcn", 16): LOW})  # fmt: skip
    assert (a.verdict, a.k_star, a.k_low, a.k_high) == ("matches", 8, 3, 8)
    assert [c.status for c in a.cells[:3]] == ["outside", "outside", "undecided"]
    (line,) = [w for w in a.warnings if "cannot tell" in w]
    assert "whether k = 4 … 7 is within" in line, line
    assert "6 seeds (`seeds` 0:5:+1) make each test's bound about 2.0× tighter" in line, line
    # the range it names is the seeds it counts: parsed as `--seeds` parses it, six, 0 … 5
    (expr,) = re.findall(r"`seeds` (\S+)\)", line)
    assert parse_range(expr) == [0, 1, 2, 3, 4, 5]


def test_a_context_the_seeds_cannot_place_keeps_the_interval_open_below_it():
    """k = 1 is undecided (two of its seeds within the tolerance, one failed), k = 2 shown
    outside: a longer context shown too short says nothing of a shorter one that was not
    (trained models need not be monotone in k), so the interval reaches down to 1. The old
    rule took every k below one shown outside as too short, and said 3–8."""
    NOISY = [0.05, 0.9, 0.04]
    a = answer({("tcn", 1): NOISY, ("tcn", 2): FLAT, ("tcn", 4): NOISY, ("tcn", 8): LOW,
                ("tcn", 16): LOW})  # fmt: skip
    assert (a.verdict, a.k_star, a.k_low, a.k_high) == ("matches", 8, 1, 8)
    assert [c.status for c in a.cells[:3]] == ["undecided", "outside", "undecided"]


def test_truly_equal_cells_give_an_interval_that_holds_the_smallest_k():
    """Every cell drawn from one distribution (0.5 ± 0.005, baseline 1, the tolerance 0.025):
    the honest answer is k = 1. Over 200 draws it is stated nearly always, and no cell is
    shown outside often enough to exclude it."""
    rng = np.random.default_rng(0)
    held, stated = 0, 0
    for _ in range(200):
        cells = {("tcn", k): list(rng.normal(0.5, 0.005, 3)) for k in (1, 2, 4, 8)}
        a = answer(cells)
        stated += a.k_star is not None
        held += a.k_star is not None and a.k_low == 1
    assert stated >= 0.95 * 200 and held == stated, (stated, held)


def test_cells_whose_noise_swamps_the_tolerance_seldom_state_an_answer():
    """The same, at 0.94 ± 0.02: the gap is 0.06, the tolerance 0.003, and the seeds spread
    seven times that. The old rule called the best cell within by fiat and stated a k* on
    every draw; now one is seldom stated, and an interval that misses 1 (k = 1 falsely shown
    outside, against a best that won by noise: at most α of the time, Bonferroni over the
    comparator) is no more common than the level allows over 200 draws (5% and three Monte
    Carlo standard errors)."""
    rng = np.random.default_rng(0)
    answers = [
        answer({("tcn", k): list(rng.normal(0.94, 0.02, 3)) for k in (1, 2, 4, 8)})
        for _ in range(200)
    ]
    stated = [a for a in answers if a.k_star is not None]
    missed = sum(a.k_low != 1 for a in stated)
    assert len(stated) <= 40 and missed <= 10 + 3 * math.sqrt(200 * 0.05 * 0.95), missed


def test_needs_recurrence_when_the_reference_is_ahead_beyond_noise():
    cells = {("tcn", 1): FLAT, ("tcn", 8): [0.40, 0.41, 0.39], ("lstm", None): LOW}
    a = answer(cells)
    assert a.verdict == "needs-recurrence" and a.k_star is None
    assert "Needs recurrence" in a.sentence and "lstm" in a.sentence


def test_a_recurrent_lead_at_the_whole_input_is_a_family_gap():
    """k = 8 is every step the input has: a GRU ahead there is not using more memory."""
    cells = {("tcn", 1): FLAT, ("tcn", 8): [0.40, 0.41, 0.39], ("gru", None): LOW}
    a = answer(cells, whole_input=True)
    assert a.verdict == "family-gap" and a.k_star is None
    assert "model family or training" in a.sentence and "not of memory" in a.sentence
    assert "Needs recurrence" not in a.sentence


def test_undecided_when_the_reference_is_ahead_within_noise():
    a = answer(
        {("tcn", 1): FLAT, ("tcn", 8): [0.05, 0.4, 0.05], ("lstm", None): [0.01, 0.05, 0.02]}
    )
    assert a.verdict == "undecided" and a.k_star is None
    assert "Cannot tell" in a.sentence


def test_nothing_learned_when_every_cell_is_at_the_baseline():
    cells = {("tcn", 1): FLAT, ("tcn", 8): [0.98, 0.99, 1.0], ("lstm", None): FLAT}
    a = answer(cells)
    assert a.verdict == "nothing-learned" and a.k_star is None
    assert not any(c.matches for c in a.cells)
    assert "train longer (`steps=...`) or give a larger `params`" in a.sentence
    # trained until converged: runs that stopped on a plateau need a higher floor, not a cap
    auto = answer(cells, steps_auto=True, train_steps=3000)
    assert "train longer (`steps=...`, a higher floor" in auto.sentence
    # and so does a reference that stopped there (docs/memory.md's chorales: it asked for a cap)
    (w,) = [w for w in auto.warnings if "lstm did not learn" in w]
    assert "`steps=...`, a higher floor" in w and "max_steps" not in w
    # a cell the cap stopped still improving asks for a higher cap (docs/memory.md's copy)
    slow = answer(cells, steps_auto=True, train_steps=3000,
                  columns={"improving": improving_at(cells, {("lstm", None)})})  # fmt: skip
    assert "train longer (`max_steps=...`) or give" in slow.sentence


def test_chance_cells_learned_nothing():
    """Accuracies at chance (0.10 ± 0.01, one cell at 0.11): no k* however the means fall; a
    reference that learned where no context did is ahead of all of them."""
    chance = {
        ("tcn", 1): [0.10, 0.09, 0.11],
        ("tcn", 2): [0.11, 0.10, 0.12],
        ("tcn", 4): [0.10, 0.11, 0.09],
        ("tcn", 8): [0.09, 0.10, 0.11],
        ("gru", None): [0.10, 0.10, 0.11],
    }
    a = answer(chance, baseline=0.1, higher=True, metric="acc")
    assert a.verdict == "nothing-learned" and a.k_star is None
    assert any("gru did not learn" in w for w in a.warnings)
    chance[("gru", None)] = [0.9, 0.91, 0.92]
    a = answer(chance, baseline=0.1, higher=True, metric="acc")
    assert a.verdict == "needs-recurrence" and a.k_star is None


def test_above_chance_by_less_than_the_test_set_allows_is_not_learned():
    """10 steps of MQAR: 0.0088 against chance 1/128 on every seed. Over seeds that is a
    gain; on 4,000 scored answers chance itself spreads by 0.0014: no more than a draw."""
    cells = {("tcn", k): [0.0088, 0.0087, 0.0089] for k in (1, 2, 4, 8)}
    chance = 1 / 128
    a = answer(cells, baseline=chance, higher=True, metric="acc", columns={"test_count": 4000})
    assert a.verdict == "nothing-learned" and not any(c.learned for c in a.cells)
    big = answer(cells, baseline=chance, higher=True, metric="acc", columns={"test_count": 1e6})
    assert big.verdict == "matches"  # on a million answers the same gain is beyond chance


def test_a_gain_no_larger_than_the_shared_test_splits_noise_is_not_learned():
    """The issue's delay-3 file trained 5 steps: cells that cannot see the target read 0.894
    on every seed against the baseline's 0.898 (the training mean), where the test split's own
    best constant scores 0.8937. The seeds share that split, so their agreement says nothing
    of it: an offset, not memory. Beside a gain far beyond the split's noise, learned."""
    offset = {("tcn", k): [0.8940, 0.8941, 0.8939] for k in (1, 2, 4, 8)}
    split = {"test_const": 0.8937, "test_gain_se": 0.0015}
    seeds_only = answer(offset, baseline=0.898)
    assert any(c.learned for c in seeds_only.cells)  # over the seeds alone it looks learned
    a = answer(offset, baseline=0.898, columns=split)
    assert a.verdict == "nothing-learned" and not any(c.learned for c in a.cells)
    learnt = answer({**offset, ("tcn", 8): [0.50, 0.51, 0.49]}, baseline=0.898, columns=split)
    assert [c.learned for c in learnt.cells] == [False, False, False, True]


def test_an_accuracy_no_better_than_the_splits_most_frequent_class_is_not_learned():
    """Classes at 60/40 on the shared test split: cells at 0.61 beat chance (0.5) far beyond a
    binomial draw of 400 answers, but not the split's most frequent class (0.60) beyond its
    noise: they learned the class balance, not the input."""
    cells = {("tcn", k): [0.61, 0.612, 0.608] for k in (1, 2, 4, 8)}
    count = {"test_count": 400}
    assert answer(cells, baseline=0.5, higher=True, metric="acc", columns=count).verdict == (
        "matches"
    )
    split = {**count, "test_const": 0.60, "test_gain_se": 0.02}
    a = answer(cells, baseline=0.5, higher=True, metric="acc", columns=split)
    assert a.verdict == "nothing-learned" and not any(c.learned for c in a.cells)


def test_learned_is_held_over_every_cell_at_once():
    """Ten cells each a little better than the baseline (p ≈ 0.02 each, seeds alone): one test
    per cell at 5% calls them all learned; Holm's step-down over the ten, none."""
    cells = {("tcn", k): [0.96, 0.97, 0.95] for k in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)}
    a = answer(cells)
    assert a.verdict == "nothing-learned" and not any(c.learned for c in a.cells)
    one = answer({("tcn", 1): [0.96, 0.97, 0.95], ("tcn", 2): [0.5, 0.51, 0.49]})
    assert one.cells[0].learned  # two cells: the strong one first, then this one at 5%


def test_a_reference_that_learned_nothing_is_named():
    a = answer({("tcn", 1): FLAT, ("tcn", 4): LOW, ("gru", None): FLAT})
    assert a.verdict == "matches" and a.k_star == 4
    assert len(a.warnings) == 1 and "gru did not learn" in a.warnings[0]


def test_a_reference_behind_the_best_feedforward_cell_is_no_ceiling():
    """The lambda = 0.95 case: the GRU at 0.079, a TCN ahead of it."""
    a = answer({("tcn", 1): FLAT, ("tcn", 8): [0.05, 0.051, 0.049], ("gru", None): [0.079] * 3})
    assert a.verdict == "matches" and a.best_cell == "tcn at k=8"
    assert any("gru (0.079) is no ceiling: tcn at k=8 (0.05) is ahead" in w for w in a.warnings)


def test_cells_still_improving_are_flagged_under_trained():
    improving = [True, False, False] * 3 + [True] * 3
    a = answer(
        {("tcn", 1): FLAT, ("tcn", 4): LOW, ("tcn", 8): LOW, ("gru", None): [0.02] * 3},
        columns={"improving": improving},
    )
    assert [c.improving for c in a.cells] == [False, False, False, True]
    assert any("gru was still improving" in w for w in a.warnings)
    a = answer({("tcn", 1): FLAT, ("tcn", 4): LOW}, columns={"improving": [True] * 6})
    assert "under-trained; train longer (`steps=...`): tcn at k=1, tcn at k=4" in a.warnings


def improving_at(cells: dict, slow: set) -> list[bool]:
    """The `improving` column of runs(cells): every seed of the cells in `slow`."""
    return [key in slow for key, values in cells.items() for _ in values]


GRID = {("tcn", 1): FLAT, ("tcn", 2): FLAT, ("tcn", 4): LOW, ("tcn", 8): [0.009, 0.01, 0.008],
        ("gru", None): [0.02, 0.021, 0.019]}  # fmt: skip


@pytest.mark.parametrize(
    ("slow", "named"),
    [
        ({("tcn", 4)}, "tcn at k=4"),  # the k* cell
        ({("tcn", 8)}, "tcn at k=8"),  # the best
        ({("gru", None)}, "gru"),  # the reference: it may become the best
        ({("tcn", 4), ("gru", None)}, "tcn at k=4, gru"),
    ],
)
def test_an_answer_resting_on_a_cell_still_improving_is_under_trained(slow, named):
    """A "matches" is only ever stated on cells that had stopped improving: with the k* cell,
    the best or a reference still improving, the verdict is under-trained, the cells are named
    and a cap to try is given; the k* these budgets measured is kept, said as such."""
    converged = answer(GRID, train_steps=800)
    assert (converged.verdict, converged.k_star) == ("matches", 4)
    a = answer(GRID, train_steps=800, columns={"improving": improving_at(GRID, slow)})
    assert a.verdict == "under-trained" and (a.k_star, a.k_low, a.k_high) == (4, 3, 4)
    assert a.sentence.startswith("Undecided (under-trained) on t: these budgets put k* at 4")
    assert f"but {named} w" in a.sentence and "`set` steps=1600, twice these" in a.sentence
    assert "matches" not in a.sentence and "is enough" not in a.sentence
    doc = a.to_dict()
    assert doc["verdict"] == "under-trained" and doc["under_trained"] == named.split(", ")


def test_a_cell_inside_the_interval_still_improving_makes_it_under_trained():
    """k = 2 cannot be told apart at these seeds (the interval is 2–4): were it trained
    longer it could come within, and k* would move down."""
    cells = {("tcn", 1): FLAT, ("tcn", 2): [0.05, 0.2, 0.012], ("tcn", 4): LOW, ("tcn", 8): LOW}
    assert (answer(cells).k_low, answer(cells).k_star) == (2, 4)
    a = answer(cells, columns={"improving": improving_at(cells, {("tcn", 2)})})
    assert a.verdict == "under-trained" and a.under_trained == ["tcn at k=2"]
    assert "`set` steps=..., more" in a.sentence  # no steps known: no number made up


def test_cells_an_answer_does_not_rest_on_leave_it_standing():
    """k = 1, shown outside below the interval, still improving: the answer stands (the
    warning still says so)."""
    a = answer(GRID, columns={"improving": improving_at(GRID, {("tcn", 1)})})
    assert a.verdict == "matches" and a.under_trained == []
    assert "under-trained; train longer (`steps=...`): tcn at k=1" in a.warnings


def test_needs_recurrence_rests_on_the_largest_context():
    """Every context outside the GRU's tolerance: needs recurrence, unless the largest
    context was still improving (it might yet come within)."""
    cells = {("tcn", 1): FLAT, ("tcn", 8): [0.5, 0.51, 0.49], ("gru", None): LOW}
    assert answer(cells).verdict == "needs-recurrence"
    slow_ref = answer(cells, columns={"improving": improving_at(cells, {("gru", None)})})
    assert slow_ref.verdict == "needs-recurrence"  # a better reference only widens the gap
    a = answer(cells, columns={"improving": improving_at(cells, {("tcn", 8)})})
    assert a.verdict == "under-trained" and a.k_star is None
    assert "on these budgets gru beats every context up to k = 8" in a.sentence


def test_nothing_learned_and_cannot_tell_state_no_k_star_to_doubt():
    nothing = {("tcn", 1): FLAT, ("tcn", 8): FLAT}
    a = answer(nothing, columns={"improving": [True] * 6})
    assert a.verdict == "nothing-learned" and a.under_trained == []


def test_a_cell_the_race_left_at_two_seeds_one_improving_is_flagged():
    """Half its seeds still improving flags a cell: the race stops a cell at two seeds, and
    one improving of two could have been two of three had it gone on. One of three is not."""
    a = answer(
        {("tcn", 1): FLAT[:2], ("tcn", 4): LOW, ("tcn", 8): LOW},
        columns={"improving": [True, False] + [True, False, False] + [False] * 3},
    )
    assert [c.improving for c in a.cells] == [True, False, False]
    assert "under-trained; train longer (`steps=...`): tcn at k=1" in a.warnings


@pytest.mark.parametrize(
    ("curve", "improving"),
    [
        ([1.0, 0.5, 0.3, 0.2, 0.2, 0.2, 0.2, 0.2], False),  # converged
        ([1.0, 0.5, 0.3, 0.2, 0.201, 0.199, 0.2, 0.1995], False),  # noise about a plateau
        ([1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.25, 0.2], True),  # still going down
        ([1.0, 0.9, 0.8], False),  # too short to tell
    ],
)
def test_still_improving_reads_the_tail_of_the_validation_curve(curve, improving):
    assert still_improving(curve, higher_is_better=False) is improving
    assert still_improving([-v for v in curve], higher_is_better=True) is improving


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
    assert a.k_star == 4  # k = 2 reads (0.01, 1, 0.01): not shown within the tolerance


def test_the_grid_and_the_search():
    assert k_grid(16) == [1, 2, 4, 8, 16]
    assert k_grid(20) == [1, 2, 4, 8, 16, 20]
    assert k_grid(2) == [1, 2]
    # in [4, 8): first down from 8 (7, 6: as many as a bisection would try), then bisect
    assert next_k([1, 2, 4, 8], 8, 16) == 7
    assert next_k([1, 2, 4, 7, 8], 7, 16) == 6
    assert next_k([1, 2, 4, 6, 7, 8], 6, 16) == 5  # the descent is over: (4 + 6) // 2
    assert next_k([1, 2, 4, 5, 6, 7, 8], 5, 16) is None  # 4 fell short, 5 matches: exact
    assert next_k([1, 2, 4, 7, 8], 8, 16) is None  # 7 fell short: the boundary is exact
    assert next_k([1, 2], 1, 2) is None and next_k([1, 2], None, 2) is None
    assert next_k([1, 2, 4, 8, 16], 16, 16) == 15
    assert next_k([1, 2, 4, 8, 13, 14, 15, 16], 13, 16) == 10  # 15, 14, 13 down: (8 + 13) // 2


def search(m: int, max_k: int) -> list[int]:
    """The contexts the search tries for a boundary at m (every context from m up within,
    every one below it not)."""
    tried, path = k_grid(max_k), []
    while (k := next_k(tried, min(k for k in tried if k >= m), max_k)) is not None:
        tried, path = sorted({*tried, k}), [*path, k]
    assert min(k for k in tried if k >= m) == m and m - 1 in [*tried, 0]
    return path


@pytest.mark.parametrize("max_k", [16, 64, 100])
def test_the_search_lands_on_the_exact_boundary_in_its_rounds(max_k):
    """A boundary anywhere in a gap is found; the search takes at most search_rounds of the
    gap (its descent, then a bisection): at most twice a bisection's."""
    for m in range(2, max_k + 1):
        path = search(m, max_k)
        low = max(g for g in k_grid(max_k) if g < m)
        up = min(g for g in k_grid(max_k) if g >= m)
        assert len(path) <= search_rounds(up - low) <= 2 * math.ceil(math.log2(up - low))


@pytest.mark.parametrize("max_k", [16, 64, 100])
def test_the_search_spends_the_level_once(max_k):
    """What holds k* below the truth to the level (gap_share): every context the search may
    try below a boundary, in the order the within sequence meets them (from the boundary
    down), is only tested after those above it passed; the shares of the contexts below the
    boundary that a search can try, counted as Bonferroni counts them (the first of the
    descent's that the within sequence meets, and each the bisection tries), sum to at most
    the level: the grid's l at half, the rest within the other half."""
    grid = k_grid(max_k)
    for m in range(2, max_k + 1):
        up = min(g for g in grid if g >= m)
        low = max(g for g in grid if g < m)
        below = [k for k in search(m, max_k) if k < m]  # tried below the truth: each failed
        descent = [k for k in below if k >= up - search_gap(low, max_k)[2]]
        assert len(descent) <= 1  # the descent stops at its first failure
        if search_gap(low, max_k) and search_gap(low, max_k)[3] == 0:
            # a gap its descent covers whole: u − 1, …, l + 1, l one fixed sequence, tried
            # whatever l showed (next_ks), so only its first context below the truth is at risk
            spent = gap_share(max([*below, low]), max_k)
        else:
            spent = sum(gap_share(k, max_k) for k in below) + gap_share(low, max_k)
        assert spent <= 1 + 1e-12, (m, below)


def test_a_gap_its_descent_covers_is_searched_whatever_l_shows():
    """[2, 4) in the grid of powers of two: 3 is tried whenever 4 is shown within, also when
    2 is (k* = 2), so 4, 3, 2 are one fixed sequence and each runs at the whole level; the
    gaps a bisection follows keep their halves, and a context shown within above one of
    them adds nothing (7 is tried from 8 only by next_k's descent, when k* = 8)."""
    assert next_ks([1, 2, 4, 8], 2, {2, 4, 8}, 16) == {3}
    assert next_ks([1, 2, 3, 4, 8], 2, {2, 3, 4, 8}, 16) == set()  # tried: the sequence is whole
    assert next_ks([1, 2, 4, 8], 4, {4, 8}, 16) == {3}  # next_k's own descent: the same 3
    assert next_ks([1, 2, 4, 8], 1, {1, 2, 4, 8}, 16) == {3}
    assert next_ks([1, 2, 4, 8, 16], 4, {4, 8, 16}, 16) == {3}  # not 7, nor 15
    assert next_ks([1, 2, 4, 8], 8, {8}, 16) == {7}
    # max_k 7: [4, 7) is its descent's too (6, 5): both gaps in one round, then one down
    assert next_ks([1, 2, 4, 7], 1, {1, 2, 4, 7}, 7) == {3, 6}
    assert next_ks([1, 2, 3, 4, 6, 7], 1, {1, 2, 3, 4, 6, 7}, 7) == {5}
    assert next_ks([1, 2, 3, 4, 6, 7], 1, {1, 2, 3, 4, 7}, 7) == set()  # 6 not within: 5 untried
    assert [gap_share(k, 16) for k in (2, 3, 4, 5, 6, 7, 9)] == [1, 1, 0.5, 0.5, 0.5, 0.5, 0.5 / 3]


def test_nothing_learned_on_few_sequences_says_too_little_data():
    """A short own series where no model beats the mean: the advice is not "train longer"."""
    cells = {("tcn", 1): [1.05, 1.1, 1.02], ("tcn", 4): [1.2, 1.1, 1.3]}
    a = answer(cells, train_size=166)
    assert a.verdict == "nothing-learned"
    assert "no model beats the trivial baseline" in a.sentence
    assert "with 166 training sequences too little data may be why" in a.sentence
    assert "train longer" in answer(cells, train_size=100_000).sentence


def test_the_plot_shows_what_the_sentence_quotes():
    """An error spanning decades on a log axis (cells at 1% of the baseline stay apart), the
    persistence forecast as a line, and the interval in the legend."""
    a = answer(
        {("tcn", 1): FLAT, ("tcn", 2): [0.3, 0.2, 0.4], ("tcn", 4): LOW, ("tcn", 8): LOW},
        columns={"persistence": 0.5},
    ).to_dict()
    from seqbench.memory.plot import plot_answer

    fig = plot_answer(a, None)
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert ax.get_yscale() == "log"
    assert any("persistence" in t for t in legend) and any("k* interval" in t for t in legend)
    flat = answer({("tcn", 1): FLAT, ("tcn", 2): [0.5, 0.51, 0.49]}).to_dict()
    assert plot_answer(flat, None).axes[0].get_yscale() == "linear"


@pytest.mark.parametrize(
    ("ran", "n", "named"),
    [((0, 1, 2), 3, [0, 1, 2, 3, 4, 5]), ((3, 4, 5), 3, [0, 1, 2, 3, 4, 5]),
     ((10, 11, 12), 3, [0, 1, 2, 10, 11, 12]), ((), 3, [0, 1, 2, 3, 4, 5]),
     ((0, 1), 2, [0, 1, 2, 3])],
)  # fmt: skip
def test_the_advised_seeds_are_twice_as_many_and_keep_those_run(ran, n, named):
    """The seeds the advice names, parsed as --seeds parses them: 2n of them, every seed
    already run among them (a user who ran 10, 11, 12 is not sent to train six others)."""
    from seqbench.memory.words import twice_the_seeds

    assert parse_range(twice_the_seeds(ran, n)) == named


def test_the_advice_keeps_the_seeds_the_runs_ran():
    """An undecided context over seeds 10, 11, 12: the advice names those and three more."""
    NOISY = [0.05, 0.9, 0.04]
    cells = {("tcn", 1): FLAT, ("tcn", 2): NOISY, ("tcn", 4): LOW, ("tcn", 8): LOW}
    df = runs(cells)
    a = derive(df.assign(seed=df["seed"] + 10), task="t", higher_is_better=False, max_k=8,
               metric="mse")  # fmt: skip
    (line,) = [w for w in a.warnings if "cannot tell" in w]
    assert "6 seeds (`seeds` 0,1,2,10,11,12)" in line, line


def test_within_p_is_the_level_at_which_shown_within_passes():
    """The calibration reads the true k*'s own within test as a p-value (within_p): it must
    be the test shown_within makes, below α exactly when shown_within passes at α, for a cell
    against the best and for the best against the runner-up, on either side of the tolerance
    and where the seeds agree exactly."""
    from seqbench.memory.evidence import Seeds, shown_within, within_p

    rng = np.random.default_rng(0)
    seeds = np.arange(3)
    checked = {True: 0, False: 0}
    for _ in range(500):
        means = rng.uniform(0.0, 0.2, size=4)
        loss = np.abs(means[:, None] + rng.normal(0, rng.choice([0.0, 0.005, 0.03]), (4, 3)))
        cells = [Seeds("tcn", k, seeds, loss[j], np.ones(3), math.nan, False)
                 for j, k in enumerate((1, 2, 4, 8))]  # fmt: skip
        b = int(np.argmin([c.mean for c in cells]))
        for i in range(4):
            p = within_p(i, b, cells, 0.05, "gap")
            for alpha in (0.01, 0.025, 0.05, 0.2):
                shown = shown_within(i, b, cells, 0.05, "gap", alpha)
                assert shown == (p < alpha), (i, b, alpha, p, loss)
                checked[shown] += 1
    assert min(checked.values()) > 100  # both outcomes, many times
    lone = [Seeds("tcn", 1, seeds, np.array(LOW), np.ones(3), math.nan, False)]
    assert shown_within(0, 0, lone, 0.05, "gap", 0.05) and within_p(0, 0, lone, 0.05, "gap") == 0
