"""What each model reaches with its defaults (no flags but the task and T) on adding (T = 100)
and digits: the `seqbench train` a new user would type. Long: ~1 hour on a 2-core CPU.

Usage: python benchmarks/defaults_quality.py [--db results.db] [--tasks adding digits]
"""

import argparse

from seqbench import api
from seqbench.models import MODELS

p = argparse.ArgumentParser()
p.add_argument("--db", default="benchmarks/defaults.db")
p.add_argument("--tasks", nargs="+", default=["adding", "digits"])
p.add_argument("--models", nargs="+", default=MODELS.names())
a = p.parse_args()

print("| model | task | test metric | baseline | steps | wall s | params |")
print("|---|---|---|---|---|---|---|")
for task in a.tasks:
    for m in a.models:
        kw = {"seq_len": 100} if task == "adding" else {}
        out = api.train(m, task, db=a.db, **kw)
        s = out.summaries
        if out.status != "completed":
            print(f"| {m} | {task} | {out.status} | | | | |", flush=True)
            continue
        base = s.get("baseline", float("nan"))
        cells = [
            m,
            task,
            f"{s['test_metric']:.4g}",
            f"{base:.4g}",
            int(s["steps"]),
            f"{s['wall_seconds']:.0f}",
            int(s["n_params"]),
        ]
        print("| " + " | ".join(map(str, cells)) + " |", flush=True)
