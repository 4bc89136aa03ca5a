"""The library's words for a parameter, as the command line spells them.

The library names what a caller gives it as Python spells it, in backticks: a parameter
(`` `max_k` ``, `` `seeds` 0:5:+1 ``) and a config field's value (`` `steps=200` ``), so that a
script's error reads in the script's terms. The command line names its flags: `flags` turns
`` `max_k` `` into ``--max-k`` where a seqbench command has that option, and `` `steps=200` ``
into ``--set steps=200``. A span that names no option is left as it was, backticks and all.
Every text the CLI prints that the library wrote (errors, the answer's sentence and warnings)
passes through it once, and the dashboard's pages too (`seqbench ui` hands it over)."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

# `name` or `name=value`: a Python identifier, and for a field's value what follows its `=`
_SPAN = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(=[^`\n]*)?`")


_APP: list = []  # the root Typer app: cli/main.py hands it over once it is built (`use`)


def use(app) -> None:
    """Name flags as `app`'s commands declare them."""
    _APP[:] = [app]
    options.cache_clear()


@cache
def options() -> dict[str, str]:
    """Every long option of every seqbench command, by its Python spelling (--max-k: max_k),
    then by its parameter's name where that differs (set_: --set, fmt: --format)."""
    import typer

    if not _APP:
        return {}
    spelled: dict[str, str] = {}
    named: dict[str, str] = {}

    def walk(cmd) -> None:
        for p in cmd.params:
            if getattr(p, "param_type_name", "") != "option":
                continue
            longs = [o for o in p.opts if o.startswith("--")]
            for o in longs:
                spelled.setdefault(o[2:].replace("-", "_"), o)
            if longs:
                named.setdefault(p.name, max(longs, key=len))
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(_APP[0]))
    return {**named, **spelled}


def flags(text: str) -> str:
    """`text` with each parameter the library named as the flag that gives it (above)."""
    if "`" not in text:
        return text
    table = options()

    def one(m: re.Match) -> str:
        name, value = m.group(1), m.group(2)
        if value is not None:
            return f"--set {name}{value}" if "set" in table else m.group(0)
        return table.get(name, m.group(0))

    return _SPAN.sub(one, text)


def flags_in(value: Any) -> Any:
    """`flags` over every string in a JSON-like value (dicts, lists, tuples, strings)."""
    if isinstance(value, str):
        return flags(value)
    if isinstance(value, dict):
        return {k: flags_in(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(flags_in(v) for v in value)
    return value
