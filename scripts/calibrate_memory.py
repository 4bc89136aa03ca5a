"""Calibrate `seqbench memory` on tasks whose answer is known: how often its interval holds the
true k*, how often k* is exact, and how many answers it states where nothing can be learned.

The suite is made on the fly, each case under several task seeds (another draw of the data, or
another teacher):

- delays: the target is the input m steps back (k* = m);
- multi-channel filters: y = Σ_j w_j·x[T−j, c_j] over m taps on 2 channels, the last tap
  carrying 11% of the variance (k* = m under the default tolerance, 5% of the gap);
- lag products: the class is the sign of x[T−a]·x[T−b] (k* = b);
- the linear teacher at λ = 0.5 and 0.7 (k* from its own weights: Teacher.optimal_truncated_error);
- null tasks, where the honest answer is "nothing learned", five kinds under four data seeds
  each: a target independent of the input (noise), labels at chance, a delay trained for one
  step (a budget too small to learn), an offset-only target on a shared split (the valid and
  test targets shifted from the training ones: a constant nearer the test mean beats the
  baseline, but not the test split's own best constant), and a dependency beyond every window
  (the target is an input from before the sequence the model sees).

    .venv/bin/python scripts/calibrate_memory.py                 # the whole suite (~5 min)
    .venv/bin/python scripts/calibrate_memory.py --slice ci      # a few minutes (tests run it)
    .venv/bin/python scripts/calibrate_memory.py --write-doc     # the table into docs/memory.md
    .venv/bin/python scripts/calibrate_memory.py --until-converged  # each run until converged
                                                                 # (~10 min; RESULTS.md)
    .venv/bin/python scripts/calibrate_memory.py --follow-advice # where an answer says more
                                                                 # seeds may tell, run them

Each case is one `seqbench memory` (families tcn, no reference, seeds 0, 1, 2, the default
tolerance) in a fresh store; the script prints one row per case and the three rates, and
beside each case whose k* is known the p-value of that k*'s own within test and its level
(`truth_test`): the number of cases where it is below the whole α is the most that any
procedure holding its level by that test could state exactly.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MARK = ("<!-- calibration:start -->", "<!-- calibration:end -->")
N, T = 2000, 8  # sequences and steps of the file tasks


@dataclass
class Case:
    name: str
    truth: int | None  # None: a null task (nothing to learn)
    args: list[str]
    data: dict | None = None  # arrays to write as the file task's data
    sets: list[str] = field(default_factory=list)
    teacher: tuple[float, int] | None = None  # (λ, T): the truth follows the seeds (teachers)

    def truth_at(self, seeds: list[int]) -> int | None:
        """The true k* of the task at these seeds: a teacher's is its own closed form over
        the teachers the seeds draw; every other case's does not depend on them."""
        if self.teacher is None:
            return self.truth
        return teacher_truth(*self.teacher, tuple(seeds))


def delay(m: int, seed: int) -> dict:
    rng = np.random.default_rng(100 + seed)
    x = rng.standard_normal((N, T, 1)).astype("float32")
    return {"x": x, "y": x[:, T - m, 0].copy()}


def fir(m: int, seed: int) -> dict:
    """m taps on 2 channels: weights 1, −0.8, 0.6, … the last one's share of the variance
    above the tolerance, so that k* = m."""
    rng = np.random.default_rng(200 + seed)
    x = rng.standard_normal((N, T, 2)).astype("float32")
    w = [1.0, -0.8, 0.6, 0.5, -0.45][:m]
    ch = [j % 2 for j in range(m)]
    y = sum(w[j] * x[:, T - 1 - j, ch[j]] for j in range(m))
    return {"x": x, "y": y.astype("float32")}


def product(a: int, b: int, seed: int) -> dict:
    rng = np.random.default_rng(300 + seed)
    x = rng.standard_normal((N, T, 1)).astype("float32")
    return {"x": x, "y": (x[:, T - a, 0] * x[:, T - b, 0] > 0).astype("int64")}


def independent(seed: int, classify: bool) -> dict:
    rng = np.random.default_rng(400 + seed)
    x = rng.standard_normal((N, T, 1)).astype("float32")
    y = rng.integers(0, 2, N) if classify else rng.standard_normal(N).astype("float32")
    return {"x": x, "y": y}


def offset(seed: int, shift: float = 0.3) -> dict:
    """Noise targets whose valid and test splits are shifted by `shift` sd from the training
    split's: nothing to learn from the inputs, and a model whose constant drifted toward the
    shifted mean (the best validation checkpoint picks it) beats the training mean."""
    rng = np.random.default_rng(500 + seed)
    sizes = {"train": int(0.6 * N), "valid": int(0.2 * N), "test": int(0.2 * N)}
    out = {}
    for split, n in sizes.items():
        out[f"x_{split}"] = rng.standard_normal((n, T, 1)).astype("float32")
        y = rng.standard_normal(n) + (0.0 if split == "train" else shift)
        out[f"y_{split}"] = y.astype("float32")
    return out


def beyond(seed: int, lag: int = 4) -> dict:
    """The target is the input `lag` steps before the first step the model sees."""
    rng = np.random.default_rng(600 + seed)
    full = rng.standard_normal((N, T + lag, 1)).astype("float32")
    return {"x": full[:, lag:].copy(), "y": full[:, 0, 0].copy()}


def teacher_truth(lam: float, T_: int, seeds: tuple[int, ...]) -> int:
    from seqbench.configure import make_config
    from seqbench.tasks import make_task
    from seqbench.tasks.synthetic import closed_form_k_star

    errors = []
    for seed in seeds:
        over = {"teacher_kind": "linear", "teacher_lam": lam, "seq_len": T_, "seed": seed}
        task = make_task("teacher", make_config("tcn", "teacher", over).task_args())
        errors.append(task.optimal_truncated_error())
    return closed_form_k_star(list(np.mean(errors, axis=0)), 0.05)


FILE = ["--set", "steps=300", "--params", "3000"]
LONGER = ["--set", "steps=600", "--params", "3000"]  # the lag product, a harder fit
ONE_STEP = ["--set", "steps=1", "--params", "3000"]  # a budget too small to learn


def suite(which: str) -> list[Case]:
    seeds = (0,) if which == "ci" else (0, 1)
    cases = []
    for s in seeds:
        cases.append(Case(f"delay 3 (data {s})", 3, FILE, delay(3, s)))
        cases.append(Case(f"null: independent target (data {s})", None, FILE, independent(s, 0)))
        if which == "ci":
            cases.append(Case(f"null: an offset on a shared split (data {s})", None, FILE,
                              offset(s)))  # fmt: skip
            continue
        cases += [
            Case(f"delay 2 (data {s})", 2, FILE, delay(2, s)),
            Case(f"delay 5 (data {s})", 5, FILE, delay(5, s)),
            Case(f"filter, 4 taps on 2 channels (data {s})", 4, FILE, fir(4, s)),
            Case(f"lag product 1×3, classes (data {s})", 3, LONGER, product(1, 3, s)),
        ]
    if which != "ci":  # twenty nulls: five kinds, four data seeds each
        for s in range(4):
            cases += [
                *(
                    []
                    if s < 2
                    else [
                        Case(f"null: independent target (data {s})", None, FILE, independent(s, 0))
                    ]
                ),
                Case(f"null: labels at chance (data {s})", None, FILE, independent(s, 1)),
                Case(f"null: a delay trained 1 step (data {s})", None, ONE_STEP, delay(3, s)),
                Case(f"null: an offset on a shared split (data {s})", None, FILE, offset(s)),
                Case(f"null: a dependency beyond every window (data {s})", None, FILE, beyond(s)),
            ]
    if which != "ci":
        for lam, T_ in ((0.5, 16), (0.7, 16)):
            for seeds_t in ((0, 1, 2), (3, 4, 5)):
                args = ["--task", "teacher", "--set", "teacher_kind=linear", "--set",
                        f"teacher_lam={lam}", "--set", f"seq_len={T_}", "--set", "steps=800",
                        "--seeds", ",".join(map(str, seeds_t))]  # fmt: skip
                truth = teacher_truth(lam, T_, seeds_t)
                name = f"linear teacher λ = {lam} (seeds {seeds_t[0]}–{seeds_t[-1]})"
                cases.append(Case(name, truth, args, teacher=(lam, T_)))
    return cases


# the table's column for truth_test: the p-value of the true k*'s own within test and the
# level the answer tests it at
TEST = "the truth's own test: p (its level)"
CAP = 6  # --until-converged: each run's cap, this many times its steps (docs/memory.md's)


def until_converged(args: list[str]) -> list[str]:
    """A case's arguments with each run trained until converged: at least its steps, at most
    CAP times them, as `memory` trains by default and docs/memory.md's answers were. The null
    trained for one step keeps its one step: it stands for a budget too small to learn."""
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    steps = [int(v.split("=", 1)[1]) for v in sets if v.startswith("steps=")]
    if not steps or steps[0] <= 1:
        return args
    return [*args, "--set", f"max_steps={CAP * steps[0]}"]


def run_case(
    case: Case,
    work: Path,
    workers: int,
    relative_to: str = "gap",
    race: bool = True,
    converged: bool = False,
    seeds: list[int] | None = None,
) -> dict:
    from seqbench import api
    from seqbench.store.opening import open_store

    args = until_converged(list(case.args)) if converged else list(case.args)
    task, path = "file", None
    slug = "".join(c if c.isalnum() else "-" for c in case.name)
    if case.data is not None:
        path = str(work / f"{slug}.npz")
        np.savez(path, **case.data)
    else:
        task = args[args.index("--task") + 1]
    sets = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    params = int(args[args.index("--params") + 1]) if "--params" in args else None
    if seeds is None:
        given = args[args.index("--seeds") + 1] if "--seeds" in args else "0,1,2"
        seeds = [int(s) for s in given.split(",")]
    plan = api.memory_plan(
        task,
        sets=sets,
        path=path,
        families=["tcn"],
        references=[],
        seeds=seeds,
        params=params,
        relative_to=relative_to,
    )
    store = open_store(str(work / f"{slug}.db"))
    try:
        out = api.run_memory(store, plan, workers=workers, race=race)
        test = truth_test(store, plan, out.answer, case.truth_at(seeds))
    finally:
        store.dispose()
    return out.answer.to_dict() | {"spared": out.spared, "truth_test": test}


def truth_test(store, plan, answer, truth: int | None) -> dict | None:
    """The true k*'s own within test on the answer's runs, the one its exactness needs
    (k* is the smallest context shown within): its p-value (`within_p`: against the best, or
    for the best itself against the runner-up) beside the level the answer tests that context
    at (gap_share: the search's split) and the whole α. Below the first, the answer shows the
    truth within; below α alone, a procedure that spent its whole level on this one test
    could; above α, no procedure holding its level by this test could at these seeds: the
    ceiling simulate_answer.py's boundary_power computes for its scenarios, here on one
    realization. None for a null, or where the truth's context was not trained."""
    from seqbench.memory.answer import within_level
    from seqbench.memory.evidence import cell_runs, within_p
    from seqbench.memory.plan import with_points
    from seqbench.memory.reading import plan_runs
    from seqbench.memory.stats import ALPHA

    if truth is None or not any(c.k == truth for c in answer.cells):
        return None
    plan = with_points(plan, sorted({c.k for c in answer.cells if c.k is not None}))
    runs = plan_runs(store, plan)
    runs = runs[runs["run_id"].isin(answer.run_ids)].reset_index(drop=True)
    cells = cell_runs(runs, -1.0 if answer.higher_is_better else 1.0)
    assert [(c.model, c.k) for c in cells] == [(c.model, c.k) for c in answer.cells]
    i = next(j for j, c in enumerate(answer.cells) if c.k == truth)
    b = next(j for j, c in enumerate(answer.cells) if c.label == answer.best_cell)
    families = len({c.model for c in answer.cells if c.k is not None})
    return {
        "p": within_p(i, b, cells, answer.epsilon, answer.relative_to),
        "level": within_level(truth, answer.max_k, families),
        "alpha": ALPHA,
    }


def advised_seeds(doc: dict) -> list[int] | None:
    """The seeds an answer's own warning asks for ("6 seeds (`seeds` 0:5:+1) make each
    test's bound ..."), parsed as `--seeds` parses them; None where it asks for none."""
    from seqbench.sweep.spec import parse_range

    for w in doc.get("warnings", []):
        m = re.search(r"`seeds` (\S+)\)", w)
        if m:
            return parse_range(m.group(1))
    return None


def judge(case: Case, doc: dict, truth: int | None = None) -> dict:
    """Whether the case's answer was stated, its interval holds the truth, its k* is exact.
    An under-trained answer counts as stated on a null (strictly: it carries a k*), and its
    k* is judged as what the budget measured; `under` counts them apart."""
    stated = doc["k_star"] is not None or doc["verdict"] in ("needs-recurrence", "family-gap")
    under = doc["verdict"] == "under-trained"
    truth = case.truth if truth is None else truth
    if truth is None:
        return {"null": True, "stated": stated, "held": None, "exact": None, "under": under}
    k, lo, hi = doc["k_star"], doc["k_low"], doc["k_high"]
    held = k is not None and lo <= truth <= (hi if hi is not None else 10**9)
    test = doc.get("truth_test")  # older --json files have none
    shown = {} if test is None else {"shown_at_level": test["p"] < test["level"],
                                     "shown_at_alpha": test["p"] < test["alpha"]}  # fmt: skip
    return {"null": False, "stated": stated, "held": held, "exact": k == truth, "truth": truth,
            "under": under, **shown}  # fmt: skip


def _row(name: str, truth, doc: dict, j: dict, seeds: str | None = None) -> str:
    """One case's row: its truth, the answer's verdict, k* and interval, and the judgement."""
    interval = f"{doc['k_low']}–{doc['k_high']}" if doc["k_star"] is not None else ""
    held = "" if j["held"] is None else ("yes" if j["held"] else "**no**")
    exact = "" if j["exact"] is None else ("yes" if j["exact"] else "no")
    test = doc.get("truth_test")
    if test is not None:
        test = f"{test['p']:.2g} (α × {test['level'] / test['alpha']:.2g})"
    elif truth is not None:
        test = "not tried"
    cols = [name, *([seeds] if seeds else []), "none (null)" if truth is None else truth,
            doc["verdict"], doc["k_star"] or "", interval, held, exact, test or ""]  # fmt: skip
    return "| " + " | ".join(map(str, cols)) + " |"


def table(rows: list[tuple[Case, dict, dict, float]]) -> list[str]:
    lines = [
        f"| case | true k\\* | verdict | k\\* | interval | interval holds it | exact | {TEST} |",
        "|---|---|---|---|---|---|---|---|",
    ]
    return lines + [_row(case.name, case.truth, doc, j) for case, doc, j, _m in rows]


def advice_table(after: dict) -> list[str]:
    """The cases whose answer asked for more seeds, run again at the seeds it named (in the
    same store: the seeds already run are not trained again)."""
    lines = [
        "| case | seeds | true k\\* | verdict | k\\* | interval | interval holds it | exact "
        f"| {TEST} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    return lines + [
        _row(name, j.get("truth"), doc, j, f"{seeds[0]}–{seeds[-1]}")
        for name, (seeds, doc, j, _m) in after.items()
    ]


def followed(rows, after: dict):
    """The rows with each advised case's answer replaced by the one at the seeds it named."""
    return [(c, *after[c.name][1:3], m) if c.name in after else (c, d, j, m) for c, d, j, m in rows]


def rates(rows) -> dict:
    known = [j for _c, _d, j, _m in rows if not j["null"]]
    nulls = [j for _c, _d, j, _m in rows if j["null"]]
    return {
        "cases": len(rows),
        "held": sum(j["held"] for j in known),
        "exact": sum(j["exact"] for j in known),
        "known": len(known),
        "null_stated": sum(j["stated"] for j in nulls),
        "nulls": len(nulls),
        "under": sum(j.get("under", False) for _c, _d, j, _m in rows),
        "shown_at_level": sum(j.get("shown_at_level", False) for j in known),
        "shown_at_alpha": sum(j.get("shown_at_alpha", False) for j in known),
    }


def summary(r: dict) -> str:
    pct = lambda a, b: f"{a}/{b} ({a / b:.0%})" if b else "0/0"  # noqa: E731
    return (
        f"interval holds the true k*: {pct(r['held'], r['known'])}; k* exact: "
        f"{pct(r['exact'], r['known'])}; answers stated on null tasks: "
        f"{r['null_stated']} of {r['nulls']}; under-trained (a cell the answer rests on "
        f"still improving): {r.get('under', 0)} of {r['cases']}; the true k* shown within by "
        f"its own test at the answer's level: {r.get('shown_at_level', 0)} of {r['known']}, "
        f"at the whole α (the most that any procedure holding its level by this test shows): "
        f"{r.get('shown_at_alpha', 0)} of {r['known']}"
    )


def write_doc(lines: list[str], r: dict, which: str, minutes: float) -> None:
    doc = REPO / "docs" / "memory.md"
    text = doc.read_text(encoding="utf-8")
    body = "\n".join(
        [
            MARK[0],
            f"Generated by `.venv/bin/python scripts/calibrate_memory.py --write-doc` (suite "
            f"`{which}`; {minutes:.0f} minutes of training on 2 cores, {date.today()}: "
            "`--dir D` keeps the stores and re-derives from them). Each case is one "
            "`seqbench memory` with a TCN, no recurrent reference, seeds 0, 1, 2 (the teacher: "
            "the seeds named, each another teacher) and the default tolerance.",
            "",
            *lines,
            "",
            f"**{summary(r)}.**",
            MARK[1],
        ]
    )
    if MARK[0] in text:
        head, rest = text.split(MARK[0], 1)
        text = head + body + rest.split(MARK[1], 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n## Calibration\n\n" + body + "\n"
    doc.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slice", choices=("full", "ci"), default="full")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument(
        "--relative-to",
        choices=("gap", "best"),
        default="gap",
        help="the tolerance's reference (the truth is then the closed form under that rule "
        "only for the tasks whose best is near zero: read the rows)",
    )
    ap.add_argument("--json", help="write the rows and rates as JSON to this file")
    ap.add_argument(
        "--no-race", action="store_true", help="every cell every seed (memory --no-race)"
    )
    ap.add_argument(
        "--until-converged",
        action="store_true",
        help=f"train each run until converged, at least its steps and at most {CAP} times "
        "them (the null trained for one step keeps its one step)",
    )
    ap.add_argument(
        "--follow-advice",
        action="store_true",
        help="where an answer says more seeds may tell, run the case again at the seeds it "
        "names (its warning's `seeds` range) and report the rates with the advice followed",
    )
    ap.add_argument(
        "--dir",
        help="keep the data and stores here: run again, every answer is re-derived from the "
        "stored runs in seconds (default: a temporary directory)",
    )
    args = ap.parse_args(argv)
    rows, after = [], {}
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.dir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for case in suite(args.slice):
            t0 = time.monotonic()
            doc = run_case(case, work, args.workers, args.relative_to, not args.no_race,
                           args.until_converged)  # fmt: skip
            j = judge(case, doc)
            rows.append((case, doc, j, (time.monotonic() - t0) / 60))
            print(table(rows[-1:])[-1], flush=True)
            seeds = advised_seeds(doc) if args.follow_advice else None
            if seeds:
                t0 = time.monotonic()
                doc = run_case(case, work, args.workers, args.relative_to, not args.no_race,
                               args.until_converged, seeds)  # fmt: skip
                j = judge(case, doc, case.truth_at(seeds))
                after[case.name] = (seeds, doc, j, (time.monotonic() - t0) / 60)
                print(advice_table({case.name: after[case.name]})[-1], flush=True)
    r = rates(rows)
    lines = table(rows)
    print("\n".join(lines))
    print(summary(r))
    if after:
        print("\nAt the seeds each answer's warning names:")
        print("\n".join(advice_table(after)))
        print(f"with the advice followed: {summary(rates(followed(rows, after)))}")
    if args.json:
        out = [
            {"case": c.name, "truth": c.truth, **j, "answer": d, "minutes": m}
            for c, d, j, m in rows
        ]
        advised = {
            n: {"seeds": s_, **j, "answer": d, "minutes": m} for n, (s_, d, j, m) in after.items()
        }
        Path(args.json).write_text(
            json.dumps(
                {
                    "rows": out,
                    "rates": r,
                    "advised": advised,
                    "rates_advice_followed": rates(followed(rows, after)),
                },
                indent=2,
            )
        )
    if args.write_doc:
        write_doc(lines, r, args.slice, (time.monotonic() - t_all) / 60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
