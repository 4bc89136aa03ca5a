"""The dashboard's HTML, as small pieces the pages are made of: a value as a cell's text
(`cell`), a table, a link with its query, a filter's input and option, and the page around a
page's body (`render_page`: its navigation, its style, a refresh). Standard library only, with
the api's spelling of inf and nan."""

from __future__ import annotations

import html
import json
import math
from typing import Any
from urllib.parse import urlencode

from seqbench import api

NAV = [
    ("/", "Runs"),
    ("/compare", "Compare"),
    ("/curves", "Curves"),
    ("/sweeps", "Sweeps"),
    ("/memory", "Memory"),
    ("/stress", "Stress"),
    ("/checks", "Checks"),
]
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#243447;color:#fff;padding:8px 16px}
header a{color:#dfe7ef;margin-right:14px;text-decoration:none}
header a.on{color:#fff;font-weight:600;border-bottom:2px solid #8cc4ff}
main{padding:12px 16px}
table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #d5dbe1;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f1f4f7} th a{color:#222}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.best td.b,td.b{font-weight:700}
form.filters input,form.filters select{margin-right:8px}
.note{color:#5a6570}
.status-completed{color:#1d7a35}.status-failed,.status-crashed{color:#b3261e}
.status-diverged{color:#9a5b00}.status-running{color:#1859a8}
svg{max-width:100%;height:auto}
"""


def cell(v: Any) -> str:
    """Text for a cell: None as blank, floats to 6 significant digits, inf/nan spelt out."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else api.float_text(v)
    if isinstance(v, dict):
        return html.escape(json.dumps(v, sort_keys=True))
    return html.escape(str(v))


def table(
    cols: list[str], rows: list[list], *, ident: str = "", bold=None, raw=(), heads=None
) -> str:
    """An HTML table; `raw` names the columns whose cells are HTML already; `bold[i]` the
    index of row i's cell to bold (the report's best); `heads` the header cells as HTML
    (default: the column names)."""
    heads = heads or [html.escape(c) for c in cols]
    head = "".join(f"<th>{h}</th>" for h in heads)
    body = []
    for i, r in enumerate(rows):
        cells = []
        for j, v in enumerate(r):
            cls = " b" if bold and bold[i] == j else ""
            num = " num" if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
            text = v if cols[j] in raw else cell(v)
            cells.append(f'<td class="{(cls + num).strip()}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    idattr = f' id="{ident}"' if ident else ""
    return f"<table{idattr}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def link(path: str, text: Any, **query: Any) -> str:
    q = {k: v for k, v in query.items() if v not in (None, "")}
    href = path + ("?" + urlencode(q, doseq=True) if q else "")
    return f'<a href="{html.escape(href)}">{cell(text)}</a>'


def field(name: str, value: str, placeholder: str = "") -> str:
    return (
        f'<input name="{name}" value="{html.escape(value)}" placeholder="{placeholder or name}"'
        f' size="{max(8, len(placeholder or name))}">'
    )


def option(value: str, chosen: str) -> str:
    sel = " selected" if value == chosen else ""
    return f'<option value="{value}"{sel}>{value}</option>'


def render_page(title: str, body: str, path: str, refresh: int | None, where: str) -> str:
    nav = "".join(
        f'<a href="{href}" class="{"on" if href == path else ""}">{name}</a>' for href, name in NAV
    )
    meta = f'<meta http-equiv="refresh" content="{refresh}">' if refresh else ""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'>{meta}"
        f"<title>{html.escape(title)} · seqbench</title><style>{CSS}</style></head>"
        f"<body><header><b>seqbench</b> · {html.escape(where)} · {nav}</header>"
        f"<main><h1>{html.escape(title)}</h1>{body}</main></body></html>"
    )
