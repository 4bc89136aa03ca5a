"""`seqbench memory`: how much context a task needs (k* with an interval), or that it needs
recurrence."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from seqbench import api
from seqbench.cli._flags import flags_in
from seqbench.cli._memory_output import cost_line, say, show_plan
from seqbench.cli._options import (
    AddressOption,
    ExecutorOption,
    QuietOption,
    RetryFailedOption,
    WorkersOption,
    joined,
    resumable,
    state,
)
from seqbench.cli._output import Format, FormatOption, render
from seqbench.errors import UsageError
from seqbench.memory import EPSILON, LR_SEARCH

app = typer.Typer(
    help=(
        "How much context does a task need? Sweeps the feedforward families over k at one "
        "parameter budget beside recurrent references, searches for the boundary between "
        "its contexts, and states k* with an interval over seeds, or that the task needs "
        "recurrence.\n\n"
        "Example: seqbench memory --task adding --set seq_len=16 --set steps=300"
    ),
    invoke_without_command=True,
    # `memory` itself answers; `memory list` is the one subcommand: optional, as the usage says
    subcommand_metavar="[list [ARGS]...]",
)


Task = Annotated[
    str | None, typer.Option(help="The task: a built-in, file (with --path) or a plugin.")
]
DataPath = Annotated[str | None, typer.Option(help="--task file: the data file.")]
Sets = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="A task, model or training field: key=value (repeatable); "
        "each model takes it where it reads it.",
    ),
]
Families = Annotated[
    list[str] | None,
    typer.Option(
        "--families",
        help="Feedforward families swept over k, comma-separated or repeated "
        "(default: tcn,window; `seqbench models` lists them).",
    ),
]
References = Annotated[
    list[str] | None,
    typer.Option(
        "--references",
        help="Recurrent references, comma-separated or repeated (default: "
        "lstm,gru); 'none' for none.",
    ),
]
Seeds = Annotated[str, typer.Option(help="Seeds, at least 3: 0,1,2 or 0:4:+1.")]
Params = Annotated[
    int | None,
    typer.Option(
        help="Parameter budget of every model at every k, met within 5% (default: the "
        "smallest from 10000 up that every model meets at every k)."
    ),
]
Epsilon = Annotated[
    str | None,
    typer.Option(
        metavar="<eps[,eps…]>",
        help="The tolerance: k* is the smallest k shown within epsilon of the best over "
        f"seeds, epsilon a share of what --relative-to names (default {EPSILON:g}). "
        "Several (0.2,0.1,0.05,0.02): a profile, k* for each from the same runs, and how k* "
        "grows as epsilon tightens.",
    ),
]
RelativeTo = Annotated[
    str | None,
    typer.Option(
        "--relative-to",
        help="gap: epsilon is a share of the gap between the trivial baseline and the best "
        "(the default); best: a share of the best's own value (MSE within +10%: "
        "--epsilon 0.1 --relative-to best).",
    ),
]
MaxK = Annotated[int | None, typer.Option(help="The largest context tried (default: T).")]
Name = Annotated[
    str | None,
    typer.Option(help="Name of the answer and its sweep (default: from the question)."),
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Show what it would train and its cost; run nothing.")
]
Plot = Annotated[
    str | None, typer.Option(help="Draw the metric against k, k* marked, to this file.")
]
Race = Annotated[
    bool,
    typer.Option(
        "--race/--no-race",
        help="Give each cell its seeds a round at a time, none more once its part in the "
        "answer is decided away from k* and the interval's ends (shown outside the tolerance, "
        "or within it above k*); --no-race: every cell every seed.",
    ),
]

LrSearch = Annotated[
    str,
    typer.Option(
        "--lr-search",
        help="Whose learning rate is searched: references (default), all or none. A searched "
        "model trains every seed at its rate x 0.3, 1 and 3 (three times the runs) and each "
        "seed keeps the run whose validation was best.",
        metavar="references|all|none",
    ),
]
Confirm = Annotated[
    bool,
    typer.Option(
        "--confirm",
        help="Then ask again with every cell's cap doubled (stored as NAME-confirm) and say "
        "whether k* stays inside the first interval.",
    ),
]


@app.callback()
def memory(
    ctx: typer.Context,
    task: Task = None,
    path: DataPath = None,
    set_: Sets = None,
    families: Families = None,
    references: References = None,
    seeds: Seeds = "0,1,2",
    params: Params = None,
    epsilon: Epsilon = None,
    relative_to: RelativeTo = None,
    max_k: MaxK = None,
    name: Name = None,
    workers: WorkersOption = None,
    executor: ExecutorOption = "local",
    address: AddressOption = "auto",
    dry_run: DryRun = False,
    retry_failed: RetryFailedOption = False,
    plot: Plot = None,
    race: Race = True,
    confirm: Confirm = False,
    lr_search: LrSearch = LR_SEARCH[0],
    quiet: QuietOption = False,
    fmt: FormatOption = Format.table,
) -> None:
    """Answer "how much context does this task need?" and store the answer (see
    `seqbench memory list`). Resumable: runs the store has are reused, and an interrupted
    command picks up where it stopped.

    Without --set steps=N every run trains until converged (steps=auto: the pair's steps at
    least, ten times them at most; --set max_steps=N).

    Example: seqbench memory --task file --path data.npz --dry-run

    Example: seqbench memory --task teacher --set seq_len=16 --set steps=300 --confirm
    """
    if ctx.invoked_subcommand is not None:
        return
    if task is None:
        raise UsageError("give --task (a built-in task, file with --path, or a plugin)")
    api.check_workers(workers)  # before the plan's budget search and the timing probe
    refs = joined(references)
    plan = api.memory_plan(
        task, sets=set_, path=path,
        families=api.split_list(joined(families)) if families else None,
        references=[] if refs == "none" else (api.split_list(refs) if refs else None),
        seeds=api.parse_range(seeds, "--seeds"), params=params, epsilon=epsilon,
        relative_to=relative_to, max_k=max_k, name=name, lr_search=lr_search,
    )  # fmt: skip
    doubled = api.memory_confirm_plan(plan) if confirm else None  # refused before any work
    if dry_run:
        show_plan(state(ctx).db, plan, fmt, workers, race)
        if doubled is not None:
            typer.echo(f"--confirm: then {doubled.name!r}, the same at twice the cap", err=True)
        return
    options = {"executor": executor, "address": address, "workers": workers,
               "retry_failed": retry_failed, "race": race}  # fmt: skip
    out = _run(ctx, plan, quiet, options)
    checked = None
    if doubled is not None:
        again = _run(ctx, doubled, quiet, options)
        checked = {"name": again.name, "answer_id": again.answer_id, "ran": again.ran}
        checked |= flags_in(api.memory_confirmation(out.answer, again.answer))
    say(out, plot, fmt, checked)


def _run(ctx: typer.Context, plan, quiet: bool, options: dict):
    """One plan run (or resumed) with its cost said first and a bar per round; an interrupt
    exits with the code it came with, saying the same command resumes it."""
    if not quiet:
        cost = api.memory_cost(state(ctx).db, plan, options["workers"], options["race"])
        typer.echo(f"memory {plan.name!r}: {cost_line(cost, options['race'])}", err=True)
    rounds = _Rounds(plan.name, quiet)
    return resumable(
        "memory", plan.name,
        lambda: api.run_memory(state(ctx).store, plan, on_round=rounds.on_round,
                               on_result=rounds.on_result, **options),
        rounds.stop,
    )  # fmt: skip


class _Rounds:
    """A progress bar per round of a memory command (the first round, then each search round)."""

    def __init__(self, name: str, quiet: bool) -> None:
        self.name, self.quiet, self.bar, self.failed = name, quiet, None, 0

    def on_round(self, what: str, total: int, todo: int) -> None:
        self.stop()
        if not self.quiet:
            from seqbench.cli._progress import Bar

            typer.echo(f"memory {self.name!r} ({what}): {total} runs, {todo} to train", err=True)
            self.bar = Bar(f"{self.name} {what}", ("failed",))
            self.bar.start(todo)

    def on_result(self, status: str) -> None:
        self.failed += status == "failed"
        if self.bar is not None:
            self.bar.advance(failed=self.failed)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


@app.command("list")
def list_answers(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Only this answer.")] = None,
    task: Annotated[str | None, typer.Option(help="Only answers about this task.")] = None,
    fmt: FormatOption = Format.table,
) -> None:
    """The stored answers, newest first (stale: a run it rests on was deleted or archived
    since; run the same memory command again to re-derive it).

    Example: seqbench memory list --format json
    """
    rows = flags_in(api.memory_answers(state(ctx).store("read"), name, task))
    if fmt == Format.json:
        doc = [
            {
                k: r[k]
                for k in (
                    "id",
                    "name",
                    "task",
                    "label",
                    "verdict",
                    "k_star",
                    "k_low",
                    "k_high",
                    "max_k",
                    "epsilon",
                    "tolerance",
                    "metric",
                    "sentence",
                    "stale",
                    "run_ids",
                )
            }
            | {
                "created_at": str(r["created_at"]),
                "relative_to": r["details"].get("relative_to", "gap"),
                "warnings": r["details"].get("warnings", []),
            }
            for r in rows
        ]
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    cols = ["id", "name", "task", "verdict", "k*", "interval", "tolerance", "runs", "stale"]
    render(
        cols,
        [
            [
                r["id"],
                r["name"],
                r["label"],
                r["verdict"],
                r["k_star"],
                r["interval"],
                r["tolerance"],
                len(r["run_ids"]),
                "stale" if r["stale"] else "",
            ]
            for r in rows
        ],
        fmt,
    )


KernelSweep = Annotated[str, typer.Argument(help="A sweep of the memory-function task.")]


@app.command("kernels")
def kernels(
    ctx: typer.Context,
    sweep: KernelSweep = "memory-functions-tiny",
    fmt: FormatOption = Format.table,
) -> None:
    """Which family captures which memory: each kernel's cells (family, context) with their
    error beside the closed form's optimal error e*(k) at that context, and the equivalent
    context (the smallest k whose optimal predictor does as well).

    Example: seqbench sweep --preset memory-functions --scale tiny && seqbench memory kernels
    """
    cols, rows = api.memory_kernels(state(ctx).store("read"), sweep)
    render(cols, rows, fmt, title=f"{sweep}: error against the closed form")


def register(app_: typer.Typer) -> None:
    app_.add_typer(
        app, name="memory", short_help="How much context does a task need? k* or recurrence."
    )
