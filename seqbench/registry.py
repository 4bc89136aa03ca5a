"""Name -> component registries with helpful errors for unknown names, open to plugins
(seqbench/plugins.py): a name that is not built in is looked up among the installed entry
points of the registry's group, or imported as a 'module:attr' reference, and only then."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from seqbench.config import declare
from seqbench.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """`plugins`: the kind of component ("model" or "task") whose entry-point group this
    registry reads, with `spec_type` the class a plugin must give; None: closed."""

    def __init__(self, what: str, plugins: str | None = None, spec_type: type | None = None):
        self.what = what
        self.plugins = plugins
        self.spec_type = spec_type
        self._items: dict[str, T] = {}
        self._builtin: set[str] = set()

    def register(self, name: str, item: T) -> T:
        """Add `item` under `name`, and the config options it declares (its `options`)."""
        if name in self._items:
            raise ValueError(f"{self.what} {name!r} registered twice")
        declare(getattr(item, "options", ()), name)
        self._items[name] = item
        return item

    def seal(self) -> None:
        """Mark everything registered so far as built in (what `builtins` lists)."""
        self._builtin = set(self._items)

    def _plugin(self, name: str) -> T | None:
        if self.plugins is None:
            return None
        from seqbench import plugins

        if plugins.is_reference(name):
            item = plugins.load(self.plugins, name, self.spec_type)
        else:
            ep = plugins.entry_points(self.plugins).get(name)
            if ep is None:
                return None
            item = plugins.load(self.plugins, name, self.spec_type, ep)
        return self.register(name, item)

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            pass
        item = self._plugin(name)
        if item is None:
            raise UnknownNameError(self.what, name, self.names(plugins=True))
        return item

    def names(self, plugins: bool = False) -> list[str]:
        """The registered names; with `plugins`, the installed entry points' names too (read
        from package metadata: nothing is imported)."""
        out = list(self._items)
        if plugins and self.plugins is not None:
            from seqbench.plugins import entry_points

            out += [n for n in entry_points(self.plugins) if n not in self._items]
        return out

    def is_builtin(self, name: str) -> bool:
        return name in self._builtin

    def __contains__(self, name: str) -> bool:
        """Registered already (a plugin not yet loaded is not: nothing is imported here)."""
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)
