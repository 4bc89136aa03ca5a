"""Regenerate docs/memory.md: `seqbench memory` on every built-in task at a CPU budget, beside
what theory says where it can (adding: T; copy: T + 20; the linear teacher's closed form, from
its own weights). Runs in a fresh directory (a new ./seqbench.db), one task after another; on
2 cores with --workers 1 about an hour. Then the memory-function task's profiles: each kernel's
k*(ε) at five tolerances beside its closed form, and the growth law (about half an hour with
--workers 2; `--only profiles` runs just these, `--only answers` just the table above them).

    .venv/bin/python scripts/memory_doc.py [--workers N] [--only answers|profiles]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SB = [sys.executable, "-m", "seqbench"]
# every run trains until converged (`--steps auto`'s rule: its validation curve no longer
# improving, docs/science.md 8), from the answers of 2026-12-04's steps (the floor) to six
# times them (the cap); the GRU reference at its pair's rate times 0.3, 1 and 3, the best on
# validation (--lr-search references, the default); a stated answer is then asked again at
# twice the floors and caps (--confirm)
COMMON = ["--families", "tcn", "--references", "gru", "--seeds", "0,1,2"]


def _steps(floor: int) -> list[str]:
    return ["--set", f"steps={floor}", "--set", f"max_steps={6 * floor}"]


# (label, task args, what theory says, or None)
TASKS = [
    ("teacher, linear, λ = 0.5", ["--task", "teacher", "--set", "teacher_kind=linear",
     "--set", "teacher_lam=0.5", "--set", "seq_len=16", *_steps(1000)], "teacher"),
    ("teacher, linear, λ = 0.8", ["--task", "teacher", "--set", "teacher_kind=linear",
     "--set", "teacher_lam=0.8", "--set", "seq_len=25", *_steps(1000)], "teacher"),
    ("teacher, linear, λ = 0.9", ["--task", "teacher", "--set", "teacher_kind=linear",
     "--set", "teacher_lam=0.9", "--set", "seq_len=50", *_steps(1000)], "teacher"),
    ("adding, T = 20", ["--task", "adding", "--set", "seq_len=20", *_steps(2000)],
     "T = 20: a marker may sit at any step"),
    ("copy, T = 10", ["--task", "copy", "--set", "seq_len=10", *_steps(2000)],
     "T + 20 = 30: the whole input"),
    ("digits", ["--task", "digits", *_steps(500)], None),
    ("chorales", ["--task", "chorales", *_steps(300)], None),
    ("ptb-char, T = 50", ["--task", "ptb-char", "--set", "seq_len=50", *_steps(500)], None),
    ("own data: CO2 (examples/co2_arrays.py)", ["--task", "file", "--path", "co2",
     *_steps(500)], None),
]  # fmt: skip


def teacher_k_star(lam: float, T: int, eps: float, seeds=(0, 1, 2)) -> int:
    """k*(ε) of the linear teacher from its weights: the product's one closed form
    (Teacher.optimal_truncated_error, averaged over the seeds as memory averages its cells)."""
    from seqbench.configure import make_config
    from seqbench.tasks import make_task
    from seqbench.tasks.synthetic import closed_form_k_star

    per_seed = []
    for seed in seeds:
        over = {"teacher_kind": "linear", "teacher_lam": lam, "seq_len": T, "seed": seed}
        task = make_task("teacher", make_config("tcn", "teacher", over).task_args())
        per_seed.append(task.optimal_truncated_error())
    return closed_form_k_star(list(np.mean(per_seed, axis=0)), eps)


# The memory-function profiles: each kernel's k*(ε) beside its closed form, and the growth law
PROFILE_EPS = "0.2,0.1,0.05,0.02,0.01"
PROFILE_T = 64  # the shortest T at which the closed forms themselves tell the laws apart
# (label, the kernel's fields, more flags, a note printed under its table)
KERNELS = [
    ("exp, decay 0.9", ["kernel=exp", "decay=0.9"], [], ""),
    ("power, alpha 1", ["kernel=power", "alpha=1"], ["--seeds", "0,1,2,3,4"], ""),
    ("impulse, delay 10", ["kernel=impulse", "delay=10"], [], ""),
    ("osc, decay 0.9, omega 0.5", ["kernel=osc", "decay=0.9", "omega=0.5"], [], ""),
]
PROFILE_MAX_K = 32  # no recurrent reference: the best cell's optimum is e*(32)
PROFILE_ARGS = ["--set", f"seq_len={PROFILE_T}", "--set", "steps=1000", "--families", "tcn",
                "--references", "none", "--max-k", str(PROFILE_MAX_K), "--epsilon",
                PROFILE_EPS]  # fmt: skip


def profiles(work: str, workers: int) -> None:
    """Each kernel's profile, measured, between PROFILE_MARK in docs/memory.md."""
    t_all = time.monotonic()
    lines = [
        PROFILE_MARK[0],
        "Regenerate with `.venv/bin/python scripts/memory_doc.py --only profiles --workers 2` "
        "(MINUTES minutes on 2 cores, DATE). "
        f"Every kernel at T = {PROFILE_T}: TCNs at one budget over k = 1, 2, 4, … 32 and the "
        "search of every tolerance, 3 seeds (5 for the power law), 1000 steps, no recurrent "
        "reference; k\\* and its "
        "interval measured, the closed form's k\\* beside it (tasks/memory_functions.py), "
        "relative to the gap down to e\\*(32), the best a cell of context 32 can do (no "
        "recurrent reference sees more). Minutes: the run that trained them.",
        "",
    ]
    for label, sets, more, note in KERNELS:
        t0 = time.monotonic()
        task = ["--task", "memory-function", *(w for kv in sets for w in ("--set", kv))]
        cmd = [*SB, "memory", *task, *PROFILE_ARGS, *more, "--workers", str(workers), "-q",
               "--format", "json"]  # fmt: skip
        out = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        minutes = (time.monotonic() - t0) / 60
        shown = "seqbench memory " + " ".join([*task, *PROFILE_ARGS, *more])
        if out.returncode != 0:
            lines += [f"**{label}**: `{shown}` failed: {out.stderr.strip()[-300:]}", ""]
            print(label, "failed", flush=True)
            continue
        doc = json.loads(out.stdout)
        closed = _closed(sets, [d["epsilon"] for d in doc])
        held = sum(
            d["k_star"] is not None and d["k_low"] <= c <= d["k_high"]
            for d, c in zip(doc, closed, strict=True)
        )
        lines += [
            f"**{label}** ({minutes:.1f} min, {len(doc[0]['run_ids'])} runs): `{shown}`",
            "",
            "| ε | verdict | k\\* | interval | closed form |",
            "|---|---|---|---|---|",
        ]
        for d, c in zip(doc, closed, strict=True):
            interval = f"{d['k_low']}–{d['k_high']}" if d["k_star"] is not None else ""
            lines.append(
                f"| {d['epsilon']:g} | {d['verdict']} | {d['k_star'] or ''} | {interval} | {c} |"
            )
        lines += [
            "",
            f"The interval holds the closed form at {held} of {len(doc)} tolerances. "
            f"Growth: {_md(doc[0]['growth']['sentence'])}.",
            "",
            *([note, ""] if note else []),
        ]
        print(label, [(d["k_star"], c) for d, c in zip(doc, closed, strict=True)], flush=True)
    lines.append(PROFILE_MARK[1])
    lines[1] = (
        lines[1]
        .replace("MINUTES", f"{(time.monotonic() - t_all) / 60:.0f}")
        .replace("DATE", str(date.today()))
    )
    path = REPO / "docs" / "memory.md"
    text = path.read_text(encoding="utf-8")
    head, rest = text.split(PROFILE_MARK[0], 1)
    path.write_text(head + "\n".join(lines) + rest.split(PROFILE_MARK[1], 1)[1], encoding="utf-8")


def _md(text: str) -> str:
    """k* as Markdown shows it (a bare * starts emphasis)."""
    return text.replace("k*", "k\\*")


def _closed(sets: list[str], eps: list[float]) -> list[int]:
    from seqbench.configure import make_config
    from seqbench.tasks import memory_functions as mf
    from seqbench.tasks.synthetic import closed_form_k_star

    over = dict(kv.split("=") for kv in sets) | {"seq_len": PROFILE_T}
    e = mf.optimal_truncated_error(make_config("tcn", "memory-function", over), PROFILE_T)
    return [closed_form_k_star(e, x, best_k=PROFILE_MAX_K) for x in eps]  # no reference


PROFILE_MARK = ("<!-- profiles:start -->", "<!-- profiles:end -->")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--dir",
        help="work in this directory and keep its store: run again, every answer is re-derived "
        "from the stored runs in seconds (default: a temporary directory)",
    )
    ap.add_argument(
        "--only",
        choices=("answers", "profiles"),
        help="regenerate one section: the built-in tasks' answers, or the memory functions' "
        "profiles (default: both)",
    )
    args = ap.parse_args()
    if args.only != "answers":
        with tempfile.TemporaryDirectory() as tmp:
            work = args.dir or tmp
            Path(work).mkdir(parents=True, exist_ok=True)
            profiles(work, args.workers)
        if args.only == "profiles":
            return
    rows = []
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.dir or tmp
        Path(work).mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(REPO / "examples/co2_arrays.py"), "co2"], cwd=work,
                       check=True, capture_output=True)  # fmt: skip
        for label, task_args, theory in TASKS:
            t0 = time.monotonic()
            cmd = [*SB, "memory", *task_args, *COMMON, "--workers", str(args.workers), "-q",
                   "--format", "json"]  # fmt: skip
            out = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
            if out.returncode != 0:
                rows.append((label, task_args, None, theory, out.stderr.strip()[-300:], 0.0))
                print(label, "failed:", out.stderr.strip()[-300:], flush=True)
                continue
            doc = json.loads(out.stdout)
            if doc["verdict"] == "matches":  # a stated k*: asked again at twice the caps
                again = subprocess.run([*cmd, "--confirm"], cwd=work, capture_output=True,
                                       text=True)  # fmt: skip
                if again.returncode == 0:
                    doc["confirm"] = json.loads(again.stdout)["confirm"]
                else:
                    doc["confirm"] = {"sentence": f"--confirm failed: {again.stderr[-300:]}"}
            if theory == "teacher":
                lam = float(next(a.split("=")[1] for a in task_args if "teacher_lam" in a))
                T = int(next(a.split("=")[1] for a in task_args if a.startswith("seq_len")))
                theory = f"closed form: {teacher_k_star(lam, T, doc['epsilon'])}"
            minutes = run_minutes(work, doc)
            rows.append((label, task_args, doc, theory, None, minutes))
            print(label, doc["verdict"], doc["k_star"], f"{minutes:.1f} run-min",
                  f"({(time.monotonic() - t0) / 60:.1f} min now)",
                  doc.get("confirm", {}).get("sentence", ""), flush=True)  # fmt: skip
    write(rows, (time.monotonic() - t_all) / 60, args.workers)


def run_minutes(work: str, doc: dict) -> float:
    """The training the answer and its confirmation rest on: the recorded wall time of their
    runs, summed (the same whichever sitting trained them, and whichever store already had
    them), read through `seqbench query` as any user would."""
    answers = [str(doc["answer_id"])]
    if doc.get("confirm", {}).get("answer_id") is not None:
        answers.append(str(doc["confirm"]["answer_id"]))
    sql = ("SELECT sum(wall_seconds) AS s FROM runs WHERE id IN (SELECT run_id FROM "
           f"answer_runs WHERE answer_id IN ({', '.join(answers)}))")  # fmt: skip
    out = subprocess.run([*SB, "query", "--format", "json", sql], cwd=work, check=True,
                         capture_output=True, text=True)  # fmt: skip
    return (json.loads(out.stdout)[0]["s"] or 0.0) / 60


def _confirmed(confirm: dict | None) -> str:
    """The table's cell for --confirm: not asked (no k* stated), held, or moved."""
    if not confirm:
        return "—"
    if "confirmed" not in confirm:
        return "failed"
    seen = f"k\\* = {confirm['k_star']}" if confirm["k_star"] is not None else confirm["verdict"]
    return f"{'held' if confirm['confirmed'] else 'moved'} ({seen})"


def _cmd(task_args: list[str]) -> str:
    return "seqbench memory " + " ".join(task_args) + " " + " ".join(COMMON)


MARK = ("<!-- answers:start -->", "<!-- answers:end -->")


def write(rows, minutes: float, workers: int) -> None:
    """The table and each answer, between MARK in docs/memory.md (what is written around them
    by hand, the reading of the table and the calibration, is kept)."""
    lines = [
        MARK[0],
        f"Regenerate with `.venv/bin/python scripts/memory_doc.py --only answers` ({minutes:.0f} "
        f"minutes\non a 2-core machine with `--workers {workers}`, {date.today()}; `--dir D` "
        "keeps the stores, and a\nsecond run re-derives every answer from them in a minute, "
        "training nothing). Run-minutes: the training the answer and its\nconfirmation rest on, "
        f"the recorded wall time of their runs summed ({workers} ran at once here, on\n2 cores). "
        "A k\\* in parentheses was measured but is not stated: the verdict says why.",
        "",
        "| task | verdict | k\\* | interval | at twice the caps | best (metric) | "
        "trivial baseline | theory | run-minutes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for label, task_args, doc, theory, error, minutes in rows:
        if doc is None:
            lines.append(f"| {label} | failed | | | | | | {theory or ''} | |")
            notes.append(f"- {label}: `{_cmd(task_args)}` failed: {error}")
            continue
        hi = doc["k_high"] if doc["k_high"] is not None else f">{doc['max_k']}"
        interval = f"{doc['k_low']}–{hi}" if doc["k_star"] is not None else ""
        verdict = doc["verdict"]
        if doc.get("confirm", {}).get("confirmed") is False:  # stated, but moved when trained on
            verdict = "undecided (moved)"
        k_star = doc["k_star"] or ""
        if verdict != "matches" and k_star:  # measured, not stated: in parentheses
            k_star, interval = f"({k_star})", f"({interval})"
        lines.append(
            f"| {label} | {verdict} | {k_star} | {interval} | "
            f"{_confirmed(doc.get('confirm'))} | "
            f"{doc['best']:.4g} {doc['metric']} ({doc['best_cell']}) | {doc['baseline']:.4g} | "
            f"{theory or '—'} | {minutes:.1f} |"
        )
        notes.append(f"- **{label}**: `{_cmd(task_args)}`. {doc['sentence']}")
        notes += [f"  - warning: {w}" for w in doc["warnings"]]
        if doc.get("lr_chosen"):
            notes.append(f"  - note: {doc['lr_chosen']}")
        if doc.get("confirm"):
            notes.append(f"  - `--confirm`: {doc['confirm']['sentence']}")
    lines += ["", "### Each answer", "", *notes, MARK[1]]
    doc = REPO / "docs" / "memory.md"
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(MARK[0], 1)
    doc.write_text(head + "\n".join(lines) + rest.split(MARK[1], 1)[1], encoding="utf-8")


if __name__ == "__main__":
    main()
