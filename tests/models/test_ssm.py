"""The LRU, S4D, the selective SSM and linear attention, each held to what it claims, measured
from the outside: the state it declares is the state it carries; a carried state continues a
sequence exactly; S4D's convolution equals its recurrence; --stable's λ bounds the LRU's
truncation error and gradient on its trained weights; the selective SSM's gradient decays no
slower than its largest exp(Δ·A)."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

from seqbench.config import ModelArgs
from seqbench.models import make_backbone
from seqbench.models.mamba import MAMBA_D_CONV, MAMBA_EXPAND
from seqbench.stress.analysis import decay_rate, grad_vs_lag, k_grid, rates, truncation_error

NEW = ["lru", "s4d", "mamba", "linear-attention"]


def build(name, **kw):
    args = {"hidden": 16, "layers": 2, "seq_len": 24, "d_state": 8} | kw
    torch.manual_seed(0)
    return make_backbone(name, 3, ModelArgs(**args))


def reals(state) -> int:
    """Real numbers in a (nested) state, per batch element of 2."""
    if isinstance(state, torch.Tensor):
        return state.numel() * (2 if state.is_complex() else 1) // 2
    return sum(reals(s) for s in state)


@pytest.mark.parametrize("name", [*NEW, "lstm", "gru", "indrnn", "rnn"])
def test_the_declared_state_size_is_the_state_carried(name):
    bb = build(name).eval()
    _, state = bb(torch.randn(2, 24, 3))
    carried = reals(state)
    if name == "mamba":  # Zoology's count leaves out the conv's last d_conv − 1 inputs
        carried -= 2 * MAMBA_EXPAND * 16 * (MAMBA_D_CONV - 1)
    assert carried == bb.state_size


def test_feedforward_state_sizes_follow_their_context():
    tcn = make_backbone("tcn", 3, ModelArgs(hidden=8, k=10, seq_len=40))
    assert tcn.state_size == 10 * 8  # receptive field × channels
    tr = make_backbone("transformer", 3, ModelArgs(hidden=16, layers=1, k=6, seq_len=40))
    assert tr.state_size == 2 * 16 * 6  # keys and values of the window


@pytest.mark.parametrize("name", NEW)
def test_a_carried_state_continues_the_sequence_exactly(name):
    bb = build(name).eval()
    x = torch.randn(2, 24, 3)
    whole, _ = bb(x)
    a, s = bb(x[:, :9])
    b, _ = bb(x[:, 9:], s)
    torch.testing.assert_close(torch.cat([a, b], 1), whole, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", NEW)
def test_outputs_are_causal(name):
    bb = build(name).eval()
    x = torch.randn(1, 24, 3)
    y, _ = bb(x)
    x2 = x.clone()
    x2[:, 15:] += 1.0
    y2, _ = bb(x2)
    torch.testing.assert_close(y[:, :15], y2[:, :15])
    assert not torch.allclose(y[:, 15:], y2[:, 15:])


def test_s4d_trains_as_a_convolution_equal_to_its_recurrence():
    bb = build("s4d").train()
    x = torch.randn(3, 24, 3)
    conv, state = bb(x)
    assert state is None  # the FFT path
    bb.force_recurrence = True
    rec, _ = bb(x)
    torch.testing.assert_close(conv, rec, rtol=1e-4, atol=1e-5)
    layer = bb.layers_[0]  # the kernel is the recurrence's impulse response
    impulse = torch.zeros(1, 24, 16)
    impulse[0, 0] = 1.0
    response, _ = layer.recur(impulse, None)
    torch.testing.assert_close(response[0].T, layer.kernel(24), rtol=1e-4, atol=1e-6)


def fit(bb, lam=None, steps=60):
    """A few Adam steps on a random regression, projecting under --stable as training does."""
    opt = torch.optim.Adam(bb.parameters(), lr=0.02)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 24, 3, generator=g)
    target = torch.cumsum(x[..., :1], 1) / 5  # a long memory: pulls |λ| up
    for _ in range(steps):
        loss = ((bb(x)[0][..., :1] - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if lam is not None:
            bb.project_(lam)
    return bb.eval()


@pytest.mark.parametrize("lam", [0.5, 0.8])
def test_lru_stable_lambda_bounds_its_trained_truncation_error_and_gradient(lam):
    """On the trained weights, from the outside: the error of dropping all but the last k
    inputs decays at ≤ λ per step, and so does the gradient against lag."""
    bb = fit(build("lru", layers=1, seq_len=64), lam)
    assert bb.stability_bound() <= lam + 1e-6
    x = torch.randn(16, 64, 3, dtype=torch.float64)
    bb = bb.double()
    ks = k_grid(64)
    errs, floor = truncation_error(bb, x, ks)
    assert decay_rate(ks, errs, floor) <= lam + 0.02
    gain = rates(grad_vs_lag(bb, x, torch.ones(16, dtype=torch.float64))).gain
    assert gain <= lam + 0.02


def test_an_unconstrained_lru_forgets_slower_than_the_bound_would_allow():
    """The check can fail: the same training without --stable leaves modes near |λ| = 1."""
    bb = fit(build("lru", layers=1, seq_len=64)).double()
    x = torch.randn(16, 64, 3, dtype=torch.float64)
    ks = k_grid(64)
    errs, floor = truncation_error(bb, x, ks)
    assert decay_rate(ks, errs, floor) > 0.8


def test_mamba_decay_is_bounded_by_its_largest_exp_delta_a():
    """Input-dependent decay: whatever Δ the inputs give, the gradient against lag falls at
    ≤ max exp(Δ_t·A) per step. With Δ's bias raised (Δ ≈ 1, so decays ≈ e^{−1}) the bound is
    far below 1 and the measured rate sits under it."""
    bb = build("mamba", layers=1, seq_len=64).double()
    with torch.no_grad():
        bb.mixers[0].dt_proj.bias.fill_(math.log(math.expm1(1.0)))  # softplus⁻¹(1)
    x = torch.randn(8, 64, 3, dtype=torch.float64)
    g = grad_vs_lag(bb.eval(), x, torch.ones(16, dtype=torch.float64))
    bound = bb.max_decay()
    assert bound < 0.6
    assert rates(g).gain <= bound + 0.02
    errs, floor = truncation_error(bb, x, k_grid(64))
    assert decay_rate(k_grid(64), errs, floor) <= bound + 0.02


@pytest.mark.parametrize("name", ["s4d", "mamba", "linear-attention"])
def test_stable_is_refused_where_it_is_not_defined(cli, tmp_path, name):
    r = cli("--db", tmp_path / "s.db", "train", "--model", name, "--task", "mqar", "--stable")
    assert r.exit_code == 2
    assert "--stable is defined for" in r.output and name in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_trained_stable_lru_forgets_at_lambda_through_train_and_stress(
    cli, tmp_path, monkeypatch
):
    """The product's own path: `train --stable --lam 0.6` on the linear teacher at λ = 0.9 (a
    task that rewards memory), then `stress --run` on the checkpoint. The stored decay of its
    own truncation error and its gradient gain are ≤ 0.6; the unconstrained LRU trained the
    same way keeps modes near 1 (the control)."""
    import sqlite3

    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "l.db")
    common = ["-t", "teacher", "--steps", "60", "--seq-len", "64", "--save-checkpoint", "-q"]
    common += ["--set", "teacher_kind=linear", "--set", "layers=1", "--set", "hidden=16"]
    r = cli("--db", db, "train", "-m", "lru", "--stable", "--lam", "0.6", *common)
    assert r.exit_code == 0, r.output
    r = cli("--db", db, "train", "-m", "lru", *common)
    assert r.exit_code == 0, r.output
    r = cli("--db", db, "stress", "--models", "", "--run", "1", "--run", "2", "--seq-len", "64",
            "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    con = sqlite3.connect(db)
    got = dict(
        con.execute(
            "SELECT json_extract(s.config, '$.source'), d.value || ',' || g.value FROM runs s "
            "JOIN summaries d ON d.run_id = s.id AND d.key = 'decay_rate' "
            "JOIN summaries g ON g.run_id = s.id AND g.key = 'gain' WHERE s.kind = 'stress'"
        ).fetchall()
    )
    con.close()
    held, free = got["run 1"], got["run 2"]
    decay, gain = map(float, held.split(","))
    assert decay <= 0.6 + 0.01 and gain <= 0.6 + 0.01, held
    assert float(free.split(",")[0]) > 0.8, free


@pytest.mark.parametrize("name", NEW)
def test_bf16_autocast_trains(name):
    """--set precision=bf16: the projections in bf16, the scan and the FFT in fp32, and no
    warning (the selective SSM's norms had warned of a bf16 input beside an fp32 weight on
    every step: its residual stream is fp32 now, as the reference's residual_in_fp32)."""
    bb = build(name).train()
    with torch.autocast("cpu", dtype=torch.bfloat16), warnings.catch_warnings():
        warnings.simplefilter("error")
        y, _ = bb(torch.randn(2, 24, 3))
    y.float().sum().backward()
    grads = [p.grad for p in bb.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


@pytest.mark.parametrize(
    ("name", "lr", "own"),
    [
        ("lru", 0.01, 0.005),  # minimal-LRU: lr_factor 0.5 on ν, θ, γ, B
        ("s4d", 0.01, 0.001),  # state-spaces/s4's example: min(0.001, lr) on A and Δ
        ("s4d", 1e-4, 1e-4),
        ("mamba", 0.01, None),  # mamba_simple trains all at one rate
        ("lstm", 0.01, None),
    ],
)
def test_each_parameter_moves_at_the_rate_its_reference_trains_it(name, lr, own):
    """Measured on the weights: Adam's first step moves every element whose gradient is not
    zero by its learning rate × |g|/(|g| + 1e-8) (m̂/√v̂ = ±1 but for Adam's ε: within 2% for
    any |g| > 5e-7), so the largest move of each parameter is the rate it was trained at. The
    recurrence's own parameters move at the reference's rate, every other one at `lr`."""
    from seqbench.configure import make_config
    from seqbench.models import MODELS
    from seqbench.training.setup import make_optimizer

    own_names = (MODELS.get(name).own_lr or ((), None))[0]
    assert bool(own_names) == (own is not None)
    bb = build(name).train()
    before = {n: p.detach().clone() for n, p in bb.named_parameters()}
    opt = make_optimizer(make_config(name, "teacher", {"lr": lr}), bb)
    y, _ = bb(torch.randn(4, 24, 3))
    (y * torch.randn_like(y)).sum().backward()  # (the square of a normed output is flat)
    opt.step()
    seen = set()
    for n, p in bb.named_parameters():
        moved = (p.detach() - before[n]).abs().max().item()
        if p.grad is None or p.grad.abs().max() < 1e-6:  # too small for Adam's ε to spare
            continue
        last = n.rsplit(".", 1)[-1]
        want = own if last in own_names else lr
        assert moved == pytest.approx(want, rel=0.02), (n, moved, want)
        seen.add(last)
    assert set(own_names) <= seen  # every named parameter exists and was measured
