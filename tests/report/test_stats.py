"""The statistics that answers and reports state, computed with scipy.special (imported in
0.2 s) where scipy.stats (0.6 s more, paid by every memory command) was: the same numbers,
held against scipy.stats itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from seqbench.memory.stats import holm, lower_bound, p_above, upper_bound
from seqbench.memory.stats import t_quantile as t_one
from seqbench.report.stats import paired, t_quantile, welch_p
from tests.conftest import loads_module


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 31, 101])
def test_the_t_quantiles_are_scipy_stats_own(n):
    assert t_quantile(n) == float(stats.t.ppf(0.975, n - 1))
    for alpha in (0.05, 0.05 / 3, 0.05 / 12, 0.001):
        assert t_one(n - 1, 1 - alpha) == float(stats.t.ppf(1 - alpha, n - 1))


def test_the_one_sided_tests_are_scipy_stats_own():
    """The answer's p-values and bounds (memory/stats.py) against scipy.stats' one-sided
    t-test and its confidence interval."""
    rng = np.random.default_rng(2)
    for n in (2, 3, 5, 12):
        x = rng.normal(0.2, 1.0, n)
        want = stats.ttest_1samp(x, 0.1, alternative="greater").pvalue
        assert p_above(x, 0.1) == pytest.approx(float(want), rel=1e-9)
        lo, hi = stats.t.interval(0.8, n - 1, loc=x.mean(), scale=stats.sem(x))
        assert upper_bound(x, 0.1) == pytest.approx(hi, rel=1e-9)
        assert lower_bound(x, 0.1) == pytest.approx(lo, rel=1e-9)


def test_holm_is_closed_testing_with_bonferroni():
    """Holm's step-down rejects exactly what closed testing rejects with a Bonferroni test of
    every intersection (Holm 1979): checked by brute force over every subset."""
    import itertools

    rng = np.random.default_rng(3)
    for _ in range(300):
        m = int(rng.integers(1, 7))
        p = list(rng.uniform(0, 0.08, m))
        closed = [
            all(
                min(p[j] for j in subset) <= 0.05 / len(subset)
                for r in range(1, m + 1)
                for subset in itertools.combinations(range(m), r)
                if i in subset
            )
            for i in range(m)
        ]
        assert holm(p, 0.05) == closed, p


def test_the_paired_p_value_is_scipy_stats_own():
    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 12):
        d = rng.normal(0.3, 1.0, n)
        got = paired(pd.Series(d), pd.Series([0.0] * n))
        assert got.p == pytest.approx(float(stats.ttest_1samp(d, 0.0).pvalue), rel=1e-9)


def test_welch_is_scipy_stats_own():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n1, n2 = rng.integers(2, 12, 2)
        m1, m2 = rng.normal(0, 1, 2)
        s1, s2 = rng.uniform(0.01, 2, 2)
        want = stats.ttest_ind_from_stats(m1, s1, n1, m2, s2, n2, equal_var=False).pvalue
        assert welch_p(m1, s1, n1, m2, s2, n2) == pytest.approx(float(want), rel=1e-9)


def test_an_answer_does_not_import_scipy_stats():
    """Measured from the outside: a process that derives an answer never loads scipy.stats."""
    code = (
        "import pandas as pd\n"
        "from seqbench.memory.answer import derive\n"
        "cells = [(1, s, 1.0 - 0.01 * s) for s in range(3)]\n"
        "cells += [(4, s, 0.01 + 0.001 * s) for s in range(3)]\n"
        "rows = [(i, 'tcn', k, s, v, 1.0) for i, (k, s, v) in enumerate(cells)]\n"
        "df = pd.DataFrame(rows, columns=['run_id', 'model', 'k', 'seed', 'value', 'baseline'])\n"
        "a = derive(df, task='t', higher_is_better=False, max_k=8, metric='mse')\n"
        "assert a.k_star == 4, a\n"
    )
    assert not loads_module(code, "scipy.stats")
