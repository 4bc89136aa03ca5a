import json
import math
import os

import numpy as np
import pytest
import torch

from seqbench import api
from seqbench.errors import SeqbenchError, UnknownNameError, UsageError
from seqbench.models.base import Backbone
from seqbench.stress.analysis import grad_vs_lag, k_grid, rates, truncation_error
from seqbench.stress.backbones import fresh_backbone
from seqbench.stress.runner import analyse, stress


class LinearRNN(Backbone):
    """Oracle: h_t = W h_{t-1} + x_t with W = λQ, Q orthogonal, so ‖(W^T)^L v‖ = λ^L ‖v‖."""

    recurrent = True

    def __init__(self, n: int, lam: float, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        q, _ = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=torch.float64))
        self.W = torch.nn.Parameter(lam * q)
        self.out_dim = n

    def forward(self, x, state=None):
        h = torch.zeros(x.shape[0], self.out_dim, dtype=x.dtype)
        out = []
        for t in range(x.shape[1]):
            h = h @ self.W.T + x[:, t]
            out.append(h)
        return torch.stack(out, 1), h


@pytest.mark.parametrize(
    ("lam", "T", "verdict"),
    [
        (0.9, 200, "vanishing"),  # 0.9^199 ≈ 8e-10: below rtol 1e-6 within the window
        (0.9, 120, "stable"),  # 0.9^119 ≈ 4e-6: above the threshold to the last lag
        (0.99, 2000, "vanishing"),
        (0.998, 2000, "stable"),  # γ outside ε, but 0.998^1999 ≈ 0.02: never below rtol·g(0)
        (1.0, 120, "stable"),
        (1.05, 120, "exploding"),
    ],
)
def test_linear_rnn_gradient_is_exactly_lambda_to_the_lag(lam, T, verdict):
    bb = LinearRNN(6, lam)
    x = torch.randn(1, T, 6, dtype=torch.float64)
    readout = torch.zeros(6, dtype=torch.float64)
    readout[0] = 1.0
    g = grad_vs_lag(bb, x, readout)
    np.testing.assert_allclose(g, lam ** np.arange(T), rtol=1e-9)
    r = rates(g)
    assert r.gain == pytest.approx(lam, rel=1e-9) and r.verdict == verdict


def test_a_finite_context_model_is_called_so():
    """A gradient that is exactly zero past some lag is a finite context, not vanishing."""
    g = np.concatenate([np.full(13, 0.5), np.zeros(67)])
    r = rates(g)
    assert (r.verdict, r.horizon) == ("finite-context", 12)
    assert rates(np.full(80, 0.5)).verdict == "stable"
    underflow = np.concatenate([0.5 * 0.5 ** np.arange(40), np.zeros(40)])  # fades, then 0
    assert rates(underflow).verdict == "vanishing"


def test_linear_rnn_truncation_error_decays_like_lambda():
    bb = LinearRNN(8, 0.7)
    x = torch.randn(4, 64, 8, dtype=torch.float64)
    ks = k_grid(64)
    errs, floor = truncation_error(bb, x, ks)
    from seqbench.stress.analysis import decay_rate

    assert decay_rate(ks, errs, floor) == pytest.approx(0.7, rel=0.02)
    assert errs[-1] == 0.0


def test_indrnn_unit_gradient_scales_as_u_to_the_lag():
    T = 100  # IndRNN keeps its state in fp32: 0.5^T must stay a normal float32
    bb, _ = fresh_backbone("indrnn", T, 5, seed=0, in_dim=5)
    bb = bb.double().eval()
    layer = bb.layers[0]
    bb.layers = torch.nn.ModuleList([layer])  # one layer: unit n sees only x_n
    with torch.no_grad():
        layer.proj.weight.copy_(torch.eye(5, dtype=torch.float64))
        layer.proj.bias.fill_(1.0)  # positive pre-activations: the ReLU is the identity
        layer.u.copy_(torch.tensor([0.5, 0.9, 0.99, 1.0, 1.003]))
    bb.u_max = 2.0
    layer.u_max = 2.0
    x = torch.rand(1, T, 5, dtype=torch.float64)
    for n, u in enumerate(layer.u.tolist()):
        e = torch.zeros(5, dtype=torch.float64)
        e[n] = 1.0
        g = grad_vs_lag(bb, x, e)
        np.testing.assert_allclose(g, np.abs(u) ** np.arange(T), rtol=1e-5)


def test_tcn_gradient_is_zero_beyond_its_receptive_field_and_truncation_is_exact():
    from seqbench.models import make_backbone
    from seqbench.models.base import ModelArgs

    torch.manual_seed(0)
    bb = make_backbone("tcn", 2, ModelArgs(hidden=8, kernel_size=3, levels=3, seq_len=100)).eval()
    rf = bb.receptive_field  # 1 + 2·2·7 = 29
    x = torch.randn(2, 100, 2)
    g = grad_vs_lag(bb, x, torch.ones(8) / 8**0.5)
    assert (g[rf:] == 0).all() and (g[:rf] > 0).sum() > rf // 2
    errs, _ = truncation_error(bb, x, [1, 4, rf // 2, rf, rf + 1, 100])
    assert errs[2] > 0 and errs[3] == errs[4] == errs[5] == 0.0


@pytest.mark.parametrize("base", ["gru", "indrnn"])
def test_window_model_has_zero_truncation_error_from_its_size_on(base):
    from seqbench.models import make_backbone
    from seqbench.models.base import ModelArgs

    torch.manual_seed(0)
    bb = make_backbone("window", 2, ModelArgs(hidden=8, k=10, base=base, seq_len=50)).eval()
    errs, floor = truncation_error(bb, torch.randn(2, 50, 2), [1, 5, 9, 10, 11, 32, 50])
    # zero up to rounding: the fused kernels may sum in another order for another batch size
    assert errs[1] > 100 * floor and max(errs[3:]) <= floor


def test_exploding_gradients_are_stored_as_inf_and_read_back(store):
    bb = LinearRNN(4, 1.5).float()
    res = analyse(bb, model="linear", seed=0, seq_len=400, batch=1, in_dim=4, dtype=torch.float32)
    assert np.isinf(res.grad).any() and res.verdict == "exploding"
    from seqbench.stress.runner import save

    run_id = save(store, res, {"seq_len": 400})
    back = np.array([v for _, v in store.curve(run_id, "grad_norm")])
    assert np.array_equal(np.isinf(back), np.isinf(res.grad))
    assert np.array_equal(np.isnan(back), np.isnan(res.grad))
    finite = np.isfinite(res.grad)
    np.testing.assert_array_equal(back[finite], res.grad[finite])
    assert store.summaries(run_id)["verdict"] == 1.0


def test_stress_stores_curves_and_summaries(store):
    results = stress(store, ["rnn", "indrnn", "tcn"], seq_len=300, hidden=16, batch=2, seeds=[0, 1])
    assert len(results) == 6
    for r in results:
        run = store.get_run(r.run_id)
        assert run.kind == "stress" and run.status == "completed"
        assert len(store.curve(r.run_id, "grad_norm")) == 300
        assert [x for x, _ in store.curve(r.run_id, "truncation_error")] == k_grid(300)
        s = store.summaries(r.run_id)
        assert {"gain", "horizon", "verdict", "decay_rate"} <= set(s)
    rnn = [r for r in results if r.model == "rnn"]
    assert all(r.verdict == "vanishing" and r.gain < 0.9 for r in rnn)
    assert not np.array_equal(rnn[0].grad, rnn[1].grad)  # seeds differ
    ind = next(r for r in results if r.model == "indrnn")
    assert ind.spectra["max_abs_u"] <= 2 ** (1 / 300) + 1e-7


def test_stress_a_trained_run_from_its_checkpoint(store):
    out = api.train(
        "rnn", "adding", db=store, seq_len=20, steps=5, hidden=8, save_checkpoint=True, eval_size=32
    )
    (res,) = stress(store, [], seq_len=50, runs=[str(out.run_id)], batch=1)
    assert res.source == f"run {out.run_id}" and res.model == "rnn"
    # the stress row records the trained model's width, not --hidden's default for fresh ones
    assert store.get_run(res.run_id).config["hidden"] == 8


@pytest.mark.parametrize(
    ("kw", "err", "msg"),
    [
        ({"seq_len": 0}, UsageError, "seq-len must be positive"),
        ({"models": ["lstn"]}, UnknownNameError, "Did you mean 'lstm'"),
        ({"runs": ["99"]}, SeqbenchError, "no run '99'"),
        ({"seq_len": 10**9}, UsageError, "needs about"),
        ({"dtype": "float16"}, UsageError, "dtype must be"),
    ],
)
def test_bad_input_writes_nothing(store, kw, err, msg):
    kw = {"models": ["rnn"], **kw}
    models = kw.pop("models")
    with pytest.raises(err, match=msg):
        stress(store, models, **{"hidden": 8, "batch": 1, **kw})
    assert store.list_runs() == []


def test_run_without_checkpoint_is_refused(store):
    out = api.train("rnn", "adding", db=store, seq_len=20, steps=3, hidden=8, eval_size=32)
    with pytest.raises(SeqbenchError, match="has no checkpoint"):
        stress(store, [], runs=[str(out.run_id)])
    assert [r.kind for r in store.list_runs()] == ["train"]


def test_cli_stress_table_json_and_plot(cli, tmp_path):
    png = tmp_path / "s.png"
    result = cli(
        "stress",
        "--models",
        "rnn,indrnn",
        "--seq-len",
        "200",
        "--hidden",
        "8",
        "--batch",
        "1",
        "--plot",
        png,
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["model"] for r in rows] == ["rnn", "indrnn"]
    assert rows[0]["verdict"] == "vanishing" and math.isfinite(rows[0]["gain γ"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    bad = cli("stress", "--models", "rnn", "--seq-len", "-3")
    assert bad.exit_code == 2 and bad.stderr.startswith("Error: seq-len must be positive")


def test_two_stores_in_one_directory_keep_their_own_checkpoints(tmp_path, monkeypatch):
    """Both stores have a run 1; each stress --run loads its own run's weights, and a
    checkpoint of another config is refused rather than analysed."""
    from seqbench.store.opening import open_store

    monkeypatch.chdir(tmp_path)
    stores = [open_store(tmp_path / f"{name}.db") for name in ("a", "b")]
    kw = {"seq_len": 20, "steps": 5, "save_checkpoint": True, "eval_size": 32}
    outs = [
        api.train("rnn", "adding", db=s, hidden=h, **kw)
        for s, h in zip(stores, (8, 12), strict=True)
    ]
    assert outs[0].run_id == outs[1].run_id == 1
    paths = [s.get_run(1).checkpoint for s in stores]
    assert paths[0] != paths[1] and all(os.path.exists(p) for p in paths)
    for s, h in zip(stores, (8, 12), strict=True):
        (res,) = stress(s, [], seq_len=30, runs=["1"], batch=1)
        assert s.get_run(res.run_id).config["hidden"] == h
    stores[0].update_run(1, checkpoint=paths[1])  # a's run 1 pointed at b's weights
    with pytest.raises(SeqbenchError, match="holds the weights of another config"):
        stress(stores[0], [], seq_len=30, runs=["1"], batch=1)
    for s in stores:
        s.dispose()


def test_a_stable_lstm_from_before_the_forget_cap_is_refused(store):
    """A --stable LSTM stored before forget_cap existed ran with an uncapped forget gate;
    resolved again it would get today's cap, so stress --run refuses it rather than analyse
    its weights in a model they were not trained in. Today's capped one is analysed."""
    import torch

    from seqbench.training.checkpoint import load_checkpoint

    kw = {"seq_len": 20, "steps": 3, "hidden": 8, "eval_size": 32, "save_checkpoint": True}
    out = api.train("lstm", "adding", db=store, stable=True, lam=0.8, **kw)
    run = store.get_run(out.run_id)
    assert run.config["forget_cap"] == 0.4
    (res,) = stress(store, [], seq_len=30, runs=[str(out.run_id)], batch=1)
    assert res.source == f"run {out.run_id}"
    old = {k: v for k, v in run.config.items() if k != "forget_cap"}  # as stored before 0.4
    ck = load_checkpoint(run.checkpoint)
    ck["config"] = old
    torch.save(ck, run.checkpoint)
    store.update_run(run.id, config=old)
    before = len(store.list_runs())
    with pytest.raises(SeqbenchError, match="before the forget-gate cap"):
        stress(store, [], seq_len=30, runs=[str(run.id)], batch=1)
    assert len(store.list_runs()) == before


def _under_address_limit(limit: int):
    import resource

    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return set_limit


def test_a_state_past_the_address_space_limit_is_refused_and_no_store_left(tmp_path):
    """`stress --models lru --seq-len 20 --set d_state=1000000` under an 8 GB address-space
    limit: a 171-line traceback at 6.6 GB and an empty store left behind. The fit check read
    free memory alone; it now honours RLIMIT_AS (and a cgroup's memory.max), and the store is
    opened only once the input has passed every check."""
    import subprocess
    import sys

    exe = os.path.join(os.path.dirname(sys.executable), "seqbench")
    cases = [
        (["stress", "--models", "lru", "--seq-len", "20", "--set", "d_state=1000000"],
         "is available: lower --seq-len, --batch, --hidden, --set d_state"),
        (["stress", "--models", "nope"], "nope"),
        (["stress", "--models", "rnn", "--eps", "2"], "--eps"),
        (["stress", "--models", "rnn", "--set", "task=adding"], "task"),
    ]  # fmt: skip
    for args, said in cases:
        r = subprocess.run([exe, *args], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300, preexec_fn=_under_address_limit(8 * 10**9))  # fmt: skip
        assert r.returncode != 0 and said in r.stderr, (args, r.stderr[-2000:])
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert list(tmp_path.iterdir()) == [], (args, list(tmp_path.iterdir()))
