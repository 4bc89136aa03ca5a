"""The `miller-hardt` preset: its grids at each scale (`seqbench sweep --preset miller-hardt`)."""

from __future__ import annotations


def grids(scale: str) -> list[dict]:
    """Three parts. (1) The teacher task for several true λ (< 1 stable, > 1 not): the full RNN
    next to its k-truncated window model for k = 1, 2, 4, …; the gap should shrink like λ^k
    (`seqbench report --fit-decay`); and the theorem's direct test, the truncation error of
    the same trained weights (`stress --run`), for the RNN unconstrained and projected to
    ‖W‖₂ ≤ λ, with an IRNN as the control that is not made to forget. (2) Chorales (real
    music): metric against k for RNN/LSTM (trained with truncated BPTT of length k, or
    full), stable and unstable, the window model over an LSTM and a TCN with context k.
    (3) Character-level Penn Treebank: RNN and LSTM, stable and unstable (the paper's
    language-model claim: about the same)."""
    seeds = [0] if scale == "tiny" else [0, 1]
    return _teacher(scale, seeds) + _chorales(scale, seeds) + _ptb(scale, seeds)


def _teacher(scale: str, seeds: list[int]) -> list[dict]:
    T = {"tiny": 32, "small": 64, "paper": 200}[scale]
    steps = {"tiny": 60, "small": 1000, "paper": 20000}[scale]
    lams = {
        "tiny": [0.5, 1.5],
        "small": [0.5, 0.8, 0.95, 1.5],
        "paper": [0.5, 0.8, 0.9, 0.95, 0.99, 1.2, 1.5],
    }[scale]
    ks = {"tiny": [1, 4], "small": [1, 2, 4, 8, 16, 32], "paper": [1, 2, 4, 8, 16, 32, 64, 128]}
    hidden = {"tiny": 16, "small": 32, "paper": 128}[scale]
    teacher = {"seq_len": [T], "steps": [steps], "hidden": [hidden], "teacher_lam": lams}
    kept = {**teacher, "save_checkpoint": [True]}  # not hashed: the points are the same
    stable_lams = {"tiny": [0.5], "small": [0.5, 0.8, 0.95], "paper": [0.5, 0.8, 0.95]}[scale]
    return [
        {"models": ["window"], "tasks": ["teacher"], "k": ks[scale], "seeds": seeds,
         "set": {**teacher, "base": ["rnn"]}},
        # the full RNN, and for the λ^k test on its own weights (`stress --run` of each, in
        # scripts/reproduce.sh): the RNN projected to ‖W‖₂ ≤ λ for several λ, and the
        # control, an IRNN (identity recurrence, ReLU), which is not made to forget
        {"models": ["rnn", "irnn"], "tasks": ["teacher"], "seeds": seeds, "set": kept},
        {"models": ["rnn"], "tasks": ["teacher"], "seeds": seeds,
         "set": {**kept, "stable": [True], "lam": stable_lams}},
    ]  # fmt: skip


def _chorales(scale: str, seeds: list[int]) -> list[dict]:
    # training crops of 64 frames (quarter notes); evaluation on whole chorales
    music_ks = {"tiny": [4], "small": [4, 16, 64], "paper": [4, 16, 64]}[scale]
    music = {
        "steps": [{"tiny": 30, "small": 1000, "paper": 10000}[scale]],
        "hidden": [{"tiny": 16, "small": 64, "paper": 256}[scale]],
    }
    return [
        {"models": ["rnn", "lstm"], "tasks": ["chorales"], "k": [16, None], "seeds": seeds,
         "set": {**music, "stable": [False, True]}},
        {"models": ["window"], "tasks": ["chorales"], "k": music_ks, "seeds": seeds,
         "set": {**music, "base": ["lstm"]}},
        {"models": ["tcn"], "tasks": ["chorales"], "k": music_ks, "seeds": seeds,
         "set": {"steps": music["steps"]}},
    ]  # fmt: skip


def _ptb(scale: str, seeds: list[int]) -> list[dict]:
    return [
        {"models": ["rnn", "lstm"], "tasks": ["ptb-char"], "seeds": seeds,
         "set": {
             "steps": [{"tiny": 30, "small": 2000, "paper": 20000}[scale]],
             "hidden": [{"tiny": 16, "small": 128, "paper": 256}[scale]],
             "seq_len": [{"tiny": 32, "small": 100, "paper": 100}[scale]],
             "stable": [False, True],
         }},
    ]  # fmt: skip
