"""The run recorder: one interface for the training loop, stress and bench; the store's
implementation finishes a run in one transaction; a sweep point's row is created once."""

from __future__ import annotations

import math

import pytest

from seqbench.configure import config_hash, make_config
from seqbench.store.recorder import BufferRecorder, StoreRecorder
from seqbench.training.loop import train

FAST = {"seq_len": 10, "steps": 3, "hidden": 4, "eval_size": 16}


def _count(store, table):
    from seqbench.store.query import run_query

    return run_query(store.url, f"SELECT COUNT(*) FROM {table}")[1][0][0]


def test_store_recorder_records_a_training_run(store):
    out = train(make_config("rnn", "adding", FAST), StoreRecorder(store))
    run = store.get_run(out.run_id)
    assert run.status == "completed" and run.finished_at and run.wall_seconds > 0
    assert store.summaries(run.id)["test_metric"] == pytest.approx(out.summaries["test_metric"])
    assert [k for k, _, _ in store.metrics(run.id, "valid_metric")] == ["valid_metric"] * 3


def test_finish_without_start_writes_everything_or_nothing(store):
    rec = store.recorder()
    with pytest.raises(ValueError):  # a curve whose xs and ys differ in length
        rec.finish(
            "completed",
            summaries={"gain": 1.0},
            curves={"g": ([0, 1], [1.0])},
            kind="stress",
            model="rnn",
            task="stress",
            config={},
            config_hash="h",
        )
    assert (_count(store, "runs"), _count(store, "summaries"), _count(store, "curves")) == (0, 0, 0)
    run_id = rec.finish(
        "completed",
        summaries={"gain": math.inf},
        curves={"g": ([0, 1], [1.0, math.nan])},
        kind="stress",
        model="rnn",
        task="stress",
        config={},
        config_hash="h",
    )
    assert store.summaries(run_id) == {"gain": math.inf}
    assert math.isnan(store.curve(run_id, "g")[1][1])


def test_a_sweep_point_row_is_created_once(store):
    """The driver claims the row; the worker records into memory; the driver writes the
    record into that same row."""
    cfg = make_config("rnn", "adding", FAST)
    sweep_id = store.plan_sweep("s", {"grids": []}, [(config_hash(cfg), cfg.to_dict())], False)
    run_id = store.claim_point(
        sweep_id,
        config_hash(cfg),
        {"kind": "train", "model": "rnn", "task": "adding", "config": {}},
        60.0,
    )
    rec = BufferRecorder(run_id)
    out = train(cfg, rec)
    assert out.run_id == run_id and _count(store, "runs") == 1
    assert store.write_point_result(run_id, rec.record()) == "completed"
    assert _count(store, "runs") == 1
    run = store.get_run(run_id)
    assert run.status == "completed" and run.config["hidden"] == 4 and run.n_params > 0
    assert store.summaries(run_id)["steps"] == 3
    # a second driver finds the point taken
    assert store.claim_point(sweep_id, config_hash(cfg), {"kind": "train"}, 60.0) is None
