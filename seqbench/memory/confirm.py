"""`memory --confirm`: the same question asked again with every cell's training cap doubled,
and whether the answer stands. An answer that is about the task, not about the budget, does
not move when the runs train longer: its k* stays inside the first interval (or its verdict,
where it has no k*, stays the same)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from seqbench.errors import UsageError
from seqbench.memory.plan import MemoryPlan, with_points

if TYPE_CHECKING:
    from seqbench.memory.result import Answer


def confirm_plan(plan: MemoryPlan) -> MemoryPlan:
    """`plan` (its first round) with every cell's cap doubled, named NAME-confirm: runs
    trained until converged (`steps=auto`, max_steps) get twice the largest floor and twice
    the largest cap (with the floor alone the same, a run the rule ended would train exactly
    as before); fixed steps (or epochs) are doubled. The budget, grid, seeds and tolerance
    stay."""
    if plan.epsilons:
        raise UsageError("`confirm` takes one tolerance; a profile (several `epsilon`) has many")
    sets = dict(plan.sets)
    if any(p.max_steps for p in plan.points):  # the floor doubled too: a run that looked
        # converged early (a plateau before it learns) trains twice as long before it may stop
        sets["steps"] = 2 * max(p.steps for p in plan.points)
        sets["max_steps"] = 2 * max(p.max_steps or p.steps for p in plan.points)
    elif sets.get("epochs") is not None:
        sets["epochs"] = 2 * int(sets["epochs"])
    else:
        sets["steps"] = 2 * max(p.steps for p in plan.points)
    return with_points(replace(plan, sets=sets, name=f"{plan.name}-confirm"))


def confirmation(first: Answer, second: Answer) -> dict:
    """Whether `second` (at twice the cap) confirms `first`: the first k* inside the interval
    the longer training gives (a published k* that training longer does not exclude), or,
    without a k*, the same verdict. The sentence says which, with both answers' numbers."""

    def said(a: Answer) -> str:
        if a.k_star is None:
            return a.verdict
        return f"k* = {a.k_star} (interval {a.k_low}–{a.k_high}; {a.verdict})"

    if first.k_star is not None and second.k_star is not None:
        held = second.k_low <= first.k_star <= second.k_high
        inside = "inside" if held else "outside"
        why = f"the first k* = {first.k_star} ({first.k_low}–{first.k_high}) falls {inside} it"
    else:
        held = first.verdict == second.verdict and first.k_star == second.k_star
        why = f"against {said(first)} at the first cap"
    still = list(second.under_trained)
    cap = f" ({second.train_steps:,} steps)" if second.train_steps else ""
    sentence = (
        f"{'Confirmed' if held else 'Not confirmed'} at twice the cap{cap}: "
        f"{said(second)}, {why}"
        + (f"; still improving there: {', '.join(still)}" if still else "")
        + ("." if held else "; the answer moves with training: train longer and ask again.")
    )
    return {
        "confirmed": held,
        "verdict": second.verdict,
        "k_star": second.k_star,
        "k_low": second.k_low,
        "k_high": second.k_high,
        "train_steps": second.train_steps,
        "under_trained": list(second.under_trained),
        "sentence": sentence,
    }
