"""Copy's symbols are fed as the reference code feeds them by default, one float channel
holding each symbol's value, and as embedded tokens when asked (symbols=tokens, seqbench's
variant, the same experiment as every copy run stored before the option)."""

from __future__ import annotations

import pytest
import torch

from seqbench.configure import config_hash, resolve
from seqbench.errors import UsageError
from seqbench.models import build_model
from seqbench.tasks import make_task
from seqbench.tasks.base import generator


def _task(**over):
    cfg = resolve("tcn", "copy", {"seq_len": 12, **over})
    return cfg, make_task("copy", cfg.task_args())


def test_the_default_feeds_each_symbols_value_as_one_float_channel():
    cfg, floats = _task()
    _, tokens = _task(symbols="tokens")
    assert cfg.symbols == "float" and cfg.clip is None  # the reference script never clips
    xf, yf = floats.train_batch(4, generator(0, 3))
    xt, yt = tokens.train_batch(4, generator(0, 3))
    assert xf.dtype == torch.float32 and xf.shape == (4, 32, 1)
    assert xt.dtype == torch.long and xt.shape == (4, 32)
    assert torch.equal(xf[..., 0], xt.float()) and torch.equal(yf, yt)  # the same sequences
    # the model reads the value itself: no embedding, one input channel
    assert build_model("tcn", floats, cfg.model_args()).embed is None
    assert build_model("tcn", tokens, cfg.model_args()).embed is not None


def test_tokens_hash_as_the_runs_from_before_the_option():
    tokens = resolve("lstm", "copy", {"symbols": "tokens"})
    before = resolve("lstm", "copy", {"symbols": None})  # a config stored before the option
    assert before.symbols is None and _task(symbols=None)[1].vocab == 10  # fed tokens
    assert config_hash(tokens) == config_hash(before)
    assert config_hash(tokens) != config_hash(resolve("lstm", "copy", {}))


@pytest.mark.parametrize(
    ("task", "value", "message"),
    [
        ("copy", "bytes", "copy: symbols must be float or tokens, got 'bytes'"),
        ("adding", "float", "symbols is not read by adding"),
    ],
)
def test_a_bad_symbols_is_refused(task, value, message):
    with pytest.raises(UsageError, match=message):
        resolve("lstm", task, {"symbols": value})
