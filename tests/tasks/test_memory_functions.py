"""The memory-function task: y_t = Σ_s ρ(s)·x_{t−s} for four kernels, its closed form e*(k)
checked from outside (the best least-squares predictor from the last k inputs on sampled
data), the k* it implies, its bad inputs, and `seqbench memory` finding the closed-form k*."""

import itertools
import json
import math
import sqlite3

import numpy as np
import pytest

from seqbench.configure import config_hash, make_config
from seqbench.tasks import make_task
from seqbench.tasks import memory_functions as mf
from seqbench.tasks.synthetic import closed_form_k_star
from tests.memory.test_teacher_closed_form import least_squares_error

TASK = "memory-function"
KERNELS = {
    "exp": {"kernel": "exp", "decay": 0.8},
    "power": {"kernel": "power", "alpha": 0.9},
    "impulse": {"kernel": "impulse", "delay": 6},
    "osc": {"kernel": "osc", "decay": 0.85, "omega": 0.7},
}


def task(sets: dict, T: int = 40, seed: int = 0):
    cfg = make_config("tcn", TASK, {"seq_len": T, "seed": seed, **sets})
    return make_task(TASK, cfg.task_args())


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("noise", [None, 0.3])
def test_the_closed_form_is_the_best_context_k_predictors_error(name, noise):
    """At every k tried, e*(k) from ρ equals the test MSE of the best linear predictor of y_t
    from the last k inputs, fitted by least squares on sampled sequences (within sampling
    error); with noise, both carry its variance."""
    sets = KERNELS[name] | ({"noise": noise} if noise else {})
    t = task(sets)
    e = t.optimal_truncated_error()
    assert e[-1] == pytest.approx((noise or 0.0) ** 2)
    for k in (1, 3, 7, 15, 30):
        ls = least_squares_error(t, k)
        assert abs(ls - e[k]) <= 0.02 * e[0] + 0.03 * e[k], (name, k, ls, e[k])


def test_the_output_has_unit_variance_where_every_lag_is_present():
    for sets in KERNELS.values():
        t = task(sets, T=64)
        assert math.fsum(r * r for r in mf.rho(t.args, 64)) == pytest.approx(1.0)
        import torch

        _, y = t.sample(20000, torch.Generator().manual_seed(5))
        assert float(y[:, -1].var()) == pytest.approx(1.0, rel=0.05)


def test_k_star_in_closed_form_follows_each_kernels_memory():
    """impulse: k* = delay + 1 at every ε (the one lag must be seen); exp: k*(ε) ≈
    log ε / (2 log decay), growing like log(1/ε); power: grows like ε^(−1/(2α−1)), far faster;
    the damped cosine's e*(k) never rises (a sum of squares left out)."""
    T = 2000
    imp = mf.optimal_truncated_error(
        make_config("tcn", TASK, {"seq_len": T} | KERNELS["impulse"]), T
    )
    assert [closed_form_k_star(imp, eps) for eps in (0.2, 0.05, 0.01)] == [7, 7, 7]
    exp = make_config("tcn", TASK, {"seq_len": T, "kernel": "exp", "decay": 0.9})
    e = mf.optimal_truncated_error(exp, T)
    for eps in (0.2, 0.1, 0.05, 0.02, 0.01):
        shortcut = math.log(eps) / (2 * math.log(0.9))
        assert abs(closed_form_k_star(e, eps) - shortcut) <= 1.5, eps
    power = make_config("tcn", TASK, {"seq_len": T, "kernel": "power", "alpha": 1.0})
    p = mf.optimal_truncated_error(power, T)
    ks = [closed_form_k_star(p, eps) for eps in (0.2, 0.1, 0.05, 0.02)]
    ratios = [b / a for a, b in itertools.pairwise(ks)]
    assert all(r > 1.5 for r in ratios), ks  # ε halves, k* ~doubles (α = 1: ε^−1)
    osc = make_config("tcn", TASK, {"seq_len": 200} | KERNELS["osc"])
    o = mf.optimal_truncated_error(osc, 200)
    assert all(b <= a for a, b in itertools.pairwise(o))


def test_resolution_writes_the_kernels_parameters_and_only_those():
    c = make_config("tcn", TASK, {})
    assert (c.kernel, c.decay, c.alpha, c.delay, c.omega, c.noise) == ("exp", 0.9, *[None] * 4)
    c = make_config("tcn", TASK, {"kernel": "power"})
    assert (c.kernel, c.alpha, c.decay) == ("power", 1.0, None)
    # unset noise is left out of the hash; noise 0.1 is another experiment
    noisy = make_config("tcn", TASK, {"noise": 0.1})
    assert "noise" not in make_config("tcn", TASK, {}).hashed()
    assert config_hash(noisy) != config_hash(make_config("tcn", TASK, {}))
    # the other tasks are untouched: their configs carry none of the task's fields
    t = make_config("tcn", "teacher", {})
    assert all(getattr(t, f) is None for f in mf.FIELDS)


BAD = [
    (["--set", "kernel=power", "--set", "alpha=0.5"], "alpha must exceed 1/2"),
    (["--set", "kernel=power", "--set", "alpha=0.3"], "not square-summable"),
    (["--set", "kernel=impulse", "--set", "delay=40", "--seq-len", "40"], "delay must lie"),
    (["--set", "kernel=impulse", "--set", "delay=-1"], "delay must lie"),
    (["--set", "kernel=wave"], "kernel must be one of exp, power, impulse, osc"),
    (["--set", "alpha=2"], "alpha is a parameter of kernel=power, not exp"),
    (["--set", "decay=1"], "decay must lie in (0, 1)"),
    (["--set", "noise=-0.1"], "noise"),
    (["--set", "noise=nan"], "noise must be a finite number"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_is_one_line_and_writes_nothing(cli, tmp_path, args, message):
    db = tmp_path / "runs.db"
    r = cli("--db", str(db), "train", "--model", "tcn", "--task", TASK, "--steps", "5", *args)
    assert r.exit_code != 0
    assert message in r.output and len(r.output.strip().splitlines()) == 1, r.output
    assert not db.exists()


def test_a_memory_function_field_on_another_task_is_refused(cli, tmp_path):
    db = tmp_path / "runs.db"
    r = cli("--db", str(db), "train", "--model", "tcn", "--task", "teacher", "--set", "alpha=2")
    said = "alpha is not read by teacher, so it would change nothing; leave it out (it is read by "
    assert r.exit_code != 0 and f"{said}memory-function)" in r.output, r.output
    assert not db.exists()


def test_a_run_stores_its_kernel(cli, tmp_path):
    db = tmp_path / "runs.db"
    r = cli(
        "--db", str(db), "train", "--model", "tcn", "--task", TASK, "--seq-len", "16",
        "--steps", "20", "--set", "kernel=power", "--set", "alpha=1.5",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    con = sqlite3.connect(db)
    (config,) = con.execute("SELECT config FROM runs").fetchone()
    con.close()
    stored = json.loads(config)
    assert (stored["kernel"], stored["alpha"]) == ("power", 1.5)
    # the other kernels' parameters are unset, so not stored (the task's own fields are
    # options: stored flat when set, like any field)
    assert not {"decay", "delay", "omega", "noise"} & set(stored)


@pytest.mark.parametrize(("sets", "closed"), [({"kernel": "impulse", "delay": 2}, 3)])
def test_memory_finds_the_closed_form_k_star(cli, sets, closed):
    """At CI size (T = 16, TCNs only, 3 seeds): the stated k* is the closed form's, inside
    its interval, and each cell sits at e*(k) from above. (An exponential kernel's k* at four
    tolerances is tests/memory/test_profile.py's.)"""
    T, eps = 16, 0.05
    e = mf.optimal_truncated_error(make_config("tcn", TASK, {"seq_len": T} | sets), T)
    expected = closed_form_k_star(e, eps)
    if closed is not None:
        assert expected == closed
    r = cli(
        "memory", "--task", TASK, *(w for k, v in sets.items() for w in ("--set", f"{k}={v}")),
        "--set", f"seq_len={T}", "--set", "steps=800", "--families", "tcn",
        "--references", "none", "--max-k", "8", "--workers", "2", "--quiet", "--format", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "matches" and doc["k_star"] == expected, doc
    assert doc["k_low"] <= expected <= doc["k_high"]
    measured = {c["k"]: c["mean"] for c in doc["cells"]}
    for k, m in measured.items():
        if k < T:
            assert 0.9 * e[k] <= m <= e[k] + 0.01 * e[0], (k, m, e[k])
    assert np.isfinite(doc["baseline"])
