"""A language model's test split is scored whole (test_stream): every token once, a recurrent
model's state carried across the split and a feedforward model at its context. The oracle is
the model run over each stream in one piece."""

import math

import pytest
import torch

from seqbench.configure import make_config
from seqbench.errors import UsageError
from seqbench.models import build_model
from seqbench.tasks import make_task


def _setup(model, **over):
    cfg = make_config(model, "ptb-char", {"seq_len": 20, "subset": 3000, "hidden": 16, **over})
    task = make_task(cfg.task, cfg.task_args())
    torch.manual_seed(0)
    net = build_model(model, task, cfg.model_args()).eval()
    return cfg, task, net


def _oracle(task, net):
    """Each stream through the model in one piece: the loss of every token."""
    ids = task._data[0]["test"]
    B = task.STREAMS
    L = (len(ids) - 1) // B
    x, y = ids[: B * L].view(B, L), ids[1 : B * L + 1].view(B, L)
    with torch.no_grad():
        out = net.head(net.features(x)[0])
    ce = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    return float(ce) / math.log(2), B * L, len(ids)


@pytest.mark.parametrize(("model", "over"), [("lstm", {}), ("rnn", {}), ("gru", {}),
                                             ("tcn", {"k": 8}), ("window", {"k": 6})])  # fmt: skip
def test_the_whole_split_equals_each_stream_in_one_piece(model, over):
    cfg, task, net = _setup(model, **over)
    assert cfg.test_stream is True
    got = task.evaluate_stream(net, "test", "cpu")
    want, counted, total = _oracle(task, net)
    assert got["metric"] == pytest.approx(want, rel=1e-5)
    assert total - 1 - counted < task.STREAMS  # every token but the last few, once


def test_windows_from_a_zero_state_score_differently():
    """The old scoring (test_stream=False): windows of T from a zero state, a different number
    for a recurrent model; what runs before the field had."""
    cfg, task, net = _setup("lstm", test_stream=False)
    assert cfg.test_stream is False
    windows = task.evaluate(lambda x: net(x), "test", 256)["metric"]
    whole = task.evaluate_stream(net, "test", "cpu")["metric"]
    assert windows != pytest.approx(whole, rel=1e-4)


def test_test_stream_is_set_for_language_models_only():
    assert make_config("lstm", "ptb-char", {}).test_stream is True
    assert make_config("lstm", "ptb-word", {}).test_stream is True
    assert make_config("lstm", "adding", {}).test_stream is None
    with pytest.raises(UsageError, match="test_stream is not read by"):
        make_config("lstm", "adding", {"test_stream": True})


def test_a_trained_run_reports_the_whole_split(cli):
    r = cli("train", "-m", "lstm", "-t", "ptb-char", "--steps", "3", "--seq-len", "20",
            "--set", "subset=3000", "--set", "hidden=8", "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
