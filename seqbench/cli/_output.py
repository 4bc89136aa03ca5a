"""One renderer for every listing command: --format table|csv|json|markdown."""

from __future__ import annotations

import csv
import enum
import json
import math
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from seqbench import api
from seqbench.errors import UsageError


class Format(enum.StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


FormatOption = Annotated[
    Format,
    typer.Option("--format", "-f", help="Output format.", case_sensitive=False),
]


def _scalar(v: Any) -> Any:
    """A numpy scalar (np.float64, np.int64, np.bool_) as the Python value it holds, so that
    no output prints np.float64(...)."""
    if type(v).__module__ == "numpy" and hasattr(v, "item"):
        return v.item()
    return v


def _plain(v: Any) -> Any:
    """JSON-safe value: nan/inf become the strings 'nan', 'inf', '-inf' (JSON has no NaN)."""
    v = _scalar(v)
    if isinstance(v, float) and not math.isfinite(v):
        return api.float_text(v)
    if isinstance(v, datetime):
        return v.isoformat(sep=" ", timespec="seconds")
    return v


def _text(v: Any, float_fmt: str = "{:.6g}") -> str:
    v = _scalar(v)
    if v is None:
        return ""
    if isinstance(v, float):
        return float_fmt.format(v) if math.isfinite(v) else str(_plain(v))
    if isinstance(v, datetime):
        return v.isoformat(sep=" ", timespec="seconds")
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def _json_value(v: Any) -> Any:
    v = _plain(v)
    if isinstance(v, str) and v[:1] in "{[":
        try:
            return json.loads(v)
        except ValueError:
            pass
    return v


# a table shows this many characters of a value (rich folds a long one over thousands of
# lines, minutes for a few MB); csv and json print every value whole
TABLE_CELL_CHARS = 2000


def _cell(text: str) -> str:
    if len(text) <= TABLE_CELL_CHARS:
        return text
    return f"{text[:TABLE_CELL_CHARS]}… ({len(text):,} characters; --format csv or json prints all)"


def _console(out):
    """Rich console on `out`; when piped, as wide as $COLUMNS (or 160) instead of rich's 80."""
    import os

    from rich.console import Console

    width = None if out.isatty() else int(os.environ.get("COLUMNS", 160))
    return Console(file=out, width=width)


def render(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: Format = Format.table,
    *,
    title: str | None = None,
    bold: Sequence[int | None] | None = None,
    json_columns: bool = False,
) -> None:
    """Write rows to stdout in the chosen format. `bold[i]`: a column to highlight in row i
    (tables only; e.g. the best model). `json_columns`: in JSON output, text that holds a JSON
    object or array (SQLite's JSON columns come back as text) is embedded, not quoted."""
    out = sys.stdout
    if fmt == Format.json:
        value = _json_value if json_columns else _plain
        data = [{c: value(v) for c, v in zip(columns, row, strict=True)} for row in rows]
        out.write(json.dumps(data, indent=2, default=str) + "\n")
    elif fmt == Format.csv:
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for row in rows:
            w.writerow([_text(v, "{!r}") for v in row])
    elif fmt == Format.markdown:
        out.write("| " + " | ".join(columns) + " |\n")
        out.write("|" + "|".join("---" for _ in columns) + "|\n")
        for i, row in enumerate(rows):
            cells = [_text(v).replace("|", "\\|") for v in row]
            b = bold[i] if bold and i < len(bold) else None
            if b is not None and cells[b]:
                cells[b] = f"**{cells[b]}**"
            out.write("| " + " | ".join(cells) + " |\n")
    else:
        from rich.markup import escape
        from rich.table import Table

        if not rows:
            _console(out).print(f"[dim]({title + ': ' if title else ''}no rows)[/dim]")
            return
        table = Table(title=escape(title) if title else None, show_lines=False)
        for c in columns:
            table.add_column(escape(c), overflow="fold")
        for i, row in enumerate(rows):
            cells = [escape(_cell(_text(v))) for v in row]
            if bold and bold[i] is not None:
                cells[bold[i]] = f"[bold green]{cells[bold[i]]}[/bold green]"
            table.add_row(*cells)
        _console(out).print(table)


def render_mapping(pairs: Sequence[tuple[str, Any]], fmt: Format, title: str | None = None):
    """A key/value listing (used by `show`)."""
    if fmt == Format.json:
        sys.stdout.write(json.dumps({k: _plain(v) for k, v in pairs}, indent=2, default=str))
        sys.stdout.write("\n")
    else:
        render(["key", "value"], [(k, v) for k, v in pairs], fmt, title=title)


def output_path(path: str, what: str) -> str:
    """An output file's path, its directory created first (before any work is done); one
    line if that cannot be done."""

    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{what} {path!r} is a directory; give a file name")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the directory for {what} {path!r}: {e.strerror}") from e
    return path
