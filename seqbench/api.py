"""The library surface the CLI calls. Everything here works without the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seqbench.config import RunConfig, load_toml, resolve
from seqbench.errors import UsageError
from seqbench.store.store import Store, open_store


@dataclass(frozen=True)
class ModelInfo:
    name: str
    kind: str
    hidden: int
    n_params: int
    description: str


def model_catalog() -> list[ModelInfo]:
    """Every registered model at its default width, sized for the adding task at T = 100."""
    from seqbench.models import MODELS, build_model
    from seqbench.models.base import ModelArgs, count_params
    from seqbench.tasks import make_task
    from seqbench.tasks.base import TaskArgs

    task = make_task("adding", TaskArgs(seq_len=100))
    out = []
    for name in MODELS:
        spec = MODELS.get(name)
        args = ModelArgs(seq_len=100, **{k: v for k, v in spec.defaults.items()})
        n = count_params(build_model(name, task, args))
        kind = "recurrent" if spec.recurrent else "feedforward"
        out.append(ModelInfo(name, kind, args.hidden, n, spec.description))
    return out


def make_config(
    model: str,
    task: str,
    overrides: Mapping[str, Any] | None = None,
    config_file: str | None = None,
) -> RunConfig:
    """Resolve a RunConfig: defaults < family < paper pair < config file < overrides."""
    merged: dict[str, Any] = {}
    if config_file:
        merged.update(load_toml(config_file))
    merged.update(overrides or {})
    for key, given in (("model", model), ("task", task)):
        # a config file may name the model and task too: it must agree with the command's
        named = merged.pop(key, None)
        if named is not None and named != given:
            where = f"the config file says {key} = {named!r}" if config_file else f"{key}={named!r}"
            raise UsageError(f"{where}, but the {key} asked for is {given!r}")
    tags = dict(merged.pop("tags", None) or {})
    cfg = resolve(model, task, merged)
    return RunConfig(**{**cfg.to_dict(), "tags": tags})


def train(
    model: str,
    task: str,
    *,
    db: str | Store | None = None,
    config_file: str | None = None,
    progress=None,
    sweep_id: int | None = None,
    **overrides: Any,
):
    """Train one run and record it in the store; returns a TrainOutcome (run id, status,
    summaries, resolved config).

    Example: ``seqbench.train("indrnn", "adding", seq_len=100, steps=500, db="runs.db")``
    """
    from seqbench.training.loop import train as train_loop

    cfg = make_config(model, task, overrides, config_file)
    store = db if isinstance(db, Store) else open_store(db)
    try:
        return train_loop(cfg, store, progress=progress, sweep_id=sweep_id)
    finally:
        if not isinstance(db, Store):
            store.dispose()
