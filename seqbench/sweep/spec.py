"""Sweep specifications: axes, ranges, presets, scales, and expansion into RunConfigs.

A spec is a list of *grids*; each grid is {models, tasks, k, seeds, set: {field: [values]}}
and expands to their Cartesian product. Presets are several grids (e.g. recurrent models with
TBPTT k next to a TCN with context k). `--scale` picks the sizes: tiny (minutes on a CPU),
small (about an hour on a 2-core CPU), paper (the papers' sizes, for a GPU).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqbench.config import FIELDS, RunConfig
from seqbench.errors import SeqbenchError, UnknownNameError, UsageError
from seqbench.parsing import coerce, split_assignment, split_list
from seqbench.store.common import check_label

SCALES = ("tiny", "small", "paper")
GRID_KEYS = {"models", "tasks", "k", "seeds", "set"}


MAX_POINTS = 100_000  # a grid past this is a typo in a range, not an experiment


def parse_range(text: str, name: str | None = None) -> list[int]:
    """'1,2,4' or 'start:stop:xF' (geometric, factor F) or 'start:stop:+S' / 'start:stop:S'
    (arithmetic); stop is inclusive. Raises UsageError on anything malformed or empty, naming
    `name` (the flag or field it came from) where given."""
    try:
        return _parse_range(text)
    except UsageError as e:
        if name is None:
            raise
        raise UsageError(f"{name}: {e}") from None


def _parse_range(text: str) -> list[int]:
    text = text.strip()
    if ":" not in text:
        try:
            vals = [int(v) for v in split_list(text)]
        except ValueError:
            raise UsageError(f"not a list of integers: {text!r}") from None
        if not vals:
            raise UsageError(f"empty list: {text!r}")
        return vals
    parts = text.split(":")
    if len(parts) != 3:
        raise UsageError(f"a range is start:stop:xF or start:stop:+S, got {text!r}")
    try:
        start, stop = int(parts[0]), int(parts[1])
        step = parts[2].strip()
        geometric = step.startswith("x")
        amount = float(step[1:]) if geometric else int(step.lstrip("+"))
    except ValueError:
        raise UsageError(f"malformed range {text!r}") from None
    if stop < start:
        raise UsageError(f"range {text!r} is empty: stop is below start")
    if geometric and (amount <= 1 or start <= 0):
        raise UsageError(f"range {text!r}: a geometric range needs start > 0 and factor > 1")
    if not geometric and amount <= 0:
        raise UsageError(f"range {text!r}: the step must be positive")
    import math

    n = math.log(stop / start) / math.log(amount) + 1 if geometric else (stop - start) // amount + 1
    if n > MAX_POINTS:
        raise UsageError(
            f"range {text!r} has {int(n):,} values; a sweep has at most {MAX_POINTS:,} points"
        )
    vals, v = [], float(start)
    while v <= stop:
        if not vals or round(v) != vals[-1]:
            vals.append(round(v))
        v = v * amount if geometric else v + amount
    return vals


def parse_values(field: str, text: str) -> list[Any]:
    """--set key=v1,v2 (or an integer range) -> typed values for RunConfig field `field`."""
    if field not in FIELDS or field in ("model", "task", "tags"):
        valid = [f for f in FIELDS if f not in ("model", "task", "tags")]
        raise UnknownNameError("sweep axis", field, valid)
    if ":" in text and str(FIELDS[field].type).startswith("int"):
        return parse_range(text, field)
    if field in ("x_cols", "y_cols"):  # a table's columns: one choice, "a,b" is two columns
        return [coerce(field, text)]
    vals = [coerce(field, v) for v in split_list(text)]
    if not vals:
        raise UsageError(f"--set {field}= has no values")
    return vals


def _csv(text: str | list | None) -> list[str]:
    if isinstance(text, list):
        return [str(t) for t in text]
    return split_list(text)


def grid_from_flags(models, tasks, k, seeds, sets: list[str] | None) -> dict:
    grid: dict[str, Any] = {"models": _csv(models), "tasks": _csv(tasks)}
    if k:
        grid["k"] = parse_range(k, "--k")
    grid["seeds"] = parse_range(seeds, "--seeds") if seeds else [0]
    axes = {}
    for item in sets or []:
        key, val = split_assignment(item, "--set", "key=v1,v2")
        axes[key] = parse_values(key, val)
    if axes:
        grid["set"] = axes
    return grid


def load_spec_file(path: str) -> dict:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"spec file {path!r} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read spec file {path!r}: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"spec file {path!r} does not parse: {e}") from None
    top = GRID_KEYS | {"name", "grid"}
    for key in data:  # a typo (seed, ks, [sets]) must not silently drop an axis
        if key not in top:
            err = UnknownNameError("key", key, sorted(top))
            raise UsageError(f"spec file {path!r}: {err}") from None
    if "grid" in data and set(data) & GRID_KEYS:
        raise UsageError(
            f"spec file {path!r}: give the axes either at the top level or in [[grid]] "
            f"tables, not both (found {', '.join(sorted(set(data) & GRID_KEYS))} beside grid)"
        )
    grids = data.get("grid") or [{k: v for k, v in data.items() if k in GRID_KEYS}]
    if not isinstance(grids, list) or not all(isinstance(g, dict) for g in grids):
        raise UsageError(f"spec file {path!r}: grid must be an array of tables ([[grid]])")
    for g in grids:
        for key in g:
            if key not in GRID_KEYS:
                err = UnknownNameError("grid key", key, sorted(GRID_KEYS))
                raise UsageError(f"spec file {path!r}: {err}") from None
        if not isinstance(g.get("set") or {}, dict):
            raise UsageError(f"spec file {path!r}: set must be a table of field = [values]")
        for key in ("k", "seeds"):
            if isinstance(g.get(key), str):
                g[key] = parse_range(g[key], key)
        g["set"] = {
            f: (parse_values(f, v) if isinstance(v, str) else [coerce(f, x) for x in v])
            for f, v in (g.get("set") or {}).items()
        }
    return {"grids": grids, "name": data.get("name")}


# -- presets ---------------------------------------------------------------------------------
# Each preset maps a scale to its grids. tiny: minutes on a CPU; small: ~1 hour on 2 cores;
# paper: the papers' sizes, for a GPU.
def _miller_hardt(scale: str) -> list[dict]:
    """Three parts. (1) The teacher task for several true λ (< 1 stable, > 1 not): the full RNN
    next to its k-truncated window model for k = 1, 2, 4, …; the gap should shrink like λ^k
    (`seqbench report --fit-decay`); and the theorem's direct test, the truncation error of
    the same trained weights (`stress --run`), for the RNN unconstrained and projected to
    ‖W‖₂ ≤ λ, with an IRNN as the control that is not made to forget. (2) Chorales (real
    music): metric against k for RNN/LSTM (trained with truncated BPTT of length k, or
    full), stable and unstable, the window model over an LSTM and a TCN with context k.
    (3) Character-level Penn Treebank: RNN and LSTM, stable and unstable (the paper's
    language-model claim: about the same)."""
    T = {"tiny": 32, "small": 64, "paper": 200}[scale]
    steps = {"tiny": 60, "small": 1000, "paper": 20000}[scale]
    lams = {
        "tiny": [0.5, 1.5],
        "small": [0.5, 0.8, 0.95, 1.5],
        "paper": [0.5, 0.8, 0.9, 0.95, 0.99, 1.2, 1.5],
    }[scale]
    ks = {"tiny": [1, 4], "small": [1, 2, 4, 8, 16, 32], "paper": [1, 2, 4, 8, 16, 32, 64, 128]}[
        scale
    ]
    seeds = [0] if scale == "tiny" else [0, 1]
    hidden = {"tiny": 16, "small": 32, "paper": 128}[scale]
    teacher = {"seq_len": [T], "steps": [steps], "hidden": [hidden], "teacher_lam": lams}
    kept = {**teacher, "save_checkpoint": [True]}  # not hashed: the points are the same
    stable_lams = {"tiny": [0.5], "small": [0.5, 0.8, 0.95], "paper": [0.5, 0.8, 0.95]}[scale]
    # chorales: training crops of 64 frames (quarter notes); evaluation on whole chorales
    music_ks = {"tiny": [4], "small": [4, 16, 64], "paper": [4, 16, 64]}[scale]
    music = {
        "steps": [{"tiny": 30, "small": 1000, "paper": 10000}[scale]],
        "hidden": [{"tiny": 16, "small": 64, "paper": 256}[scale]],
    }
    return [
        {
            "models": ["window"],
            "tasks": ["teacher"],
            "k": ks,
            "seeds": seeds,
            "set": {**teacher, "base": ["rnn"]},
        },
        # the full RNN, and for the λ^k test on its own weights (`stress --run` of each, in
        # scripts/reproduce.sh): the RNN projected to ‖W‖₂ ≤ λ for several λ, and the
        # control, an IRNN (identity recurrence, ReLU), which is not made to forget
        {"models": ["rnn", "irnn"], "tasks": ["teacher"], "seeds": seeds, "set": kept},
        {
            "models": ["rnn"],
            "tasks": ["teacher"],
            "seeds": seeds,
            "set": {**kept, "stable": [True], "lam": stable_lams},
        },
        {
            "models": ["rnn", "lstm"],
            "tasks": ["chorales"],
            "k": [16, None],
            "seeds": seeds,
            "set": {**music, "stable": [False, True]},
        },
        {
            "models": ["window"],
            "tasks": ["chorales"],
            "k": music_ks,
            "seeds": seeds,
            "set": {**music, "base": ["lstm"]},
        },
        {
            "models": ["tcn"],
            "tasks": ["chorales"],
            "k": music_ks,
            "seeds": seeds,
            "set": {"steps": music["steps"]},
        },
        {
            "models": ["rnn", "lstm"],
            "tasks": ["ptb-char"],
            "seeds": seeds,
            "set": {
                "steps": [{"tiny": 30, "small": 2000, "paper": 20000}[scale]],
                "hidden": [{"tiny": 16, "small": 128, "paper": 256}[scale]],
                "seq_len": [{"tiny": 32, "small": 100, "paper": 100}[scale]],
                "stable": [False, True],
            },
        },
    ]


def _indrnn_adding(scale: str) -> list[dict]:
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


def _bai_tcn(scale: str) -> list[dict]:
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


# The families the reproduction presets train: the canary gives each a point that learns.
CANARY_RECURRENT = [
    *("rnn", "lstm", "gru", "indrnn", "irnn"),
    *("lru", "s4d", "mamba", "linear-attention"),
]
CANARY_FEEDFORWARD = ["tcn", "window", "transformer"]


def _canary(scale: str) -> list[dict]:
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


def _zoology_mqar(scale: str) -> list[dict]:
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


def _lru_stable(scale: str) -> list[dict]:
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


def _memory_functions(scale: str) -> list[dict]:
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


MEMORY_FUNCTION = "memory-function"


PRESETS = {
    "miller-hardt": _miller_hardt,
    "indrnn-adding": _indrnn_adding,
    "bai-tcn": _bai_tcn,
    "canary": _canary,
    "zoology-mqar": _zoology_mqar,
    "lru-stable": _lru_stable,
    "memory-functions": _memory_functions,
}


def preset_grids(name: str, scale: str) -> list[dict]:
    if name not in PRESETS:
        raise UnknownNameError("preset", name, list(PRESETS))
    if scale not in SCALES:
        raise UsageError(f"--scale must be one of {', '.join(SCALES)}, got {scale!r}")
    return PRESETS[name](scale)


# -- one parameter budget across k ------------------------------------------------------------
BUDGET = 10_000  # where the search for a budget every model meets at every k starts


def _sized(points: list[RunConfig]) -> list[RunConfig]:
    """One config per network the points build (model, task, T, k and the model's fields)."""
    out: dict[str, RunConfig] = {}
    for c in points:
        key = json.dumps([c.model, c.task, c.seq_len, c.k, c.model_args().__dict__], default=str)
        out.setdefault(key, c)
    return list(out.values())


def check_budget(points: list[RunConfig], budget: int) -> None:
    """Every network of `points` can be sized to `budget` parameters (within 5%): a one-line
    UsageError naming the first that cannot, before anything is written."""
    from seqbench.models import fit_size
    from seqbench.tasks import make_task

    tasks: dict[str, Any] = {}
    for cfg in _sized(points):
        key = json.dumps(cfg.task_args().__dict__, default=str) + cfg.task
        if key not in tasks:
            tasks[key] = make_task(cfg.task, cfg.task_args())
        try:
            fit_size(cfg.model, tasks[key], cfg.model_args(), budget)
        except UsageError as e:
            at = f" at k = {cfg.k}" if cfg.k is not None else ""
            raise UsageError(f"--params {budget}{at}: {e}") from None


def smallest_budget(points: list[RunConfig], start: int = BUDGET, limit: float = 4.0) -> int:
    """The smallest budget from `start` up (in steps of 2.5%) that every network of `points`
    meets within 5%: a deep TCN's count moves in steps of more than 10% at a narrow width, so
    a round budget can fall between two of them. Raises as check_budget does when none up to
    `limit`·start does."""
    import math

    budget = start
    while budget <= limit * start:
        try:
            check_budget(points, budget)
            return budget
        except UsageError:
            budget = math.ceil(budget * 1.025)
    check_budget(points, start)  # raises, naming the first network that cannot
    return start


def holds_budget(grid: dict) -> bool:
    """Whether a grid given by flags is a k-sweep that must hold one budget across k: two or
    more contexts, a feedforward model (whose size follows its context), and neither a width
    (`hidden`), a budget (`params`) nor a depth (`levels`) given."""
    from seqbench.models import MODELS

    if len(set(grid.get("k") or [])) < 2:
        return False
    if {"hidden", "params", "levels"} & set(grid.get("set") or {}):
        return False
    return any(not MODELS.get(m).recurrent for m in grid.get("models") or [])


# -- expansion --------------------------------------------------------------------------------
def expand(grids: list[dict]) -> list[RunConfig]:
    """All points of all grids as resolved, validated RunConfigs, duplicates removed, in order.
    Raises (before anything is written) on an empty grid or any invalid point."""
    from seqbench.configure import check_fits, config_hash, make_config

    points: list[RunConfig] = []
    seen: set[str] = set()
    for g in grids:
        models, tasks = g.get("models") or [], g.get("tasks") or []
        if not models or not tasks:
            raise UsageError("empty grid: give at least one model and one task")
        ks = g.get("k") or [None]
        seeds = g.get("seeds") or [0]
        axes = g.get("set") or {}
        names = list(axes)
        size = len(models) * len(tasks) * len(ks) * len(seeds)
        for n in names:
            size *= len(axes[n])
        if len(points) + size > MAX_POINTS:  # checked before a single point is built
            raise UsageError(
                f"the grid has {len(points) + size:,} points; a sweep has at most "
                f"{MAX_POINTS:,} (split it into several sweeps)"
            )
        for model, task, k, seed, *vals in itertools.product(
            models, tasks, ks, seeds, *(axes[n] for n in names)
        ):
            over = {"seed": seed, **dict(zip(names, vals, strict=True))}
            if k is not None:
                over["k"] = k
            try:
                cfg = make_config(model, task, over)
                check_fits(cfg)  # before torch is imported
                from seqbench.training.loop import preflight

                preflight(cfg)
            except SeqbenchError as e:
                e.args = (f"grid point {model}/{task} {over}: {e}",)
                raise
            h = config_hash(cfg)
            if h not in seen:
                seen.add(h)
                points.append(cfg)
    if not points:
        raise UsageError("empty grid: nothing to run")
    return points


def canonical(spec: dict) -> dict:
    """A JSON-stable copy of a spec (what is stored and compared when a name is reused)."""
    return json.loads(json.dumps(deepcopy(spec), sort_keys=True, default=str))


def spec_name(spec: dict) -> str:
    blob = json.dumps(canonical(spec), sort_keys=True)
    return "sweep-" + hashlib.sha256(blob.encode()).hexdigest()[:8]


# -- a sweep's plan ------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepPlan:
    name: str
    spec: dict  # what is stored with the sweep: {"grids": [...]} (and the preset's name)
    points: list[RunConfig]
    held_budget: int | None = None  # the budget a k-sweep holds across k, when seqbench chose it


def plan(
    *,
    models: str | None = None,
    tasks: str | None = None,
    k: str | None = None,
    seeds: str = "0",
    set_: list[str] | None = None,
    spec: str | None = None,
    preset: str | None = None,
    scale: str = "small",
    name: str | None = None,
) -> SweepPlan:
    """The grid of a sweep from one of three sources, never several: grid flags (comma lists
    and ranges), a TOML spec file or a preset (with --seeds replacing its seeds), every point
    resolved and validated (nothing is written). A k-sweep given by flags over a feedforward
    model, with no width, budget or depth given, holds one parameter budget across k: the
    smallest from BUDGET up that every model meets at every k within 5%."""
    if name is not None:
        check_label("sweep", name)
    sources = [bool(preset), bool(spec), bool(models or tasks or k or set_)]
    if sum(sources) == 0:
        raise UsageError("give --models and --tasks, a --spec file or a --preset")
    if sum(sources) > 1:
        raise UsageError("give grid flags, --spec or --preset, not several")
    held = None
    if preset:
        grids = preset_grids(preset, scale)
        if seeds != "0":
            for g in grids:
                g["seeds"] = parse_range(seeds, "--seeds")
        spec_doc = {"preset": preset, "scale": scale, "grids": grids}
        if seeds == "0":  # the preset as shipped: a name to quote in docs and --sweep filters
            name = name or f"{preset}-{scale}"
    elif spec:
        loaded = load_spec_file(spec)
        name = name or loaded.get("name")
        spec_doc = {"grids": loaded["grids"]}
    else:
        grid = grid_from_flags(models, tasks, k, seeds, set_)
        if holds_budget(grid):  # like with like: a larger context is not a larger model
            held = smallest_budget(expand([grid]))
            grid["set"] = {**grid.get("set", {}), "params": [held]}
        spec_doc = {"grids": [grid]}
    points = expand(spec_doc["grids"])  # validates every point before any write
    return SweepPlan(name or spec_name(spec_doc), spec_doc, points, held)
