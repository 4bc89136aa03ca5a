"""What every kernel package shares: whether a backend can run on a device (Numba, Triton).
ops/indrnn and ops/scan both ask here; the ahead-of-time compilation they share is ops/aot.py."""

from __future__ import annotations

import importlib.util
import os

import torch


def numba_available(device: torch.device) -> tuple[bool, str]:
    """(usable, reason if not) for the Numba backend on tensors of `device`. Looks numba up
    without importing it (0.2 s), so validating a config stays cheap."""
    if importlib.util.find_spec("numba") is None:
        return False, "numba is not installed (pip install numba)"
    if device.type != "cpu":
        return False, f"the numba backend runs on CPU tensors (got {device.type})"
    return True, ""


def keep_fp_fusion() -> None:
    """Keep Triton fusing a·b + c into one FMA, as the kernels were tested and measured with
    (benchmarks/RESULTS.md): Triton 3.9 fuses by default and warns, on every first compile,
    that 3.10 will not. A user's own TRITON_DEFAULT_FP_FUSION (or
    TRITON_FORCE_DISABLE_FP_FUSION) still decides."""
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


def triton_available(device: torch.device) -> tuple[bool, str]:
    """(usable, reason if not) for the Triton backend on tensors of `device`."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False, "triton is not installed (pip install triton, Linux x86_64)"
    if device.type == "cuda":
        return True, ""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return True, ""
    return False, (
        f"the triton backend needs CUDA tensors (got {device.type}); set TRITON_INTERPRET=1 "
        "before starting Python to run it in the interpreter"
    )
