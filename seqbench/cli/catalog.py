"""`seqbench models` and `seqbench tasks`: what can be trained."""

from __future__ import annotations

import typer

from seqbench.cli._output import Format, FormatOption, render


def register(app: typer.Typer) -> None:
    app.command("models")(models)
    app.command("tasks")(tasks)


def models(fmt: FormatOption = Format.table) -> None:
    """List the models with a one-line description and their size at the default width.

    Parameter counts are for the adding task (2 inputs, 1 output) at T = 100.

    Example: seqbench models --format markdown
    """
    from seqbench.api import model_catalog

    rows = [(m.name, m.kind, m.hidden, m.n_params, m.description) for m in model_catalog()]
    render(["model", "kind", "hidden", "params", "description"], rows, fmt)


def tasks(fmt: FormatOption = Format.table) -> None:
    """List the tasks with their metric, default length and trivial baseline.

    Example: seqbench tasks --format csv
    """
    from seqbench.tasks import TASKS

    rows = []
    for name in TASKS:
        cls = TASKS.get(name)
        better = "higher" if cls.higher_is_better else "lower"
        rows.append(
            (name, cls.metric, better, cls.default_seq_len, cls.baseline_note, cls.description)
        )
    render(["task", "metric", "better", "T", "baseline", "description"], rows, fmt)
