"""--stable measured from the outside: after projection, every family it applies to forgets
its past at ≤ λ per step on arbitrary inputs (the truncation error of its own output against
k, and the gradient of its last output against lag), whatever weights it started from. The
controls, unprojected, do not decay: the measurement can fail."""

import math

import numpy as np
import pytest
import torch

from seqbench.configure import make_config
from seqbench.errors import UsageError
from seqbench.models import MODELS, make_backbone
from seqbench.stress.analysis import decay_rate, truncation_error

KS = [1, 2, 3, 4, 6, 8, 12, 16]
STABLE = [m for m in MODELS if MODELS.get(m).stable and not MODELS.get(m).wraps_base]


def _backbone(model, lam, stable=True, in_dim=3, **over):
    cfg = make_config(model, "adding", {"stable": stable, "lam": lam, "hidden": 24, **over})
    bb = make_backbone(model, in_dim, cfg.model_args())
    assert bb.recurrent_depth == cfg.layers  # the backbone's own count of its recurrences
    return bb


def _scramble_(bb, saturate_forget=False):
    """The worst starting points: large recurrent weights, or none at all with the forget gate
    saturated (W_hh = 0 and forget bias 10 keep a value forever in a plain LSTM)."""
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in bb.named_parameters():
            if saturate_forget and "weight_hh" in name:
                p.zero_()
            elif saturate_forget and name.startswith("rnn.bias_ih"):
                H = p.numel() // 4
                p[H : 2 * H].fill_(10.0)
            elif saturate_forget and name.startswith("rnn.weight_ih"):
                p.normal_(0.0, 1.0)
                H = p.shape[0] // 4
                p[H : 2 * H].zero_()  # no input opens the forget gate: f = σ(10) always
            elif "weight_hh" in name or name.endswith(".u"):
                p.normal_(0.0, 1.5 if p.dim() == 2 else 2.0)
            else:
                p.normal_(0.0, 1.0)


def _inputs(T=64):
    g = torch.Generator().manual_seed(7)
    return 10.0 * torch.randn(32, T, 3, generator=g)  # far outside any task's range


def _rates(bb):
    """(the per-step decay of the truncation error, the errors). L stacked contractions leave
    an error of order k^(L−1) λ^k, so the rate is fitted to e(k) / k^(L−1)."""
    x = _inputs()
    errs, floor = truncation_error(bb, x, KS)
    return decay_rate(KS, errs, floor, bb.recurrent_depth), errs


def _gradient_rate(bb, T=40):
    """exp(slope) of log ‖∂y_T / ∂x_t‖ against the lag T − t."""
    x = _inputs(T).requires_grad_(True)
    bb(x)[0][:, -1].sum().backward()
    g = x.grad.norm(dim=(0, 2)).double().numpy()[::-1]  # lag 0, 1, ...
    lags = np.arange(T)
    g = g / (lags + 1.0) ** (bb.recurrent_depth - 1)  # as _rates: k^(L−1) λ^k
    keep = g > 1e-30 * g[0]
    return float(np.exp(np.polyfit(lags[keep][:20], np.log(g[keep][:20]), 1)[0]))


@pytest.mark.parametrize("model", STABLE)
@pytest.mark.parametrize("lam", [0.5, 0.8])
def test_after_projection_the_past_decays_at_lambda_per_step(model, lam):
    bb = _backbone(model, lam)
    for saturate in (False, True) if model == "lstm" else (False,):
        _scramble_(bb, saturate)
        bound = bb.project_(lam)
        assert bound <= lam + 2e-8  # λ itself, as float32 holds it
        rate, errs = _rates(bb)
        assert not math.isnan(rate), errs
        assert rate <= lam + 0.02, (rate, errs)
        # each k: within a constant of λ^k (L stacked layers: of k^(L−1) λ^k), not only on
        # average
        ks = np.array(KS[1:])
        most = errs[0] * ks ** (bb.recurrent_depth - 1) * lam ** (ks - 1) * 1.05 + 1e-12
        assert np.all(errs[1:] <= most), (errs, most)
        assert _gradient_rate(bb) <= lam + 0.02


def test_the_control_an_lstm_with_a_saturated_forget_gate_keeps_its_past():
    bb = _backbone("lstm", 0.5, stable=False)
    _scramble_(bb, saturate_forget=True)
    rate, errs = _rates(bb)
    assert rate > 0.9 and errs[-1] > 0.5, (rate, errs)
    assert bb.stability_bound() is None  # no forget cap: no bound to report


def test_the_old_gate_block_bound_alone_left_that_lstm_unstable():
    """S ≤ λ on the recurrent blocks (what --stable did before) holds for W_hh = 0, yet the
    cell keeps its value: the forget cap is what makes it a contraction."""
    from seqbench.models.recurrent import lstm_bound

    bb = _backbone("lstm", 0.5, stable=False)
    _scramble_(bb, saturate_forget=True)
    assert lstm_bound(bb.rnn.weight_hh_l0) == 0.0 <= 0.5
    assert _rates(bb)[0] > 0.9


def test_a_two_layer_stable_lstm_decays_too():
    bb = _backbone("lstm", 0.5, layers=2)
    _scramble_(bb, saturate_forget=True)
    bb.project_(0.5)
    assert _rates(bb)[0] <= 0.5 + 0.05


def test_forget_cap_defaults_to_half_lambda_and_is_checked():
    assert make_config("lstm", "adding", {"stable": True, "lam": 0.8}).forget_cap == 0.4
    cfg = make_config("window", "adding", {"stable": True, "lam": 0.6, "base": "lstm", "k": 4})
    assert cfg.forget_cap == 0.3
    assert make_config("lstm", "adding", {}).forget_cap is None
    assert make_config("rnn", "adding", {"stable": True}).forget_cap is None
    with pytest.raises(UsageError, match="forget_cap is the forget-gate cap"):
        make_config("lstm", "adding", {"forget_cap": 0.3})
    with pytest.raises(UsageError, match="forget_cap is not read by rnn"):
        make_config("rnn", "adding", {"stable": True, "forget_cap": 0.3})
    for bad in (0.0, 0.8, 1.2, -0.1):
        with pytest.raises(UsageError, match=r"forget_cap must be in \(0, lam"):
            make_config("lstm", "adding", {"stable": True, "lam": 0.8, "forget_cap": bad})


def test_a_larger_forget_cap_keeps_a_longer_memory_within_the_bound():
    """The split is the user's: forget_cap = 0.45 of λ = 0.5 leaves the recurrent blocks 0.05,
    and the model still decays at ≤ λ."""
    bb = _backbone("lstm", 0.5, forget_cap=0.45)
    _scramble_(bb, saturate_forget=True)
    assert bb.project_(0.5) <= 0.5 + 1e-9
    assert _rates(bb)[0] <= 0.5 + 0.02


def test_the_stable_lstm_is_torch_lstm_with_its_forget_gate_scaled():
    """forget_cap → 1 would be torch.nn.LSTM itself: with the cap's factor folded back in, the
    capped loop matches the fused kernel to rounding (same parameters, same states)."""
    bb = _backbone("lstm", 0.5)
    x = torch.randn(4, 30, 3)
    bb.forget_cap = 1.0  # the loop with an uncapped gate
    y_loop, (h, c) = bb(x)
    assert torch.equal(h[0], y_loop[:, -1])
    bb.forget_cap = None
    y_fused, (_, c2) = bb(x)
    torch.testing.assert_close(y_loop, y_fused, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(c, c2, rtol=1e-5, atol=1e-6)


def test_a_trained_stable_lstm_forgets_at_lambda_and_cannot_solve_adding(store):
    """Trained on adding at T = 100 with λ = 0.5 (the marked values lie up to 100 steps back,
    where 0.5^50 ≈ 1e-15 of them reaches the output): its own weights decay at ≤ λ, measured
    by `stress --run` on its checkpoint, and it stays on the task's plateau (the 1/6 of
    predicting the mean). docs/reproductions.md has the full 5000-step run beside the
    unconstrained LSTM, which solves it."""
    from seqbench import api
    from seqbench.stress.runner import stress

    out = api.train(
        "lstm", "adding", db=store, seq_len=100, steps=300, hidden=16, stable=True, lam=0.5,
        lr=1e-2, eval_size=256, save_checkpoint=True,
    )  # fmt: skip
    assert out.config.forget_cap == 0.25 and out.summaries["stability_bound"] <= 0.5
    assert out.summaries["test_metric"] > 0.1
    (res,) = stress(store, [], seq_len=100, runs=[str(out.run_id)], batch=16)
    assert res.decay <= 0.5 + 0.02, res.decay
