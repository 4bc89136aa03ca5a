"""Triton kernels against the reference. Run in their own pytest invocation with
TRITON_INTERPRET=1 on CPU (set before triton is imported), or on a CUDA machine."""

import os

import pytest
import torch

from tests.ops.conftest import assert_close_rel, assert_match_reference, grads, make_inputs

pytestmark = pytest.mark.triton

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
if DEVICE == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("needs CUDA or TRITON_INTERPRET=1", allow_module_level=True)

from seqbench.ops.indrnn import indrnn, indrnn_naive  # noqa: E402
from seqbench.ops.indrnn.triton_kernel import indrnn_bwd, indrnn_fwd  # noqa: E402

SHAPES = [(1, 1, 3), (1, 63, 37), (3, 63, 300), (2, 1000, 5)]


def _triton(x, u, h0):
    return indrnn(x, u, h0, backend="triton")


@pytest.mark.parametrize(("B", "T", "N"), SHAPES)
@pytest.mark.parametrize("with_h0", [True, False])
def test_triton_matches_the_reference_output_and_every_gradient(B, T, N, with_h0):
    assert_match_reference(_triton, *make_inputs(B, T, N, with_h0=with_h0, device=DEVICE))


@pytest.mark.parametrize(("B", "T", "N"), [(1, 1, 3), (3, 63, 300), (2, 17, 257)])
@pytest.mark.parametrize("with_h0", [True, False])
def test_every_output_element_is_written(B, T, N, with_h0):
    """Outputs are poisoned with NaN before each launch: an unwritten element fails."""
    x, u, h0, gout = make_inputs(B, T, N, with_h0=with_h0, device=DEVICE)
    x, u = x.detach().contiguous(), u.detach().contiguous()
    h0 = h0.detach().contiguous() if h0 is not None else None
    nan = float("nan")
    h = indrnn_fwd(x, u, h0, out=torch.full((B, T, N), nan, device=DEVICE))
    assert not torch.isnan(h).any()
    assert_close_rel(h, indrnn_naive(x, u, h0))
    bufs = (
        torch.full((B, T, N), nan, device=DEVICE),
        torch.full((B, N), nan, device=DEVICE),
        torch.full((B, N), nan, device=DEVICE) if h0 is not None else None,
    )
    dx, du, dh0 = indrnn_bwd(gout, h, u, h0, torch.float32, out=bufs)
    for t in (dx, du) + ((dh0,) if h0 is not None else ()):
        assert not torch.isnan(t).any()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs(dtype):
    x, u, h0, gout = make_inputs(2, 40, 33, dtype=dtype, device=DEVICE)
    h, dx, du, dh0 = grads(_triton, x, u, h0, gout)
    ref = grads(indrnn_naive, x, u, h0, gout)
    assert h.dtype == torch.float32 and dx.dtype == dtype
    assert_close_rel(h, ref[0])
    assert_close_rel(dx.float(), ref[1].float(), rtol=1e-2)  # dx is rounded to the input dtype
    assert_close_rel(du, ref[2], rtol=1e-4)
    assert_close_rel(dh0, ref[3], rtol=1e-4)


def test_du_reduction_is_deterministic():
    x, u, h0, gout = make_inputs(8, 30, 64, device=DEVICE)
    first = grads(_triton, x, u, h0, gout)[2]
    for _ in range(2):
        assert torch.equal(grads(_triton, x, u, h0, gout)[2], first)


@pytest.mark.parametrize(("B", "T", "N"), [(1, 1, 3), (3, 63, 300), (2, 200, 33)])
@pytest.mark.parametrize("with_h0", [True, False])
def test_bf16_history_matches_the_reference(B, T, N, with_h0):
    """States stored in bf16 (half the bytes the backward reads); the recurrence and the
    accumulations stay fp32, so only the stored values are rounded."""
    x, u, h0, gout = make_inputs(B, T, N, with_h0=with_h0, device=DEVICE)

    def bf16_history(x, u, h0):
        return indrnn(x, u, h0, backend="triton", history=torch.bfloat16)

    h, dx, du, dh0 = grads(bf16_history, x, u, h0, gout)
    ref = grads(indrnn_naive, x, u, h0, gout)
    assert h.dtype == torch.bfloat16 and dx.dtype == torch.float32
    assert_close_rel(h.float(), ref[0], rtol=1e-2)
    assert_close_rel(dx, ref[1], rtol=2e-2)
    assert_close_rel(du, ref[2], rtol=2e-2)
    if with_h0:
        assert_close_rel(dh0, ref[3], rtol=2e-2)


def test_one_launch_shape_per_size_under_the_interpreter():
    """Autotuning picks among launch shapes on a GPU; the interpreter gets one (tuning there
    would time Python). Every shape is a power-of-two block with at least one lane per
    thread."""
    from seqbench.ops.indrnn.triton_kernel import CONFIGS, _configs

    tuned = _configs(interpret=False)
    assert len(tuned) > 8
    assert all(c.kwargs["BLOCK"] >= 32 * c.num_warps for c in tuned)
    if os.environ.get("TRITON_INTERPRET") == "1":
        assert len(CONFIGS) == 1
