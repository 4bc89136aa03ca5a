"""`memory --lr-search`: a searched model trains every seed at its pair's rate times 0.3, 1
and 3, and each seed's cell value is the run whose validation metric was best. Checked from
the outside: the store's own runs are read back with SQL, and the answer's reference cell is
the mean of the test metrics of the runs with the best validation at each seed."""

from __future__ import annotations

import json
import sqlite3

import pytest

from seqbench.configure import make_config
from seqbench.errors import UsageError
from seqbench.memory.plan import make_plan
from tests.memory.test_memory_command import lag_data

PLAN = {"sets": ["seq_len=8", "steps=100"], "families": ["tcn"], "references": ["gru"],
        "params": 3000}  # fmt: skip


def test_whose_rate_is_searched_and_at_which_rates():
    lr = make_config("gru", "teacher", {"seq_len": 8}).lr
    rates = tuple(float(f"{lr * f:.3g}") for f in (0.3, 1, 3))
    default = make_plan("teacher", **PLAN)  # the references' by default
    assert default.lrs == {"gru": rates}
    gru = {(p.seed, p.lr) for p in default.points if p.model == "gru"}
    assert gru == {(s, r) for s in (0, 1, 2) for r in rates}
    assert {p.lr for p in default.points if p.model == "tcn"} == {
        make_config("tcn", "teacher", {"seq_len": 8}).lr
    }
    every = make_plan("teacher", lr_search="all", **PLAN)
    assert set(every.lrs) == {"tcn", "gru"}
    none = make_plan("teacher", lr_search="none", **PLAN)
    assert none.lrs == {} and len({p.lr for p in none.points if p.model == "gru"}) == 1
    assert len({default.name, every.name, none.name}) == 3  # three questions, three names
    given = make_plan("teacher", **{**PLAN, "sets": [*PLAN["sets"], "lr=0.01"]})
    assert given.lrs == {"gru": (0.003, 0.01, 0.03)}  # around the rate given
    with pytest.raises(UsageError, match="`lr_search` must be one of references, all, none"):
        make_plan("teacher", lr_search="some", **PLAN)


def test_each_seed_keeps_the_run_with_the_best_validation(cli, db, tmp_path):
    data = lag_data(tmp_path / "lag.npz", 2, T=4)
    r = cli("memory", "--task", "file", "--path", data, "--set", "steps=300",
            "--families", "tcn", "--references", "gru", "--params", "3000", "--workers", "2",
            "--quiet", "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT r.seed, json_extract(r.config, '$.lr'), v.value, t.value FROM runs r "
        "JOIN summaries v ON v.run_id = r.id AND v.key = 'best_valid_metric' "
        "JOIN summaries t ON t.run_id = r.id AND t.key = 'test_metric' WHERE r.model = 'gru'"
    ).fetchall()
    con.close()
    assert len(rows) == 9 and len({lr for _, lr, _, _ in rows}) == 3  # 3 seeds × 3 rates
    chosen = {}
    for seed, lr, valid, test in rows:
        if seed not in chosen or valid < chosen[seed][1]:
            chosen[seed] = (lr, valid, test)
    (gru,) = [c for c in doc["cells"] if c["model"] == "gru"]
    assert gru["mean"] == pytest.approx(sum(t for _, _, t in chosen.values()) / 3)
    counts = {}
    for lr, _, _ in chosen.values():
        counts[lr] = counts.get(lr, 0) + 1
    shown = ", ".join(f"{lr:g} ×{n}" for lr, n in sorted(counts.items()))
    assert doc["lr_chosen"].startswith(f"learning rate chosen on validation, per seed: gru {shown}")
    none = cli("memory", "--task", "file", "--path", data, "--set", "steps=300",
               "--families", "tcn", "--references", "gru", "--params", "3000", "--workers", "2",
               "--quiet", "--format", "json", "--lr-search", "none")  # fmt: skip
    assert none.exit_code == 0, none.output
    assert json.loads(none.stdout)["lr_chosen"] == ""


def test_the_search_finds_the_rate_known_to_be_best(cli, db, tmp_path):
    """Rates all far too small for 200 steps (Adam moves each weight by about the rate a step):
    the validation loss falls the further the weights move, so the largest of the three is
    the right one, at every seed."""
    data = lag_data(tmp_path / "lag.npz", 2, T=4)
    r = cli("memory", "--task", "file", "--path", data, "--set", "steps=200",
            "--set", "lr=0.00001", "--families", "tcn", "--references", "gru", "--params",
            "3000", "--workers", "2", "--quiet", "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["lr_chosen"] == (
        "learning rate chosen on validation, per seed: gru 3e-05 ×3 (of 3e-06, 1e-05, 3e-05), "
        "the largest tried at every seed: a larger rate may do better"
    )
