"""Mixed precision: bf16 autocast trains every model on CPU; fp16 (with a gradient scaler)
needs CUDA and is refused on CPU before any row is written; precision is part of the config
and of its hash."""

from __future__ import annotations

import math

import pytest

from seqbench import api
from seqbench.configure import config_hash, make_config
from seqbench.errors import UsageError

FAST = {"seq_len": 12, "steps": 3, "eval_size": 16, "k": 4}


@pytest.mark.parametrize(
    "model", ["rnn", "lstm", "gru", "indrnn", "tcn", "gcnn", "window", "transformer"]
)
def test_bf16_trains_every_model_on_cpu(model, store):
    out = api.train(model, "adding", db=store, precision="bf16", hidden=8, **FAST)
    assert out.status == "completed" and math.isfinite(out.summaries["test_metric"])
    assert store.get_run(out.run_id).config["precision"] == "bf16"


def test_precision_is_part_of_the_config_hash():
    fp32 = make_config("rnn", "adding", FAST)
    bf16 = make_config("rnn", "adding", {**FAST, "precision": "bf16"})
    assert fp32.precision == "fp32" and config_hash(fp32) != config_hash(bf16)


def test_fp16_on_cpu_is_refused_before_any_row(store):
    with pytest.raises(UsageError, match="precision fp16 needs a CUDA GPU"):
        api.train("rnn", "adding", db=store, precision="fp16", device="cpu", **FAST)
    assert store.list_runs() == []


def test_unknown_precision_is_one_line(cli):
    r = cli("train", "-m", "rnn", "-t", "adding", "--set", "precision=fp8", "--steps", "1")
    assert r.exit_code == 2 and "precision must be one of fp32, bf16, fp16" in r.stderr
