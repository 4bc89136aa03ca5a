"""Fused IndRNN recurrence in Triton: parallel over (batch × hidden) lanes, sequential over T.

Layers, in order: the @triton.jit kernels, their launchers, the autograd.Function. The public
entry point is :func:`seqbench.ops.indrnn.indrnn` (backend "triton").

Memory-bound: forward reads x and writes h (2·B·T·N elements); backward reads h and g_out
(and h_{t-1}, a cache hit) and writes dx. du is reduced over the batch deterministically:
each program writes its lanes' partial sums to a (B, N) buffer that torch sums afterwards
(no atomics). Offsets are int64, every load/store is masked, accumulation is fp32.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from seqbench.ops.common import keep_fp_fusion

keep_fp_fusion()


def _configs(interpret: bool) -> list:
    """The launch shapes autotuning chooses from, per (B·N) size: lanes per program and warps.
    The interpreter (CPU) gets one, as autotuning there would only time Python."""
    if interpret:
        return [triton.Config({"BLOCK": 256}, num_warps=4)]
    # At most 8 lanes per thread: 16 or more (BLOCK 1024 on 1-2 warps, 512 on 1) spill
    # registers or sit at the 255 limit on sm_80 (tests/ops/test_triton_aot.py reads ptxas -v)
    return [
        triton.Config({"BLOCK": block}, num_warps=warps)
        for block in (64, 128, 256, 512, 1024)
        for warps in (1, 2, 4, 8)
        if 32 * warps <= block <= 8 * 32 * warps
    ]


CONFIGS = _configs(os.environ.get("TRITON_INTERPRET") == "1")


@triton.autotune(configs=CONFIGS, key=["BN"])
@triton.jit
def _indrnn_fwd_kernel(
    x_ptr,
    u_ptr,
    h0_ptr,
    h_ptr,
    B,
    T,
    N,
    BN,  # B·N, the autotuning key
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
    # prefetch: step t+1's input is requested before step t's state is computed and stored
    zero = tl.zeros([BLOCK], dtype=tl.int32)  # scalar conditions as lane vectors, for masks
    x_next = tl.load(x_ptr + base, mask=mask & (zero < T), other=0.0)
    for t in range(0, T):
        x = x_next.to(tl.float32)
        x_next = tl.load(x_ptr + base + (t + 1) * N, mask=mask & (zero + t + 1 < T), other=0.0)
        h = tl.maximum(x + u * h, 0.0)
        tl.store(h_ptr + base + t * N, h.to(h_ptr.dtype.element_ty), mask=mask)


@triton.autotune(configs=CONFIGS, key=["BN"])
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
    BN,
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
    if HAS_H0:
        h_first = tl.load(h0_ptr + lane, mask=mask, other=0.0).to(tl.float32)  # h_{-1}
    else:
        h_first = tl.zeros([BLOCK], dtype=tl.float32)
    g = tl.zeros([BLOCK], dtype=tl.float32)
    du = tl.zeros([BLOCK], dtype=tl.float32)
    last = base + (T - 1) * N
    # h_t is carried from the previous step's h_{t-1} load: one read of the history per step;
    # step t-1's g_out is prefetched while step t computes
    zero = tl.zeros([BLOCK], dtype=tl.int32)  # scalar conditions as lane vectors, for masks
    h_t = tl.load(h_ptr + last, mask=mask & (zero < T), other=0.0).to(tl.float32)
    go_next = tl.load(gout_ptr + last, mask=mask & (zero < T), other=0.0)
    for i in range(0, T):
        t = T - 1 - i
        off = base + t * N
        has_prev = zero + t > 0
        go = go_next.to(tl.float32)
        go_next = tl.load(gout_ptr + off - N, mask=mask & has_prev, other=0.0)
        h_prev = tl.load(h_ptr + off - N, mask=mask & has_prev, other=0.0).to(tl.float32)
        h_prev = tl.where(has_prev, h_prev, h_first)
        g = tl.where(h_t > 0.0, go + g, 0.0)
        tl.store(dx_ptr + off, g.to(dx_ptr.dtype.element_ty), mask=mask)
        du += g * h_prev
        g = g * u
        h_t = h_prev
    tl.store(du_part_ptr + lane, du, mask=mask)
    if HAS_H0:
        tl.store(dh0_ptr + lane, g, mask=mask)


def _grid(B: int, N: int):
    return lambda meta: (triton.cdiv(B * N, meta["BLOCK"]),)


def indrnn_fwd(x, u, h0, out: torch.Tensor | None = None, history=torch.float32) -> torch.Tensor:
    """x: (B, T, N) contiguous, u: (N,), h0: (B, N) or None -> h: (B, T, N) in `history`
    dtype (fp32, or bf16 to halve what the backward reads; the recurrence itself runs in fp32).

    `out` (tests poison it with NaN) receives h; allocated when None."""
    B, T, N = x.shape
    h = out if out is not None else torch.empty(B, T, N, dtype=history, device=x.device)
    h0_arg = h0 if h0 is not None else u  # any valid pointer; unused without HAS_H0
    _indrnn_fwd_kernel[_grid(B, N)](x, u, h0_arg, h, B, T, N, B * N, HAS_H0=h0 is not None)
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
        B * N,
        HAS_H0=h0 is not None,
    )
    return dx, du_part.sum(dim=0), dh0


class IndRNNTritonFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, u, h0, history):
        x_c = x.contiguous()
        u_c = u.detach().to(torch.float32).contiguous()
        h0_c = h0.detach().to(torch.float32).contiguous() if h0 is not None else None
        h = indrnn_fwd(x_c, u_c, h0_c, history=history)
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
        return dx, du, dh0, None


def indrnn_triton(
    x: torch.Tensor, u: torch.Tensor, h0: torch.Tensor | None = None, history=torch.float32
):
    """x: (B, T, N), u: (N,), h0: (B, N) or None -> h: (B, T, N), fused in Triton. `history`
    is the dtype h is stored in: fp32, or bf16 (the backward then reads half the bytes; the
    recurrence and every accumulation stay fp32)."""
    if history not in (torch.float32, torch.bfloat16):
        raise ValueError(f"history must be float32 or bfloat16, got {history}")
    if x.shape[1] == 0:
        return x.new_zeros(x.shape, dtype=history)
    return IndRNNTritonFunction.apply(x, u, h0, history)
