"""scripts/embed_tables.py keeps docs/reproductions.md's tables equal to the report output."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "embed_tables.py"


def _embed():
    spec = importlib.util.spec_from_file_location("embed_tables", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.embed


def test_blocks_get_the_files_contents_and_missing_ones_are_left(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.md").write_text("| a |\n|---|\n| 1 |\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "intro\n<!-- BEGIN out/a.md -->\nold table\n<!-- END -->\nmiddle\n"
        "<!-- BEGIN out/missing.md -->\nkept\n<!-- END -->\n"
    )
    assert _embed()(doc) == 1
    assert doc.read_text() == (
        "intro\n<!-- BEGIN out/a.md -->\n| a |\n|---|\n| 1 |\n<!-- END -->\nmiddle\n"
        "<!-- BEGIN out/missing.md -->\nkept\n<!-- END -->\n"
    )
    assert _embed()(doc) == 1 and "| 1 |" in doc.read_text()  # idempotent
