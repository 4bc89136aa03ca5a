"""The command line: typer commands over seqbench.api.

`seqbench.api` is installed here as a lazy module (importlib.util.LazyLoader, the standard
library's): the commands' modules name it at import, and it loads on the first use of one of
its names, so `seqbench --help` and a command's `--help` do not pay for the library."""

import importlib.util
import sys


def _lazy(name: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    # `from seqbench import api` reads the package's attribute; through the import system it
    # would read module.__spec__, which loads the module
    package, _, attr = name.rpartition(".")
    setattr(sys.modules[package], attr, module)


_lazy("seqbench.api")
