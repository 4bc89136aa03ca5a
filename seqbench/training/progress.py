"""The callbacks the training loop calls (torch-free, so the api can name them cheaply)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seqbench.config import RunConfig


@dataclass
class Progress:
    """Callbacks the loop calls; the CLI passes one that draws a rich progress bar."""

    on_run: Callable[[int, RunConfig], None] = lambda run_id, cfg: None  # the run exists
    on_start: Callable[[int], None] = lambda total: None
    on_step: Callable[[int, float], None] = lambda step, loss: None
    on_eval: Callable[[int, dict[str, float]], None] = lambda step, ev: None
    on_end: Callable[[], None] = lambda: None
