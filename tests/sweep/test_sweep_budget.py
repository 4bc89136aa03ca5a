"""A k-sweep given by flags holds one parameter budget across k (issue 38, item 3): a TCN of
context 32 is no larger than one of context 1; a width, budget or depth given is kept."""

import pytest
import torch

from seqbench import api
from seqbench.models import build_model, fit_size
from seqbench.models.base import count_params
from seqbench.tasks import make_task


def _counts(plan) -> dict:
    out = {}
    for c in plan.points:
        task = make_task(c.task, c.task_args())
        size = fit_size(c.model, task, c.model_args(), c.params)
        with torch.device("meta"):
            out[(c.model, c.k)] = count_params(
                build_model(c.model, task, c.model_args().with_(**size))
            )
    return out


def test_a_k_sweep_holds_one_budget_across_k(cli):
    plan = api.sweep_plan(models="tcn,window", tasks="teacher", k="1:32:x2")
    assert plan.held_budget is not None and plan.held_budget >= 10_000
    assert {c.params for c in plan.points} == {plan.held_budget}
    counts = _counts(plan)
    assert len(counts) == 12
    for key, n in counts.items():
        assert abs(n - plan.held_budget) <= 0.05 * plan.held_budget, (key, n)
    r = cli("sweep", "--models", "tcn", "--tasks", "teacher", "--k", "1,8", "--dry-run")
    assert r.exit_code == 0 and "every model at 10,000 parameters at every k" in r.stderr


@pytest.mark.parametrize(
    "kw",
    [
        {"set_": ["hidden=32"]},
        {"set_": ["params=5000"]},
        {"k": "8"},
    ],
    ids=["a width", "a budget", "one k"],
)
def test_what_is_given_is_kept(kw):
    args = {"models": "tcn", "tasks": "teacher", "k": "1,8", **kw}
    plan = api.sweep_plan(**args)
    assert plan.held_budget is None
    given = {"hidden=32": None, "params=5000": 5000}
    assert {c.params for c in plan.points} == {given.get((kw.get("set_") or [""])[0])}


def test_a_recurrent_k_sweep_and_a_preset_are_left_alone():
    assert api.sweep_plan(models="lstm", tasks="adding", k="10,20").held_budget is None
    assert api.sweep_plan(preset="canary", scale="tiny").held_budget is None
