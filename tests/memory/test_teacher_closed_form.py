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

from seqbench.configure import make_config
from seqbench.tasks import make_task

LAM, T, SEEDS, EPS = 0.5, 16, (0, 1, 2), 0.05


def optimal_truncated_error(lam: float, T: int, seed: int) -> np.ndarray:
    """e*(k) for k = 0 … T of the linear teacher of `seed`, from its own weights (shared with
    tests/report/test_decay_fit.py)."""
    cfg = make_config(
        "tcn",
        "teacher",
        {"teacher_kind": "linear", "teacher_lam": lam, "seq_len": T, "seed": seed},
    )
    task = make_task("teacher", cfg.task_args())
    W, U, v = task.W.double(), task.U.double(), task.v.double()
    lag_var, M = [], U
    for _ in range(T):
        lag_var.append(float(((v @ M) ** 2).sum()))
        M = W @ M
    return np.array([sum(sum(lag_var[k : t + 1]) for t in range(T)) / T for k in range(T + 1)])


def test_memory_finds_the_linear_teachers_closed_form_k_star(cli):
    e = np.mean([optimal_truncated_error(LAM, T, s) for s in SEEDS], axis=0)
    closed = int(min(k for k in range(1, T + 1) if e[k] <= EPS * e[0]))
    assert closed == 3  # e*(2) = 0.068 e*(0), e*(3) = 0.012 e*(0): well apart around ε

    r = cli(
        "memory", "--task", "teacher", "--set", "teacher_kind=linear",
        "--set", f"teacher_lam={LAM}", "--set", f"seq_len={T}", "--set", "steps=800",
        "--families", "tcn", "--references", "none", "--max-k", "8", "--workers", "2",
        "--quiet", "--format", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "matches" and doc["k_star"] == closed
    assert doc["k_low"] <= closed <= doc["k_high"]
    assert abs(doc["baseline"] - e[0]) <= 0.05 * e[0]  # the trivial baseline is the variance
    measured = {c["k"]: c["mean"] for c in doc["cells"]}
    for k in (1, 2, 3, 4):  # each cell at the optimum for its context, from above
        assert 0.9 * e[k] <= measured[k] <= e[k] + 0.005 * e[0], (k, measured[k], e[k])
