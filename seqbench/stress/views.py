"""What a stress result shows, for `stress --plot` and the dashboard alike: the one figure
(gradient norm against lag, truncation error against k, log-log, each series labelled with its
fitted gain γ and verdict) and the table of stored stress runs. NumPy and matplotlib only: the
dashboard draws a stored run without torch."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# how a verdict is stored (a summary is a number) and read back
VERDICT_CODES = {
    "vanishing": -1.0,
    "stable": 0.0,
    "exploding": 1.0,
    "finite-context": 2.0,
    "undetermined": math.nan,
}
STRESS_COLUMNS = ["run", "model", "T", "seed", "source", "gain γ", "horizon", "spectral norm"]


@dataclass(frozen=True)
class StressCurves:
    """One analysed model's curves: (lag, gradient norm) and (k, truncation error) points."""

    label: str
    grad: Sequence[tuple[float, float]]
    trunc: Sequence[tuple[float, float]]


def verdict_of(code: float) -> str:
    """A stored verdict code back to its word."""
    for word, c in VERDICT_CODES.items():
        if c == code or (math.isnan(c) and math.isnan(code)):
            return word
    return "undetermined"


def series_label(model: str, source: str, seed: int, gain: float, verdict: str) -> str:
    gain_text = f"γ={gain:.4g}" if math.isfinite(gain) else "γ n/a"
    return f"{model} ({source}, seed {seed}): {gain_text}, {verdict}"


def stress_figure(curves: list[StressCurves]):
    """Gradient norm against lag and truncation error against k, one series per StressCurves.
    The lag axis is logarithmic (lag + 1), so a gradient that vanishes in ten steps and one
    that lives for thousands are both readable. Returns the figure (not saved)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqbench.report.plots import plain_log_ticks

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.8))
    T = 0
    for c in curves:
        grad = [(x, y) for x, y in c.grad if math.isfinite(y) and y > 0]
        trunc = [(x, y) for x, y in c.trunc if math.isfinite(y) and y > 0]
        T = max(T, int(max((x for x, _ in c.grad), default=-1)) + 1)
        a.loglog([x + 1 for x, _ in grad], [y for _, y in grad], label=c.label, lw=1)
        b.loglog([x for x, _ in trunc], [y for _, y in trunc], marker="o", ms=3, label=c.label)
    for axis in (a.xaxis, a.yaxis, b.xaxis, b.yaxis):
        plain_log_ticks(axis)
    a.set(xlabel="lag L + 1 (log)", ylabel="‖∂ℓ/∂x(T−L)‖ (log)", title=f"gradient vs lag, T = {T}")
    b.set(
        xlabel="k, inputs seen (log)",
        ylabel="‖y_T(full) − y_T(last k)‖ (log)",
        title="truncation error",
    )
    if b.get_lines():
        b.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.text(
        0.01,
        -0.02,
        "γ: per-step gradient gain fitted over the lags; verdict: "
        "exploding (γ > 1 + ε), vanishing (γ < 1 − ε) or stable",
        fontsize=8,
        va="top",
    )
    fig.tight_layout()
    return fig


def stress_rows(store) -> tuple[list[str], list[list]]:
    """(STRESS_COLUMNS, one row per stored stress run, newest first): its summaries read in
    one query for all runs."""
    runs = store.list_runs(kind="stress", limit=None)
    keys = ["gain", "horizon", "spectral_norm"]
    values: dict[int, dict[str, float]] = {}
    for run_id, key, value in store.values_of_runs("summaries", [r.id for r in runs], keys):
        values.setdefault(run_id, {})[key] = value
    rows = [
        [r.id, r.model, r.seq_len, r.seed, (r.config or {}).get("source"),
         *(values.get(r.id, {}).get(k) for k in keys)]
        for r in runs
    ]  # fmt: skip
    return STRESS_COLUMNS, rows


def stored_curves(store, ref: str | int) -> StressCurves:
    """A stored stress run's curves, labelled as `stress --plot` labels its series."""
    run = store.require_run(str(ref))
    s = store.summaries(run.id)
    label = series_label(
        run.model,
        (run.config or {}).get("source", "init"),
        run.seed,
        s.get("gain", math.nan),
        verdict_of(s.get("verdict", math.nan)),
    )
    return StressCurves(
        label, store.curve(run.id, "grad_norm"), store.curve(run.id, "truncation_error")
    )
