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


@pytest.mark.parametrize("front", ["cli", "ui"])
def test_the_front_ends_call_only_the_api(front):
    """The CLI and the dashboard read and write through api.py alone (no store, no SQL); the
    CLI's `ui` command starts the dashboard, the other front end."""
    allowed = ("seqbench.api", "seqbench.errors", f"seqbench.{front}", "seqbench.__version__")
    allowed += ("seqbench.ui.server",) if front == "cli" else ()
    found = []
    for path in _modules(front):
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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the seqbench modules it imports, lazy (function-level) imports included and
    `if TYPE_CHECKING` ones left out; `from seqbench.models import MODELS` is an edge to
    seqbench.models, `from seqbench.store import sweeps` one to seqbench.store.sweeps."""
    known = {_module_name(p): p for p in _modules()}

    def target(mod: str) -> str | None:
        while mod and mod not in known:
            mod = mod.rpartition(".")[0]
        return mod or None

    graph: dict[str, set[str]] = {m: set() for m in known}
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        typing_only = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                typing_only |= {id(n) for b in node.body for n in ast.walk(b)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            found = []
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                found = [s if s in known else node.module for s in subs]
            for mod in found:
                t = target(mod) if mod.startswith("seqbench") else None
                if t and t != name:
                    graph[name].add(t)
    return graph


def test_the_import_graph_has_no_cycle():
    """config is the ground and nothing imports upward: no module reaches itself again through
    the modules it imports, lazy imports included (docs/architecture.md)."""
    graph = _import_graph()
    cycles, state = [], {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = "open"
        for t in sorted(graph[m]):
            if state.get(t) == "open":
                cycles.append(" -> ".join([*path[path.index(t) :], t]))
            elif t not in state:
                visit(t, [*path, t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def _layers() -> dict[str, tuple[int, str]]:
    """docs/architecture.md's table, read: each module or package it names -> (rank, layer),
    rank 0 the ground; a row with no layer is in the layer of the row above it."""
    doc = (PKG.parent / "docs" / "architecture.md").read_text()
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| layer |")) + 2
    rows = lines[start:]
    names, layers, layer = {}, [], None
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if not row.startswith("|") or len(cells) < 3 or not cells[1].startswith("`"):
            break  # the table ended
        layer = cells[0] or layer
        if layer not in layers:
            layers.append(layer)
        for name in re.findall(r"`([\w./]+)`", cells[1]):
            mod = "seqbench." + name.rstrip("/").removesuffix(".py").replace("/", ".")
            names[mod.removesuffix(".__init__")] = layer
    top = len(layers) - 1  # the table lists the surface first
    return {m: (top - layers.index(layer), layer) for m, layer in names.items()}


def test_no_module_imports_a_layer_above_its_own():
    """The layers of docs/architecture.md's table, checked on every import edge (lazy ones
    included): a module imports only modules of its own layer or below; every module is in
    the table."""
    layers = _layers()
    assert {"surface", "facade", "work", "resolution", "components", "ground"} == {
        name for _, name in layers.values()
    }

    def layer_of(mod: str) -> tuple[int, str]:
        probe = mod
        while probe not in layers:
            assert "." in probe, f"{mod} is in no row of docs/architecture.md's table"
            probe = probe.rpartition(".")[0]
        return layers[probe]

    upward = []
    for mod, targets in _import_graph().items():
        rank, name = layer_of(mod)
        for t in sorted(targets):
            t_rank, t_name = layer_of(t)
            if t_rank > rank:
                upward.append(f"{mod} ({name}) imports {t} ({t_name})")
    assert upward == []


def test_config_imports_nothing_of_seqbench_but_errors():
    graph = _import_graph()
    assert graph["seqbench.config"] <= {"seqbench.errors"}


def test_the_facade_exports_what_it_defines():
    """api.__all__ is every public function and class api.py defines or re-exports, and each
    name in it resolves."""
    import seqbench.api as api

    tree = ast.parse((PKG / "api.py").read_text())
    defined = {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")
    }
    assert defined <= set(api.__all__), sorted(defined - set(api.__all__))
    for name in api.__all__:
        assert getattr(api, name) is not None


def test_no_store_is_turned_back_into_a_url_outside_store():
    """The CLI and the api hand down a Store; only store/ reads its URL."""
    found = []
    for path in _modules():
        if path.is_relative_to(PKG / "store"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "url"
                and isinstance(node.value, ast.Name)
                and node.value.id == "store"
            ):
                found.append(f"{_rel(path)}:{node.lineno}")
    assert found == []
