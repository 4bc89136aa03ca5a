"""SQL as text: where a quoted string, a quoted identifier or a comment ends, so that the query
walls (store/query.py, store/pg_query.py) read user SQL as the server will. Standard library
only."""

from __future__ import annotations

import re

from seqbench.errors import StoreError

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def _ident_char(c: str) -> bool:
    """True for a character that continues an identifier (a '$' after one is not a quote)."""
    return c.isalnum() or c in "_$"


def skip_quoted(sql: str, i: int) -> int:
    """The index just past the SQL quote or comment that starts at sql[i]: '…' and "…" (a
    doubled quote inside is the quote), E'…' (backslash escapes too), $tag$…$tag$, -- to the
    end of the line, /* … */ (nested, as PostgreSQL nests them); `i` itself when none starts
    there. Raises StoreError for one left open. The one reading of SQL text that `query`'s
    scanner (query.split_statement) and its PostgreSQL parameters (pg_query.bind_parameters)
    share."""
    n, c = len(sql), sql[i]
    prev = sql[i - 1] if i else " "
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return n if j < 0 else j + 1
    if sql.startswith("/*", i):
        depth, j = 1, i + 2
        while depth and j < n:  # PostgreSQL nests block comments
            if sql.startswith("/*", j):
                depth, j = depth + 1, j + 2
            elif sql.startswith("*/", j):
                depth, j = depth - 1, j + 2
            else:
                j += 1
        if depth:
            raise StoreError("SQL error: unterminated /* comment")
        return j
    if c == "'" and prev in "eE" and (i < 2 or not _ident_char(sql[i - 2])):
        j = i + 1  # E'...': backslash escapes as well as doubled quotes
        while (j < n and sql[j] != "'") or sql.startswith("''", j):
            j += 2 if sql[j] == "\\" or sql.startswith("''", j) else 1
        if j >= n:
            raise StoreError("SQL error: unterminated ' quote")
        return j + 1
    if c in "'\"":
        j = i + 1
        while True:  # a doubled quote is an escaped quote
            j = sql.find(c, j)
            if j < 0:
                raise StoreError(f"SQL error: unterminated {c} quote")
            if sql.startswith(c * 2, j):
                j += 2
                continue
            return j + 1
    if c == "$" and not _ident_char(prev) and (m := _DOLLAR_TAG.match(sql, i)):
        j = sql.find(m.group(0), m.end())
        if j < 0:
            raise StoreError(f"SQL error: unterminated {m.group(0)} quote")
        return j + len(m.group(0))
    return i
