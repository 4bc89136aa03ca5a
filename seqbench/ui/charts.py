"""The dashboard's charts: matplotlib figures (the same ones `--plot` writes) as inline SVG,
each data series tagged `id="series-N"` (the baseline `id="baseline"`), so a browser test can
count what was drawn. Nothing is fetched: the SVG is part of the page."""

from __future__ import annotations

import io


def tag_series(fig) -> int:
    """Give every legend entry's artist an SVG id: series-0, series-1, ... (the trivial
    baseline: baseline). Returns how many data series there are."""
    n = 0
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        for handle, label in zip(handles, labels, strict=True):
            if hasattr(handle, "lines"):  # an errorbar container: its data line
                artist = handle.lines[0]
            elif isinstance(handle, tuple):  # a bar container: its first bar
                artist = handle[0]
            else:
                artist = handle
            if label == "trivial baseline":
                artist.set_gid("baseline")
                continue
            artist.set_gid(f"series-{n}")
            n += 1
    return n


def svg(fig) -> str:
    """The figure as an <svg> element (its XML prologue dropped), closed afterwards."""
    import matplotlib.pyplot as plt

    tag_series(fig)
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]
