"""The layering rules of docs/architecture.md, checked on the source itself: every database
statement lives in store/, model-family facts live in models/, the CLI calls only api.py, and
no library package imports api.py."""

from __future__ import annotations

import ast
import importlib.util
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
    # the answer's settings (torch-free constants), which --help shows before the lazy api loads
    settings = {"seqbench.memory", "seqbench.memory.EPSILON"}
    found = []
    for path in _modules(front):
        for mod, line, typing_only in _imports(ast.parse(path.read_text())):
            if mod in settings:
                continue
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


def test_config_imports_nothing_of_seqbench_but_errors_and_options():
    """The ground: the schema imports the errors and the options' module, which imports
    nothing of seqbench."""
    graph = _import_graph()
    assert graph["seqbench.config"] <= {"seqbench.errors", "seqbench.options"}
    assert graph["seqbench.options"] == set()


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


def _forwards(fn: ast.FunctionDef) -> bool:
    """True when a function's body (past its docstring and imports) is one `return f(...)`
    that passes its own parameters on: a second copy of a signature that lives elsewhere."""
    body = [
        b
        for b in fn.body
        if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))
        and not isinstance(b, (ast.Import, ast.ImportFrom))
    ]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return False
    call = body[0].value
    if not isinstance(call, ast.Call):
        return False
    params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    passed = {a.id for a in call.args if isinstance(a, ast.Name)}
    passed |= {k.value.id for k in call.keywords if isinstance(k.value, ast.Name)}
    return bool(params) and params == passed


def test_the_api_has_no_forwarding_functions():
    """A function of api.py either does work of its own or is not there: a library function
    the api offers as it is is that function itself (api.LAZY, imported on first use), so its
    signature and defaults are written once, where it lives."""
    tree = ast.parse((PKG / "api.py").read_text())
    forwarders = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and _forwards(n)]
    assert forwarders == []


def test_the_api_names_the_functions_themselves():
    """Every lazily offered name is in __all__ and is the function (or constant) defined where
    LAZY says (not a wrapper), and importing the api imports nothing of seqbench's own (nor
    torch, pandas or SQLAlchemy): the one lazy mechanism is LAZY."""
    import subprocess
    import sys

    import seqbench.api as api

    for name, where in api.LAZY.items():
        module, attr = where.split(":")
        assert name in api.__all__, name
        assert getattr(api, name) is getattr(importlib.import_module(module), attr), name
        fn = getattr(api, name)
        if callable(fn) and hasattr(fn, "__module__"):  # a function or class, not a constant
            assert (fn.__module__, fn.__name__) == (module, attr), (name, fn.__module__)
    out = subprocess.run(
        [sys.executable, "-c", "import sys, seqbench.api; "
         "print(sorted(m for m in sys.modules if m.startswith(('seqbench.', 'torch', "
         "'pandas', 'sqlalchemy')) and m not in ('seqbench.api', 'seqbench._version')))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "[]"


def _cited(text: str) -> list[str]:
    """The code spans of a Markdown text that name a path or a Python name."""
    return [m for m in re.findall(r"`([^`\n]+)`", text) if " " not in m and not m.startswith("-")]


def test_the_architecture_doc_cites_what_exists():
    """Every path docs/architecture.md names exists (under seqbench/ or the repository), and
    every Python name it cites (`module.name`, `Class.attr`, `name`) is defined in seqbench:
    the doc drifted once (a store/reading.py that was gone, check_fields put in config.py)."""
    root = PKG.parent
    text = (root / "docs" / "architecture.md").read_text()
    source = "\n".join(p.read_text() for p in _modules())
    defined = set(re.findall(r"^\s*(?:def|class)\s+(\w+)", source, re.M))
    defined |= set(re.findall(r"^\s*(\w+)\s*(?::[^=\n]+)?=", source, re.M))  # assignments, fields
    defined |= set(re.findall(r"^\s+(\w+):\s", source, re.M))  # dataclass fields
    defined |= set(re.findall(r"Option\(\s*\"(\w+)\"", source))  # a family's or task's options
    files = {p.name for p in root.rglob("*.py") if ".venv" not in p.parts}
    dirs = {p.name + "/" for p in PKG.rglob("*") if p.is_dir() and "__pycache__" not in p.parts}
    missing = []
    for cited in _cited(text):
        token = re.sub(r"\(.*\)$", "", cited).rstrip(":,.")
        if "<" in token:  # a template: cli/<command>.py
            continue
        last = token.rsplit("/", 1)[-1]
        if "/" in token and "." in last and not re.search(r"\.(py|md|sh|toml|ini)$", token):
            path, _, name = token.rpartition(".")  # store/results.ReadStore
            token = path + ".py"
            if name not in defined:
                missing.append(cited)
        if "/" in token or re.search(r"\.(py|md|sh|toml|ini)$", token):
            path = token.split(":")[0]
            if "/" not in path:
                ok = path in files or (root / path).exists()
            elif path.count("/") == 1 and path.endswith("/"):
                ok = path in dirs or (root / path).exists()
            else:
                ok = (PKG / path).exists() or (root / path).exists()
            if not ok:
                missing.append(cited)
        elif re.fullmatch(r"[A-Za-z_][\w.]*", token) and (
            "_" in token or "." in token or token[:1].isupper()
        ):
            if token.startswith("seqbench") or (token.isupper() and len(token) < 4):
                continue
            top = token.split(".")[0]
            ours = ("api", "config", "configure", "parsing")
            library = top not in ours and importlib.util.find_spec(top) is not None
            if "." in token and token.islower() and library:
                continue  # a library module: http.server
            name = token.split(".")[-1]
            if name and name not in defined and not name.startswith("__"):
                missing.append(cited)
    assert missing == [], missing


def test_the_architecture_doc_puts_names_in_their_files():
    """Where the doc says `file.py` (`name`, ...), each name is defined in that file."""
    text = (PKG.parent / "docs" / "architecture.md").read_text()
    wrong = []
    for path, inside in re.findall(r"`([\w/]+\.py)` \(([^)]*)\)", text):
        where = [p for p in _modules() if _rel(p).endswith(path) and p.name == path.split("/")[-1]]
        if len(where) != 1:
            continue  # a name shared by several files (__init__.py): the path check holds it
        src = where[0].read_text()
        for name in re.findall(r"`([A-Za-z_][\w.]*)`", inside):
            if re.search(r"\.(py|md)$", name):
                continue
            last = name.split(".")[-1]
            if not re.search(rf"^\s*(def|class)\s+{last}\b|^\s*{last}\s*[:=]", src, re.M):
                wrong.append(f"{path}: {name}")
    assert wrong == [], wrong


def test_the_reading_order_covers_every_package():
    """The newcomer's reading order and its change table open every package of seqbench/."""
    text = (PKG.parent / "docs" / "architecture.md").read_text()
    order = text[text.index("## Reading order") : text.index("## Where new things go")]
    packages = sorted(p.parent.name for p in PKG.glob("*/__init__.py"))
    assert [p for p in packages if f"{p}/" not in order] == []
    assert "ops/scan" in order


def test_cli_commands_are_thin():
    """A command function parses, makes one call and prints: none is over 80 lines (its
    options are declared once, as Annotated aliases beside it)."""
    long = []
    for path in _modules("cli"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.end_lineno - node.lineno + 1 > 80:
                long.append(f"{_rel(path)}:{node.name} {node.end_lineno - node.lineno + 1}")
    assert long == []


def test_every_test_the_docs_cite_exists():
    """Each `tests/...py` and `tests/...py::test_name` that a doc or the README cites is a
    file with that test in it: docs/reliability.md's rows name the test behind each promise,
    and a renamed test file (tests named by the module they test, not the occasion) must not
    leave a row pointing at nothing."""
    root = PKG.parent
    missing = []
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        path = None  # `::name` alone is a test of the file cited last before it
        for m in re.finditer(r"(tests/[\w/]+\.py)(?:::(\w+))?|`::(\w+)", doc.read_text()):
            if m.group(1):
                path, name = m.group(1), m.group(2)
                if not (root / path).exists():
                    missing.append(f"{doc.name}: {path}")
                    continue
            else:
                name = m.group(3)
            if name and path and not re.search(rf"^def {name}\b", (root / path).read_text(), re.M):
                missing.append(f"{doc.name}: {path}::{name}")
    assert missing == [], missing


def test_only_the_dialects_name_a_backend():
    """What differs between SQLite and PostgreSQL lives behind store/dialect.py's Dialect, one
    module per backend: no other module asks which backend it is on (before the seam, the
    reads' config casts and user SQL's dispatch each did). engine.py's URL handling (a SQLite
    URL's file, an in-memory one refused) and the PostgreSQL-only reader role are the rest."""
    allowed = {"dialect.py", "sqlite.py", "postgresql.py", "engine.py", "roles.py"}
    found = []
    for path in _modules():
        if path.parent == PKG / "store" and path.name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in ("sqlite", "postgresql"):
                found.append(f"{_rel(path)}:{node.lineno} names {node.value!r}")
    assert found == []


@pytest.mark.parametrize("url", ["sqlite:////tmp/x.db", "postgresql+psycopg://u@127.0.0.1/db"])
def test_every_backend_is_a_whole_dialect(url):
    """Each backend's module implements every method of store/dialect.Dialect with the
    protocol's parameters (names and kinds), so engine.py, query.py, results.py and
    records.py can ask any backend the same question."""
    import inspect

    from seqbench.store.dialect import Dialect, dialect_of

    dialect = dialect_of(url)
    assert dialect.name == url.partition(":")[0].partition("+")[0]
    asked = [n for n, f in vars(Dialect).items() if inspect.isfunction(f) and n[0] != "_"]
    assert {"engine", "inspect", "config_field", "tag_equals", "run_sql", "backup"} <= set(asked)
    assert "integrity" in asked
    for name in asked:
        want = inspect.signature(getattr(Dialect, name)).parameters.values()
        have = inspect.signature(getattr(type(dialect), name)).parameters.values()
        assert [(p.name, p.kind) for p in have] == [(p.name, p.kind) for p in want], name


def test_a_new_backend_is_one_module(monkeypatch):
    """dialect_of finds a backend by its name, in the store's module of that name: a third
    backend touches no other file. A module of the store that is not a backend (no DIALECT of
    its name) is no backend."""
    import sys
    import types

    from seqbench.errors import StoreError
    from seqbench.store.dialect import dialect_of

    module = types.ModuleType("seqbench.store.duckdb")
    module.DIALECT = types.SimpleNamespace(name="duckdb")
    monkeypatch.setitem(sys.modules, "seqbench.store.duckdb", module)
    assert dialect_of("duckdb:///tmp/x.duckdb") is module.DIALECT
    for url in ("records://x", "mysql://u@h/db", "Store://x", "../x://y"):
        with pytest.raises(StoreError, match="unsupported database URL"):
            dialect_of(url)


def test_the_orm_reads_only_for_its_own_writes():
    """One read path: every read outside a write is SQL through the walls on the store's read
    connection (results.py, records.py). A session opened without a transaction of its own
    to write (`Session()`, not `Session.begin()`) reads only in the writes that need a row
    first: the stale runs a reap marks, the environment a point's result adds to."""
    readers = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            for call in ast.walk(node):
                f = getattr(call, "func", None)
                if isinstance(call, ast.Call) and getattr(f, "attr", None) == "Session":
                    readers.append(f"{_rel(path)}:{node.name}")
    assert sorted(readers) == [
        "seqbench/store/store.py:stale_runs",
        "seqbench/store/sweeps.py:write_point_result",
    ]


@pytest.mark.parametrize(
    ("url", "name"),
    [("/tmp/runs.db", "sqlite"), ("runs.db", "sqlite"), ("sqlite:////tmp/runs.db", "sqlite"),
     ("postgresql+psycopg://u@127.0.0.1/db", "postgresql"), ("postgresql://u@h/db", "postgresql")],
)  # fmt: skip
def test_a_path_or_a_url_names_its_backend(url, name):
    """A lean reader keeps the store's plain path, which is a SQLite file (resolve_url reads
    it so): the report's --where on a config field asked dialect_of a path once and was
    refused as an unsupported URL."""
    from seqbench.store.dialect import dialect_of

    assert dialect_of(url).name == name


def _library_texts() -> list[tuple[Path, int, str]]:
    """(module, line, text) for every string the library outside cli/ writes, docstrings
    aside, and the flags it hands another program aside too (git's in environment.py,
    ptxas's in ops/aot.py: a string of one word that starts with "--")."""
    runs_programs = {PKG / "environment.py", PKG / "ops" / "aot.py"}
    out = []
    for path in _modules():
        if (PKG / "cli") in path.parents:
            continue
        tree = ast.parse(path.read_text())
        docs = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
                docs.add(id(body[0].value))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            argv = path in runs_programs and re.fullmatch(r"--[a-z-]+=?\S*", node.value)
            if id(node) not in docs and not argv:
                out.append((path, node.lineno, node.value))
    return out


def test_flags_are_named_at_the_edge():
    """Parse at the edge (#63 §4): the library names what its caller gave it as Python spells
    it (`max_k`, `steps=200`), and cli/_flags.py turns that into the flag (--max-k, --set
    steps=200) for everything the CLI prints. Before, 168 strings outside cli/ spelled a flag,
    so a script calling the library was told about options it never had."""
    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
    found = [
        f"{_rel(path)}:{line}: {m}"
        for path, line, text in _library_texts()
        for m in flag.findall(text)
    ]
    assert found == []
