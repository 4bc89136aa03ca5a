"""The calibrated teacher's k* in closed form, and `seqbench memory` finding it.

With teacher_kind=linear the output is y_t = Σ_j a_j·x_{t−j}, a_j = √(1 − λ²)·v(λQ)^j U, and the
inputs are white: the best a model that sees only the last k inputs can do is to leave out the
lags ≥ k, whose variance is Σ_{j≥k} ‖a_j‖² (per step t, the lags up to t). Averaged over the T
steps and the seeds (each seed draws another teacher) this is the optimal truncated error
e*(k), computed here from the teacher's own weights, not from any model; e*(0) is the output's
variance, the trivial baseline. So k*(ε) = min{k : e*(k) ≤ ε·e*(0)} when the best model is
near perfect. Each TCN cell must sit at e*(k) (no model beats it; a trained one comes close),
and memory must state that k*, bisecting between the grid's 2 and 4."""

import json

import numpy as np
import pytest
import torch

from seqbench.configure import make_config
from seqbench.tasks import make_task
from seqbench.tasks.synthetic import closed_form_k_star

LAM, T, SEEDS, EPS = 0.5, 16, (0, 1, 2), 0.05


def teacher(lam: float, T: int, seed: int):
    cfg = make_config(
        "tcn",
        "teacher",
        {"teacher_kind": "linear", "teacher_lam": lam, "seq_len": T, "seed": seed},
    )
    return make_task("teacher", cfg.task_args())


def optimal_truncated_error(lam: float, T: int, seed: int) -> np.ndarray:
    """e*(k) for k = 0 … T of the linear teacher of `seed`: the product's one closed form
    (shared with tests/report/test_decay_fit.py)."""
    return np.array(teacher(lam, T, seed).optimal_truncated_error())


def least_squares_error(task, k: int, n: int = 4000) -> float:
    """The outside oracle: the test MSE of the best linear predictor of y_t from the last k
    inputs (zero before the sequence starts), fitted by least squares on sampled sequences
    and scored on fresh ones, averaged over the T steps."""
    g = torch.Generator().manual_seed(123)

    def design(x):  # (n, T, D) -> (n·T, k·D): x_t, x_{t−1}, …, x_{t−k+1}
        lags = [torch.nn.functional.pad(x, (0, 0, j, 0))[:, : x.shape[1]] for j in range(k)]
        return torch.cat(lags, -1).reshape(-1, k * x.shape[-1]).double()

    x, y = task.sample(n, g)
    w = torch.linalg.lstsq(design(x), y.reshape(-1, 1).double()).solution
    x, y = task.sample(n, g)
    return float(((design(x) @ w - y.reshape(-1, 1).double()) ** 2).mean())


@pytest.mark.parametrize("lam", [0.5, 0.9, 0.95])
def test_the_closed_form_is_the_best_context_k_predictors_error(lam):
    """Six teachers per λ: at every k tried, e*(k) from the weights equals the error of the
    best least-squares predictor from the last k inputs on sampled data (within sampling
    error), and the seeds' own k* spread around λ's shortcut."""
    T_ = 32 if lam == 0.5 else 48
    for seed in range(6):
        task = teacher(lam, T_, seed)
        e = task.optimal_truncated_error()
        for k in (1, 3, 8, 20):
            ls = least_squares_error(task, k)
            assert abs(ls - e[k]) <= 0.03 * e[0] + 0.05 * e[k], (seed, k, ls, e[k])


@pytest.mark.parametrize(("lam", "k_star", "shortcut"), [(0.9, 14, 15), (0.95, 26, 30)])
def test_the_teachers_k_star_comes_from_its_weights_not_the_shortcut(lam, k_star, shortcut):
    """λ is the teacher's long-run rate: at T = 100 over memory's seeds 0, 1, 2 the weights'
    k* at ε = 5% is 14 and 26, where ⌈log ε / (2 log λ)⌉ says 15 and 30."""
    import math

    e = np.mean([optimal_truncated_error(lam, 100, s) for s in range(3)], axis=0)
    assert closed_form_k_star(list(e), 0.05) == k_star
    assert math.ceil(math.log(0.05) / (2 * math.log(lam))) == shortcut


def test_memory_finds_the_linear_teachers_closed_form_k_star(cli):
    e = np.mean([optimal_truncated_error(LAM, T, s) for s in SEEDS], axis=0)
    closed = closed_form_k_star(list(e), EPS)
    assert closed == 3  # e*(2) = 0.068 e*(0), e*(3) = 0.012 e*(0): well apart around ε

    r = cli(
        "memory", "--task", "teacher", "--set", "teacher_kind=linear",
        "--set", f"teacher_lam={LAM}", "--set", f"seq_len={T}", "--set", "steps=2400",
        "--set", "patience=3", "--families", "tcn", "--references", "none", "--max-k", "8",
        "--workers", "2", "--quiet", "--format", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "matches" and doc["k_star"] == closed
    assert doc["k_low"] <= closed <= doc["k_high"]
    assert abs(doc["baseline"] - e[0]) <= 0.05 * e[0]  # the trivial baseline is the variance
    measured = {c["k"]: c["mean"] for c in doc["cells"]}
    for k in (1, 2, 3, 4):  # each cell at the optimum for its context, from above
        assert 0.9 * e[k] <= measured[k] <= e[k] + 0.005 * e[0], (k, measured[k], e[k])
