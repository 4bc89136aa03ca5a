"""Early stopping (`patience`, `min_steps`): a run stops once its validation metric has not
improved for `patience` evaluations in a row, past `min_steps`; `steps` is the most it may
train and the steps it did are its `steps` summary. Measured from the outside: a run whose
weights cannot move (an lr far below float32's resolution of them) has a validation metric
that never improves after its first evaluation, so where it stops is known exactly."""

from __future__ import annotations

from seqbench import api
from seqbench.config import experiment_fields
from seqbench.configure import config_hash, make_config

FROZEN = {"seq_len": 10, "steps": 1000, "eval_every": 10, "lr": 1e-30, "hidden": 16}


def test_a_run_that_cannot_improve_stops_after_patience_evaluations(tmp_path):
    db = str(tmp_path / "s.db")
    out = api.train("lstm", "adding", db=db, patience=2, **FROZEN)
    # evaluations at 10 (the best), 20 and 30 (none better): stopped at 30 of at most 1000
    assert out.status == "completed"
    assert out.summaries["steps"] == 30 and out.summaries["stopped_early"] == 1.0
    late = api.train("lstm", "adding", db=db, patience=2, min_steps=95, **FROZEN)
    assert late.summaries["steps"] == 100  # the first evaluation past min_steps
    store = api.open_store(db, "read")
    try:
        run = store.require_run(str(out.run_id))
        assert run.config["steps"] == 1000 and run.config["patience"] == 2
        assert len(store.metrics(out.run_id, "valid_metric")) == 3
    finally:
        store.dispose()
    # reports say which runs stopped early and the steps they trained
    notes = api.build_report(db).notes
    assert "2 of 2 run(s) with early stopping stopped before their steps (trained 30–100" in (
        " ".join(notes)
    )


def test_a_run_that_keeps_improving_trains_every_step(tmp_path):
    """The LSTM on adding at T = 10 improves its validation MSE at least once in every four
    evaluations over 300 steps: patience 4 never fires."""
    out = api.train("lstm", "adding", db=str(tmp_path / "s.db"), seq_len=10, steps=300, patience=4)
    assert out.summaries["steps"] == 300 and out.summaries["stopped_early"] == 0.0


def test_early_stopping_is_part_of_the_experiment_and_old_runs_keep_their_hash():
    """A run that may stop early is another experiment than one trained to the end (its hash
    differs); unset, the fields are left out of the hash, so every run stored before them
    keeps its hash."""
    plain = make_config("lstm", "adding", {"steps": 100})
    assert "patience" not in experiment_fields(plain.to_dict())
    stopping = make_config("lstm", "adding", {"steps": 100, "patience": 3})
    assert config_hash(stopping) != config_hash(plain)
    assert config_hash(make_config("lstm", "adding", {"steps": 100, "patience": None})) == (
        config_hash(plain)
    )


def test_reduce_on_plateau_halves_the_rate_after_each_evaluation_that_is_no_better(tmp_path):
    """`lr_plateau`: the rate is multiplied by it after every evaluation that does not beat
    the best so far, and only then. A run that cannot improve (FROZEN): its first evaluation
    is the best, every later one is not, so the rate halves at each of them."""
    db = str(tmp_path / "s.db")
    out = api.train("lstm", "adding", db=db, lr_plateau=0.5, **{**FROZEN, "steps": 50})
    store = api.open_store(db, "read")
    try:
        lr = [v for _, _, v in store.metrics(out.run_id, "lr")]
    finally:
        store.dispose()
    assert lr == [1e-30 * 0.5**i for i in range(5)]  # evaluations at 10, 20, … 50


def test_reduce_on_plateau_follows_the_validation_curve_of_a_learning_run(tmp_path):
    """An LSTM learning adding: the stored rate drops exactly after the evaluations whose
    validation MSE is not a new best (read off the stored curve), and the run trains exactly
    as one without the schedule until the first drop, differently after it."""
    db = str(tmp_path / "s.db")
    kw = {"seq_len": 10, "steps": 600, "eval_every": 20, "hidden": 16}
    out = api.train("lstm", "adding", db=db, lr_plateau=0.5, **kw)
    plain = api.train("lstm", "adding", db=db, **kw)
    store = api.open_store(db, "read")
    try:
        start = store.require_run(str(out.run_id)).config["lr"]
        valid = [v for _, _, v in store.metrics(out.run_id, "valid_metric")]
        lr = [v for _, _, v in store.metrics(out.run_id, "lr")]
        losses = {
            r: {s: v for _, s, v in store.metrics(r, "train_loss")}
            for r in (out.run_id, plain.run_id)
        }
    finally:
        store.dispose()
    rate, best, expected, first_drop = start, float("inf"), [], None
    for i, v in enumerate(valid):
        if v < best:
            best = v
        else:
            rate *= 0.5
            first_drop = first_drop or (i + 1) * kw["eval_every"]
        expected.append(rate)
    assert first_drop is not None and lr == expected
    a, b = losses[out.run_id], losses[plain.run_id]
    assert all(a[s] == b[s] for s in a if s <= first_drop)
    assert any(a[s] != b[s] for s in a if s > first_drop + 1)


def test_a_rate_schedule_is_checked_and_kept_out_of_old_hashes():
    import pytest

    from seqbench.errors import UsageError

    plain = make_config("lstm", "adding", {"steps": 100})
    assert "lr_plateau" not in experiment_fields(plain.to_dict())
    assert config_hash(make_config("lstm", "adding", {"steps": 100, "lr_plateau": 0.5})) != (
        config_hash(plain)
    )
    with pytest.raises(UsageError, match=r"lr_plateau must be in \(0, 1\)"):
        make_config("lstm", "adding", {"lr_plateau": 1.5})
    with pytest.raises(UsageError, match="lr_decay_every or lr_plateau, not both"):
        make_config("lstm", "adding", {"lr_plateau": 0.5, "lr_decay_every": 100})
