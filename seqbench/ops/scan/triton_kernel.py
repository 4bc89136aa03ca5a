"""The scan h_t = a_t ⊙ h_{t−1} + b_t fused in Triton: parallel over (batch × channel) lanes,
sequential over T, real or complex (as interleaved real pairs, torch.view_as_real), with a
constant a (N,) or one per step (B, T, N).

Forward reads a (when it varies) and b and writes h; backward walks time in reverse, reading
the gradient, h_{t−1} and a, and writing db (and da per step). A constant a's gradient is
reduced over the batch deterministically: per-lane partial sums to a (B, N) buffer that torch
sums (no atomics). Offsets are int64, every load and store is masked, arithmetic is fp32.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from seqbench.ops.common import keep_fp_fusion

keep_fp_fusion()


def _configs(interpret: bool) -> list:
    """Lanes per program and warps. One config in the interpreter (autotuning there would
    only time Python); on a GPU a few, at most 8 lanes per thread (a complex lane holds twice
    the registers of a real one: tests/ops/test_scan_aot.py reads ptxas -v for spills)."""
    if interpret:
        return [triton.Config({"BLOCK": 128}, num_warps=4)]
    return [triton.Config({"BLOCK": b}, num_warps=w) for b, w in ((64, 1), (128, 2), (256, 4))]


CONFIGS = _configs(os.environ.get("TRITON_INTERPRET") == "1")


@triton.jit
def _load(ptr, offset, mask, COMPLEX: tl.constexpr):
    """The element at `offset` (in floats) of a real or an interleaved complex tensor, in
    fp32: its real part and its imaginary part (zero for a real tensor); 0 where masked."""
    re = tl.load(ptr + offset, mask=mask, other=0.0).to(tl.float32)
    im = tl.zeros_like(re)
    if COMPLEX:
        im = tl.load(ptr + offset + 1, mask=mask, other=0.0).to(tl.float32)
    return re, im


@triton.jit
def _lanes(B, T, N, BLOCK: tl.constexpr):
    """This program's lanes, one per (batch, channel): each lane's index, whether it is one of
    the B·N, its channel n and the offset of its element (b, 0, n) in a (B, T, N) tensor."""
    pid = tl.program_id(0)
    lane = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = lane < B * N
    b = lane // N
    n = lane % N
    return lane, mask, n, b * T * N + n


@triton.jit
def _initial(
    h0_ptr, offset, mask, HAS_H0: tl.constexpr, COMPLEX: tl.constexpr, BLOCK: tl.constexpr
):
    """Each lane's initial state: its element of h0, or 0 without one (real, imaginary)."""
    re = tl.zeros([BLOCK], dtype=tl.float32)
    im = tl.zeros([BLOCK], dtype=tl.float32)
    if HAS_H0:
        re, im = _load(h0_ptr, offset, mask, COMPLEX)
    return re, im


@triton.autotune(configs=CONFIGS, key=["BN"])
@triton.jit
def _scan_fwd_kernel(
    a_ptr,
    b_ptr,
    h0_ptr,
    h_ptr,
    B,
    T,
    N,
    BN,  # B·N, the autotuning key
    A_CONST: tl.constexpr,
    COMPLEX: tl.constexpr,
    HAS_H0: tl.constexpr,
    BLOCK: tl.constexpr,
):
    S: tl.constexpr = 2 if COMPLEX else 1  # floats per element
    lane, mask, n, base = _lanes(B, T, N, BLOCK)
    hr, hi = _initial(h0_ptr, lane * S, mask, HAS_H0, COMPLEX, BLOCK)
    if A_CONST:
        ar, ai = _load(a_ptr, n * S, mask, COMPLEX)
    for t in range(0, T):
        e = (base + t * N) * S
        if not A_CONST:
            ar, ai = _load(a_ptr, e, mask, COMPLEX)
        br, bi = _load(b_ptr, e, mask, COMPLEX)
        if COMPLEX:
            nr = ar * hr - ai * hi + br
            hi = ar * hi + ai * hr + bi
            hr = nr
            tl.store(h_ptr + e + 1, hi, mask=mask)
        else:
            hr = ar * hr + br
        tl.store(h_ptr + e, hr, mask=mask)


@triton.autotune(configs=CONFIGS, key=["BN"])
@triton.jit
def _scan_bwd_kernel(
    a_ptr,
    h_ptr,
    h0_ptr,
    gout_ptr,
    db_ptr,
    da_ptr,
    dh0_ptr,
    B,
    T,
    N,
    BN,
    A_CONST: tl.constexpr,
    COMPLEX: tl.constexpr,
    HAS_H0: tl.constexpr,
    BLOCK: tl.constexpr,
):
    S: tl.constexpr = 2 if COMPLEX else 1
    lane, mask, n, base = _lanes(B, T, N, BLOCK)
    zero = tl.zeros([BLOCK], dtype=tl.int32)  # scalar conditions as lane vectors, for masks
    # carry: conj(a_{t+1}) · g_{t+1}, the part of g_t that comes from the step after it
    cr = tl.zeros([BLOCK], dtype=tl.float32)
    ci = tl.zeros([BLOCK], dtype=tl.float32)
    dar = tl.zeros([BLOCK], dtype=tl.float32)  # a constant a's gradient, summed over time
    dai = tl.zeros([BLOCK], dtype=tl.float32)
    h0r, h0i = _initial(h0_ptr, lane * S, mask, HAS_H0, COMPLEX, BLOCK)
    if A_CONST:
        ar, ai = _load(a_ptr, n * S, mask, COMPLEX)
    for i in range(0, T):
        t = T - 1 - i
        e = (base + t * N) * S
        ep = e - N * S  # h_{t-1}
        has_prev = zero + t > 0
        gr = tl.load(gout_ptr + e, mask=mask, other=0.0).to(tl.float32) + cr
        pr = tl.load(h_ptr + ep, mask=mask & has_prev, other=0.0).to(tl.float32)
        pr = tl.where(has_prev, pr, h0r)
        if not A_CONST:
            ar, ai = _load(a_ptr, e, mask, COMPLEX)
        if COMPLEX:
            gi = tl.load(gout_ptr + e + 1, mask=mask, other=0.0).to(tl.float32) + ci
            pi = tl.load(h_ptr + ep + 1, mask=mask & has_prev, other=0.0).to(tl.float32)
            pi = tl.where(has_prev, pi, h0i)
            tl.store(db_ptr + e + 1, gi, mask=mask)
            # g · conj(h_{t-1}) and conj(a_t) · g
            xr = gr * pr + gi * pi
            xi = gi * pr - gr * pi
            cr = ar * gr + ai * gi
            ci = ar * gi - ai * gr
            if A_CONST:
                dai += xi
            else:
                tl.store(da_ptr + e + 1, xi, mask=mask)
        else:
            xr = gr * pr
            cr = ar * gr
        tl.store(db_ptr + e, gr, mask=mask)
        if A_CONST:
            dar += xr
        else:
            tl.store(da_ptr + e, xr, mask=mask)
    if A_CONST:
        tl.store(da_ptr + lane * S, dar, mask=mask)
        if COMPLEX:
            tl.store(da_ptr + lane * S + 1, dai, mask=mask)
    if HAS_H0:
        tl.store(dh0_ptr + lane * S, cr, mask=mask)
        if COMPLEX:
            tl.store(dh0_ptr + lane * S + 1, ci, mask=mask)


def _grid(B: int, N: int):
    return lambda meta: (triton.cdiv(B * N, meta["BLOCK"]),)


def _real(x: torch.Tensor) -> torch.Tensor:
    """A contiguous float32 view: complex as interleaved (re, im) pairs."""
    if x.is_complex():
        return torch.view_as_real(x.to(torch.complex64).contiguous())
    return x.to(torch.float32).contiguous()


def scan_fwd(a, b, h0, out: torch.Tensor | None = None) -> torch.Tensor:
    """a: (N,) or (B, T, N); b: (B, T, N); h0: (B, N) or None; real, or complex (complex64)
    -> h like b (fp32 or complex64). `out` (tests poison it with NaN) receives h."""
    B, T, N = b.shape
    cplx = b.is_complex()
    h = out if out is not None else torch.empty(B, T, N, dtype=b.dtype, device=b.device)
    ar, br = _real(a), _real(b)
    hr = torch.view_as_real(h) if cplx else h
    h0r = _real(h0) if h0 is not None else br
    _scan_fwd_kernel[_grid(B, N)](
        ar, br, h0r, hr, B, T, N, B * N,
        A_CONST=a.dim() == 1, COMPLEX=cplx, HAS_H0=h0 is not None,
    )  # fmt: skip
    return h


def scan_bwd(a, h, h0, gout):
    """-> (da like a, db like h, dh0 like h0 or None)."""
    B, T, N = h.shape
    cplx = h.is_complex()
    const = a.dim() == 1
    db = torch.empty_like(h)
    da = torch.empty(B, N, dtype=h.dtype, device=h.device) if const else torch.empty_like(h)
    dh0 = torch.empty(B, N, dtype=h.dtype, device=h.device) if h0 is not None else None
    real = (lambda x: torch.view_as_real(x)) if cplx else (lambda x: x)
    hr = real(h)
    _scan_bwd_kernel[_grid(B, N)](
        _real(a), hr, _real(h0) if h0 is not None else hr, _real(gout),
        real(db), real(da), real(dh0) if dh0 is not None else hr,
        B, T, N, B * N,
        A_CONST=const, COMPLEX=cplx, HAS_H0=h0 is not None,
    )  # fmt: skip
    return (da.sum(0) if const else da), db, dh0


def _kind(x: torch.Tensor) -> torch.dtype:
    return torch.complex64 if x.is_complex() else torch.float32


class ScanTritonFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, h0):
        kind = _kind(b)
        ad, bd = a.detach().to(kind).contiguous(), b.detach().to(kind).contiguous()
        h0d = h0.detach().to(kind).contiguous() if h0 is not None else None
        h = scan_fwd(ad, bd, h0d)
        ctx.save_for_backward(ad, h, h0d if h0d is not None else h.new_zeros(0))
        ctx.has_h0 = h0 is not None
        ctx.dtypes = (a.dtype, b.dtype)
        return h

    @staticmethod
    def backward(ctx, grad_h):
        ad, h, h0d = ctx.saved_tensors
        da, db, dh0 = scan_bwd(ad, h, h0d if ctx.has_h0 else None, grad_h.to(h.dtype).contiguous())
        return da.to(ctx.dtypes[0]), db.to(ctx.dtypes[1]), dh0


def scan_triton(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None):
    """a: (N,) or (B, T, N); b: (B, T, N); h0: (B, N) or None -> h: (B, T, N), fused."""
    if b.shape[1] == 0:
        return b.new_zeros(b.shape)
    return ScanTritonFunction.apply(a, b, h0)
