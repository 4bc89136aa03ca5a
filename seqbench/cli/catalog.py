"""`seqbench models` and `seqbench tasks`: what can be trained."""

from __future__ import annotations

import typer

from seqbench import api
from seqbench.cli._output import Format, FormatOption, render


def register(app: typer.Typer) -> None:
    app.command("models")(models)
    app.command("tasks")(tasks)


def models(fmt: FormatOption = Format.table) -> None:
    """List the models with a one-line description and their size at the default width.

    Parameter counts are for the adding task (2 inputs, 1 output) at T = 100. The context
    column is the family's rule for what a run stores as k: a feedforward model's output at t
    depends on exactly the last k inputs; a recurrent model's k is its truncated
    backpropagation, and no k (NULL) means full backpropagation.

    Example: seqbench models --format markdown
    """
    rows = [
        (m.name, m.kind, m.hidden, m.n_params, m.context, m.description)
        for m in api.model_catalog()
    ]
    render(["model", "kind", "hidden", "params", "context k", "description"], rows, fmt)


def tasks(fmt: FormatOption = Format.table) -> None:
    """List the tasks with their metric, default length and trivial baseline.

    Example: seqbench tasks --format csv
    """
    rows = [
        (t.name, t.metric, t.better, t.seq_len, t.baseline, t.description)
        for t in api.task_catalog()
    ]
    render(["task", "metric", "better", "T", "baseline", "description"], rows, fmt)
