"""One element-wise linear scan, h_t = a_t ⊙ h_{t−1} + b_t per channel, behind one function.

The recurrence the LRU (a constant complex a), S4D's recurrent mode (a constant complex a) and
the selective SSM (a real a per step, exp(Δ_t A)) share; IndRNN's is the same shape with a
ReLU (ops/indrnn), which rules out the chunked (parallel) form used here.

Backends, laid out as flash-linear-attention lays out its ops: "torch" (naive.py: a Python
loop autograd differentiates, the reference), "cpu" (cpu.py: a two-level chunked scan with a
hand-written backward; any device), "triton" (triton_kernel.py: fused forward and backward;
CUDA tensors, or CPU tensors under TRITON_INTERPRET=1). "auto" picks triton on CUDA and cpu
otherwise.
"""

from __future__ import annotations

import torch

from seqbench.errors import UsageError
from seqbench.ops.common import triton_available
from seqbench.ops.scan.cpu import scan_cpu
from seqbench.ops.scan.naive import scan_naive

SCAN_BACKENDS = ("auto", "torch", "cpu", "triton")


def resolve_backend(backend: str, device: torch.device) -> str:
    """The backend a scan on `device` runs: the one asked for, or auto's choice. A config's
    `backend` is the IndRNN's field too: its "numba" means the CPU path here."""
    if backend == "numba":
        backend = "cpu"
    if backend not in SCAN_BACKENDS:
        raise UsageError(f"unknown scan backend {backend!r}; valid: {', '.join(SCAN_BACKENDS)}")
    if backend == "auto":
        return "triton" if device.type == "cuda" and triton_available(device)[0] else "cpu"
    if backend == "triton":
        ok, why = triton_available(device)
        if not ok:
            raise UsageError(f"scan backend 'triton' is unavailable: {why}")
    return backend


def scan(
    a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None, backend: str = "auto"
) -> torch.Tensor:
    """h_t = a_t ⊙ h_{t−1} + b_t.

    Args:
        a: (N,) one decay per channel, or (B, T, N) one per step; real or complex.
        b: (B, T, N) inputs, of a's kind.
        h0: (B, N) initial state, or None (zeros).
        backend: "auto", "torch", "cpu" or "triton".
    Returns:
        h: (B, T, N) states (float32 or complex64 from the cpu and triton backends).
    """
    if a.is_complex() != b.is_complex():
        raise ValueError("scan: a and b must both be real or both complex")
    if a.dim() not in (1, 3) or b.dim() != 3 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"scan: a {tuple(a.shape)} and b {tuple(b.shape)} do not fit")
    which = resolve_backend(backend, b.device)
    if which == "torch":
        return scan_naive(a, b, h0)
    if which == "cpu":
        # at least fp32 / complex64; fp64 kept (stress, gradcheck)
        kind = torch.promote_types(b.dtype, torch.complex64 if b.is_complex() else torch.float32)
        return scan_cpu(a.to(kind), b.to(kind), None if h0 is None else h0.to(kind))
    from seqbench.ops.scan.triton_kernel import scan_triton

    return scan_triton(a, b, h0)


__all__ = ["SCAN_BACKENDS", "resolve_backend", "scan", "scan_cpu", "scan_naive"]
