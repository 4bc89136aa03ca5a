"""The `memory-functions` preset: its grids at each scale
(`seqbench sweep --preset memory-functions`)."""

from __future__ import annotations

MEMORY_FUNCTION = "memory-function"


def grids(scale: str) -> list[dict]:
    """Which family captures which memory: the four memory-function kernels (exponential,
    power law, impulse, damped cosine: tasks/memory_functions.py) at one parameter budget,
    across TCNs and sliding-window attention over contexts k, the LRU unconstrained and held
    to |λ| ≤ 0.9 (Miller & Hardt's condition), S4D and the GRU. Each kernel's optimal error
    at every context is known in closed form, so each cell reads against e*(k) at its own
    context (`seqbench memory kernels`)."""
    T = {"tiny": 16, "small": 64, "paper": 128}[scale]
    seeds = [0] if scale == "tiny" else [0, 1]
    ks = {"tiny": [2, 8], "small": [2, 8, 32], "paper": [2, 8, 32, 128]}[scale]
    s = {
        "seq_len": [T],
        "params": [{"tiny": 4300, "small": 12000, "paper": 30000}[scale]],
        "steps": [{"tiny": 150, "small": 1500, "paper": 10000}[scale]],
        "lr": [0.01 if scale == "tiny" else 3e-3],
        "batch_size": [32],
        "eval_size": [500],
    }
    kernels = [
        {"kernel": ["exp"], "decay": [0.9]},
        {"kernel": ["power"], "alpha": [1.0]},
        {"kernel": ["impulse"], "delay": [T // 3]},
        {"kernel": ["osc"], "decay": [0.9], "omega": [0.5]},
    ]
    grids = []
    for kern in kernels:
        k_set = s | kern
        grids += [
            {"models": ["tcn", "transformer"], "tasks": [MEMORY_FUNCTION], "seeds": seeds,
             "k": ks, "set": k_set},
            {"models": ["lru", "s4d", "gru"], "tasks": [MEMORY_FUNCTION], "seeds": seeds,
             "set": k_set},
            {"models": ["lru"], "tasks": [MEMORY_FUNCTION], "seeds": seeds,
             "set": k_set | {"stable": [True], "lam": [0.9]}},
        ]  # fmt: skip
    return grids
