"""IndRNN recurrence with hand-written forward and backward loops (no per-step autograd graph).

Forward:  h_t = relu(x_t + u ⊙ h_{t-1})
Backward: g ← (g_out_t + g) ⊙ 1[h_t > 0];  dx_t = g;  g ← g ⊙ u;  dh0 = g at the end;
          du = Σ_{t,b} dx_t ⊙ h_{t-1}, computed after the loop in one vectorised reduction.
The ReLU mask comes from h_t > 0, so x is not saved. Time-major buffers keep each step's slice
contiguous. The fallback on CPU when numba is not installed (numba is the default there);
it also runs on any device torch supports.
"""

from __future__ import annotations

import torch


class IndRNNLoopFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, u, h0):
        B, T, N = x.shape
        xs = x.detach().transpose(0, 1).to(torch.float32).contiguous()  # (T, B, N)
        hs = torch.empty_like(xs)  # (T, B, N)
        uf = u.detach().to(torch.float32)
        h = (
            torch.zeros(B, N, dtype=torch.float32, device=x.device)
            if h0 is None
            else h0.detach().to(torch.float32)
        )
        for t in range(T):
            torch.addcmul(xs[t], uf, h, out=hs[t])
            hs[t].relu_()
            h = hs[t]
        ctx.save_for_backward(hs, uf, h if h0 is None else h0.detach().to(torch.float32))
        ctx.has_h0 = h0 is not None
        ctx.x_dtype = x.dtype
        return hs.transpose(0, 1)  # (B, T, N) fp32 view

    @staticmethod
    def backward(ctx, grad_h):
        hs, uf, h0 = ctx.saved_tensors
        T, B, N = hs.shape
        gout = grad_h.transpose(0, 1).to(torch.float32).contiguous()  # (T, B, N)
        dx = torch.empty_like(gout)
        g = torch.zeros(B, N, dtype=torch.float32, device=hs.device)
        for t in range(T - 1, -1, -1):
            torch.add(gout[t], g, out=dx[t])
            dx[t].masked_fill_(hs[t] <= 0, 0.0)
            g = dx[t] * uf
        if ctx.has_h0:
            h_prev = torch.cat([h0[None], hs[:-1]], dim=0)
        else:
            h_prev = torch.cat([torch.zeros_like(hs[:1]), hs[:-1]], dim=0)
        du = (dx * h_prev).sum(dim=(0, 1))  # (N,)
        dh0 = g if ctx.has_h0 else None
        return dx.transpose(0, 1).to(ctx.x_dtype), du.to(uf.dtype), dh0


def indrnn_cpu(x: torch.Tensor, u: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """x: (B, T, N), u: (N,), h0: (B, N) or None -> h: (B, T, N) fp32."""
    if x.shape[1] == 0:
        return x.new_zeros(x.shape, dtype=torch.float32)
    return IndRNNLoopFunction.apply(x, u, h0)
