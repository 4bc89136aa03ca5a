"""Every SQL example in docs/schema.md runs against a freshly migrated store (read-only path)."""

import re
from pathlib import Path

import pytest

from seqbench.store.query import run_query

DOC = Path(__file__).resolve().parents[2] / "docs" / "schema.md"


def _statements() -> list[str]:
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(), re.S)
    out = []
    for block in blocks:
        text = "\n".join(line for line in block.splitlines() if not line.startswith("--"))
        out += [s.strip() for s in text.split(";") if s.strip()]
    return out


def test_the_doc_has_examples():
    assert len(_statements()) >= 8


@pytest.mark.parametrize("sql", _statements())
def test_schema_doc_example_runs(store, db, sql):
    params = {name: "1" for name in re.findall(r":(\w+)", sql)}
    cols, _ = run_query(str(db), sql, params)
    assert cols
