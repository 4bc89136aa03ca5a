"""The `bai-tcn` preset: its grids at each scale (`seqbench sweep --preset bai-tcn`)."""

from __future__ import annotations


def grids(scale: str) -> list[dict]:
    """Bai et al.'s comparison, size-matched as the paper matched it: within each task every
    model gets the same parameter budget (`params`, the width fitted to it), the same steps
    and the same batch; the learning rate, optimiser and clip stay each pair's own
    (ModelSpec.task_defaults). The paper's budgets are ~70 K on adding and MNIST and ~16 K on
    copy (paper scale); small scales them to what 2 cores train in under an hour: the size
    of an LSTM-64 on adding, of the reference TCN (25 channels) on digits and (10 channels,
    8 levels) on copy."""
    seeds = [0] if scale == "tiny" else [0, 1]
    budgets = {
        "tiny": {"adding": 1200, "copy": 3200, "digits": 1500, "pdigits": 1500},
        "small": {"adding": 17500, "copy": 12500, "digits": 22600, "pdigits": 22600},
        "paper": {"adding": 70000, "copy": 15500, "digits": 70000, "pdigits": 70000},
    }[scale]
    steps = {
        "tiny": {"adding": 150, "copy": 150, "digits": 150, "pdigits": 150},
        "small": {"adding": 8000, "copy": 2000, "digits": 2000, "pdigits": 2000},
        "paper": {"adding": 20000, "copy": 20000, "digits": 20000, "pdigits": 20000},
    }[scale]
    if scale == "paper":  # 784-step sequential (and permuted) Fashion-MNIST: GPU-sized
        budgets |= {"fashion": 70000, "pfashion": 70000}
        steps |= {"fashion": 20000, "pfashion": 20000}
    grids = []
    for task, budget in budgets.items():
        s: dict[str, list] = {"params": [budget], "steps": [steps[task]], "batch_size": [32]}
        if task in ("adding", "copy"):
            paper_T = 600 if task == "adding" else 1000
            s["seq_len"] = [{"tiny": 30, "small": 200, "paper": paper_T}[scale]]
        grids.append(
            {"models": ["tcn", "lstm", "gru", "rnn"], "tasks": [task], "seeds": seeds, "set": s}
        )
        if task == "copy":
            # beside the reference's input, seqbench's variant: the same TCN (the width the
            # budget fitted above; an embedding moves its count off the budget) fed tokens
            width = {"tiny": 5, "small": 10, "paper": 11}[scale]
            variant = {k: v for k, v in s.items() if k != "params"}
            variant |= {"hidden": [width], "symbols": ["tokens"]}
            grids.append({"models": ["tcn"], "tasks": [task], "seeds": seeds, "set": variant})
    return grids
