import torch


def make_inputs(B, T, N, dtype=torch.float32, with_h0=True, device="cpu", seed=0):
    """Inputs whose states neither die nor blow up: u in (0, 1.05), x around a positive mean,
    so both ReLU branches occur."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(B, T, N, generator=g) * 0.5 + 0.1).to(dtype).to(device).requires_grad_()
    u = (torch.rand(N, generator=g) * 1.05).to(device).requires_grad_()
    h0 = torch.rand(B, N, generator=g).to(device).requires_grad_() if with_h0 else None
    gout = torch.randn(B, T, N, generator=g).to(device)
    return x, u, h0, gout


def grads(fn, x, u, h0, gout):
    for p in (x, u, h0):
        if p is not None:
            p.grad = None
    h = fn(x, u, h0)
    h.backward(gout)
    return h.detach(), x.grad.clone(), u.grad.clone(), None if h0 is None else h0.grad.clone()


def assert_match_reference(fn, x, u, h0, gout):
    """fn's output and every gradient against the naive loop's: same shape and dtype, and
    equal up to a relative tolerance."""
    from seqbench.ops.indrnn import indrnn_naive

    ref = grads(indrnn_naive, x, u, h0, gout)
    got = grads(fn, x, u, h0, gout)
    for a, b in zip(got, ref, strict=True):
        if b is None:
            assert a is None
        else:
            assert a.shape == b.shape and a.dtype == b.dtype
            assert_close_rel(a, b)


def assert_close_rel(a, b, rtol=1e-5):
    scale = float(b.abs().max()) + 1e-12
    err = float((a.float() - b.float()).abs().max())
    assert err <= rtol * scale, f"max abs err {err:.3g} vs scale {scale:.3g}"
