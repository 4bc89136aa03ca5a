"""The CPU backends ("cpu": loops of torch ops; "numba": the compiled recurrence) against the
naive autograd loop: output and every gradient, odd shapes, with and without h0, dtypes."""

import math

import pytest
import torch

from seqbench.errors import UsageError
from seqbench.ops.indrnn import (
    indrnn,
    indrnn_cpu,
    indrnn_naive,
    indrnn_numba,
    numba_available,
    resolve_backend,
)
from tests.ops.conftest import assert_close_rel, assert_match_reference, grads, make_inputs

# (B, T, N): single elements, odd widths, a long sequence, a wide layer, B = 1 with many lanes
# (split into lane blocks across threads) and a batch with more rows than threads
SHAPES = [(1, 1, 1), (1, 63, 37), (3, 63, 5), (2, 1000, 13), (4, 7, 300), (1, 20, 129), (9, 5, 3)]
HAS_NUMBA = numba_available(torch.device("cpu"))[0]
BACKENDS = [
    pytest.param(indrnn_cpu, id="cpu"),
    pytest.param(
        indrnn_numba,
        id="numba",
        marks=pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed"),
    ),
]


@pytest.mark.parametrize("fn", BACKENDS)
@pytest.mark.parametrize(("B", "T", "N"), SHAPES)
@pytest.mark.parametrize("with_h0", [True, False])
def test_cpu_backends_match_the_reference(fn, B, T, N, with_h0):
    assert_match_reference(fn, *make_inputs(B, T, N, with_h0=with_h0))


@pytest.mark.parametrize("fn", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs_keep_an_fp32_state(fn, dtype):
    x, u, h0, gout = make_inputs(2, 50, 9, dtype=dtype)
    h, dx, du, _ = grads(fn, x, u, h0, gout)
    assert h.dtype == torch.float32 and dx.dtype == dtype and du.dtype == torch.float32
    ref = grads(indrnn_naive, x, u, h0, gout)
    assert_close_rel(h, ref[0])
    assert_close_rel(du, ref[2], rtol=1e-4)


@pytest.mark.parametrize("fn", BACKENDS)
def test_relu_mask_and_gradient_through_u(fn):
    # a single unit with positive pre-activations: h_T = Σ u^(T-t) x_t, so dh_T/du is analytic
    T = 6
    x = torch.ones(1, T, 1, requires_grad=True)
    u = torch.tensor([0.5], requires_grad=True)
    h = fn(x, u)
    h[0, -1, 0].backward()
    expect_h = sum(0.5**j for j in range(T))
    expect_du = sum(j * 0.5 ** (j - 1) for j in range(1, T))
    assert float(h[0, -1, 0].detach()) == pytest.approx(expect_h)
    assert float(u.grad) == pytest.approx(expect_du)
    torch.testing.assert_close(
        x.grad[0, :, 0], torch.tensor([0.5 ** (T - 1 - t) for t in range(T)])
    )


@pytest.mark.parametrize("fn", BACKENDS)
def test_non_finite_states_propagate_like_the_cpu_loops(fn):
    """An overflowing model must report inf/nan (stress keeps them), not a clean zero."""
    x = torch.tensor([[[1e38], [1e38], [-1.0], [float("nan")]]], requires_grad=True)
    u = torch.tensor([4.0], requires_grad=True)
    h = fn(x, u)
    ref = indrnn_cpu(x, u)
    assert torch.equal(torch.isnan(h), torch.isnan(ref)) and torch.isinf(h).any()
    h.sum().backward()
    assert not math.isfinite(float(u.grad))


@pytest.mark.parametrize("fn", BACKENDS)
def test_empty_inputs(fn):
    for shape in ((2, 0, 3), (0, 4, 3), (2, 4, 0)):
        x = torch.zeros(shape, requires_grad=True)
        assert fn(x, torch.zeros(shape[2])).shape == shape


@pytest.mark.skipif(not HAS_NUMBA, reason="numba is not installed")
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize(("B", "T", "N"), [(1, 30, 129), (5, 9, 40), (16, 4, 8)])
def test_numba_serial_and_parallel_forms_agree(threads, B, T, N):
    """One torch thread runs the serial form (no Numba thread pool), more the parallel one,
    with rows split into lane blocks when the batch is small."""
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)
        assert_match_reference(indrnn_numba, *make_inputs(B, T, N))
    finally:
        torch.set_num_threads(old)


def test_backends_dispatch_and_refuse_unavailable():
    expected = "numba" if HAS_NUMBA else "cpu"
    assert resolve_backend("auto", torch.device("cpu")) == expected
    with pytest.raises(UsageError, match="unknown IndRNN backend 'cuda'"):
        resolve_backend("cuda", torch.device("cpu"))
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        with pytest.raises(UsageError, match="backend 'triton' is unavailable"):
            indrnn(torch.zeros(1, 2, 3), torch.zeros(3), backend="triton")
    with pytest.raises(UsageError, match=r"backend 'numba' is unavailable: .* CPU tensors"):
        resolve_backend("numba", torch.device("cuda"))


@pytest.mark.parametrize("backend", ["torch", "cpu", "numba"])
def test_bf16_history_is_the_rounded_fp32_result(backend):
    from seqbench.ops.indrnn import indrnn

    x, u, h0, _ = make_inputs(2, 30, 7)
    h = indrnn(x, u, h0, backend=backend, history=torch.bfloat16)
    assert h.dtype == torch.bfloat16
    assert torch.equal(h, indrnn(x, u, h0, backend=backend).to(torch.bfloat16))
    with pytest.raises(ValueError, match="history must be"):
        indrnn(x, u, h0, backend=backend, history=torch.float16)
