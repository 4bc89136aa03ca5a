"""The `zoology-mqar` preset: its grids at each scale (`seqbench sweep --preset zoology-mqar`)."""

from __future__ import annotations


def grids(scale: str) -> list[dict]:
    """Zoology's recall–memory trade-off (Arora et al. 2023, Figure 2) at seqbench's sizes:
    MQAR accuracy against state size for sliding-window attention (its window k sets its
    state, 2·d·k a layer), the LRU, S4D, the selective SSM, linear attention and an LSTM, every
    model at the same widths, steps and batch. Zoology's own runs use a vocabulary of 8192,
    64–512 steps, 4–64 pairs and widths 64–512 on GPUs; tiny (CI) is an 8-step, 2-pair,
    16-token version that trains in about a minute (5 of its 7 points at half the trivial
    error or less), small (2 cores, 81 minutes measured) 64 steps, 4 pairs and 256 tokens at two
    widths."""
    seeds = [0] if scale == "tiny" else [0, 1]
    T = {"tiny": 8, "small": 64, "paper": 128}[scale]
    s = {
        "seq_len": [T],
        "vocab_size": [{"tiny": 16, "small": 256, "paper": 8192}[scale]],
        "num_pairs": [{"tiny": 2, "small": 4, "paper": 8}[scale]],
        "steps": [{"tiny": 600, "small": 3000, "paper": 20000}[scale]],
        "hidden": {"tiny": [16], "small": [32, 64], "paper": [64, 128, 256]}[scale],
        "lr": [3e-3],
        "batch_size": [64],
        "eval_size": [{"tiny": 256, "small": 1000, "paper": 1000}[scale]],
    }
    windows = {"tiny": [2, 8], "small": [8, 32, 64], "paper": [16, 64, 128]}[scale]
    recurrent = ["lru", "s4d", "mamba", "linear-attention", "lstm"]
    return [
        {"models": recurrent, "tasks": ["mqar"], "seeds": seeds, "set": s},
        {"models": ["transformer"], "tasks": ["mqar"], "seeds": seeds, "k": windows, "set": s},
    ]
