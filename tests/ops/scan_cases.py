"""Inputs for the scan tests and the check they share: fla's relative-RMS bound
(fla/utils/_testing.py: rms(got − ref) / rms(ref) ≤ ratio) on the output and every gradient."""

from __future__ import annotations

import torch

# (B, T, N): one step, odd lengths and widths that are not powers of two
SHAPES = [(1, 1, 3), (3, 63, 37), (2, 200, 5)]
KINDS = [(cplx, const) for cplx in (False, True) for const in (True, False)]


def make(B, T, N, cplx, const, with_h0, device="cpu", seed=0):
    """Decays of modulus below 0.99 (and phases for complex), b and h0 ~ N(0, 1), and a
    random upstream gradient."""
    g = torch.Generator().manual_seed(seed)
    shape = (N,) if const else (B, T, N)
    a = torch.rand(shape, generator=g) * 0.99
    dt = torch.complex64 if cplx else torch.float32
    if cplx:
        a = a * torch.exp(2j * torch.pi * torch.rand(shape, generator=g))
        b = torch.randn(B, T, N, 2, generator=g)
        b = torch.view_as_complex(b)
        h0 = torch.view_as_complex(torch.randn(B, N, 2, generator=g)) if with_h0 else None
        gout = torch.view_as_complex(torch.randn(B, T, N, 2, generator=g))
    else:
        b = torch.randn(B, T, N, generator=g)
        h0 = torch.randn(B, N, generator=g) if with_h0 else None
        gout = torch.randn(B, T, N, generator=g)

    def move(x):
        return None if x is None else x.to(dt if x.is_complex() else x.dtype).to(device)

    return move(a), move(b), move(h0), move(gout)


def run(fn, a, b, h0, gout):
    """(h, da, db, dh0) of fn with the loss Re Σ conj(gout) · h."""
    ps = [None if p is None else p.detach().clone().requires_grad_() for p in (a, b, h0)]
    h = fn(*ps)
    (h * gout.conj()).real.sum().backward()
    return [h.detach()] + [None if p is None else p.grad for p in ps]


def rms_ratio(got: torch.Tensor, ref: torch.Tensor) -> float:
    diff = (got - ref).abs().double().pow(2).mean().sqrt()
    return float(diff / (ref.abs().double().pow(2).mean().sqrt() + 1e-30))


def assert_matches(fn, ref, *inputs, ratio=1e-5):
    for name, x, y in zip(
        ("h", "da", "db", "dh0"), run(fn, *inputs), run(ref, *inputs), strict=True
    ):
        if y is None:
            assert x is None, name
            continue
        assert x.shape == y.shape and x.dtype == y.dtype, (name, x.shape, y.shape, x.dtype, y.dtype)
        assert rms_ratio(x, y) <= ratio, (name, rms_ratio(x, y))
