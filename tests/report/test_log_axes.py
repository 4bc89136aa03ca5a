"""Every log axis seqbench draws is labelled in plain numbers (10, 0.001, 1e-06), never with
mathtext (10^-6 drawn as $10^{-6}$): mathtext's fonts (STIX) are missing on some installs,
and matplotlib then writes a "findfont" line per glyph to the user's terminal. Checked on the
drawn figures: the stress figure, a report's curves and the memory profile."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import pandas as pd
from matplotlib import pyplot as plt

from seqbench.report.curves import _finish
from seqbench.report.plots import plain_log_ticks
from seqbench.stress.views import StressCurves, stress_figure


def _labels(fig) -> list[tuple[str, bool, str]]:
    """(axis name, is minor, label) of every tick label drawn on the figure."""
    fig.canvas.draw()
    out = []
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            if axis.get_scale() != "log":
                continue
            for minor in (False, True):
                for t in axis.get_ticklabels(minor=minor):
                    out.append((name, minor, t.get_text()))
    return out


def _plain(labels) -> None:
    assert labels, "no log axis drawn"
    for _, _, text in labels:
        assert "$" not in text, text
        if text:
            assert math.isfinite(float(text)), text


def test_the_stress_figure_labels_its_log_axes_in_plain_numbers():
    grad = [(lag, 0.5**lag) for lag in range(60)]  # 18 decades
    trunc = [(k, 10.0 ** -(k / 3)) for k in (1, 2, 4, 8, 16, 32)]
    fig = stress_figure([StressCurves("rnn", grad, trunc)])
    labels = _labels(fig)
    plt.close(fig)
    _plain(labels)
    # an axis over many decades keeps its minor ticks unlabelled (they would crowd)
    assert not any(text for name, minor, text in labels if name == "y" and minor)
    assert {"1", "10"} <= {text for name, minor, text in labels if name == "x" and not minor}


def test_a_report_curve_over_decades():
    values = [1.0, 1e-3, 1e-6]
    fig, ax = plt.subplots()
    ax.plot(range(3), values)
    _finish(fig, ax, pd.Series(values), "mse", "adding", "t", None)
    labels = _labels(fig)
    plt.close(fig)
    _plain(labels)
    assert not any(text for name, minor, text in labels if minor)


def test_an_axis_within_two_decades_labels_its_minor_ticks_at_2_3_5():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1.0, 50.0])
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_ylim(1.0, 60.0)
    labels = _labels(fig)
    plt.close(fig)
    _plain(labels)
    minor = {t for name, is_minor, t in labels if name == "y" and is_minor} - {""}
    assert {"2", "3", "5", "20", "30", "50"} <= minor
    assert {t.strip("0.")[0] for t in minor} == {"2", "3", "5"}
