"""The `indrnn-adding` preset: its grids at each scale (`seqbench sweep --preset indrnn-adding`)."""

from __future__ import annotations


def grids(scale: str) -> list[dict]:
    Ts = {"tiny": [20, 50], "small": [100, 500, 1000], "paper": [100, 500, 1000, 5000]}[scale]
    # small: 3000 steps (IndRNN reaches 6e-4 on T=100 in 3000 steps, measured), two seeds:
    # about 100 run-minutes, under an hour with two workers
    steps = {"tiny": 50, "small": 3000, "paper": 60000}[scale]
    hidden = {"tiny": 16, "small": 64, "paper": 128}[scale]
    seeds = [0] if scale == "tiny" else [0, 1]
    # batch 32 for every model, as the authors' adding script runs each of its models (the
    # IndRNN's other settings are its defaults on adding, ModelSpec.task_defaults)
    s = {
        "seq_len": Ts,
        "steps": [steps],
        "hidden": [hidden],
        "marker": ["halves"],
        "batch_size": [32],
    }
    # the authors' adding script gives its LSTM baseline a forget-gate bias of 1; the IRNN is
    # the paper's simple recurrent baseline, the tanh RNN the one this page ran before it
    return [
        {"models": ["indrnn", "irnn", "rnn"], "tasks": ["adding"], "seeds": seeds, "set": s},
        {
            "models": ["lstm"],
            "tasks": ["adding"],
            "seeds": seeds,
            "set": {**s, "forget_bias": [1.0]},
        },
    ]
