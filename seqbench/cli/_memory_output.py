"""How `seqbench memory` speaks: the answer as asked (table, csv or JSON) with its plot and
its one line on stderr, a profile's answers and growth law, and what a command would train
and how long (its first line, and --dry-run)."""

from __future__ import annotations

import json
import sys

import typer

from seqbench import api
from seqbench.cli._flags import flags_in
from seqbench.cli._output import Format, render


def say(out, plot: str | None, fmt: Format, checked: dict | None = None) -> None:
    """The answer as asked (table, csv or JSON), its plot, what --confirm found (`checked`),
    and the one line on stderr."""
    if out.profile is not None:
        _say_profile(out, plot, fmt)
        return
    answer = flags_in(out.answer.to_dict())
    if plot:
        api.plot_memory(answer, plot)
    if fmt == Format.json:
        doc = {"name": out.name, "answer_id": out.answer_id, **answer}
        doc |= {"params": out.plan.params, "seeds": list(out.plan.seeds)}
        if checked is not None:
            doc["confirm"] = checked
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        _show(answer, fmt)
        if checked is not None and fmt == Format.table:
            typer.echo(checked["sentence"])
    typer.echo(
        f"memory {out.name!r}: {out.plan.params:,} parameters per model; trained "
        f"{out.ran} run(s){_stored(out)}, {out.rounds} search round(s){_spared(out)}; "
        f"answer {out.answer_id} stored" + (f"; plot in {plot}" if plot else "")
        + (f"; --confirm: trained {checked['ran']} run(s), answer {checked['answer_id']} stored "
           f"as {checked['name']!r}" if checked else ""),
        err=True,
    )  # fmt: skip


def _say_profile(out, plot: str | None, fmt: Format) -> None:
    """A profile: one answer per tolerance (JSON: a list, one entry each), the k*(ε) table
    with the closed form where the task has one, and the growth law in one line."""
    answers = [flags_in(a.to_dict()) for a in out.answers]
    growth = flags_in(out.profile["growth"])
    if plot:
        api.plot_memory_profile(out.profile, answers[0], plot)
    if fmt == Format.json:
        doc = [
            {"name": n, "answer_id": i, **a, "params": out.plan.params}
            | {"seeds": list(out.plan.seeds), "growth": growth}
            for n, i, a in zip(out.names, out.answer_ids, answers, strict=True)
        ]
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        if fmt == Format.table:
            for a in answers:
                typer.echo(f"ε = {a['epsilon']:g}: {a['sentence']}")
        cols, rows = api.memory_profile_rows(out.profile)
        render(cols, rows, fmt, title=f"{answers[0]['task']}: k* by tolerance")
        if fmt == Format.table:
            typer.echo(growth["sentence"])
    typer.echo(
        f"memory {out.name!r}: {out.plan.params:,} parameters per model; trained "
        f"{out.ran} run(s){_stored(out)}, {out.rounds} search round(s){_spared(out)}; "
        f"{len(answers)} answers stored "
        f"({', '.join(out.names)})" + (f"; plot in {plot}" if plot else ""),
        err=True,
    )


def _stored(out) -> str:
    """The runs the answer asked for that the store already had (a rerun, or more seeds
    added to a memory run before), where there were any."""
    n = len(out.plan.points) - out.ran
    return f" ({n} already stored)" if n > 0 else ""


def _spared(out) -> str:
    """What the race left out, where it left anything."""
    return f", {out.spared} spared by the race" if out.spared else ""


def _show(answer: dict, fmt: Format) -> None:
    cols, rows = api.memory_cells(answer)
    if fmt == Format.table:
        typer.echo(answer["sentence"])
        for w in answer["warnings"]:
            typer.echo(f"warning: {w}")
        if answer.get("lr_chosen"):
            typer.echo(f"note: {answer['lr_chosen']}")
    render(cols, rows, fmt, title=f"{answer['task']}: {answer['metric']} by context")


def cost_line(cost: dict, race: bool) -> str:
    """What a memory command is about to train, and how long it should take."""
    if cost.get("complete"):
        return _complete(cost)
    most = "at most " if race else ""  # the race may spare some
    return f"{most}{cost['to_train']} runs to train, {_estimate(cost)}"


def show_plan(db, plan, fmt: Format, workers: int | None, race: bool) -> None:
    """The first round's grid, and what the whole command would train, and how long."""
    render(*api.sweep_grid(plan.points), fmt, title=f"{len(plan.points)} runs (first round)")
    cost = api.memory_cost(db, plan, workers, race)
    most = " at most" if race else ""  # the race may spare some
    if cost.get("complete"):
        said = _complete(cost)
    elif cost["round"]:  # the replay on the stored runs stopped in a search round
        said = (
            f"the first round is in the store; search round "
            f"{cost['round']} has {cost['to_train']} to train{most} ({_steps(cost)}), "
            f"and at most {cost['search_at_most']} more to search for the boundary; "
            + _estimate(cost)
        )
    else:
        said = (
            f"{cost['runs']} runs at {plan.params:,} parameters each in the first round "
            f"({cost['done']} already in the store, {cost['to_train']} to train{most}, "
            f"{_steps(cost)}), and at most {cost['search_at_most']} more to search for "
            "the boundary; " + _estimate(cost)
        )
    typer.echo(f"memory {plan.name!r}: {said}", err=True)


def _complete(cost: dict) -> str:
    """The store has every run the answer rests on (the command replayed on them)."""
    rounds = f", {cost['round']} search round(s)" if cost["round"] else ""
    return (
        f"nothing to train: the store has all {cost['runs']} runs the answer rests on"
        f"{rounds}; the command re-derives the answer from them"
    )


def _steps(cost: dict) -> str:
    """The steps to train: with --steps auto, the floor and the cap."""
    if cost.get("steps_cap", cost["steps"]) > cost["steps"]:
        return f"{cost['steps']:,} to {cost['steps_cap']:,} steps: until converged"
    return f"{cost['steps']:,} steps"


def _estimate(cost: dict) -> str:
    """The first round's time as the cost says it was estimated (with --steps auto, for the
    steps every run takes: longer as runs train on)."""
    secs = cost["seconds"]
    least = "at least " if cost.get("steps_cap", cost["steps"]) > cost["steps"] else "about "
    if cost["how"] == "store":
        return f"{least}{secs:.0f} s of training at this store's pace"
    if secs is None:
        return "no time estimate (timing each model here would take too long)"
    return f"{least}{secs:.0f} s for the first round (a timing probe of each model on this machine)"
