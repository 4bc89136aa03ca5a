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
