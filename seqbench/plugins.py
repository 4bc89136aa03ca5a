"""Models and tasks from other packages, found without importing them until they are asked for.

Two ways in, for the model and the task registries alike:

- an entry point in the plugin's own package metadata, in the group ``seqbench.models`` or
  ``seqbench.tasks``, whose name is what users type (``--model diag``) and whose object is a
  ``ModelSpec`` / ``TaskSpec`` (docs/plugins.md);
- a reference ``package.module:name`` given where a model or task name goes, for code that is
  not installed as a package (the current directory is on the import path, as uvicorn and
  gunicorn do for an app).

Entry points are listed from the installed distributions' metadata (no import); a plugin is
imported when its name is looked up. Each loaded spec carries its provenance (`plugin`: the
distribution and its version, or for a module outside any distribution, the sha256 of its
source), which the run's config records and hashes. A plugin that fails to import is one line
naming it; the built-ins never depend on it.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

from seqbench.errors import SeqbenchError, UsageError

GROUPS = {"model": "seqbench.models", "task": "seqbench.tasks"}
MAX_NAME = 50  # runs.model and runs.task are VARCHAR(50) on PostgreSQL


class PluginError(SeqbenchError):
    """A plugin that cannot be imported, or that does not give what its registry needs."""


def is_reference(name: str) -> bool:
    """'package.module:attr' (a plugin outside any entry point)?"""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr)


def entry_points(what: str) -> dict[str, metadata.EntryPoint]:
    """The installed entry points of `what` ("model" or "task") by name; none imported."""
    return {ep.name: ep for ep in metadata.entry_points(group=GROUPS[what])}


def _distribution_of(module: str) -> tuple[str, str] | None:
    top = module.split(".")[0]
    for dist in metadata.packages_distributions().get(top, []):
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def provenance(module_name: str, ep: metadata.EntryPoint | None = None) -> str:
    """What identifies the plugin's code: 'dist version' of the distribution it comes from;
    for a module outside any, 'module sha256:<first 16 hex of its source>' (an edit re-runs
    a sweep's points as an upgrade would)."""
    if ep is not None and ep.dist is not None:
        return f"{ep.dist.name} {ep.dist.version}"
    found = _distribution_of(module_name)
    if found is not None:
        return f"{found[0]} {found[1]}"
    mod = sys.modules.get(module_name)
    source = getattr(mod, "__file__", None)
    if source and Path(source).is_file():
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16]
        return f"{module_name} sha256:{digest}"
    version = getattr(mod, "__version__", None)
    return f"{module_name} {version}" if version else module_name


def _import(module: str, shown: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and module.startswith(e.name) and "" not in sys.path and "." not in sys.path:
            sys.path.insert(0, "")  # code in the current directory, not installed
            try:
                return importlib.import_module(module)
            except Exception as e2:
                raise PluginError(f"plugin {shown} failed to import: {_why(e2)}") from None
        raise PluginError(f"plugin {shown} failed to import: {_why(e)}") from None
    except Exception as e:
        raise PluginError(f"plugin {shown} failed to import: {_why(e)}") from None


def _why(e: BaseException) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def load(what: str, name: str, spec_type: type, ep: metadata.EntryPoint | None = None) -> Any:
    """The spec that `name` (an entry point's name, or a 'module:attr' reference) gives, named
    `name` and stamped with its provenance. The object may be the spec or a callable taking no
    arguments that returns one."""
    if len(name) > MAX_NAME:
        raise UsageError(f"a {what} name is at most {MAX_NAME} characters, got {name!r}")
    if ep is not None:
        shown = f"{GROUPS[what]}:{ep.name} ({ep.value})"
        module, _, attr = ep.value.partition(":")
    else:
        shown = repr(name)
        module, _, attr = name.partition(":")
    mod = _import(module.strip(), shown)
    obj: Any = mod
    for part in attr.strip().split("."):
        if not hasattr(obj, part):
            raise PluginError(f"plugin {shown}: module {module!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, spec_type) and callable(obj) and not isinstance(obj, type):
        try:
            obj = obj()
        except Exception as e:
            raise PluginError(f"plugin {shown} failed to build its spec: {_why(e)}") from None
    if not isinstance(obj, spec_type):
        raise PluginError(
            f"plugin {shown} gives a {type(obj).__name__}, not a {spec_type.__name__} "
            "(docs/plugins.md)"
        )
    if getattr(obj, "recurrent", True) is False and getattr(obj, "context", None) is None:
        # a feedforward model's stored k is its context: it must say what that is
        raise PluginError(
            f"plugin {shown}: a feedforward model must state its context "
            "(ModelSpec.context: (config, steps) -> the inputs an output depends on)"
        )
    return replace(obj, name=name, plugin=provenance(module.strip(), ep))
