"""The IndRNN recurrence h_t = relu(x_t + u ⊙ h_{t-1}) behind one public function.

Backends: "torch" (autograd through a Python loop: the reference, naive.py), "cpu" (hand-written
forward/backward loops of torch ops, cpu.py; any device), "numba" (the whole recurrence compiled
with Numba, numba_kernel.py; CPU tensors), "triton" (fused kernels, triton_kernel.py; CUDA
tensors, or CPU tensors under TRITON_INTERPRET=1). "auto" picks triton on CUDA, numba on the CPU
when numba is installed, and cpu otherwise.
"""

from __future__ import annotations

import torch

from seqbench.config import BACKENDS
from seqbench.errors import UsageError
from seqbench.ops.common import numba_available, triton_available
from seqbench.ops.indrnn.cpu import indrnn_cpu
from seqbench.ops.indrnn.naive import indrnn_naive


def resolve_backend(backend: str, device: torch.device) -> str:
    if backend not in BACKENDS:
        raise UsageError(f"unknown IndRNN backend {backend!r}; valid: {', '.join(BACKENDS)}")
    if backend == "auto":
        if device.type == "cuda" and triton_available(device)[0]:
            return "triton"
        return "numba" if numba_available(device)[0] else "cpu"
    check = {"triton": triton_available, "numba": numba_available}.get(backend)
    if check is not None:
        ok, why = check(device)
        if not ok:
            raise UsageError(f"IndRNN backend {backend!r} is unavailable: {why}")
    return backend


def indrnn_numba(x, u, h0=None):
    """The compiled CPU recurrence (numba_kernel.py), imported on first use."""
    from seqbench.ops.indrnn.numba_kernel import indrnn_numba as compiled

    return compiled(x, u, h0)


def indrnn(x, u, h0=None, backend: str = "auto", history: torch.dtype = torch.float32):
    """IndRNN recurrence (Li et al. 2018, arXiv 1803.04831).

    Args:
        x: (B, T, N) pre-activations W x_t + b (fp32, bf16 or fp16).
        u: (N,) recurrent weights (fp32).
        h0: (B, N) initial state or None (zeros).
        backend: "auto", "torch", "cpu", "numba" or "triton".
        history: the dtype of the returned states, fp32 or bf16. The recurrence and every
            accumulation run in fp32 either way; the triton backend stores bf16 states
            directly (halving what its backward reads), the others round their fp32 result.
    Returns:
        h: (B, T, N) states in `history` dtype.
    """
    which = resolve_backend(backend, x.device)
    if which == "triton":
        from seqbench.ops.indrnn.triton_kernel import indrnn_triton

        return indrnn_triton(x, u, h0, history=history)
    if history not in (torch.float32, torch.bfloat16):
        raise ValueError(f"history must be float32 or bfloat16, got {history}")
    if which == "torch":
        h = indrnn_naive(x, u, h0)
    elif which == "cpu":
        h = indrnn_cpu(x, u, h0)
    else:
        h = indrnn_numba(x, u, h0)
    return h if history == torch.float32 else h.to(history)


__all__ = [
    "BACKENDS",
    "indrnn",
    "indrnn_cpu",
    "indrnn_naive",
    "indrnn_numba",
    "numba_available",
    "resolve_backend",
    "triton_available",
]
