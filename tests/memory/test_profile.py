"""The profile k*(ε): several tolerances answered from one set of cells, the closed form beside
each, and the growth law of k* in 1/ε, which tells exponential from power-law memory."""

import itertools
import json
import math
import random
import sqlite3

import pytest

from seqbench.configure import make_config
from seqbench.memory.profile import fit_laws, slope_interval
from seqbench.tasks import memory_functions as mf
from seqbench.tasks.synthetic import closed_form_k_star

EPS = (0.2, 0.1, 0.05, 0.02, 0.01)


def closed_profile(T: int, **sets) -> list[dict]:
    """The exact profile of a memory function: the closed form's k*(ε), each known to the
    integer (its interval: the integer itself)."""
    cfg = make_config("tcn", "memory-function", {"seq_len": T, **sets})
    e = mf.optimal_truncated_error(cfg, T)
    ks = [closed_form_k_star(e, eps) for eps in EPS]
    return [
        {"epsilon": x, "k_star": k, "k_low": k, "k_high": k} for x, k in zip(EPS, ks, strict=True)
    ]


def test_the_slope_interval_is_exact():
    """Against a brute-force search over slopes (and, for each, the intercepts the intervals
    leave): the computed interval holds every slope for which a line passes, and no other."""
    rng = random.Random(0)
    for _ in range(200):
        n = rng.randint(2, 5)
        xs = sorted(rng.sample(range(1, 20), n))
        centres = [rng.uniform(0, 10) + 0.8 * x for x in xs]
        lows = [c - rng.uniform(0, 2) for c in centres]
        highs = [c + rng.uniform(0, 2) for c in centres]
        got = slope_interval(xs, lows, highs)
        for b in [i / 50 for i in range(0, 150)]:
            passes = max(lo - b * x for lo, x in zip(lows, xs, strict=True)) <= min(
                hi - b * x for hi, x in zip(highs, xs, strict=True)
            )
            inside = got is not None and got[0] - 1e-9 <= b <= got[1] + 1e-9
            assert passes == inside, (xs, lows, highs, b, got)


def test_exponential_memory_grows_logarithmically():
    """decay 0.9 at T = 64 (CI size) and 2000: k* = 8, 11, 14, 17, 20 — one more context per
    e-fold of 1/ε, b ≈ 1/(2 ln(1/0.9)) = 4.75 at T = 2000; no power law passes."""
    for T in (64, 2000):
        got = fit_laws(closed_profile(T, kernel="exp", decay=0.9))
        assert got["law"] == "logarithmic", got
        log = got["laws"][0]
        assert log["passes"] and not got["laws"][1]["passes"]
    assert log["low"] <= 1 / (2 * math.log(1 / 0.9)) <= log["high"]


def test_power_law_memory_grows_as_a_power():
    """alpha = 1 at T = 64 (CI size) and 2000: k* grows as a power of 1/ε, its exponent near
    1/(2α − 1) = 1 as T grows (0.96 at T = 2000); no logarithmic law passes."""
    for T in (64, 2000):
        got = fit_laws(closed_profile(T, kernel="power", alpha=1.0))
        assert got["law"] == "power", got
        assert not got["laws"][0]["passes"]
    assert 0.9 <= got["laws"][1]["rate"] <= 1.0


def test_cannot_tell_is_one_line_where_the_data_cannot():
    """An impulse's k* is the same at every ε: both laws pass (flat), nothing to tell;
    fewer than three tolerances with a k*: no law is fitted."""
    got = fit_laws(closed_profile(64, kernel="impulse", delay=10))
    assert got["law"] is None and got["sentence"].startswith("cannot tell")
    assert "\n" not in got["sentence"]
    two = [
        *closed_profile(64, kernel="exp", decay=0.9)[:2],
        {"epsilon": 0.01, "k_star": None, "k_low": None, "k_high": None},
    ]
    got = fit_laws(two)
    assert got["law"] is None and "2 of 3 tolerance(s) have a k* that stands" in got["sentence"]
    # wide intervals (what three seeds may give) let both laws through
    wide = [
        p | {"k_low": max(1, p["k_star"] - 4)} for p in closed_profile(64, kernel="exp", decay=0.9)
    ]
    assert fit_laws(wide)["law"] is None


def test_the_rate_is_the_range_of_the_laws_through_the_intervals():
    """docs/memory.md's exponential profile (k* = 8, 11, 14, 18, 21, intervals 7–8, 9–11, 14,
    17–18, 19–21) was published as b = 4.34 [4.33, 4.35], a t-interval on integers that
    excluded the closed form's own 3.94. The range of slopes of the lines through every
    interval holds it."""
    measured = [(8, 7, 8), (11, 9, 11), (14, 14, 14), (18, 17, 18), (21, 19, 21)]
    points = [
        {"epsilon": e, "k_star": k, "k_low": lo, "k_high": hi}
        for e, (k, lo, hi) in zip(EPS, measured, strict=True)
    ]
    got = fit_laws(points)
    log = got["laws"][0]
    assert got["law"] == "logarithmic" and log["low"] <= 3.94 <= log["high"], log
    assert log["low"] < 3.8 and log["high"] > 4.9
    closed = fit_laws(closed_profile(64, kernel="exp", decay=0.9))["laws"][0]
    assert log["low"] <= closed["rate"] <= log["high"]


def test_a_power_law_cut_to_small_k_is_not_called_logarithmic():
    """α = 1.5 (k* ∝ ε^−1/2) at T = 1024, over 1.3 decades of ε: the exact k* are 1 … 6, and
    the old rule named the law logarithmic. Shifted by a step (the kernel (s+1)^−α), the power
    law passes too: the data cannot tell the two apart."""
    eps = (0.2, 0.1, 0.05, 0.03, 0.02, 0.01)
    cfg = make_config("tcn", "memory-function", {"seq_len": 1024, "kernel": "power", "alpha": 1.5})
    e = mf.optimal_truncated_error(cfg, 1024)
    points = [
        {"epsilon": x, "k_star": (k := closed_form_k_star(e, x)), "k_low": k, "k_high": k}
        for x in eps
    ]
    assert [p["k_star"] for p in points] == [1, 2, 3, 4, 5, 6]
    got = fit_laws(points, 1024)
    assert got["law"] is None and got["sentence"].startswith("cannot tell"), got


def test_no_wrong_law_is_named_on_the_exact_closed_forms():
    """Every memory-function closed form (power α = 0.75 … 2, exponential decay 0.5 … 0.95) at
    T = 64, 256, 1024, over every run of three or more consecutive tolerances from 0.3 to
    0.001 with k* at most T/2: a law named without the caveat that k* reaches past a third of
    the contexts tried is the right one, but for two of 299 (α = 0.75 at T = 64, k* = 3, 6, 11;
    at T = 256, k* = 39, 59, 76): its tail falls as k^−1/2, so the cut at T bends it by
    (k/T)^1/2, 40% already at k = T/6)."""
    grid = [0.3, 0.2, 0.1, 0.05, 0.03, 0.02, 0.01, 0.005, 0.003, 0.002, 0.001]
    named = wrong = 0
    for kernel, key, values in (("power", "alpha", (0.75, 1.0, 1.5, 2.0)),
                                ("exp", "decay", (0.5, 0.8, 0.9, 0.95))):  # fmt: skip
        for v, T in itertools.product(values, (64, 256, 1024)):
            cfg = make_config("tcn", "memory-function", {"kernel": kernel, "seq_len": T, key: v})
            e = mf.optimal_truncated_error(cfg, T)
            for i, j in itertools.combinations(range(len(grid)), 2):
                eps = grid[i : j + 1]
                if len(eps) < 3:
                    continue
                points = [{"epsilon": x, "k_star": (k := closed_form_k_star(e, x)),
                           "k_low": k, "k_high": k} for x in eps]  # fmt: skip
                if points[-1]["k_star"] > T // 2:
                    continue
                got = fit_laws(points, T)
                if got["law"] is None or "a memory cut off" in got["sentence"]:
                    continue
                named += 1
                wrong += got["law"] != ("power" if kernel == "power" else "logarithmic")
    assert named > 250 and wrong <= 2, (named, wrong)


BAD = [
    ("", "--epsilon names no tolerance"),
    (",", "--epsilon names no tolerance"),
    ("0.1,1.5", "--epsilon must lie in (0, 1), got 1.5"),
    ("0.1,0", "--epsilon must lie in (0, 1)"),
    ("0.1,abc", "--epsilon must be a number or a comma-separated list"),
]


@pytest.mark.parametrize(("given", "message"), BAD)
def test_a_bad_tolerance_list_is_one_line_and_writes_nothing(cli, tmp_path, given, message):
    db = tmp_path / "runs.db"
    r = cli("--db", str(db), "memory", "--task", "memory-function", "--epsilon", given,
            "--families", "tcn", "--references", "none", "--dry-run")  # fmt: skip
    assert r.exit_code != 0
    assert message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not db.exists()


def test_a_profile_states_each_tolerances_k_star_beside_the_closed_form(cli, tmp_path):
    """At CI size (exp, decay 0.6, T = 16, TCNs, 3 seeds, 600 steps): one run of the command
    answers four tolerances from shared cells; each stated interval holds the closed form's
    k*; the JSON is a list (one entry per ε, each with the growth law); each answer is
    stored under NAME@ε; the plot is drawn."""
    T, eps = 16, [0.2, 0.1, 0.05, 0.02]
    sets = {"kernel": "exp", "decay": 0.6}
    e = mf.optimal_truncated_error(make_config("tcn", "memory-function", {"seq_len": T} | sets), T)
    closed = [closed_form_k_star(e, x) for x in eps]
    db, plot = tmp_path / "runs.db", tmp_path / "profile.png"
    r = cli(
        "--db", str(db), "memory", "--task", "memory-function", "--set", "kernel=exp",
        "--set", "decay=0.6", "--set", f"seq_len={T}", "--set", "steps=600", "--families", "tcn",
        "--references", "none", "--max-k", "8", "--epsilon", "0.05,0.2,0.1,0.02",
        "--workers", "2", "--quiet", "--format", "json", "--plot", str(plot),
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert [d["epsilon"] for d in doc] == eps  # loosest first
    held = 0
    for d, k in zip(doc, closed, strict=True):
        assert d["verdict"] == "matches", d["sentence"]
        held += d["k_low"] <= k <= d["k_high"]
        assert d["growth"] == doc[0]["growth"] and d["growth"]["sentence"]
    assert held >= 3, (closed, [(d["k_low"], d["k_high"]) for d in doc])
    # the cells are shared: every tolerance's answer rests on the same runs
    assert len({tuple(sorted(d["run_ids"])) for d in doc}) == 1
    con = sqlite3.connect(db)
    names = [n for (n,) in con.execute("SELECT name FROM answers ORDER BY id")]
    con.close()
    assert [n.rsplit("@", 1)[1] for n in names] == ["0.2", "0.1", "0.05", "0.02"]
    assert plot.stat().st_size > 10_000
    # the table names the closed form beside each k*
    r = cli(
        "--db", str(db), "memory", "--task", "memory-function", "--set", "kernel=exp",
        "--set", "decay=0.6", "--set", f"seq_len={T}", "--set", "steps=600", "--families", "tcn",
        "--references", "none", "--max-k", "8", "--epsilon", "0.05,0.2,0.1,0.02", "--quiet",
    )  # fmt: skip
    assert r.exit_code == 0 and "closed form" in r.stdout and "trained 0 run(s)" in r.output
    assert any(line.startswith(("k* grows", "cannot tell")) for line in r.stdout.splitlines())


def test_one_tolerance_keeps_its_answer_and_name():
    """A single --epsilon is no profile: the plan's name is the one it always had."""
    from seqbench.memory.plan import make_plan

    one = make_plan("memory-function", sets=["seq_len=16"], families=["tcn"], references=[],
                    epsilon=0.05)  # fmt: skip
    as_list = make_plan("memory-function", sets=["seq_len=16"], families=["tcn"],
                        references=[], epsilon=[0.05])  # fmt: skip
    assert one.epsilons == () and one.name == as_list.name
    prof = make_plan("memory-function", sets=["seq_len=16"], families=["tcn"], references=[],
                     epsilon=[0.05, 0.1])  # fmt: skip
    assert prof.epsilons == (0.1, 0.05) and prof.name != one.name
    assert list(itertools.chain(prof.tolerances)) == [0.1, 0.05]


def test_the_closed_form_is_relative_to_what_the_plans_cells_can_reach():
    """With no recurrent reference and --max-k below T, the best cell sees at most max_k
    inputs: its optimum is e*(max_k), and the tolerance is a share of the gap down to it. On a
    power law at T = 64, max_k 32, that moves k*(0.01) from 21 to 18 (the tail past 32 is
    every cell's); an exponential's tail past 32 is nothing, and its k* stays."""
    from seqbench.memory.plan import make_plan
    from seqbench.memory.profile import closed_form_k_stars

    def stars(refs, **sets):
        given = [f"{k}={v}" for k, v in {"seq_len": 64, **sets}.items()]
        plan = make_plan("memory-function", sets=given, families=["tcn"], references=refs,
                         max_k=32, epsilon=[0.2, 0.02, 0.01], params=20000)  # fmt: skip
        return closed_form_k_stars(plan, list(plan.tolerances))

    assert stars([], kernel="power", alpha=1) == [3, 13, 18]
    assert stars(["gru"], kernel="power", alpha=1) == [3, 14, 21]
    assert stars([], kernel="exp", decay=0.9) == stars(["gru"], kernel="exp", decay=0.9)


def test_where_both_laws_pass_the_closer_one_is_said_not_concluded():
    """docs/memory.md's power law at T = 64 over 3 seeds: its intervals let both laws through,
    so no law is named; the sentence adds that the stated k* lie closer to a power."""
    measured = [(3, 3, 3), (5, 4, 5), (8, 7, 8), (13, 9, 13), (19, 15, 19)]
    points = [
        {"epsilon": e, "k_star": k, "k_low": lo, "k_high": hi}
        for e, (k, lo, hi) in zip(EPS, measured, strict=True)
    ]
    got = fit_laws(points)
    assert got["law"] is None and all(law["passes"] for law in got["laws"])
    assert got["sentence"].startswith("cannot tell")
    assert "the stated k* lie closer to a power law" in got["sentence"]
