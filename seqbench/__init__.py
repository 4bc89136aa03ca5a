"""seqbench: does a sequence task need a recurrent model, or does a finite context k do as well?

The library surface lives in :mod:`seqbench.api`; ``seqbench.train`` is re-exported lazily so that
``import seqbench`` (and ``seqbench --help``) stays free of torch.
"""

from seqbench._version import __version__

__all__ = ["__version__", "train"]


def __getattr__(name: str):
    if name == "train":
        from seqbench.api import train

        return train
    raise AttributeError(f"module 'seqbench' has no attribute {name!r}")
