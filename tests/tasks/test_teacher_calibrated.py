"""A teacher that forgets at exactly λ (teacher_kind=linear), measured from outside: the
teacher's own output with the inputs before the last k dropped, against its output on the
whole sequence, at T ≥ 5/(1 − λ). The tanh teacher, driven at unit variance, saturates and
forgets faster than λ (0.34, 0.59, 0.62 and 0.64 per step for λ = 0.5, 0.9, 0.95, 0.99), so
the λ^k story could not be seen on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from seqbench.configure import config_hash, make_config, resolve
from seqbench.errors import UsageError
from seqbench.tasks import TASKS


def own_decay(lam: float, kind: str, n: int = 1000) -> float:
    """The per-step decay of the teacher's own truncation error (RMS over n sequences),
    fitted over contiguous k from 1 while the error is above fp32's floor."""
    T = math.ceil(5 / (1 - lam)) + 1
    cfg = make_config("rnn", "teacher", {"teacher_lam": lam, "teacher_kind": kind,
                                         "seq_len": T, "eval_size": 16})  # fmt: skip
    task = TASKS.get("teacher").load()(cfg.task_args())
    x = torch.randn(n, T, task.in_dim, generator=torch.Generator().manual_seed(3))
    full = task.run_teacher(x)[:, -1, 0].double()
    ks = np.unique(np.linspace(1, T - 1, 40).round().astype(int))
    errs = []
    for k in ks:
        cut = x.clone()
        cut[:, : T - k] = 0  # a zero state before the last k inputs
        errs.append(float((full - task.run_teacher(cut)[:, -1, 0].double()).pow(2).mean().sqrt()))
    errs = np.array(errs)
    ok = errs > 1e-5 * errs[0]
    return math.exp(np.polyfit(ks[ok], np.log(errs[ok]), 1)[0])


@pytest.mark.parametrize("lam", [0.5, 0.9, 0.95, 0.99])
def test_a_linear_teacher_forgets_at_exactly_lambda(lam):
    rate = own_decay(lam, "linear", n=1000 if lam < 0.99 else 300)
    assert abs(rate / lam - 1) < 0.02, rate


@pytest.mark.parametrize("lam", [0.9, 0.95])
def test_the_tanh_teacher_forgets_faster_than_lambda(lam):
    """The control: the same measurement on the teacher as it was reads far below λ."""
    assert own_decay(lam, "tanh", n=500) < 0.7 * lam


def test_the_linear_teachers_output_has_about_unit_variance():
    for lam in (0.5, 0.95):
        cfg = make_config("rnn", "teacher", {"teacher_lam": lam, "teacher_kind": "linear",
                                             "seq_len": 200, "eval_size": 16})  # fmt: skip
        task = TASKS.get("teacher").load()(cfg.task_args())
        x = torch.randn(500, 200, task.in_dim, generator=torch.Generator().manual_seed(1))
        var = float(task.run_teacher(x)[:, -1].var())
        assert 0.3 < var < 3, var


def test_teacher_kind_enters_the_hash_only_when_linear():
    assert config_hash(resolve("rnn", "teacher", {})) == config_hash(
        resolve("rnn", "teacher", {"teacher_kind": "tanh"})
    )
    assert config_hash(resolve("rnn", "teacher", {})) != config_hash(
        resolve("rnn", "teacher", {"teacher_kind": "linear"})
    )


@pytest.mark.parametrize(
    ("over", "msg"),
    [({"teacher_kind": "relu"}, "teacher_kind must be tanh or linear"),
     ({"teacher_kind": "linear", "teacher_lam": 1.5}, "needs teacher_lam in (0, 1)")],
)  # fmt: skip
def test_bad_teacher_fields_are_one_line(over, msg):
    with pytest.raises(UsageError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        make_config("rnn", "teacher", over)
