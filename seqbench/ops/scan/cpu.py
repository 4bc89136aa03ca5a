"""The scan on the CPU (any device torch runs): a two-level chunked scan with a hand-written
backward, no per-step autograd graph.

Forward, time-major, T cut into n chunks of C ≈ √T steps: (1) a scan inside every chunk at
once (C steps, each one vectorised over all n chunks), keeping each step's product of a since
its chunk began; (2) the carry between chunks (n steps); (3) h = local + product · carry in,
one vectorised pass. C + n ≈ 2√T sequential steps instead of T, and only products of a (no
division, no logarithm), so a decay of 0 or an underflow is exact.

Backward: the gradient is the same recurrence run backwards, g_t = ḡ_t + conj(a_{t+1}) g_{t+1},
so it reuses the forward scan; then db = g, da_t = g_t · conj(h_{t−1}) (summed over batch and
time for a constant a) and dh0 = conj(a_0) g_0 (PyTorch's convention for complex gradients:
the conjugate Wirtinger derivative).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _chunked(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None) -> torch.Tensor:
    """a: (N,) or (T, B, N); b: (T, B, N); h0: (B, N) or None -> h: (T, B, N), no autograd."""
    T, B, N = b.shape
    C = max(1, math.isqrt(T))
    n = -(-T // C)
    pad = n * C - T
    const = a.dim() == 1
    bs = F.pad(b, (0, 0, 0, 0, 0, pad)).view(n, C, B, N)
    loc = torch.empty_like(bs)
    loc[:, 0] = bs[:, 0]
    if const:  # the products within a chunk are powers of a: (C, N)
        prod = a.expand(C, N).cumprod(0)
        for j in range(1, C):
            torch.addcmul(bs[:, j], loc[:, j - 1], a, out=loc[:, j])
        prod_b = prod.view(1, C, 1, N)
        last = prod[C - 1]
    else:
        ones = torch.ones(pad, B, N, dtype=a.dtype, device=a.device)
        as_ = torch.cat([a, ones]).view(n, C, B, N)
        prod_b = torch.empty_like(as_)
        prod_b[:, 0] = as_[:, 0]
        for j in range(1, C):
            torch.addcmul(bs[:, j], loc[:, j - 1], as_[:, j], out=loc[:, j])
            torch.mul(prod_b[:, j - 1], as_[:, j], out=prod_b[:, j])
        last = None
    carry_in = torch.empty(n, B, N, dtype=b.dtype, device=b.device)
    carry = h0 if h0 is not None else b.new_zeros(B, N)
    for i in range(n):
        carry_in[i] = carry
        p = last if const else prod_b[i, C - 1]
        carry = p * carry + loc[i, C - 1]
    h = torch.addcmul(loc, prod_b, carry_in[:, None])
    return h.view(n * C, B, N)[:T]


def _conj(x: torch.Tensor) -> torch.Tensor:
    return x.conj().resolve_conj() if x.is_complex() else x


class ScanFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b, h0):
        bt = b.detach().transpose(0, 1).contiguous()  # (T, B, N)
        at = a.detach() if a.dim() == 1 else a.detach().transpose(0, 1).contiguous()
        h0d = h0.detach() if h0 is not None else None
        h = _chunked(at, bt, h0d)
        ctx.save_for_backward(at, h, h0d if h0d is not None else h.new_zeros(0))
        ctx.has_h0 = h0 is not None
        return h.transpose(0, 1)

    @staticmethod
    def backward(ctx, grad_h):
        at, h, h0 = ctx.saved_tensors
        _T, B, N = h.shape
        gout = grad_h.transpose(0, 1)
        # reversed in time, the gradient's decay at step s is conj(a) of the step after it
        ca = _conj(at)
        a_rev = ca if at.dim() == 1 else torch.cat([torch.ones_like(ca[:1]), ca.flip(0)[:-1]])
        g = _chunked(a_rev, gout.flip(0).contiguous(), None).flip(0)  # (T, B, N)
        first = h0 if ctx.has_h0 else h.new_zeros(B, N)
        h_prev = torch.cat([first[None], h[:-1]])
        da = g * _conj(h_prev)
        da = da.sum(dim=(0, 1)) if at.dim() == 1 else da.transpose(0, 1)
        dh0 = (ca if at.dim() == 1 else ca[0]) * g[0] if ctx.has_h0 else None
        return da, g.transpose(0, 1), dh0


def scan_cpu(a: torch.Tensor, b: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """a: (N,) or (B, T, N); b: (B, T, N); h0: (B, N) or None -> h: (B, T, N)."""
    if b.shape[1] == 0:
        return b.new_zeros(b.shape)
    return ScanFunction.apply(a, b, h0)
