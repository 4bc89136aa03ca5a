"""The element-wise scan h_t = a_t ⊙ h_{t−1} + b_t: the naive loop against the closed form,
and the chunked CPU path against the naive loop on values and every gradient."""

from __future__ import annotations

import pytest
import torch

from seqbench.errors import UsageError
from seqbench.ops.scan import resolve_backend, scan, scan_naive
from tests.ops.scan_cases import KINDS, SHAPES, assert_matches, make


def test_the_reference_is_the_closed_form_sum():
    """h_t = Σ_j a^j b_{t−j} + a^{t+1} h0 for a constant complex a: computed directly."""
    a, b, h0, _ = make(2, 30, 4, True, True, True)
    h = scan_naive(a, b, h0)
    t = torch.arange(30)
    for s in (0, 7, 29):
        powers = a[None, :] ** (s - t[: s + 1, None])  # (s+1, N): a^(s−j)
        want = (powers[None] * b[:, : s + 1]).sum(1) + a ** (s + 1) * h0
        torch.testing.assert_close(h[:, s], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("B", "T", "N"), SHAPES)
@pytest.mark.parametrize(("cplx", "const"), KINDS)
@pytest.mark.parametrize("with_h0", [True, False])
def test_cpu_path_matches_the_naive_loop(B, T, N, cplx, const, with_h0):
    inputs = make(B, T, N, cplx, const, with_h0)
    assert_matches(lambda *p: scan(*p, backend="cpu"), scan_naive, *inputs)


def test_the_cpu_path_is_exact_where_a_decay_is_zero_or_underflows():
    """No division by products of a: a = 0 cuts the past off exactly, and 0.01^200 (below
    float32's range) is no inf or nan."""
    b = torch.randn(2, 200, 3)
    a = torch.tensor([0.0, 0.01, 1.0])
    h = scan(a, b, backend="cpu")
    assert torch.isfinite(h).all()
    torch.testing.assert_close(h[..., 0], b[..., 0])
    torch.testing.assert_close(h[..., 2], b[..., 2].cumsum(1), rtol=1e-5, atol=1e-4)


def test_gradients_pass_torch_gradcheck_in_double():
    a = torch.rand(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 9, 3, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    from seqbench.ops.scan.cpu import ScanFunction

    assert torch.autograd.gradcheck(ScanFunction.apply, (a, b, h0))


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="both be real or both complex"):
        scan(torch.rand(3), torch.randn(1, 2, 3, dtype=torch.complex64))
    with pytest.raises(ValueError, match="do not fit"):
        scan(torch.rand(4), torch.randn(1, 2, 3))
    with pytest.raises(UsageError, match="unknown scan backend"):
        resolve_backend("cuda-graph", torch.device("cpu"))
