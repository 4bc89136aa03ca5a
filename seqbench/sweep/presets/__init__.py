"""The sweep presets, one file each (as models/families/ and tasks/specs/): each maps a scale
to its grids. tiny: minutes on a CPU; small: about an hour on 2 cores; paper: the papers'
sizes, for a GPU. A grid is {models, tasks, k, seeds, set: {field: [values]}}
(sweep/spec.py expands it)."""

from __future__ import annotations

from collections.abc import Callable

from seqbench.errors import UnknownNameError, UsageError
from seqbench.sweep.presets import (
    bai_tcn,
    canary,
    indrnn_adding,
    lru_stable,
    memory_functions,
    miller_hardt,
    zoology_mqar,
)

SCALES = ("tiny", "small", "paper")

PRESETS: dict[str, Callable[[str], list[dict]]] = {
    "miller-hardt": miller_hardt.grids,
    "indrnn-adding": indrnn_adding.grids,
    "bai-tcn": bai_tcn.grids,
    "canary": canary.grids,
    "zoology-mqar": zoology_mqar.grids,
    "lru-stable": lru_stable.grids,
    "memory-functions": memory_functions.grids,
}


def preset_grids(name: str, scale: str) -> list[dict]:
    if name not in PRESETS:
        raise UnknownNameError("preset", name, list(PRESETS))
    if scale not in SCALES:
        raise UsageError(f"`scale` must be one of {', '.join(SCALES)}, got {scale!r}")
    return PRESETS[name](scale)
