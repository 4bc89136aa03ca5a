"""The Triton scan against the naive loop, in the interpreter (TRITON_INTERPRET=1) or on CUDA:
real and complex, a constant or per-step a, with and without h0, values and every gradient
within fla's relative-RMS bound; every output element written (outputs poisoned with NaN)."""

from __future__ import annotations

import os

import pytest
import torch

from tests.ops.scan_cases import KINDS, SHAPES, assert_matches, make

pytestmark = pytest.mark.triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("needs CUDA or TRITON_INTERPRET=1", allow_module_level=True)

from seqbench.ops.scan import scan, scan_naive  # noqa: E402
from seqbench.ops.scan.triton_kernel import scan_fwd  # noqa: E402


@pytest.mark.parametrize(("B", "T", "N"), SHAPES)
@pytest.mark.parametrize(("cplx", "const"), KINDS)
@pytest.mark.parametrize("with_h0", [True, False])
def test_triton_matches_the_naive_loop(B, T, N, cplx, const, with_h0):
    inputs = make(B, T, N, cplx, const, with_h0, device=DEVICE)
    assert_matches(lambda *p: scan(*p, backend="triton"), scan_naive, *inputs)


@pytest.mark.parametrize(("cplx", "const"), KINDS)
def test_every_output_element_is_written(cplx, const):
    a, b, h0, _ = make(3, 17, 131, cplx, const, True, device=DEVICE)
    out = torch.full_like(b, float("nan"))
    scan_fwd(a, b, h0, out=out)
    assert not torch.isnan(torch.view_as_real(out) if cplx else out).any()
