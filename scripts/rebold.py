"""Re-apply the report's rule for its bold "best" cell to markdown tables that an older
seqbench wrote (it bolded the best mean whatever the seeds' noise): a bold cell stays bold
only when it is ahead of the runner-up beyond the seeds' noise (report/stats.clearly_ahead,
Welch's t-test at p < 0.05), which the cells' own mean, std (or 95% interval) and n decide.

    .venv/bin/python scripts/rebold.py docs/guide.md docs/reproductions.md docs/reproductions/*/*.md
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

from seqbench.report.frames import metric_direction
from seqbench.report.stats import clearly_ahead, t_quantile

STD = re.compile(r"^(\S+) ± (\S+) \(n=(\d+)[^)]*\)$")
CI = re.compile(r"^(\S+) \[(\S+), (\S+)\] \(n=(\d+)[^)]*\)$")


def cell_stats(text: str) -> tuple[float, float, int] | None:
    text = text.strip().strip("*").strip()
    m = STD.match(text)
    if m:
        return float(m.group(1)), float(m.group(2)), int(m.group(3))
    m = CI.match(text)
    if m:
        mean, lo, hi, n = float(m.group(1)), float(m.group(2)), float(m.group(3)), int(m.group(4))
        sd = (hi - lo) / 2 * math.sqrt(n) / t_quantile(n) if n > 1 else 0.0
        return mean, sd, n
    return None


def split(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def join(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def unbold(c: str) -> str:
    return c[2:-2] if c.startswith("**") and c.endswith("**") else c


def rebold(lines: list[str]) -> tuple[list[str], int]:
    out, changed, header = list(lines), 0, None
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            continue
        cells = split(line)
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        bold = [j for j, c in enumerate(cells) if c.startswith("**") and c.endswith("**")]
        if not bold:
            continue
        j = bold[0]
        task = cells[0] if header[0] == "task" else None
        higher = metric_direction("test_metric", task) == "higher"
        if "rank" in header:  # a leaderboard: the rank-1 row's model, against rank 2's
            at = {h: header.index(h) for h in ("mean", "std", "n")}
            nxt = (
                split(lines[i + 1]) if i + 1 < len(lines) and lines[i + 1].startswith("|") else None
            )
            group = header.index("rank")
            best = tuple(float(cells[at[h]]) if h != "n" else int(cells[at[h]]) for h in at)
            if nxt is None or nxt[:group] != cells[:group]:
                continue  # alone in its row group: nothing to weigh it against
            other = tuple(float(nxt[at[h]]) if h != "n" else int(nxt[at[h]]) for h in at)
            keep = not math.isfinite(other[0]) or clearly_ahead(best, other)
        else:
            stats = {k: cell_stats(c) for k, c in enumerate(cells)}
            stats = {k: v for k, v in stats.items() if v is not None and math.isfinite(v[0])}
            if j not in stats or len(stats) < 2:
                continue
            ranked = sorted(stats, key=lambda k: stats[k][0], reverse=higher)
            runner = next(k for k in ranked if k != j)
            keep = clearly_ahead(stats[j], stats[runner])
        if not keep:
            cells[j] = unbold(cells[j])
            out[i] = join(cells)
            changed += 1
    return out, changed


def main(paths: list[str]) -> None:
    for p in map(Path, paths):
        text = p.read_text()
        lines, n = rebold(text.splitlines())
        if n:
            p.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""))
        print(f"{p}: {n} cells no longer bold (within the seeds' noise)")


if __name__ == "__main__":
    main(sys.argv[1:])
