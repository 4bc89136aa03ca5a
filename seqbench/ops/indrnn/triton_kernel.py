"""Fused IndRNN recurrence in Triton: parallel over (batch × hidden) lanes, sequential over T.

Layers, in order: the @triton.jit kernels, their launchers, the autograd.Function. The public
entry point is :func:`seqbench.ops.indrnn.indrnn` (backend "triton").

Memory-bound: forward reads x and writes h (2·B·T·N elements); backward reads h and g_out
(and h_{t-1}, a cache hit) and writes dx. du is reduced over the batch deterministically:
each program writes its lanes' partial sums to a (B, N) buffer that torch sums afterwards
(no atomics). Offsets are int64, every load/store is masked, accumulation is fp32.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _indrnn_fwd_kernel(
    x_ptr,
    u_ptr,
    h0_ptr,
    h_ptr,
    B,
    T,
    N,
    HAS_H0: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    lane = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)  # flat (b, n) lane
    mask = lane < B * N
    b = lane // N
    n = lane % N
    u = tl.load(u_ptr + n, mask=mask, other=0.0).to(tl.float32)
    if HAS_H0:
        h = tl.load(h0_ptr + lane, mask=mask, other=0.0).to(tl.float32)
    else:
        h = tl.zeros([BLOCK], dtype=tl.float32)
    base = b * T * N + n  # offset of (b, 0, n) in a (B, T, N) tensor
    for t in range(0, T):
        off = base + t * N
        x = tl.load(x_ptr + off, mask=mask, other=0.0).to(tl.float32)
        h = tl.maximum(x + u * h, 0.0)
        tl.store(h_ptr + off, h, mask=mask)


@triton.jit
def _indrnn_bwd_kernel(
    gout_ptr,
    h_ptr,
    u_ptr,
    h0_ptr,
    dx_ptr,
    du_part_ptr,
    dh0_ptr,
    B,
    T,
    N,
    HAS_H0: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    lane = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = lane < B * N
    b = lane // N
    n = lane % N
    u = tl.load(u_ptr + n, mask=mask, other=0.0).to(tl.float32)
    base = b * T * N + n
    g = tl.zeros([BLOCK], dtype=tl.float32)
    du = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, T):
        t = T - 1 - i
        off = base + t * N
        h_t = tl.load(h_ptr + off, mask=mask, other=0.0)
        go = tl.load(gout_ptr + off, mask=mask, other=0.0).to(tl.float32)
        g = tl.where(h_t > 0.0, go + g, 0.0)
        tl.store(dx_ptr + off, g.to(dx_ptr.dtype.element_ty), mask=mask)
        if t > 0:
            h_prev = tl.load(h_ptr + off - N, mask=mask, other=0.0)
        else:
            if HAS_H0:
                h_prev = tl.load(h0_ptr + lane, mask=mask, other=0.0).to(tl.float32)
            else:
                h_prev = tl.zeros([BLOCK], dtype=tl.float32)
        du += g * h_prev
        g = g * u
    tl.store(du_part_ptr + lane, du, mask=mask)
    if HAS_H0:
        tl.store(dh0_ptr + lane, g, mask=mask)


BLOCK = 256


def _grid(B: int, N: int):
    return (triton.cdiv(B * N, BLOCK),)


def indrnn_fwd(x, u, h0, out: torch.Tensor | None = None) -> torch.Tensor:
    """x: (B, T, N) contiguous, u: (N,), h0: (B, N) or None -> h: (B, T, N) fp32.

    `out` (tests poison it with NaN) receives h; allocated when None."""
    B, T, N = x.shape
    h = out if out is not None else torch.empty(B, T, N, dtype=torch.float32, device=x.device)
    h0_arg = h0 if h0 is not None else u  # any valid pointer; unused without HAS_H0
    _indrnn_fwd_kernel[_grid(B, N)](x, u, h0_arg, h, B, T, N, HAS_H0=h0 is not None, BLOCK=BLOCK)
    return h


def indrnn_bwd(gout, h, u, h0, x_dtype, out: tuple | None = None):
    """-> (dx in x_dtype, du fp32 (N,), dh0 fp32 (B, N) or None).

    `out` = (dx, du_partials (B, N), dh0 or None) buffers to write into; allocated when None."""
    B, T, N = h.shape
    if out is not None:
        dx, du_part, dh0 = out
    else:
        dx = torch.empty(B, T, N, dtype=x_dtype, device=h.device)
        du_part = torch.empty(B, N, dtype=torch.float32, device=h.device)
        dh0 = torch.empty(B, N, dtype=torch.float32, device=h.device) if h0 is not None else None
    h0_arg = h0 if h0 is not None else u
    _indrnn_bwd_kernel[_grid(B, N)](
        gout,
        h,
        u,
        h0_arg,
        dx,
        du_part,
        dh0 if dh0 is not None else du_part,
        B,
        T,
        N,
        HAS_H0=h0 is not None,
        BLOCK=BLOCK,
    )
    return dx, du_part.sum(dim=0), dh0


class IndRNNTritonFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, u, h0):
        x_c = x.contiguous()
        u_c = u.detach().to(torch.float32).contiguous()
        h0_c = h0.detach().to(torch.float32).contiguous() if h0 is not None else None
        h = indrnn_fwd(x_c, u_c, h0_c)
        ctx.save_for_backward(h, u_c, h0_c)
        ctx.x_dtype = x.dtype
        ctx.has_h0 = h0 is not None
        return h

    @staticmethod
    def backward(ctx, grad_h):
        h, u_c, h0_c = ctx.saved_tensors
        dx, du, dh0 = indrnn_bwd(
            grad_h.contiguous(), h, u_c, h0_c if ctx.has_h0 else None, ctx.x_dtype
        )
        return dx, du, dh0


def indrnn_triton(x: torch.Tensor, u: torch.Tensor, h0: torch.Tensor | None = None):
    """x: (B, T, N), u: (N,), h0: (B, N) or None -> h: (B, T, N) fp32, fused in Triton."""
    if x.shape[1] == 0:
        return x.new_zeros(x.shape, dtype=torch.float32)
    return IndRNNTritonFunction.apply(x, u, h0)
