import pytest
import torch

from seqbench.errors import UsageError
from seqbench.ops.indrnn import indrnn, indrnn_cpu, indrnn_naive, resolve_backend
from tests.ops.conftest import assert_close_rel, assert_match_reference, grads, make_inputs

SHAPES = [(1, 1, 1), (1, 63, 37), (3, 63, 5), (2, 1000, 13), (4, 7, 300)]


@pytest.mark.parametrize(("B", "T", "N"), SHAPES)
@pytest.mark.parametrize("with_h0", [True, False])
def test_cpu_loops_match_the_reference(B, T, N, with_h0):
    assert_match_reference(indrnn_cpu, *make_inputs(B, T, N, with_h0=with_h0))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_inputs_keep_an_fp32_state(dtype):
    x, u, h0, gout = make_inputs(2, 50, 9, dtype=dtype)
    h, dx, du, _ = grads(indrnn_cpu, x, u, h0, gout)
    assert h.dtype == torch.float32 and dx.dtype == dtype and du.dtype == torch.float32
    ref = grads(indrnn_naive, x, u, h0, gout)
    assert_close_rel(h, ref[0])
    assert_close_rel(du, ref[2], rtol=1e-4)


def test_relu_mask_and_gradient_through_u():
    # a single unit with positive pre-activations: h_T = Σ u^(T-t) x_t, so dh_T/du is analytic
    T = 6
    x = torch.ones(1, T, 1, requires_grad=True)
    u = torch.tensor([0.5], requires_grad=True)
    h = indrnn_cpu(x, u)
    h[0, -1, 0].backward()
    expect_h = sum(0.5**j for j in range(T))
    expect_du = sum(j * 0.5 ** (j - 1) for j in range(1, T))
    assert float(h[0, -1, 0].detach()) == pytest.approx(expect_h)
    assert float(u.grad) == pytest.approx(expect_du)
    torch.testing.assert_close(
        x.grad[0, :, 0], torch.tensor([0.5 ** (T - 1 - t) for t in range(T)])
    )


def test_backends_dispatch_and_refuse_unavailable():
    assert resolve_backend("auto", torch.device("cpu")) == "cpu"
    with pytest.raises(UsageError, match="unknown IndRNN backend 'cuda'"):
        resolve_backend("cuda", torch.device("cpu"))
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        with pytest.raises(UsageError, match="backend 'triton' is unavailable"):
            indrnn(torch.zeros(1, 2, 3), torch.zeros(3), backend="triton")
