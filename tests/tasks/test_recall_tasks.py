"""The memory tasks (mqar, selective-copy, induction): their data as their generators promise,
their trivial baselines, and the fact that makes each a memory task, measured on a trained
model: a model of context k (sliding-window attention) answers the queries whose information
lies within its last k inputs, and scores chance on those whose information lies further back
(within four binomial standard deviations)."""

from __future__ import annotations

import math

import pytest
import torch

from seqbench.config import ModelArgs, TaskArgs
from seqbench.models import build_model
from seqbench.tasks import make_task
from seqbench.tasks.recall import IGNORE

SMALL = {
    "mqar": {"seq_len": 16, "vocab_size": 32, "num_pairs": 2},
    "selective-copy": {"seq_len": 16, "vocab_size": 8, "num_pairs": 3},
    "induction": {"seq_len": 12, "vocab_size": 6},
}


def task(name, **kw):
    return make_task(name, TaskArgs(**(SMALL[name] | kw)))


@pytest.mark.parametrize("name", list(SMALL))
def test_data_is_reproducible_and_labels_only_the_answers(name):
    t = task(name)
    x1, y1 = t.train_batch(64, torch.Generator().manual_seed(3))
    x2, y2 = t.train_batch(64, torch.Generator().manual_seed(3))
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert x1.shape == y1.shape == (64, t.seq_len)
    assert x1.min() >= 0 and x1.max() < t.vocab
    per_row = (y1 != IGNORE).sum(1)
    assert (per_row == {"mqar": 2, "selective-copy": 3, "induction": 1}[name]).all()
    src = t.answer_sources(x1, y1)
    assert ((src >= 0) == (y1 != IGNORE)).all()


def test_mqar_is_zoologys_layout():
    """Keys from the first half of the vocabulary, values from the second, each key queried
    once after the pairs, its label the value that followed it."""
    t = task("mqar")
    x, y = t.train_batch(200, torch.Generator().manual_seed(0))
    V, p = 32, 2
    keys, values = x[:, 0 : 2 * p : 2], x[:, 1 : 2 * p : 2]
    assert (keys >= 1).all() and (keys < V // 2).all() and (values >= V // 2).all()
    for row in range(200):
        asked = (y[row] != IGNORE).nonzero().flatten()
        for pos in asked:
            i = (keys[row] == x[row, pos]).nonzero().item()
            assert y[row, pos] == values[row, i]


@pytest.mark.parametrize(
    ("name", "chance"), [("mqar", 2 / 32), ("selective-copy", 1 / 6), ("induction", 1 / 5)]
)
def test_the_baseline_is_chance_on_the_answers(name, chance):
    t = task(name)
    assert t.baseline() == pytest.approx(chance)
    _x, y = t._eval_sets["test"]
    answers = y[y != IGNORE]  # a constant guess scores at most about chance
    top = torch.bincount(answers).max().item() / answers.numel()
    assert top < chance + 4 * math.sqrt(chance * (1 - chance) / answers.numel()) + 0.01


def train_window_model(t, k, steps):
    torch.manual_seed(0)
    model = build_model("transformer", t, ModelArgs(hidden=32, layers=1, heads=2, k=k,
                                                    seq_len=t.seq_len))  # fmt: skip
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x, y = t.train_batch(64, g)
        loss = t.loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@pytest.mark.parametrize("name", list(SMALL))
def test_a_model_whose_context_is_short_of_the_source_scores_chance(name):
    k = 4
    t = task(name, eval_size=3000)
    model = train_window_model(t, k, steps=400)
    x, y = t._eval_sets["test"]
    with torch.no_grad():
        right = model(x).argmax(-1) == y
    src = t.answer_sources(x, y)
    pos = torch.arange(x.shape[1]).expand_as(x)
    asked = y != IGNORE
    far = asked & (pos - src + 1 > k)  # the source is not among its last k inputs
    near = asked & ~far
    chance = t.baseline()
    n = int(far.sum())
    assert n > 500
    acc_far = float(right[far].float().mean())
    assert abs(acc_far - chance) < 4 * math.sqrt(chance * (1 - chance) / n) + 0.01, acc_far
    if name != "induction":  # what it can see it learns (an induction head takes longer)
        assert float(right[near].float().mean()) > chance + 0.3


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-t", "mqar", "--seq-len", "15"], "mqar: seq_len must be even"),
        (["-t", "mqar", "--seq-len", "64", "--set", "vocab_size=64"], "must exceed seq_len"),
        (["-t", "mqar", "--seq-len", "16", "--set", "num_pairs=5"], "need seq_len >= 20"),
        (["-t", "selective-copy", "--set", "vocab_size=3"], "at least 4"),
        (["-t", "selective-copy", "--seq-len", "8", "--set", "num_pairs=5"], "need seq_len"),
        (["-t", "induction", "--set", "num_pairs=2"], "num_pairs is not read by induction"),
        (["-t", "induction", "--set", "vocab_size=2"], "at least 3"),
        (["-m", "s4d", "-t", "induction", "--set", "d_state=7"], "must be even"),
        (["-m", "linear-attention", "-t", "induction", "--set", "hidden=30"], "divide by heads"),
    ],
)
def test_bad_sizes_are_one_line_errors(cli, tmp_path, args, says):
    model = [] if "-m" in args else ["-m", "lru"]
    r = cli("--db", tmp_path / "b.db", "train", *model, *args, "--steps", "1")
    assert r.exit_code == 2, r.output
    assert says in r.output and len(r.output.strip().splitlines()) == 1, r.output
