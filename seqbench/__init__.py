"""seqbench: does a sequence task need a recurrent model, or does a finite context k do as well?

The library surface lives in :mod:`seqbench.api` (importing it imports nothing of seqbench's
own: torch and the store load when a function needs them); ``seqbench.train`` is its `train`.
"""

from seqbench._version import __version__
from seqbench.api import train

__all__ = ["__version__", "train"]
