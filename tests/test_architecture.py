"""The layering rules of docs/architecture.md, checked on the source itself: every database
statement lives in store/, model-family facts live in models/, the CLI calls only api.py, and
no library package imports api.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "seqbench"
SQL = re.compile(r"^\s*(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE|DROP|ALTER) ")


def _modules(under: str = "") -> list[Path]:
    return sorted((PKG / under).rglob("*.py"))


def _rel(path: Path) -> str:
    return str(path.relative_to(PKG.parent))


def _imports(tree: ast.AST) -> list[tuple[str, int, bool]]:
    """(module imported, line, under `if TYPE_CHECKING`) for every import in a module."""
    typing_only = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for b in node.body for n in ast.walk(b)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in typing_only) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "seqbench":  # from seqbench import api
                out += [(f"seqbench.{a.name}", node.lineno, False) for a in node.names]
            else:
                out.append((node.module, node.lineno, id(node) in typing_only))
    return out


def test_sql_and_the_orm_stay_in_store():
    found = []
    for path in _modules():
        if path.is_relative_to(PKG / "store"):
            continue
        tree = ast.parse(path.read_text())
        for mod, line, _ in _imports(tree):
            if mod.split(".")[0] == "sqlalchemy" or mod == "seqbench.store.schema":
                found.append(f"{_rel(path)}:{line} imports {mod}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and SQL.match(str(node.value)):
                found.append(f"{_rel(path)}:{node.lineno} SQL text {node.value[:30]!r}")
            if isinstance(node, ast.Attribute) and node.attr == "Session":
                found.append(f"{_rel(path)}:{node.lineno} opens a Session")
    assert found == []


def _model_classes() -> set[str]:
    names = set()
    for path in _modules("models"):
        names |= {
            n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)
        }
    return names


def test_no_isinstance_on_model_classes_outside_models():
    classes = _model_classes()
    assert {"IndRNN", "TorchRecurrent", "Window", "TCN"} <= classes
    found = []
    for path in _modules():
        if path.is_relative_to(PKG / "models"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if named & classes:
                    found.append(f"{_rel(path)}:{node.lineno}")
    assert found == []


def test_the_cli_calls_only_the_api():
    allowed = ("seqbench.api", "seqbench.errors", "seqbench.cli", "seqbench.__version__")
    found = []
    for path in _modules("cli"):
        for mod, line, typing_only in _imports(ast.parse(path.read_text())):
            if mod.startswith("seqbench") and not typing_only and not mod.startswith(allowed):
                found.append(f"{_rel(path)}:{line} imports {mod}")
    assert found == []


@pytest.mark.parametrize(
    "package", ["store", "models", "tasks", "ops", "training", "sweep", "stress", "report"]
)
def test_library_packages_never_import_the_api(package):
    for path in _modules(package):
        for mod, line, _ in _imports(ast.parse(path.read_text())):
            assert mod != "seqbench.api", f"{_rel(path)}:{line}"


def test_the_store_is_the_ground_floor():
    """store/ imports nothing of seqbench but errors and itself (plus the torch-free config
    nowhere): a schema change is made in one package."""
    for path in _modules("store"):
        for mod, line, _ in _imports(ast.parse(path.read_text())):
            if mod.startswith("seqbench."):
                assert mod.startswith(("seqbench.store", "seqbench.errors")), f"{_rel(path)}:{line}"
