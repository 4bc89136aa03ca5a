"""What the reproduction presets cost: per `<preset>-<scale>` sweep in a store, the points,
the summed run time of their completed runs, the longest run, and the wall time that two
workers need at least (the larger of half the sum and the longest run).

The sweeps themselves are the experiment (`bash scripts/reproduce.sh small`); this reads their
runs back, so the numbers are what the machine actually took. Target (issue 9): each preset
at --scale small within about an hour on a 2-core CPU.

Usage: python benchmarks/preset_cost.py [--db seqbench.db] [--scale small] [--workers 2]
"""

import argparse

from seqbench.store.query import run_query
from seqbench.sweep.presets import PRESETS

p = argparse.ArgumentParser()
p.add_argument("--db", default="seqbench.db")
p.add_argument("--scale", default="small")
p.add_argument("--workers", type=int, default=2)
a = p.parse_args()

SQL = """
SELECT COUNT(DISTINCT sp.config_hash) AS points, SUM(r.wall_seconds) AS total,
       MAX(r.wall_seconds) AS longest
FROM sweep_points sp JOIN sweeps s ON s.id = sp.sweep_id
JOIN runs r ON r.config_hash = sp.config_hash AND r.status = 'completed'
WHERE s.name = :name
"""
print(f"| preset | points | run minutes | longest run min | ≥ wall min ({a.workers} workers) |")
print("|---|---|---|---|---|")
for preset in PRESETS:
    name = f"{preset}-{a.scale}"
    _, rows = run_query(a.db, SQL, {"name": name})
    points, total, longest = rows[0]
    if not points:
        print(f"| {preset} | (no sweep {name!r} in {a.db}) | | | |")
        continue
    wall = max(total / a.workers, longest)
    print(f"| {preset} | {points} | {total / 60:.0f} | {longest / 60:.1f} | {wall / 60:.0f} |")
