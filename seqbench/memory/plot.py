"""An answer drawn: the metric against k per feedforward family (mean ± std over seeds), each
recurrent reference, the trivial baseline and a forecast's persistence as horizontal lines, the
tolerance band shaded, and k* with its interval marked (each in the legend); an error spanning
more than a decade and a half on a log axis."""

from __future__ import annotations

import math


def plot_answer(answer: dict, path: str | None):
    """`answer`: Answer.to_dict() or a stored answer's details. With `path` None: the figure,
    not saved (the dashboard draws it as SVG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    from seqbench.report.plots import plain_log_ticks, spaced_ticks

    cells = answer.get("cells") or []
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    ks = sorted({c["k"] for c in cells if c["k"] is not None})
    for model in dict.fromkeys(c["model"] for c in cells if c["k"] is not None):
        mine = sorted((c for c in cells if c["model"] == model and c["k"] is not None), key=_k)
        ax.errorbar(
            [c["k"] for c in mine],
            [_nan(c["mean"]) for c in mine],
            yerr=[0.0 if c["std"] is None else c["std"] for c in mine],
            marker="o",
            capsize=3,
            label=model,
        )
    n = len({c["model"] for c in cells if c["k"] is not None})
    for c in cells:
        if c["k"] is None and c["mean"] is not None:
            color, n = f"C{n % 10}", n + 1
            ax.axhline(c["mean"], linestyle=":", label=f"{c['model']} (recurrent)", color=color)
    base, best, eps = answer.get("baseline"), answer.get("best"), answer.get("epsilon")
    if base is not None:
        ax.axhline(base, color="grey", linestyle="--", label="trivial baseline")
    last = answer.get("persistence")
    if last is not None:  # a forecast's last-value predictor, which the sentence quotes
        ax.axhline(last, color="grey", linestyle="-.", label="persistence (the last value)")
    if base is not None and best is not None and eps:
        delta = answer.get("tolerance")  # answers stored before it: ε of the gap
        delta = abs(eps * (base - best)) if delta is None else delta
        edge = best - delta if answer.get("higher_is_better") else best + delta
        of = answer.get("relative_to", "gap")
        ax.axhspan(
            min(best, edge),
            max(best, edge),
            color="tab:green",
            alpha=0.12,
            label=f"tolerance: {eps:.0%} of the {of}",
        )
    k_star = answer.get("k_star")
    if k_star is not None:
        lo = answer.get("k_low") or k_star
        hi = answer.get("k_high") or (ks[-1] if ks else k_star)
        ax.axvspan(lo, hi, color="tab:red", alpha=0.08, label=f"k* interval {lo}–{hi}")
        ax.axvline(k_star, color="tab:red", label=f"k* = {k_star}")
    if ks:
        ax.set_xscale("log", base=2)
        ticks = spaced_ticks(ks, log=True)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(k) for k in ticks])
    means = [c["mean"] for c in cells if c["mean"] is not None]
    if log_scale(answer, means):
        ax.set_yscale("log")  # cells at 1% of the baseline and below stay apart
        plain_log_ticks(ax.yaxis)
    ax.set_xlabel("context k")
    ax.set_ylabel(answer.get("metric", "test_metric"))
    title = answer.get("label") or answer.get("task")  # own data: named by its file
    ax.set_title(f"{title}: {answer.get('verdict')}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    if path is None:
        return fig
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def log_scale(answer: dict, means: list[float]) -> bool:
    """A log axis for an error (lower is better, every value positive) whose cells span more
    than a decade and a half: on a linear axis every cell under 1% of the baseline sits on
    the floor."""
    values = [*means, answer.get("baseline")]
    values = [v for v in values if v is not None]
    if answer.get("higher_is_better") or not values or min(values) <= 0:
        return False
    return max(values) / min(values) > 30


def _k(c: dict) -> int:
    return c["k"]


def _nan(v) -> float:
    return math.nan if v is None else float(v)


def plot_profile(profile: dict, answer: dict, path: str | None):
    """k*(ε) on log axes: each tolerance's k* with its interval, the closed form's k* beside
    it where the task has one, and the growth law in the title. With `path` None: the
    figure, not saved."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from seqbench.report.plots import plain_log_ticks

    points = profile["points"]
    stated = [p for p in points if p["k_star"] is not None]
    fig, ax = plt.subplots(figsize=(6.5, 4.5), layout="constrained")
    if stated:
        eps = [1 / p["epsilon"] for p in stated]
        ks = [p["k_star"] for p in stated]
        below = [
            p["k_star"] - (p["k_low"] if p["k_low"] is not None else p["k_star"]) for p in stated
        ]
        above = [
            (p["k_high"] if p["k_high"] is not None else p["k_star"]) - p["k_star"] for p in stated
        ]
        ax.errorbar(eps, ks, yerr=[below, above], marker="o", capsize=4, label="k* (interval)")
    closed = [p for p in points if p.get("closed_form") is not None]
    if closed:
        ax.plot(
            [1 / p["epsilon"] for p in closed],
            [p["closed_form"] for p in closed],
            linestyle="--",
            marker="x",
            color="grey",
            label="closed form",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)
    ax.set_xlabel("1/ε (the tolerance tightens to the right)")
    ax.set_ylabel("context k*")
    title = answer.get("label") or answer.get("task")
    law = profile["growth"].get("law")
    ax.set_title(f"{title}: k*(ε), growth {law or 'undecided'}", fontsize=10)
    ax.legend(fontsize=8)
    if path is None:
        return fig
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
