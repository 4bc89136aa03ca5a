"""The `canary` preset: its grids at each scale (`seqbench sweep --preset canary`)."""

from __future__ import annotations

# The families the reproduction presets train: the canary gives each a point that learns.
CANARY_RECURRENT = [
    *("rnn", "lstm", "gru", "indrnn", "irnn"),
    *("lru", "s4d", "mamba", "linear-attention"),
]
CANARY_FEEDFORWARD = ["tcn", "window", "transformer"]


def grids(scale: str) -> list[dict]:
    """The CI gate's canary: every family the reproduction presets train, on a task each
    learns within 150 steps (the teacher at λ = 0.5, T = 16, lr 0.01): at CI size the
    reproduction presets' own points mostly sit at their trivial baselines (too few steps to
    learn), where a broken family would pass. Here each point ends at a tenth of the trivial
    baseline's error or below, so a family whose recurrence is zeroed (memoryless: about a
    third of it) or whose weights do not train regresses past the 10% tolerance. The exception
    is linear attention, at 0.17 of it (0.15 after 300 steps): a running sum has no decay to
    forget with, and the teacher forgets at 0.5 a step; a frozen one still fails the gate. The
    same grid at every scale; small and paper add seeds."""
    seeds = [0] if scale == "tiny" else [0, 1, 2]
    s = {
        "seq_len": [16],
        "teacher_lam": [0.5],
        "steps": [150],
        "hidden": [16],
        "lr": [0.01],
        "batch_size": [32],
        "eval_size": [500],
    }
    return [
        {"models": CANARY_RECURRENT, "tasks": ["teacher"], "seeds": seeds, "set": s},
        {"models": CANARY_FEEDFORWARD, "tasks": ["teacher"], "seeds": seeds, "k": [8], "set": s},
    ]
