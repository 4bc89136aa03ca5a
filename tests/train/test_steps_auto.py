"""`--steps auto` (max_steps): a run trains at least `steps`, then on until its validation
curve has stopped improving by the rule that flags a cell "under-trained" in an answer, at
most `max_steps`. Checked from the outside: the stored validation curve is read back and the
rule applied to it by hand (the best of the last quarter of evaluations, two at least, against
the best before them, beside 2% of the curve's whole improvement), so where a run stops is
known from what it stored, and a run it stopped is one an answer would not flag."""

from __future__ import annotations

import json
import sqlite3

import pytest

from seqbench import api
from seqbench.config import experiment_fields
from seqbench.configure import config_hash, make_config
from seqbench.errors import UsageError

FROZEN = {"seq_len": 10, "eval_every": 10, "lr": 1e-30, "hidden": 16}


def improving(curve: list[float]) -> bool:
    """The under-trained rule, written out again from its docs (lower is better)."""
    if len(curve) < 4:
        return False
    tail = max(2, round(0.25 * len(curve)))
    whole = curve[0] - min(curve)
    return whole > 0 and min(curve[:-tail]) - min(curve[-tail:]) > 0.02 * whole


def stored(db: str, run_id: int) -> tuple[dict, list[tuple[int, float]]]:
    store = api.open_store(db, "read")
    try:
        config = store.require_run(str(run_id)).config
        curve = [(s, v) for _, s, v in store.metrics(run_id, "valid_metric")]
    finally:
        store.dispose()
    return config, curve


def test_a_run_that_cannot_improve_stops_at_its_floor(tmp_path):
    """Weights that cannot move: a flat curve has nothing left to gain, so the run stops at
    the first evaluation past `steps`, converged, however high the cap."""
    db = str(tmp_path / "s.db")
    out = api.train("lstm", "adding", db=db, steps=100, max_steps=5000, **FROZEN)
    assert out.status == "completed"
    assert out.summaries["steps"] == 100 and out.summaries["converged"] == 1.0
    config, curve = stored(db, out.run_id)
    assert config["max_steps"] == 5000 and len(curve) == 10


def test_a_run_stops_at_the_first_evaluation_past_its_floor_that_the_rule_calls_converged(
    tmp_path,
):
    """A GRU learning adding at T = 10 from a floor of 600 steps: it trains past the floor
    (the curve is still improving there) and stops at the first evaluation whose curve, read
    back from the store, is no longer improving; every evaluation between the floor and the
    stop was improving. Its test metric is the best validation point's."""
    db = str(tmp_path / "s.db")
    kw = {"seq_len": 10, "steps": 600, "max_steps": 6000, "eval_every": 60, "hidden": 16}
    out = api.train("gru", "adding", db=db, **kw)
    _, curve = stored(db, out.run_id)
    steps = [s for s, _ in curve]
    values = [v for _, v in curve]
    stop = int(out.summaries["steps"])
    assert out.summaries["converged"] == 1.0 and 600 < stop < 6000 and steps[-1] == stop
    for i, s in enumerate(steps):
        if s >= 600:
            assert improving(values[: i + 1]) is (s != stop), s
    best = min(range(len(values)), key=values.__getitem__)
    assert out.summaries["best_step"] == steps[best]
    assert out.summaries["best_valid_metric"] == pytest.approx(values[best])


def test_a_run_still_improving_at_its_cap_says_so(tmp_path):
    """A cap reached while learning (the GRU leaves the adding task's baseline between steps
    300 and 600): the run stops at its cap still improving by the rule (read back from its
    curve), and is stored as not converged."""
    db = str(tmp_path / "s.db")
    out = api.train("gru", "adding", db=db, seq_len=10, steps=300, max_steps=600,
                    eval_every=60, hidden=16)  # fmt: skip
    _, curve = stored(db, out.run_id)
    assert out.summaries["steps"] == 600 and out.summaries["converged"] == 0.0
    assert improving([v for _, v in curve])


def test_steps_auto_resolves_to_the_pairs_steps_and_ten_times_them():
    fixed = make_config("lstm", "adding", {})
    auto = make_config("lstm", "adding", {"steps": "auto"})
    assert (auto.steps, auto.max_steps) == (fixed.steps, 10 * fixed.steps)
    capped = make_config("lstm", "adding", {"steps": "auto", "max_steps": 700})
    assert (capped.steps, capped.max_steps) == (min(fixed.steps, 700), 700)
    assert make_config("lstm", "adding", {"steps": "AUTO"}).max_steps == 10 * fixed.steps
    alone = make_config("lstm", "adding", {"max_steps": 700})  # a cap alone is auto's
    assert (alone.steps, alone.max_steps) == (min(fixed.steps, 700), 700)
    # fixed steps keep their hash: max_steps unset stays out of it; auto is another experiment
    assert "max_steps" not in experiment_fields(fixed.to_dict())
    assert config_hash(make_config("lstm", "adding", {"max_steps": None})) == config_hash(fixed)
    assert config_hash(auto) != config_hash(fixed)


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"steps": "autom"}, "steps must be an integer or auto, got 'autom'"),
        ({"steps": 3000, "max_steps": 500}, "max_steps = 500 is below steps = 3000"),
        ({"steps": "auto", "max_steps": 0}, "max_steps must be positive, got 0"),
        ({"steps": "auto", "max_steps": 10**10}, "max_steps must be at most 1000000000"),
        ({"steps": "auto", "epochs": 3}, "give `steps` or `epochs`, not both"),
        ({"max_steps": 900, "epochs": 3, "steps": None}, "give `steps`, not `epochs`"),
    ],
)
def test_bad_auto_settings_are_refused(given, says):
    with pytest.raises(UsageError, match=says.replace("(", r"\(").replace(")", r"\)")):
        make_config("gru", "digits" if "epochs" in given else "adding", given)


def test_train_says_how_an_auto_run_ended(cli, tmp_path):
    db = str(tmp_path / "s.db")
    base = ["--db", db, "train", "--model", "gru", "--task", "adding", "--seq-len", "10",
            "--hidden", "16", "--quiet"]  # fmt: skip
    done = cli(*base, "--steps", "300", "--set", "max_steps=600", "--set", "eval_every=60")
    assert done.exit_code == 0, done.output
    assert "600 steps (the cap, still improving: train longer with --max-steps N)" in (done.output)
    frozen = cli(*base, "--steps", "200", "--max-steps", "2000", "--lr", "1e-30")
    assert frozen.exit_code == 0, frozen.output
    assert "200 steps (converged: at least 200, at most 2000)" in frozen.output


def test_a_sweep_trains_each_point_until_converged(cli, tmp_path):
    """`sweep --set max_steps=N` (as --set steps=auto) reaches every point: each run stores
    the steps it used and whether the rule ended it (the GRU above: the cap, improving)."""
    db = str(tmp_path / "s.db")
    r = cli("--db", db, "sweep", "--models", "gru", "--tasks", "adding", "--seeds", "0,1",
            "--set", "seq_len=10", "--set", "hidden=16", "--set", "steps=300",
            "--set", "max_steps=600", "--set", "eval_every=60", "--quiet")  # fmt: skip
    assert r.exit_code == 0, r.output
    con = sqlite3.connect(db)
    got = dict(con.execute(
        "SELECT s.key || r.seed, s.value FROM summaries s JOIN runs r ON r.id = s.run_id "
        "WHERE s.key IN ('steps', 'converged')"
    ).fetchall())  # fmt: skip
    configs = [json.loads(c) for (c,) in con.execute("SELECT config FROM runs")]
    con.close()
    assert got["steps0"] == 600 and got["converged0"] == 0.0
    assert {"steps1", "converged1"} <= got.keys()
    assert all((c["steps"], c["max_steps"]) == (300, 600) for c in configs)


def test_a_report_says_how_many_runs_converged(tmp_path):
    db = str(tmp_path / "s.db")
    api.train("lstm", "adding", db=db, steps=100, max_steps=5000, **FROZEN)  # converges at 100
    api.train("gru", "adding", db=db, seq_len=10, steps=300, max_steps=600, eval_every=60,
              hidden=16)  # fmt: skip  # the cap, improving
    api.train("gru", "adding", db=db, seq_len=10, steps=50, hidden=16)  # fixed steps: not counted
    notes = " ".join(api.build_report(db).notes)
    assert "`steps` auto: 1 of 2 run(s) converged, 1 reached the cap still improving" in notes
    assert "trained 100–600 steps" in notes
