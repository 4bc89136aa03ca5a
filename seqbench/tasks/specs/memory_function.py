"""The memory-function task: its kernels, checks and closed form are in
tasks/memory_functions.py (torch-free), its Task in tasks/synthetic.py."""

from __future__ import annotations

from seqbench.tasks import memory_functions as _mf
from seqbench.tasks.spec import TaskSpec

SPEC = TaskSpec(
    _mf.NAME,
    "seqbench.tasks.synthetic:MemoryFunction",
    "regress a linear functional of white noise with memory function kernel=exp, power, "
    "impulse or osc (MSE; e*(k) in closed form)",
    "mse",
    100,
    baseline_note="predict the mean: Var(y) = e*(0)",
    check=_mf.check,
    defaults={"steps": 1000},
    options=_mf.OPTIONS,
    condition=_mf.condition,
    reads=(),
)
