"""A trained model's file: its weights and config, written by a run that asks for it
(`save_checkpoint`), read back by `stress --run` and the api (weights only)."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import torch


def save_checkpoint(directory: Path, run_id: int, cfg, model: torch.nn.Module) -> str:
    """The trained weights and config (a RunConfig), saved under the run id plus a random tag
    (two stores in one directory both have a run 1, and neither may overwrite the other's
    weights); the file's absolute path."""
    tag = secrets.token_hex(4)
    path = Path(directory) / f"run-{run_id}-{tag}.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": cfg.to_dict(), "state_dict": model.state_dict()}, path)
    return str(path.resolve())


def load_checkpoint(path: str | Path, map_location="cpu") -> dict[str, Any]:
    """Load a checkpoint written by a run; weights only (no pickled code is executed)."""
    return torch.load(path, map_location=map_location, weights_only=True)
