"""Simulate the whole `seqbench memory` procedure on synthetic per-seed metrics whose truth is
known, thousands of draws per scenario, and measure its error rates.

It drives the real code path: the plan (memory/plan.make_plan: the grid of contexts, the
seeds, the references), the race and the search (memory/runner.replay, as `memory` calls
it) and the answer (memory/answer.derive). Only the training is replaced: a run's test metric is
drawn from the scenario's true mean for its cell with the scenario's noise, the same value for
the same (draw, cell, seed) whichever way the procedure asks for it, so that the race and
`--no-race` are compared on the same draws.

Scenarios (the baseline is 1, a loss; ε = 0.05 of the gap):

- null: every cell at the baseline (4 to 10 contexts; 3 and 5 seeds; a seed-shared effect,
  an effect common to every cell of a seed; two families and a recurrent reference), and an
  offset-only null on a shared test split (every cell at the split's best constant, which
  beats the baseline, with the split's noise common to every seed);
- δ: one context (k = 7, beside the best from k = 8 on), and every context below 8, exactly δ
  above the best (the within test's boundary); the same from k = 4 on (k = 3, and k = 1, 2,
  3: the gap [2, 4), which its search's descent covers whole, tried whenever 4 is within),
  and k = 1 δ above a best from k = 2 on (where k = 3 is tried only because 4 is within);
- closed forms: the memory-function task's own e*(k) (exponential decay 0.9, power law α = 1)
  plus a model error of 0.01, at 2, 5 and 10% per-seed noise, beside a recurrent reference;
- non-monotone: an exponential memory whose contexts beyond 8 do worse (overfitting), mildly
  (the longest context half the tolerance behind the best) and strongly (twice the tolerance);
- a shared test split: the exponential closed form with the split's noise common to every
  cell and seed.

    .venv/bin/python scripts/simulate_answer.py                 # every scenario, 2000 draws
    .venv/bin/python scripts/simulate_answer.py --slice ci      # a few minutes (tests run it)
    .venv/bin/python scripts/simulate_answer.py --json rates.json

It prints one row per scenario: draws, how often an answer was stated, how often a cell whose
true excess is at least δ was called within, k* below the truth, the interval holding the truth
and k* exact (of all draws), race and no-race differing in verdict or k*, and the runs each
asked for beside a floor under the fewest the answer's rules need (every context at two
seeds, the best and the references at every seed: two seeds may not show what the answer
rests on, so the rules can need more; benchmarks/answer_cost.py's fewest finds what they need
on trained runs).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

EPSILON = 0.05
BASE = 1.0  # the trivial baseline, a loss
ETA = 0.01  # a trained model's own error above the task's optimum


@dataclass(frozen=True)
class Scenario:
    name: str
    group: str  # null, delta-one, delta-several, closed, nonmono, split
    T: int  # the steps a sequence has: the grid is 1, 2, 4, … T
    seeds: int = 3
    families: tuple[str, ...] = ("tcn",)
    references: tuple[str, ...] = ()
    curve: str = "flat"  # flat, delta-one, delta-several, exp, power, nonmono
    noise: float = 0.05  # per-seed sd, relative to the cell's mean
    shared: float = 0.0  # a seed-shared effect's sd (additive, relative to the baseline)
    split: float = 0.0  # a shared test split's noise (additive, common to every cell and seed)
    offset: float = 0.0  # a null's cells beat the baseline by this (the split's constant)
    overfit: float = 0.0  # nonmono: the longest context's excess over the best, in δ
    params: dict = field(default_factory=dict)


def scenarios(which: str) -> list[Scenario]:
    out = [
        Scenario("null, 4 contexts, 3 seeds", "null", 8),
        Scenario("null, 6 contexts, 3 seeds", "null", 32),
        Scenario("null, 8 contexts, 3 seeds", "null", 128),
        Scenario("null, 10 contexts, 3 seeds", "null", 512),
        Scenario("null, 6 contexts, 5 seeds", "null", 32, seeds=5),
        Scenario("null, 6 contexts, seed-shared effect", "null", 32, shared=0.05),
        Scenario(
            "null, 2 families + gru, 6 contexts",
            "null",
            32,
            families=("tcn", "window"),
            references=("gru",),
        ),
        Scenario(
            "null: an offset on a shared split", "null", 32, noise=0.002, split=0.004, offset=0.01
        ),
        Scenario("one context δ above the best", "delta-one", 16, curve="delta-one"),
        Scenario("several contexts δ above the best", "delta-several", 16, curve="delta-several"),
        # the gap [2, 4), which its descent covers whole: 3 tried whenever 4 is within
        Scenario("k = 3 δ above the best from 4", "delta-one", 16, curve="delta-one",
                 params={"at": 4}),
        Scenario("k = 1, 2, 3 δ above the best from 4", "delta-several", 16,
                 curve="delta-several", params={"at": 4}),
        Scenario("k = 1 δ above the best from 2", "delta-one", 16, curve="delta-one",
                 params={"at": 2}),
    ]  # fmt: skip
    for kernel in ("exp", "power"):
        for noise in (0.02, 0.05, 0.10):
            out.append(
                Scenario(
                    f"closed form {kernel}, {noise:.0%} noise",
                    "closed",
                    64,
                    references=("gru",),
                    curve=kernel,
                    noise=noise,
                )
            )
    for kernel in ("exp", "power"):
        out.append(
            Scenario(
                f"closed form {kernel}, 5% noise, 5 seeds",
                "closed",
                64,
                seeds=5,
                references=("gru",),
                curve=kernel,
                noise=0.05,
            )
        )
    out += [
        Scenario("non-monotone, longest ½δ behind", "nonmono", 32, curve="nonmono", overfit=0.5),
        Scenario("non-monotone, longest 2δ behind", "nonmono", 32, curve="nonmono", overfit=2.0),
        Scenario("closed form exp on a shared split", "split", 64, curve="exp", split=0.01),
    ]
    if which == "ci":
        keep = {
            "null, 6 contexts, 3 seeds",
            "null, 10 contexts, 3 seeds",
            "null, 6 contexts, seed-shared effect",
            "null: an offset on a shared split",
            "one context δ above the best",
            "several contexts δ above the best",
            "k = 1, 2, 3 δ above the best from 4",
            "k = 1 δ above the best from 2",
            "closed form exp, 5% noise",
            "closed form exp, 5% noise, 5 seeds",
            "closed form power, 10% noise",
            "non-monotone, longest 2δ behind",
        }
        out = [s for s in out if s.name in keep]
    return out


# -- the truth ------------------------------------------------------------------------------
@functools.cache
def closed_form(kernel: str, T: int) -> tuple[float, ...]:
    """e*(k), k = 0 … T, of the memory-function task (its own closed form), e*(0) = 1."""
    from seqbench.configure import make_config
    from seqbench.tasks import memory_functions as mf

    sets = {"kernel": kernel, "seq_len": T, **({"alpha": 1.0} if kernel == "power" else {})}
    errors = mf.optimal_truncated_error(make_config("tcn", "memory-function", sets).task_args(), T)
    return tuple(e / errors[0] for e in errors)


def mean_loss(s: Scenario, model: str, k: int | None) -> float:
    """The scenario's true mean loss of a cell: `model` at context k, or a reference (k None)."""
    if s.curve == "flat":
        return BASE - s.offset
    if s.curve in ("delta-one", "delta-several"):  # the best from `at` up (default 8)
        best, at = 0.1, s.params.get("at", 8)
        delta = EPSILON * (BASE - best)
        if k is None or k >= at:
            return best
        if k >= (at - 1 if s.curve == "delta-one" else 1):
            return best + delta  # exactly at the boundary: not within
        return 0.9
    if s.curve in ("exp", "power"):
        e = closed_form(s.curve, s.T)
        return (e[-1] if k is None else e[k]) + ETA
    if s.curve == "nonmono":  # an exponential memory, contexts beyond 8 doing worse
        e = closed_form("exp", s.T)
        best = e[8] + ETA
        if k is None:
            return best
        if k <= 8:
            return e[k] + ETA
        delta = EPSILON * (BASE - best)
        return best + s.overfit * delta * math.log2(k / 8) / math.log2(s.T / 8)
    raise ValueError(s.curve)


def truth(s: Scenario, families: tuple[str, ...]) -> dict:
    """k*: the smallest context whose true excess over the best cell (any context 1 … T of any
    family, or a reference) is below δ = ε × the gap; None for a null (nothing to learn)."""
    if s.curve == "flat":
        return {"k_star": None, "best": None, "delta": None}
    cells = {(m, k): mean_loss(s, m, k) for m in families for k in range(1, s.T + 1)}
    cells |= {(m, None): mean_loss(s, m, None) for m in s.references}
    best = min(cells.values())
    delta = EPSILON * (BASE - best)
    within = [k for (m, k), v in cells.items() if k is not None and v - best < delta * (1 - 1e-9)]
    return {"k_star": min(within) if within else None, "best": best, "delta": delta}


# -- one draw -------------------------------------------------------------------------------
@functools.cache
def plan_for(T: int, families: tuple, references: tuple, seeds: int):
    from seqbench.memory.plan import make_plan

    return make_plan("teacher", sets=[f"seq_len={T}", "steps=10"], families=list(families),
                     references=list(references), seeds=list(range(seeds)),
                     lr_search="none")  # fmt: skip  # the answer's rules, not the search


_EXTENDED: dict[tuple, object] = {}


def extend(plan, ks):
    """with_points, memoised: the same plan and contexts give the same points."""
    from seqbench.memory.plan import with_points

    key = (plan.name, plan.ks, tuple(sorted(set(ks))))
    if key not in _EXTENDED:
        _EXTENDED[key] = with_points(plan, list(ks))
    return _EXTENDED[key]


class Draw:
    """The metrics of one draw of a scenario: each (model, k, seed) drawn once, on demand."""

    def __init__(self, s: Scenario, draw: int):
        self.s, self.draw = s, draw
        self.values: dict[tuple, float] = {}
        rng = np.random.default_rng([zlib.crc32(s.name.encode()), draw, 1])
        self.seed_effect = rng.standard_normal(s.seeds) * s.shared * BASE
        self.split_effect = float(rng.standard_normal()) * s.split * BASE

    def value(self, model: str, k: int | None, seed: int) -> float:
        key = (model, k, seed)
        if key not in self.values:
            mid = sum(map(ord, model))
            rng = np.random.default_rng([zlib.crc32(self.s.name.encode()), self.draw, 2, mid,
                                         0 if k is None else k + 1, seed])  # fmt: skip
            mu = mean_loss(self.s, model, k)
            noisy = mu * math.exp(self.s.noise * rng.standard_normal() - self.s.noise**2 / 2)
            self.values[key] = noisy + self.seed_effect[seed] + self.split_effect
        return self.values[key]

    def read(self, plan) -> pd.DataFrame:
        from seqbench.memory.plan import cell_key

        rows = []
        for i, c in enumerate(plan.points):
            model, k = cell_key(plan, c)
            rows.append((i, model, k, c.seed, self.value(model, k, c.seed), BASE))
        df = pd.DataFrame(rows, columns=["run_id", "model", "k", "seed", "value", "baseline"])
        if self.s.split:  # the split's best constant and the noise of a gain over it
            df["test_const"] = BASE - self.s.offset
            df["test_gain_se"] = self.s.split * BASE
        return df


def run_once(s: Scenario, draw: int, race: bool, d: Draw):
    from seqbench.memory.runner import replay

    plan = plan_for(s.T, s.families, s.references, s.seeds)
    trained: set[str] = set()

    def train(now, points, stage):
        from seqbench.configure import config_hash

        new = {config_hash(c) for c in points} - trained
        trained.update(new)
        return len(new)

    _plan, asked, answers, _ran, rounds = replay(None, plan, train, race, read=d.read,
                                                 extend=extend)  # fmt: skip
    return answers[0], len(asked), rounds


def judge(s: Scenario, a, t: dict) -> dict:
    stated = a.k_star is not None or a.verdict in ("needs-recurrence", "family-gap")
    out = {"stated": stated, "verdict": a.verdict, "k_star": a.k_star}
    if t["k_star"] is None:
        return out
    truth_k = t["k_star"]
    false_within = any(
        c.matches and mean_loss(s, c.model, c.k) - t["best"] >= t["delta"] * (1 - 1e-9)
        for c in a.cells
        if c.k is not None
    )
    held = a.k_star is not None and a.k_low <= truth_k <= a.k_high
    return out | {
        "false_within": false_within,
        "below": a.k_star is not None and a.k_star < truth_k,
        "held": held,
        "exact": a.k_star == truth_k,
    }


def oracle_runs(s: Scenario, a) -> int:
    """A floor under the fewest runs the answer's rules need to state `a` (every seed's
    answer): every context tried at two seeds (each sequence needs its tests), the best and
    the references at every seed. Two seeds may not show what `a` rests on, so the rules can
    need more (benchmarks/answer_cost.py, `fewest_share`, searches that on trained runs)."""
    ff = [c for c in a.cells if c.k is not None]
    refs = [c for c in a.cells if c.k is None]
    return 2 * (len(ff) - 1) + s.seeds * (1 + len(refs))


def simulate(s: Scenario, draws: range) -> list[dict]:
    t = truth(s, s.families)
    rows = []
    for draw in draws:
        d = Draw(s, draw)
        full, n_full, _ = run_once(s, draw, False, d)
        raced, n_race, _ = run_once(s, draw, True, d)
        row = {f"full_{k}": v for k, v in judge(s, full, t).items()}
        row |= {f"race_{k}": v for k, v in judge(s, raced, t).items()}
        row |= {
            "differ": (full.verdict, full.k_star) != (raced.verdict, raced.k_star),
            "runs_full": n_full,
            "runs_race": n_race,
            "runs_oracle": oracle_runs(s, full),
        }
        rows.append(row)
    return rows


def _chunk(args):
    s, lo, hi = args
    return s.name, simulate(s, range(lo, hi))


def rates(s: Scenario, rows: list[dict]) -> dict:
    n = len(rows)
    r = lambda key: sum(bool(x.get(key)) for x in rows) / n  # noqa: E731
    out = {
        "scenario": s.name,
        "group": s.group,
        "draws": n,
        "truth": truth(s, s.families)["k_star"],
    }
    for mode in ("full", "race"):
        out[f"{mode}_stated"] = r(f"{mode}_stated")
        if out["truth"] is not None:
            for key in ("false_within", "below", "held", "exact"):
                out[f"{mode}_{key}"] = r(f"{mode}_{key}")
    out["differ"] = r("differ")
    for key in ("runs_full", "runs_race", "runs_oracle"):
        out[key] = float(np.mean([x[key] for x in rows]))
    return out


def boundary_power(s: Scenario) -> dict | None:
    """What any procedure can show of the true k* at these seeds: the probability that k* is
    shown within the tolerance of the best, by the one-sided t-test on the seeds' contrasts
    (the most powerful unbiased test of a normal mean whose spread is unknown), at the level
    the search gives k* (gap_share) and at the whole α. k* exact needs that test to pass, so
    the second bounds the exactness of every procedure that holds its level: a simulated
    exactness above it is a bug. The contrast a − b − ε(B − b) per seed, its spread from
    the scenario's noise on both cells (normal: the lognormal's sd at these noise levels)."""
    from scipy.stats import nct
    from scipy.stats import t as student

    from seqbench.memory import gap_share
    from seqbench.memory.stats import ALPHA

    t = truth(s, s.families)
    if t["k_star"] is None or s.curve not in ("exp", "power", "nonmono") or s.split:
        return None
    k, best, n = t["k_star"], t["best"], s.seeds
    mean = best + t["delta"] - mean_loss(s, s.families[0], k)  # the margin k* is inside by
    sd = math.hypot(s.noise * mean_loss(s, s.families[0], k), s.noise * best * (1 - EPSILON))
    ncp = mean / (sd / math.sqrt(n))

    def power(level: float) -> float:
        return float(nct.sf(student.ppf(1 - level, n - 1), n - 1, ncp))

    share = gap_share(k, s.T) / len(s.families)
    return {"k_star": k, "inside": mean / t["delta"], "share": share,
            "at_share": power(ALPHA * share), "at_alpha": power(ALPHA)}  # fmt: skip


def power_table(chosen: list[Scenario], results: list[dict], power: dict) -> list[str]:
    lines = [
        "| scenario | true k\\* | inside the tolerance by | its level | shown within at it "
        "| at α (every procedure's ceiling) | k\\* exact, simulated |",
        "|---|---|---|---|---|---|---|",
    ]
    for s, x in zip(chosen, results, strict=True):
        p = power[s.name]
        if p is None:
            continue
        lines.append(
            f"| {s.name} | {p['k_star']} | {100 * p['inside']:.0f}% of δ | α × {p['share']:.3g} "
            f"| {100 * p['at_share']:.0f}% | {100 * p['at_alpha']:.0f}% "
            f"| {100 * x['full_exact']:.1f}% |"
        )
    return lines


def table(results: list[dict]) -> list[str]:
    pct = lambda v: "" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    lines = [
        "| scenario | true k\\* | draws | stated | called within at ≥ δ | k\\* below truth "
        "| interval holds truth | k\\* exact | race ≠ no-race | runs: no-race / race / rules' "
        "floor |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in results:
        truth_k = "none (null)" if x["truth"] is None else x["truth"]
        cell = lambda key, x=x: f"{pct(x.get('full_' + key))} / {pct(x.get('race_' + key))}"  # noqa: E731
        known = x["truth"] is not None
        lines.append(
            f"| {x['scenario']} | {truth_k} | {x['draws']} | {cell('stated')} | "
            f"{cell('false_within') if known else ''} | {cell('below') if known else ''} | "
            f"{cell('held') if known else ''} | {cell('exact') if known else ''} | "
            f"{pct(x['differ'])} | {x['runs_full']:.1f} / {x['runs_race']:.1f} / "
            f"{x['runs_oracle']:.1f} |"
        )
    return lines


def _one_thread() -> None:
    """A pool worker is forked: where its parent had run torch on several threads (a test
    suite, or a teacher's closed form), the copy of OpenMP's thread pool has no threads, and
    the worker waited forever at its first parallel region (tests/memory/test_simulation.py
    hung so, after tests that trained). One thread enters none."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slice", choices=("full", "ci"), default="full")
    ap.add_argument("--draws", type=int, help="per scenario (default 2000; the ci slice 200)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--only", help="scenarios whose name contains this")
    ap.add_argument("--skip-groups", default="", help="leave out these groups (comma-separated: "
                    "null, delta-one, delta-several, closed, nonmono, split)")  # fmt: skip
    ap.add_argument("--json", help="write the rates as JSON to this file")
    args = ap.parse_args(argv)
    draws = args.draws or (200 if args.slice == "ci" else 2000)
    skip = set(filter(None, args.skip_groups.split(",")))
    chosen = [s for s in scenarios(args.slice) if not args.only or args.only in s.name]
    chosen = [s for s in chosen if s.group not in skip]
    t0 = time.monotonic()
    step = max(draws // (4 * max(args.workers, 1)), 25)
    jobs = [(s, lo, min(lo + step, draws)) for s in chosen for lo in range(0, draws, step)]
    got: dict[str, list[dict]] = {s.name: [] for s in chosen}
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers, initializer=_one_thread) as pool:
            for name, rows in pool.map(_chunk, jobs):
                got[name] += rows
    else:
        for job in jobs:
            name, rows = _chunk(job)
            got[name] += rows
    results = [rates(s, got[s.name]) for s in chosen]
    print("\n".join(table(results)))
    power = {s.name: boundary_power(s) for s in chosen}
    print("\nThe boundary's own test (boundary_power), computed, beside the simulated exactness:")
    print("\n".join(power_table(chosen, results, power)))
    print(f"({time.monotonic() - t0:.0f} s; each cell: no-race / race)")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"results": results, "scenarios": [asdict(s) for s in chosen], "draws": draws,
             "power": power}, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
