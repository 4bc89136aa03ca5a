"""Looking at runs side by side: `seqbench diff A B` (the config fields that differ, the
summaries beside each other) and learning curves (`seqbench curves`, `diff --plot`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from seqbench.config import NOT_COMPUTED
from seqbench.report.frames import curves_frame, metric_direction


@dataclass
class RunDiff:
    a: Any  # the two runs (store rows)
    b: Any
    config: list[tuple[str, Any, Any]]  # (field, in a, in b) for the fields that differ
    summaries: list[tuple[str, float | None, float | None]]  # every key of either run
    environment: list[tuple[str, Any, Any]]  # what they ran on, where it differs


def diff_runs(store, a_ref: str, b_ref: str) -> RunDiff:
    """The config fields whose values differ between two runs (a field one run lacks, from an
    older seqbench, shows as None) and every summary of either."""
    a, b = store.require_run(a_ref), store.require_run(b_ref)
    ca, cb = a.config or {}, b.config or {}
    config = [
        (k, ca.get(k), cb.get(k))
        for k in sorted(set(ca) | set(cb))
        if k not in NOT_COMPUTED  # device and backend differences are shown
        and json.dumps(ca.get(k), sort_keys=True) != json.dumps(cb.get(k), sort_keys=True)
    ]
    sa, sb = store.summaries(a.id), store.summaries(b.id)
    summaries = [(k, sa.get(k), sb.get(k)) for k in sorted(set(sa) | set(sb))]
    return RunDiff(a, b, config, summaries, environment_differences(a, b))


# environment keys that differ between any two runs and say nothing of what they ran on
_ENV_PER_RUN = {"pid", "driver_pid", "stale_after"}


def environment_differences(a, b) -> list[tuple[str, Any, Any]]:
    """(key, in a, in b) for what two runs ran on that differs (versions, device, host, the
    thread count, the package set, the source's commit and dirty flag): the same config on 2
    threads and on 1 takes very different times."""
    ea, eb = a.environment or {}, b.environment or {}
    return [
        (k, ea.get(k), eb.get(k))
        for k in sorted(set(ea) | set(eb))
        if k not in _ENV_PER_RUN and ea.get(k) != eb.get(k)
    ]


def run_label(run) -> str:
    parts = [f"run {run.id}", run.model, run.task]
    if run.k is not None:
        parts.append(f"k={run.k}")
    parts.append(f"seed {run.seed}")
    return " ".join(str(p) for p in parts)


def plot_curves(db, runs: list, metric: str, path: str, title: str | None = None) -> int:
    """One line per run of `metric` against the step (log y when the values span decades);
    returns how many runs had the metric. The y axis names the metric and its direction."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = curves_frame(db, [r.id for r in runs], [metric])
    fig, ax = plt.subplots(figsize=(7, 4.2))
    drawn = 0
    for run in runs:
        c = df[df["run_id"] == run.id]
        c = c[c["value"].map(math.isfinite)]
        if c.empty:
            continue
        ax.plot(c["step"], c["value"], marker="o", ms=3, lw=1.2, label=run_label(run))
        drawn += 1
    values = df["value"][df["value"].map(lambda v: math.isfinite(v) and v > 0)]
    if len(values) and values.max() / values.min() > 100:
        ax.set_yscale("log")
    arrow = "↑" if metric_direction(metric, runs[0].task if runs else None) == "higher" else "↓"
    ax.set(xlabel="step", ylabel=f"{metric} {arrow}", title=title or f"{metric} per step")
    if drawn:
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return drawn
