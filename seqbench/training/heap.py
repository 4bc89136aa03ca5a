"""Keep freed memory in the process between training steps (glibc's malloc).

A step over a long sequence allocates and frees buffers of tens to hundreds of MB (an IndRNN's
states at T = 5000 are B·T·N floats, 82 MB at 32 × 5000 × 128). glibc serves each such request
from a fresh mmap and unmaps it on free, so every step page-faults all of its buffers in again:
at T = 5000 a third to a half of an IndRNN step was system time (benchmarks/heap.py). Raising
the mmap threshold and never trimming the heap keeps the freed pages for the next step, what
PyTorch's caching allocator does on a GPU and what the jemalloc or tcmalloc that PyTorch's CPU
performance guide preloads do. The cost: the process keeps its peak footprint until it exits.
SEQBENCH_KEEP_FREED=0 turns it off (the benchmark's baseline).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

# mallopt(3) parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# some glibc versions cap the threshold at HEAP_MAX_SIZE / 2 (32 MiB on 64-bit): the fallback
THRESHOLDS = (1 << 30, 32 << 20)


_state: str | None = None


def heap_state() -> str | None:
    """What keep_freed_memory did in this process (recorded in a run's environment), None
    before it ran."""
    return _state


def keep_freed_memory() -> str:
    """Set glibc's heap to keep freed memory, once per process. Returns what was done: "kept
    (threshold N MiB)", or why not ("off": SEQBENCH_KEEP_FREED=0; "not glibc": another libc
    or OS; "refused": mallopt took neither threshold), where nothing is changed."""
    global _state
    if _state is None:
        _state = _apply()
    return _state


def _apply() -> str:
    if os.environ.get("SEQBENCH_KEEP_FREED", "1") == "0":
        return "off"
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return "not glibc"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return "not glibc"
    for threshold in THRESHOLDS:
        if libc.mallopt(M_MMAP_THRESHOLD, threshold) == 1:
            # -1 reads as SIZE_MAX inside glibc: the top of the heap is never given back
            libc.mallopt(M_TRIM_THRESHOLD, -1)
            return f"kept (threshold {threshold >> 20} MiB)"
    return "refused"
