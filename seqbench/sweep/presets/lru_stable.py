"""The `lru-stable` preset: its grids at each scale (`seqbench sweep --preset lru-stable`)."""

from __future__ import annotations


def grids(scale: str) -> list[dict]:
    """Miller & Hardt's question asked of the LRU: the LRU held to |λ| ≤ λ for λ in
    {0.5, 0.9, 0.99} beside the unconstrained one, and TCNs of context k beside them, on the
    linear teacher at λ = 0.9 (its truncation error decays at 0.9 per step in the long run:
    tasks/synthetic.py), so `seqbench memory`'s k* of the task is known in closed form (from
    the teacher's own weights: Teacher.optimal_truncated_error) and the feedforward context
    that matches each LRU can be read off the k axis."""
    seeds = [0] if scale == "tiny" else [0, 1]
    s = {
        "seq_len": [{"tiny": 32, "small": 64, "paper": 200}[scale]],
        "teacher_kind": ["linear"],
        "teacher_lam": [0.9],
        "steps": [{"tiny": 150, "small": 2000, "paper": 10000}[scale]],
        "hidden": [{"tiny": 16, "small": 32, "paper": 64}[scale]],
        "lr": [0.01 if scale == "tiny" else 3e-3],
        "batch_size": [32],
        "eval_size": [500],
    }
    lams = {"tiny": [0.5, 0.9], "small": [0.5, 0.9, 0.99], "paper": [0.5, 0.9, 0.99]}[scale]
    ks = {"tiny": [2, 8], "small": [1, 2, 4, 8, 16, 32], "paper": [1, 2, 4, 8, 16, 32, 64]}
    return [
        {"models": ["lru"], "tasks": ["teacher"], "seeds": seeds, "set": s},
        *(
            {
                "models": ["lru"],
                "tasks": ["teacher"],
                "seeds": seeds,
                "set": s | {"stable": [True], "lam": [lam]},
            }
            for lam in lams
        ),
        {"models": ["tcn"], "tasks": ["teacher"], "seeds": seeds, "k": ks[scale], "set": s},
    ]
