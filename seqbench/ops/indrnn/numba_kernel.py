"""IndRNN recurrence compiled with Numba: the default on CPU when numba is installed.

The "cpu" backend's loops cost ~25 µs of Python and dispatch per time step; here the whole
recurrence is one compiled call. Work items are (batch row, block of lanes) pairs, run in
parallel (`prange`) on as many threads as torch uses, or serially on one; inside an item, time
is sequential and the lanes of a step are a contiguous, vectorised inner loop over the
(B, T, N) layout, so no transposed copies are made.

Forward:  h_t = relu(x_t + u ⊙ h_{t-1})
Backward: g ← (g_out_t + g) ⊙ 1[h_t > 0];  dx_t = g;  du += g ⊙ h_{t-1};  g ← g ⊙ u;  dh0 = g.
The ReLU mask is read from h (x is not saved), as in the "cpu" backend: a nan state passes
gradient on, so an overflowing model reports nan rather than a clean zero. The state and du
accumulate in fp32 and fp64 respectively; bf16/fp16 inputs are widened to fp32 first.
"""

from __future__ import annotations

import math

import numpy as np
import torch

try:
    import numba
    from numba import njit, prange
except ImportError:  # pragma: no cover - exercised where numba is absent
    numba = None

NUMBA_AVAILABLE = numba is not None

if NUMBA_AVAILABLE:
    # Each work item keeps its lanes' state (and, backward, the carried gradient and the du
    # accumulator) in small local arrays and walks time over 1-D slices: this form is what
    # LLVM vectorises (indexing h[b, t - 1, n] in place of the local state ran 3× slower).

    @njit(cache=True, nogil=True)
    def _item(job, N, blk):  # pragma: no cover - compiled
        """Work item `job` -> (batch row, first lane, end lane)."""
        nblk = (N + blk - 1) // blk
        n0 = (job % nblk) * blk
        return job // nblk, n0, min(n0 + blk, N)

    @njit(cache=True, nogil=True)
    def _forward_item(x, u, h0, h, job, blk):  # pragma: no cover - compiled
        b, n0, n1 = _item(job, x.shape[2], blk)
        s = h0[b, n0:n1].copy()
        uu = u[n0:n1].copy()
        for t in range(x.shape[1]):
            xt = x[b, t, n0:n1]
            ht = h[b, t, n0:n1]
            for i in range(n1 - n0):
                v = xt[i] + uu[i] * s[i]
                v = np.float32(0.0) if v < 0.0 else v
                s[i] = v
                ht[i] = v

    @njit(cache=True, nogil=True)
    def _backward_item(gout, h, u, h0, dx, du_rows, dh0, job, blk):  # pragma: no cover
        b, n0, n1 = _item(job, h.shape[2], blk)
        m = n1 - n0
        g = np.zeros(m, dtype=np.float32)
        acc = np.zeros(m, dtype=np.float64)
        uu = u[n0:n1].copy()
        for t in range(h.shape[1] - 1, -1, -1):
            go = gout[b, t, n0:n1]
            ht = h[b, t, n0:n1]
            hp = h[b, t - 1, n0:n1] if t > 0 else h0[b, n0:n1]
            d = dx[b, t, n0:n1]
            for i in range(m):
                gv = go[i] + g[i]
                gv = np.float32(0.0) if ht[i] <= 0.0 else gv
                d[i] = gv
                acc[i] += gv * hp[i]
                g[i] = gv * uu[i]
        dh0[b, n0:n1] = g
        du_rows[b, n0:n1] = acc

    # Work items are (batch row, block of lanes). One torch thread (a sweep worker's share of
    # the cores) runs the serial form, which never starts Numba's thread pool: a pool of
    # spinning OpenMP threads in every worker made torch's own ops ~50× slower (measured: an
    # RNN point 0.24 s -> 13.7 s after one IndRNN point in the same two-worker sweep).

    @njit(parallel=True, cache=True, nogil=True)
    def _forward_parallel(x, u, h0, h, jobs, blk):  # pragma: no cover - compiled
        for job in prange(jobs):
            _forward_item(x, u, h0, h, job, blk)

    @njit(cache=True, nogil=True)
    def _forward_serial(x, u, h0, h, jobs, blk):  # pragma: no cover - compiled
        for job in range(jobs):
            _forward_item(x, u, h0, h, job, blk)

    @njit(parallel=True, cache=True, nogil=True)
    def _backward_parallel(gout, h, u, h0, dx, du_rows, dh0, jobs, blk):  # pragma: no cover
        for job in prange(jobs):
            _backward_item(gout, h, u, h0, dx, du_rows, dh0, job, blk)

    @njit(cache=True, nogil=True)
    def _backward_serial(gout, h, u, h0, dx, du_rows, dh0, jobs, blk):  # pragma: no cover
        for job in range(jobs):
            _backward_item(gout, h, u, h0, dx, du_rows, dh0, job, blk)


def _work(B: int, N: int, threads: int) -> tuple[int, int]:
    """(work items, lanes per item): whole rows when the batch alone gives every thread a few
    items, else rows split into blocks (multiples of 16 lanes) until it does."""
    blk = N
    if threads > 1 and 4 * threads > B:
        splits = math.ceil(4 * threads / B)
        blk = min(N, max(16, math.ceil(N / splits / 16) * 16))
    return B * math.ceil(N / blk), blk


def _threads() -> int:
    """As many threads as torch uses here (a sweep worker pins torch to its share)."""
    threads = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    if threads > 1:
        numba.set_num_threads(threads)
    return threads


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float32).contiguous().numpy()


class IndRNNNumbaFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, u, h0):
        B, T, N = x.shape
        threads = _threads()
        xs = _np(x)
        uf = _np(u)
        h0f = np.zeros((B, N), dtype=np.float32) if h0 is None else _np(h0)
        h = np.empty((B, T, N), dtype=np.float32)
        fwd = _forward_parallel if threads > 1 else _forward_serial
        fwd(xs, uf, h0f, h, *_work(B, N, threads))
        out = torch.from_numpy(h)
        ctx.save_for_backward(out, torch.from_numpy(uf), torch.from_numpy(h0f))
        ctx.x_dtype, ctx.u_dtype = x.dtype, u.dtype
        ctx.h0_dtype = None if h0 is None else h0.dtype
        return out

    @staticmethod
    def backward(ctx, grad_h):
        hs, uf, h0f = ctx.saved_tensors
        B, T, N = hs.shape
        threads = _threads()
        dx = np.empty((B, T, N), dtype=np.float32)
        du_rows = np.empty((B, N), dtype=np.float64)
        dh0 = np.empty((B, N), dtype=np.float32)
        bwd = _backward_parallel if threads > 1 else _backward_serial
        work = _work(B, N, threads)
        bwd(_np(grad_h), hs.numpy(), uf.numpy(), h0f.numpy(), dx, du_rows, dh0, *work)
        du = torch.from_numpy(du_rows.sum(axis=0)).to(ctx.u_dtype)
        dh0_out = torch.from_numpy(dh0).to(ctx.h0_dtype) if ctx.h0_dtype is not None else None
        return torch.from_numpy(dx).to(ctx.x_dtype), du, dh0_out


def indrnn_numba(x: torch.Tensor, u: torch.Tensor, h0: torch.Tensor | None = None) -> torch.Tensor:
    """x: (B, T, N) on the CPU, u: (N,), h0: (B, N) or None -> h: (B, T, N) fp32."""
    if not NUMBA_AVAILABLE:
        raise RuntimeError("numba is not installed (pip install numba)")
    if x.shape[1] == 0 or x.shape[0] == 0 or x.shape[2] == 0:
        return x.new_zeros(x.shape, dtype=torch.float32)
    return IndRNNNumbaFunction.apply(x, u, h0)
