import math

import pytest
import torch

from seqbench.errors import UnknownNameError, UsageError
from seqbench.models import MODELS, build_model, fit_size, make_backbone
from seqbench.models.base import ModelArgs, count_params
from seqbench.models.indrnn import indrnn_bounds
from seqbench.models.tcn import tcn_levels_for, tcn_receptive_field
from seqbench.tasks import make_task
from seqbench.tasks.base import TaskArgs

ALL = MODELS.names()


@pytest.fixture(scope="module")
def adding():
    return make_task("adding", TaskArgs(seq_len=40))


@pytest.fixture(scope="module")
def teacher():
    return make_task("teacher", TaskArgs(seq_len=40))


def _model(name, task, **kw):
    torch.manual_seed(0)
    args = ModelArgs(seq_len=task.seq_len, **{"hidden": 16, **kw})
    if name in ("window", "gcnn", "transformer") and "k" not in kw:
        args = args.with_(k=8)
    return build_model(name, task, args).eval()


def _x(shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("name", ALL)
def test_shapes_for_both_readouts(name, adding, teacher):
    m = _model(name, adding)
    assert m(_x((3, 40, 2))).shape == (3, 1)
    m = _model(name, teacher)
    assert m(_x((3, 40, 4))).shape == (3, 40, 1)
    assert m(_x((1, 1, 4))).shape == (1, 1, 1)


@pytest.mark.parametrize("name", ALL)
def test_causal(name, teacher):
    m = _model(name, teacher)
    x = _x((2, 40, 4))
    x2 = x.clone()
    x2[:, 25:] += 1.0  # perturb the future from t = 25 on
    y, y2 = m(x), m(x2)
    torch.testing.assert_close(y[:, :25], y2[:, :25], rtol=0, atol=1e-6)
    assert not torch.allclose(y[:, 25:], y2[:, 25:])


@pytest.mark.parametrize("name", ALL)
def test_gradients_reach_every_parameter(name, teacher):
    m = _model(name, teacher, layers=2).train()
    out = m(_x((4, 40, 4)))
    out.pow(2).mean().backward()
    for pname, p in m.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname
        assert p.grad.abs().sum() > 0, f"{name}: no gradient reaches {pname}"


def test_tbptt_cuts_the_gradient_at_chunk_boundaries(teacher):
    m = _model("rnn", teacher)
    x = _x((2, 40, 4)).requires_grad_()
    out = m(x, tbptt=10)
    out[:, -1].sum().backward()  # loss at the last step only
    g = x.grad.abs().sum(dim=(0, 2))  # (T,)
    assert (g[:30] == 0).all() and (g[30:] > 0).all()
    # ...while the state is carried: the output differs from a fresh start at the last chunk
    assert not torch.allclose(out[:, 30:], m(x[:, 30:].detach()))


@pytest.mark.parametrize("name", ["rnn", "lstm", "gru", "indrnn"])
@pytest.mark.parametrize(("T", "k"), [(100, 4), (100, 8), (100, 32), (41, 10), (7, 3), (12, 12)])
def test_a_last_step_loss_gets_gradient_through_exactly_k_inputs(name, T, k):
    """Truncated BPTT of length k with a loss on the last output: the gradient reaches the
    last k inputs and nothing before them, whatever T mod k is."""
    task = make_task("adding", TaskArgs(seq_len=T))
    m = _model(name, task).train()
    x = _x((3, T, 2)).requires_grad_()
    m(x, tbptt=k).sum().backward()
    reached = (x.grad.abs().sum(dim=(0, 2)) > 0).nonzero().flatten().tolist()
    assert reached == list(range(T - k, T))


def test_tbptt_chunks_end_aligned():
    from seqbench.models.base import tbptt_chunks

    assert tbptt_chunks(10, 4) == [(0, 2), (2, 6), (6, 10)]
    assert tbptt_chunks(8, 4) == [(0, 4), (4, 8)]
    assert tbptt_chunks(3, 1) == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize(("K", "L"), [(2, 1), (3, 3), (7, 8), (5, 4)])
def test_tcn_receptive_field_formula_and_levels(K, L):
    assert tcn_receptive_field(K, L) == 1 + 2 * (K - 1) * (2**L - 1)
    rf = tcn_receptive_field(K, L)
    assert tcn_levels_for(rf, K) == L and tcn_levels_for(rf + 1, K) == L + 1


def test_tcn_output_is_independent_of_inputs_beyond_its_receptive_field(teacher):
    m = _model("tcn", teacher, kernel_size=3, levels=2)  # rf = 1 + 2·2·3 = 13
    rf = m.backbone.receptive_field
    assert rf == 13
    x = _x((1, 40, 4))
    t = 39
    far, near = x.clone(), x.clone()
    far[:, t - rf] += 10.0  # lag rf: just outside
    near[:, t - rf + 1] += 10.0  # lag rf - 1: just inside
    assert torch.equal(m(x)[:, t], m(far)[:, t])
    assert not torch.allclose(m(x)[:, t], m(near)[:, t])


def test_tcn_k_chooses_levels_and_resizes_the_last(teacher):
    m = _model("tcn", teacher, k=20, kernel_size=7)  # 1 level sees 13: a second adds 7 lags
    assert m.backbone.receptive_field == 20 and m.backbone.levels == 2
    assert m.backbone.plan[-1] == ((7, 1), (2, 1))  # 6·1 + 1·1 = 7
    with pytest.raises(UsageError, match="not both"):
        _model("tcn", teacher, k=100, levels=3)


def _std_close(w, std, rel=0.15):
    return abs(float(w.detach().std()) - std) < rel * std


@pytest.mark.parametrize("init", ["reference", "paper"])
def test_tcn_init_of_every_layer_by_its_effective_weights(init, teacher):
    """reference (locuslab/TCN's code): the dilated convs keep Conv1d's kaiming-uniform (its
    N(0, 0.01) draw is undone by weight norm), the 1×1 downsample and the output layer get
    N(0, 0.01). paper (its text): every conv N(0, 0.01)."""
    m = _model("tcn", teacher, hidden=64, levels=4, init=init)
    for i, block in enumerate(m.backbone.blocks):
        for conv in (block.conv1.conv, block.conv2.conv):
            w = conv.weight  # the effective weight g·v/‖v‖, what the forward uses
            fan_in = w.shape[1] * w.shape[2]
            want = 1 / math.sqrt(3 * fan_in) if init == "reference" else 0.01
            if w.numel() >= 500:  # enough entries for the std to mean something
                assert _std_close(w, want), (i, init, float(w.std()), want)
            if init == "reference":  # uniform: bounded by 1/sqrt(fan_in)
                assert float(w.detach().abs().max()) <= 1 / math.sqrt(fan_in) + 1e-6
        if block.downsample is not None:
            assert _std_close(block.downsample.weight, 0.01, rel=0.5)
    assert _std_close(m.head.weight, 0.01, rel=0.5)
    assert m.backbone.blocks[0].downsample is not None  # in_dim 4 -> 64 channels


def test_tcn_reference_init_matches_the_published_code_no_op(teacher):
    """The published block: weight_norm(Conv1d) then weight.data.normal_(0, 0.01), which the
    next forward recomputes away. Its effective weights have the std of seqbench's."""
    from torch import nn
    from torch.nn.utils import weight_norm as old_weight_norm

    torch.manual_seed(0)
    with pytest.warns(FutureWarning):  # deprecated, but it is what the reference ran
        conv = old_weight_norm(nn.Conv1d(64, 64, 7, dilation=2))
    conv.weight.data.normal_(0, 0.01)  # the reference's init_weights
    conv(torch.zeros(1, 64, 20))  # the pre-forward hook recomputes weight from g and v
    ref_std = float(conv.weight.detach().std())
    m = _model("tcn", teacher, hidden=64, levels=2)
    ours = float(m.backbone.blocks[1].conv1.conv.weight.detach().std())
    assert abs(ours - ref_std) < 0.1 * ref_std and ref_std > 2 * 0.01  # not the text's 0.01


def test_indrnn_bounds_and_init(teacher):
    """The authors' adding-problem script: u ~ U(0, u_max), the last layer U(u_min, u_max);
    input weights N(0, 0.001), biases 0; the output layer Lasagne's default, Glorot-uniform
    with bias 0."""
    T = 1000
    u_min, u_max = indrnn_bounds(T, 2.0)
    assert u_max == pytest.approx(1.000693, abs=1e-6) and u_min == pytest.approx(2 ** (-1 / T))
    m = build_model("indrnn", teacher, ModelArgs(seq_len=T, hidden=256, layers=3))
    layers = m.backbone.layers
    u = [layer.u.detach() for layer in layers]
    for v in u[:-1]:
        assert float(v.min()) >= 0 and float(v.max()) <= u_max
    assert float(u[-1].min()) >= u_min and float(u[-1].max()) <= u_max
    for layer in layers:
        assert _std_close(layer.proj.weight, 0.001)
        assert torch.all(layer.proj.bias == 0)
    assert layers[0].u.dtype == torch.float32
    bound = math.sqrt(6 / (256 + m.head.out_features))
    assert float(m.head.weight.detach().abs().max()) <= bound + 1e-7
    assert _std_close(m.head.weight, bound / math.sqrt(3), rel=0.3)
    assert torch.all(m.head.bias == 0)
    with torch.no_grad():
        layers[0].u.fill_(5.0)
    m.constrain_()
    assert float(layers[0].u.detach().max()) == pytest.approx(u_max)


def test_deep_indrnn_init_and_layout(teacher):
    """`deep` is the authors' sequential-MNIST plain network: input weights kaiming-uniform
    (a = 8, fan in), biases 0, batch norm (1, 0) after each IndRNN layer, no residual; the
    classifier kaiming-normal (fan in) with bias 0."""
    H = 128
    m = build_model("indrnn", teacher, ModelArgs(seq_len=64, hidden=H, layers=3, deep=True))
    bb = m.backbone
    for layer in bb.layers:
        w = layer.proj.weight
        fan_in = w.shape[1]
        bound = math.sqrt(2 / (1 + 8**2)) * math.sqrt(3 / fan_in)
        assert float(w.detach().abs().max()) <= bound + 1e-7
        if w.numel() >= 1000:
            assert _std_close(w, bound / math.sqrt(3))
        assert torch.all(layer.proj.bias == 0)
    for bn in bb.norms:
        assert torch.all(bn.weight == 1) and torch.all(bn.bias == 0)
    assert _std_close(m.head.weight, math.sqrt(2 / H), rel=0.3)
    assert torch.all(m.head.bias == 0)
    # no residual: the output is BN(layer(h)) composed, layer by layer
    m.eval()
    x = _x((2, 9, teacher.in_dim))
    h = x
    with torch.no_grad():
        for layer, bn in zip(bb.layers, bb.norms, strict=True):
            h = bn(layer(h, None).transpose(1, 2)).transpose(1, 2)
        torch.testing.assert_close(bb(x)[0], h)


def test_weight_decay_spares_what_the_reference_spares(teacher):
    """IndRNN's scripts keep u and every bias out of weight decay; other families decay all."""
    from seqbench.configure import make_config
    from seqbench.models import param_groups

    cfg = make_config("indrnn", "digits", {"weight_decay": 1e-4})
    m = build_model("indrnn", teacher, ModelArgs(seq_len=20, hidden=8, deep=True))
    decay, free = param_groups(cfg, m)
    names = {id(p): n for n, p in m.named_parameters()}
    assert decay["weight_decay"] == 1e-4 and free["weight_decay"] == 0.0
    assert {names[id(p)].rsplit(".", 1)[-1] for p in free["params"]} == {"u", "bias"}
    assert all(names[id(p)].endswith("weight") for p in decay["params"])
    lstm = build_model("lstm", teacher, ModelArgs(seq_len=20, hidden=8))
    (only,) = param_groups(make_config("lstm", "teacher", {"weight_decay": 1e-4}), lstm)
    assert len(only["params"]) == len(list(lstm.parameters()))


@pytest.mark.parametrize("name", ["rnn", "lstm", "gru"])
def test_torch_recurrent_init_is_pytorchs_uniform(name, teacher):
    """science.md: the fused cells keep torch.nn's init, U(−1/√H, 1/√H) for every weight and
    bias (so std 1/√(3H)); the forget-gate bias only when asked."""
    H = 96
    m = _model(name, teacher, hidden=H)
    bound = 1 / math.sqrt(H)
    for pname, p in m.backbone.rnn.named_parameters():
        assert float(p.detach().abs().max()) <= bound + 1e-7, pname
        if p.numel() >= 1000:
            assert _std_close(p, bound / math.sqrt(3)), pname
    assert _std_close(m.head.weight, 1 / math.sqrt(3 * H), rel=0.5)  # nn.Linear's default


@pytest.mark.parametrize("p", [0.0, 0.2])
def test_gcnn_init_is_fairseqs(p, teacher):
    """science.md: fairseq's fconv_lm. Every causal conv weight-normalised, its effective weight
    N(0, 4(1 − p)/(K·C_in)) and bias 0; the input projection and the head weight-normalised,
    N(0, (1 − p)/fan_in), bias 0."""
    m = _model("gcnn", teacher, hidden=64, k=9, kernel_size=5, dropout=p)
    for block in m.backbone.blocks:
        conv = block.conv.conv
        assert hasattr(conv, "parametrizations")  # weight norm
        C_out2, C_in, K = conv.weight.shape
        assert (C_out2, C_in, K) == (128, 64, 5)
        assert _std_close(conv.weight, math.sqrt(4 * (1 - p) / (K * C_in)))
        assert torch.all(conv.bias == 0)
    inp = m.backbone.inp
    assert hasattr(inp, "parametrizations") and torch.all(inp.bias == 0)
    assert _std_close(inp.weight, math.sqrt((1 - p) / inp.weight.shape[1]), rel=0.3)
    assert hasattr(m.head, "parametrizations") and torch.all(m.head.bias == 0)
    assert _std_close(m.head.weight, math.sqrt((1 - p) / 64), rel=0.4)


def test_gcnn_block_is_glu_plus_scaled_residual(teacher):
    """(A ⊙ σ(B) + x)·√½ with A, B the two halves of the causal conv of x."""
    m = _model("gcnn", teacher, hidden=8, k=5, kernel_size=3)
    block = m.backbone.blocks[0]
    x = _x((2, 8, 11))
    conv = torch.nn.functional.conv1d(
        torch.nn.functional.pad(x, (2, 0)), block.conv.conv.weight, block.conv.conv.bias
    )
    a, b = conv.chunk(2, dim=1)
    want = (a * torch.sigmoid(b) + x) * math.sqrt(0.5)
    torch.testing.assert_close(block(x), want)


def test_window_init_is_its_bases(teacher):
    """The window model starts from exactly its base model's init, head included (the same
    draw for the same seed)."""
    for base in ("lstm", "indrnn"):
        torch.manual_seed(0)
        win = build_model("window", teacher, ModelArgs(seq_len=20, hidden=32, base=base, k=4))
        torch.manual_seed(0)
        full = build_model(base, teacher, ModelArgs(seq_len=20, hidden=32))
        for (name, p), (_, q) in zip(
            win.backbone.base.named_parameters(), full.backbone.named_parameters(), strict=True
        ):
            assert torch.equal(p, q), (base, name)
        assert torch.equal(win.head.weight, full.head.weight), base


def test_transformer_init_is_torchs(teacher):
    """torch.nn.TransformerEncoderLayer's init, kept: attention in_proj xavier-uniform with
    zero bias, feed-forward and projections nn.Linear's default, LayerNorm 1 and 0."""
    E = 64
    m = _model("transformer", teacher, hidden=E, heads=4)
    layer = m.backbone.encoder.layers[0]
    w = layer.self_attn.in_proj_weight  # (3E, E)
    bound = math.sqrt(6 / (E + 3 * E))
    assert float(w.detach().abs().max()) <= bound + 1e-7 and _std_close(w, bound / math.sqrt(3))
    assert torch.all(layer.self_attn.in_proj_bias == 0)
    assert torch.all(layer.self_attn.out_proj.bias == 0)
    for lin in (layer.linear1, layer.linear2, m.backbone.inp):
        fan_in = lin.weight.shape[1]
        assert float(lin.weight.detach().abs().max()) <= 1 / math.sqrt(fan_in) + 1e-7
    assert torch.all(layer.norm1.weight == 1) and torch.all(layer.norm1.bias == 0)


def test_lstm_forget_bias_init(teacher):
    m = _model("lstm", teacher, forget_bias=10.0)
    b = m.backbone.rnn.bias_ih_l0
    assert torch.all(b[16:32] == 10.0) and not torch.all(b[:16] == 10.0)


def test_recurrent_matrices_are_reachable(teacher):
    w = _model("lstm", teacher, layers=2).backbone.recurrent_weights()
    assert set(w) == {"weight_hh_l0", "weight_hh_l1"} and w["weight_hh_l0"].shape == (64, 16)
    assert set(_model("indrnn", teacher, layers=2).backbone.recurrent_weights()) == {"u_l0", "u_l1"}


@pytest.mark.parametrize(
    ("base", "k"),
    [("rnn", 6), ("lstm", 6), ("gru", 6), ("indrnn", 6), ("rnn", 1), ("lstm", 2), ("gru", 20)],
)
def test_window_is_the_truncated_model(base, k, teacher):
    m = _model("window", teacher, base=base, k=k)
    x = _x((2, 20, 4))
    feats, _ = m.backbone(x)
    for t in (0, 3, 5, 6, 13, 19):
        start = max(0, t - k + 1)
        ref, _ = m.backbone.base(x[:, start : t + 1])  # fresh zero state on the last k inputs
        torch.testing.assert_close(feats[:, t], ref[:, -1], rtol=1e-5, atol=1e-6)


def test_window_with_k_at_least_t_equals_the_full_model(teacher):
    m = _model("window", teacher, base="gru", k=50)
    x = _x((2, 20, 4))
    full, _ = m.backbone.base(x)
    torch.testing.assert_close(m.backbone(x)[0], full)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("target", [5_000, 40_000])
def test_parameter_budget_lands_within_5_percent(name, target, teacher):
    args = ModelArgs(seq_len=40, k=8)
    size = fit_size(name, teacher, args, target)
    n = count_params(build_model(name, teacher, args.with_(**size)))
    assert abs(n - target) <= 0.05 * target, (name, size, n)


def test_unknown_model_lists_names_and_suggests():
    with pytest.raises(UnknownNameError) as e:
        MODELS.get("lstn")
    assert "Did you mean 'lstm'?" in str(e.value) and "indrnn" in str(e.value)


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"k": 0}, "k must be positive"),
        ({"hidden": 0}, "hidden must be"),
        ({"seq_len": -1}, "seq_len"),
    ],
)
def test_bad_model_args(kw, msg):
    with pytest.raises(UsageError, match=msg):
        make_backbone("tcn", 2, ModelArgs(**kw))


def test_param_counts_are_finite_and_positive(adding):
    for name in ALL:
        n = count_params(_model(name, adding))
        assert 0 < n < math.inf


@pytest.mark.parametrize("name", ["tcn", "gcnn", "window"])
def test_last_step_readout_on_the_receptive_field_equals_the_full_run(name, adding):
    m = _model(name, adding, k=8)
    x = _x((3, 40, 2))
    feats, _ = m.backbone(x)
    torch.testing.assert_close(m(x), m.head(feats[:, -1]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("T", "k"), [(1, 1), (7, 1), (7, 3), (40, 8), (40, 40), (37, 64), (50, 7), (60, 3), (100, 5)]
)
def test_window_attention_equals_the_dense_band(T, k):
    """The blockwise O(T·k) transformer computes exactly what torch's encoder layers compute
    with the dense band mask of each layer's window, output and parameter gradients alike."""
    from seqbench.models.transformer import band_mask, sinusoidal_positions

    torch.manual_seed(1)
    bb = make_backbone("transformer", 3, ModelArgs(seq_len=T, hidden=16, heads=4, layers=2, k=k))
    bb.eval()
    x = _x((2, T, 3), seed=2)
    got = bb(x)[0]
    ref = bb.inp(x) + sinusoidal_positions(T, 16, x.device)
    for layer, w in zip(bb.encoder.layers, bb.windows, strict=True):
        ref = layer(ref, src_mask=band_mask(T, w))
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    gw = torch.autograd.grad(got.pow(2).sum(), list(bb.parameters()))
    rw = torch.autograd.grad(ref.pow(2).sum(), list(bb.parameters()))
    for a, b in zip(gw, rw, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_window_attention_sees_exactly_its_window():
    """Perturbing one input changes outputs t..t+k-1 of a one-layer model, and no others."""
    torch.manual_seed(0)
    T, k = 30, 6
    bb = make_backbone("transformer", 3, ModelArgs(seq_len=T, hidden=8, heads=2, layers=1, k=k))
    bb.eval()
    x = _x((1, T, 3))
    x2 = x.clone()
    x2[0, 10] += 1.0
    changed = (bb(x)[0] - bb(x2)[0]).abs().sum(-1)[0] > 1e-6
    assert changed.nonzero().flatten().tolist() == list(range(10, 10 + k))


@pytest.mark.parametrize(
    ("T", "k"),
    [
        (1, 1),
        (2, 1),
        (9, 2),
        (40, 3),
        (64, 8),
        (65, 8),
        (100, 7),
        (33, 32),
        (257, 32),
        (200, 2),
        (129, 5),
        (97, 40),
    ],
)
def test_blockwise_attention_equals_dense_sdpa(T, k):
    """The O(T·k) blocks against one dense call with the band mask, on every chunking: T a
    multiple of k or not, one chunk, k = 1; values and the gradients of q, k and v."""
    import torch.nn.functional as F

    from seqbench.models.transformer import band_mask, blockwise_attention

    g = torch.Generator().manual_seed(T * 100 + k)
    q, kk, v = (torch.randn(2, 3, T, 4, generator=g, requires_grad=True) for _ in range(3))
    got = blockwise_attention(q, kk, v, k)
    ref = F.scaled_dot_product_attention(q, kk, v, attn_mask=~band_mask(T, k))
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
    w = torch.randn(got.shape, generator=g)
    ga = torch.autograd.grad((got * w).sum(), (q, kk, v))
    gb = torch.autograd.grad((ref * w).sum(), (q, kk, v))
    for a, b in zip(ga, gb, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
