"""GPU scheduling of the local pool, tested where CUDA is absent: the GPU list is given
explicitly, workers are pinned (CUDA_VISIBLE_DEVICES) and the assignment is stored with each
run; a request the machine cannot meet is one line before any row is written."""

from __future__ import annotations

import os
import time

import pytest

from seqbench.configure import make_config
from seqbench.errors import UsageError
from seqbench.sweep.executors import LocalExecutor, gpu_slots
from seqbench.sweep.runner import check_gpus, executor_factory, plan_sweep, run_sweep


def _pinned(_):
    time.sleep(0.5)  # long enough that every worker takes one
    return os.getpid(), os.environ.get("CUDA_VISIBLE_DEVICES")


def test_slots_spread_each_gpu_runs_per_gpu_times():
    assert gpu_slots([0, 2], 3) == [0, 2, 0, 2, 0, 2]


def test_each_worker_is_pinned_to_one_gpu_runs_per_gpu_per_gpu():
    ex = LocalExecutor(0, gpus=[0, 1], runs_per_gpu=2)
    try:
        assert ex.workers == 4
        answers = list(ex.pool.map(_pinned, range(4)))
    finally:
        ex.shutdown()
    assert len({pid for pid, _ in answers}) == 4
    assert sorted(gpu for _, gpu in answers) == ["0", "0", "1", "1"]


def test_a_sweep_stores_the_gpu_each_point_ran_on(store):
    points = [
        make_config(
            "rnn",
            "adding",
            {"seq_len": 10, "steps": 2, "hidden": 4, "eval_size": 16, "seed": s, "device": "cpu"},
        )
        for s in range(4)
    ]
    sweep_id = plan_sweep(store, "gpus", {"grids": []}, points, force=False)
    out = run_sweep(store, sweep_id, lambda: LocalExecutor(0, gpus=[0, 1], runs_per_gpu=2))
    assert out.counts["completed"] == 4
    envs = [r.environment for r in store.list_runs()]
    assert {e["gpu"] for e in envs} <= {"0", "1"}
    assert all(e["cuda_visible_devices"] == e["gpu"] for e in envs)


@pytest.mark.parametrize(
    ("gpus", "per", "available", "msg"),
    [
        (None, 0, 0, "`runs_per_gpu` must be in 1..4096"),
        ([0, 2], 1, 2, r"this machine has 2 GPUs \(0..1\), not 2"),
        ([0], 1, 0, "no CUDA GPU is visible here"),
        ([1, 1], 1, 4, "names a GPU twice"),
        ([], 1, 4, "names no GPU"),
    ],
)
def test_requests_the_machine_cannot_meet(gpus, per, available, msg):
    with pytest.raises(UsageError, match=msg):
        check_gpus(gpus, per, available)


def test_executor_options_that_contradict_each_other():
    with pytest.raises(UsageError, match="not `workers`"):
        executor_factory("local", "auto", 4, gpus=[0], available_gpus=1)
    with pytest.raises(UsageError, match="Ray places GPU points itself"):
        executor_factory("ray", "auto", None, gpus=[0], available_gpus=1)
    with pytest.raises(UsageError, match="needs points that run on CUDA"):
        executor_factory("local", "auto", None, runs_per_gpu=4, available_gpus=0)


@pytest.mark.parametrize(
    ("flags", "msg"),
    [
        (["--runs-per-gpu", "0"], "--runs-per-gpu must be in 1..4096"),
        (["--gpus", "0"], "no CUDA GPU is visible here"),
        (["--gpus", "0,x"], "--gpus expects GPU indices"),
        (["--set", "device=cuda"], "no CUDA GPU is available here"),
    ],
)
def test_cli_refuses_before_any_row(cli, tmp_path, flags, msg):
    db = tmp_path / "new.db"
    grid = "--models rnn --tasks adding --set steps=1 --set hidden=4 -q".split()
    r = cli("--db", db, "sweep", *grid, *flags)
    assert r.exit_code == 2 and msg in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1
    assert not db.exists()
