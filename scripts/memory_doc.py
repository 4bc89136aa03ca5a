"""Regenerate docs/memory.md: `seqbench memory` on every built-in task at a CPU budget, beside
what theory says where it can (adding: T; copy: T + 20; the linear teacher's closed form, from
its own weights). Runs in a fresh directory (a new ./seqbench.db), one task after another; on
2 cores with --workers 1 about an hour.

    .venv/bin/python scripts/memory_doc.py [--workers N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SB = [sys.executable, "-m", "seqbench"]
COMMON = ["--families", "tcn", "--references", "gru", "--seeds", "0,1,2"]

# (label, task args, what theory says, or None)
TASKS = [
    ("teacher, linear, λ = 0.5", ["--task", "teacher", "--set", "teacher_kind=linear",
     "--set", "teacher_lam=0.5", "--set", "seq_len=16", "--set", "steps=1000"], "teacher"),
    ("teacher, linear, λ = 0.8", ["--task", "teacher", "--set", "teacher_kind=linear",
     "--set", "teacher_lam=0.8", "--set", "seq_len=25", "--set", "steps=1000"], "teacher"),
    ("teacher, linear, λ = 0.9", ["--task", "teacher", "--set", "teacher_kind=linear",
     "--set", "teacher_lam=0.9", "--set", "seq_len=50", "--set", "steps=1000"], "teacher"),
    ("adding, T = 20", ["--task", "adding", "--set", "seq_len=20", "--set", "steps=2000"],
     "T = 20: a marker may sit at any step"),
    ("copy, T = 10", ["--task", "copy", "--set", "seq_len=10", "--set", "steps=2000"],
     "T + 20 = 30: the whole input"),
    ("digits", ["--task", "digits", "--set", "steps=500"], None),
    ("chorales", ["--task", "chorales", "--set", "steps=300"], None),
    ("ptb-char, T = 50", ["--task", "ptb-char", "--set", "seq_len=50", "--set", "steps=500"],
     None),
    ("own data: CO2 (examples/co2_arrays.py)", ["--task", "file", "--path", "co2",
     "--set", "steps=500"], None),
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--dir",
        help="work in this directory and keep its store: run again, every answer is re-derived "
        "from the stored runs in seconds (default: a temporary directory)",
    )
    args = ap.parse_args()
    rows = []
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
            if theory == "teacher":
                lam = float(next(a.split("=")[1] for a in task_args if "teacher_lam" in a))
                T = int(next(a.split("=")[1] for a in task_args if a.startswith("seq_len")))
                theory = f"closed form: {teacher_k_star(lam, T, doc['epsilon'])}"
            minutes = (time.monotonic() - t0) / 60
            rows.append((label, task_args, doc, theory, None, minutes))
            print(label, doc["verdict"], doc["k_star"], f"{minutes:.1f} min", flush=True)
    write(rows)


def _cmd(task_args: list[str]) -> str:
    return "seqbench memory " + " ".join(task_args) + " " + " ".join(COMMON)


MARK = ("<!-- answers:start -->", "<!-- answers:end -->")


def write(rows) -> None:
    """The table and each answer, between MARK in docs/memory.md (what is written around them
    by hand, the reading of the table and the calibration, is kept)."""
    lines = [
        MARK[0],
        "Regenerate with `.venv/bin/python scripts/memory_doc.py` (about 35 minutes on 2 cores "
        "with\n`--workers 2`; `--dir D` keeps the stores, and a second run re-derives every "
        "answer from them\nin a minute). Minutes: the wall time of the run that trained the "
        "answer's runs, 2 workers,\nbeside other work.",
        "",
        "| task | verdict | k\\* | interval | best (metric) | trivial baseline | theory | "
        "minutes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for label, task_args, doc, theory, error, minutes in rows:
        if doc is None:
            lines.append(f"| {label} | failed | | | | | {theory or ''} | |")
            notes.append(f"- {label}: `{_cmd(task_args)}` failed: {error}")
            continue
        hi = doc["k_high"] if doc["k_high"] is not None else f">{doc['max_k']}"
        interval = f"{doc['k_low']}–{hi}" if doc["k_star"] is not None else ""
        lines.append(
            f"| {label} | {doc['verdict']} | {doc['k_star'] or ''} | {interval} | "
            f"{doc['best']:.4g} {doc['metric']} ({doc['best_cell']}) | {doc['baseline']:.4g} | "
            f"{theory or '—'} | {minutes:.1f} |"
        )
        notes.append(f"- **{label}**: `{_cmd(task_args)}`. {doc['sentence']}")
        notes += [f"  - warning: {w}" for w in doc["warnings"]]
    lines += ["", "### Each answer", "", *notes, MARK[1]]
    doc = REPO / "docs" / "memory.md"
    text = doc.read_text(encoding="utf-8")
    head, rest = text.split(MARK[0], 1)
    doc.write_text(head + "\n".join(lines) + rest.split(MARK[1], 1)[1], encoding="utf-8")


if __name__ == "__main__":
    main()
