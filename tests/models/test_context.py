"""Context k means k, measured from the outside: a feedforward model trained through the CLI
with --k has outputs whose gradient is non-zero on exactly the last k inputs and zero on every
earlier one, at the last output and at a middle one; the run stores that context as its k; a
model trained without --k stores the context it really has."""

from __future__ import annotations

import itertools
import os

import pytest
import torch

from seqbench.models.context import gcnn_kernels, plan_span, tcn_plan, transformer_windows

KS = [1, 2, 3, 4, 5, 8, 16, 31, 50]
TS = [64, 80]
# several kernel sizes, depths and bases, each family's fields cycled over the (k, T) cases
VARIANTS = {
    "tcn": [["--set", "kernel_size=2"], ["--set", "kernel_size=3"], []],  # default K = 7
    "gcnn": [["--set", "kernel_size=2"], [], ["--set", "kernel_size=4"]],  # default K = 5
    "transformer": [["--set", "layers=1"], [], ["--set", "layers=3"]],  # default 2 layers
    "window": [["--set", "base=gru"], ["--set", "base=rnn"], ["--set", "base=indrnn"], []],
}
CASES = [
    (model, T, k, VARIANTS[model][i % len(VARIANTS[model])])
    for model in VARIANTS
    for i, (T, k) in enumerate(itertools.product(TS, KS))
]


def _train(cli, db, model, T, extra, k=None):
    args = ["--db", db, "train", "--model", model, "--task", "adding", "--seq-len", T, "--steps", 1]
    args += ["--set", "eval_size=8", "--batch-size", 4, "--hidden", 16, "--save-checkpoint"]
    args += [*(["--k", k] if k is not None else []), *extra, "--quiet"]
    r = cli(*args)
    assert r.exit_code == 0, r.output
    from seqbench.store.opening import open_store

    s = open_store(db)
    try:
        run = s.list_runs(limit=1)[0]
        from seqbench.stress.backbones import trained_backbone

        bb, in_dim, _, _ = trained_backbone(s, str(run.id))
        return run.k, bb.eval(), in_dim
    finally:
        s.dispose()


def _lags_that_matter(bb, in_dim, T, t) -> list[int]:
    """The lags L (input t − L) whose gradient on output t is non-zero, over 8 sequences and a
    random readout of every feature."""
    g = torch.Generator().manual_seed(T + t)
    x = torch.randn(8, T, in_dim, generator=g, requires_grad=True)
    y, _ = bb(x)
    w = torch.randn(y.shape[-1], generator=g)
    (gx,) = torch.autograd.grad((y[:, t] * w).sum(), x)
    nonzero = (gx.abs().sum(dim=(0, 2)) != 0).nonzero().flatten().tolist()
    return sorted(t - s for s in nonzero)


def _assert_context(bb, in_dim, T, k):
    for t in (T - 1, T // 2):
        want = list(range(min(k, t + 1)))  # x_{t-k+1..t}, or the whole past when it is shorter
        assert _lags_that_matter(bb, in_dim, T, t) == want, f"output {t}"


@pytest.mark.parametrize(("model", "T", "k", "extra"), CASES)
def test_every_feedforward_family_sees_exactly_the_last_k_inputs(cli, db, model, T, k, extra):
    stored, bb, in_dim = _train(cli, db, model, T, extra, k=k)
    assert stored == min(k, T)
    _assert_context(bb, in_dim, T, min(k, T))


@pytest.mark.parametrize(
    ("model", "extra", "context"),
    [
        ("tcn", [], "T"),  # the fewest levels covering T: its receptive field capped at T
        ("tcn", ["--set", "levels=2", "--set", "kernel_size=3"], 1 + 2 * 2 * 3),  # Bai's, 13
        ("tcn", ["--set", "levels=6"], "T"),  # 757 ≥ T: capped
        ("gcnn", [], 32),  # the window model's default context min(T, 32)
        ("gcnn", ["--set", "levels=3", "--set", "kernel_size=4"], 1 + 3 * 3),
        ("transformer", [], "T"),
        ("window", [], 32),
    ],
)
@pytest.mark.parametrize("T", TS)
def test_a_model_trained_without_k_stores_its_real_context(cli, db, model, extra, context, T):
    stored, bb, in_dim = _train(cli, db, model, T, extra)
    want = T if context == "T" else context
    assert stored == want
    _assert_context(bb, in_dim, T, want)


def test_only_a_recurrent_run_stores_no_k(cli, db):
    stored, _, _ = _train(cli, db, "gru", 20, [])
    assert stored is None
    stored, _, _ = _train(cli, db, "gru", 20, [], k=5)
    assert stored == 5  # its truncation length


@pytest.mark.parametrize("K", [2, 3, 5, 7, 8])
@pytest.mark.parametrize("k", [*range(1, 70), 100, 211, 212, 1000, 3571])
def test_the_plans_add_up_to_k_with_contiguous_lags(K, k):
    """Each plan's lag set (the Minkowski sum of its convs' taps) is exactly 0 … k−1; the
    gradient test above measures a sample of them on real models."""
    T = 10**6
    lags = {0}
    for level in tcn_plan(K, None, k, T):
        for n, d in level:
            lags = {a + j * d for a in lags for j in range(n)}
    assert lags == set(range(k)) and 1 + plan_span(tcn_plan(K, None, k, T)) == k
    assert 1 + sum(n - 1 for n in gcnn_kernels(K, None, k, T)) == k
    assert all(1 <= n <= K for n in gcnn_kernels(K, None, k, T))
    for layers in (1, 2, 3, 6):
        ws = transformer_windows(layers, k, T)
        assert len(ws) == layers and 1 + sum(w - 1 for w in ws) == k and min(ws) >= 1


def test_the_papers_tcn_is_untouched_by_the_exact_rule():
    """k equal to a standard receptive field is the standard network; levels stay Bai's."""
    assert tcn_plan(7, None, 85, 1000) == tcn_plan(7, 3, None, 1000)
    assert tcn_plan(8, 8, None, 220) == tuple(((8, 2**i), (8, 2**i)) for i in range(8))


def test_stress_analyses_a_fresh_model_at_k_and_stores_its_context(cli, db):
    r = cli(
        "--db", db, "stress", "--models", "tcn,gcnn,transformer,window", "--k", 16,
        "--seq-len", 80, "--hidden", 16, "--set", "kernel_size=3", "--format", "csv", "--quiet",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    lines = [ln.split(",") for ln in r.output.strip().splitlines()[1:]]
    assert [(row[1], row[5], row[6]) for row in lines] == [
        (m, "15", "finite-context") for m in ("tcn", "gcnn", "transformer", "window")
    ]  # horizon 15: lags 0 … 15, the last 16 inputs
    r = cli("--db", db, "query", "SELECT DISTINCT k FROM runs WHERE kind = 'stress'")
    assert "16" in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--models", "rnn,tcn", "--k", 16], "full backpropagation"),
        (["--models", "tcn", "--k", 0], "k must be at least 1"),
        (["--models", "tcn", "--set", "k=4"], "--set k: give it as --k"),
        (["--models", "tcn", "--set", "task=copy"], "not a task"),
        (["--models", "tcn", "--set", "kernel_size=1"], "kernel_size must be at least 2"),
    ],
)
def test_stress_refuses_a_context_it_cannot_give(cli, db, args, message):
    r = cli("--db", db, "stress", "--seq-len", 40, "--quiet", *args)
    assert r.exit_code != 0 and message in r.output
    # nothing written: stress opens its store only once its input has passed every check
    # (the old count(*) = 0 check passed on "no seqbench database at …_0/seqbench.db" too)
    assert not os.path.exists(db)
