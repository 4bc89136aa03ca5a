"""`memory --confirm`: the question asked again with every cell's cap doubled, and whether the
answer stands (k* inside the first interval; without a k*, the same verdict). The doubling is
read back from the stored runs' configs, the statement from real training."""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace

import pytest

from seqbench.errors import UsageError
from seqbench.memory.confirm import confirm_plan, confirmation
from seqbench.memory.plan import make_plan
from tests.memory.test_memory_command import lag_data

PLAN = {"families": ["tcn"], "references": ["gru"], "params": 3000}


def test_the_confirm_plan_doubles_every_cap_and_keeps_the_rest():
    auto = make_plan("teacher", sets=["seq_len=8"], **PLAN)  # memory's default: steps=auto
    doubled = confirm_plan(auto)
    assert doubled.name == f"{auto.name}-confirm"
    before = {(p.model, p.k, p.seed): p for p in auto.points}
    after = {(p.model, p.k, p.seed): p for p in doubled.points}
    assert before.keys() == after.keys()
    cap, floor = max(p.max_steps for p in auto.points), max(p.steps for p in auto.points)
    for key, p in after.items():  # the floor doubles too: a converged run trains longer
        assert (p.steps, p.max_steps) == (2 * floor, 2 * cap)
        assert (p.params, p.seq_len) == (before[key].params, before[key].seq_len)
    fixed = make_plan("teacher", sets=["seq_len=8", "steps=300", "patience=2"], **PLAN)
    assert {(p.steps, p.max_steps, p.patience) for p in confirm_plan(fixed).points} == {
        (600, None, 2)
    }
    with pytest.raises(UsageError, match="`confirm` takes one tolerance"):
        confirm_plan(make_plan("teacher", sets=["seq_len=8"], epsilon=[0.1, 0.05], **PLAN))


def _answer(verdict, k_star=None, k_low=None, k_high=None, under=()):
    return SimpleNamespace(verdict=verdict, k_star=k_star, k_low=k_low, k_high=k_high,
                           under_trained=list(under), train_steps=2000)  # fmt: skip


@pytest.mark.parametrize(
    ("first", "second", "held", "says"),
    [
        (_answer("matches", 3, 2, 3), _answer("matches", 3, 3, 3), True,
         "Confirmed at twice the cap (2,000 steps): k* = 3 (interval 3–3; matches), the "
         "first k* = 3 (2–3) falls inside it."),
        # issue 61's digits: 62 [33–62] at the first cap, 50 [17–50] at three times it
        (_answer("under-trained", 62, 33, 62, ["gru"]), _answer("matches", 50, 17, 50), False,
         "Not confirmed at twice the cap (2,000 steps): k* = 50 (interval 17–50; matches), "
         "the first k* = 62 (33–62) falls outside it; the answer moves with training"),
        (_answer("matches", 3, 2, 3), _answer("matches", 2, 2, 2), False,
         "k* = 2 (interval 2–2; matches), the first k* = 3 (2–3) falls outside it"),
        (_answer("needs-recurrence"), _answer("needs-recurrence", under=["tcn at k=8"]), True,
         "needs-recurrence, against needs-recurrence at the first cap; still improving "
         "there: tcn at k=8."),
        (_answer("matches", 4, 3, 4), _answer("needs-recurrence"), False,
         "Not confirmed at twice the cap (2,000 steps): needs-recurrence, against k* = 4"),
    ],
    ids=["inside", "digits-moved", "shorter", "same-verdict", "verdict-moved"],
)  # fmt: skip
def test_confirmation_says_whether_the_answer_stands(first, second, held, says):
    got = confirmation(first, second)
    assert got["confirmed"] is held and says in got["sentence"], got["sentence"]


def test_memory_confirm_asks_again_at_twice_the_cap(cli, db, tmp_path):
    """A lag-2 target: the answer (k* = 2) stands when every cap is doubled; both answers are
    stored, and the second's runs were trained with twice the first's cap."""
    data = lag_data(tmp_path / "lag.npz", 2, T=4)
    args = ["memory", "--task", "file", "--path", data, "--set", "steps=200",
            "--set", "max_steps=400", "--families", "tcn", "--references", "gru",
            "--params", "3000", "--workers", "2", "--quiet", "--lr-search", "none"]  # fmt: skip
    r = cli(*args, "--confirm", "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["k_star"] == 2 and doc["confirm"]["k_star"] == 2, doc
    assert doc["confirm"]["confirmed"] is True
    assert doc["confirm"]["name"] == f"{doc['name']}-confirm"
    assert f"answer {doc['confirm']['answer_id']} stored as '{doc['name']}-confirm'" in r.stderr
    con = sqlite3.connect(db)
    names = {n for (n,) in con.execute("SELECT name FROM answers")}
    caps = {
        name: {json.loads(c).get("max_steps") for (c,) in con.execute(
            "SELECT r.config FROM runs r JOIN answer_runs ar ON ar.run_id = r.id "
            "JOIN answers a ON a.id = ar.answer_id WHERE a.name = ?", (name,))}
        for name in names
    }  # fmt: skip
    con.close()
    assert names == {doc["name"], f"{doc['name']}-confirm"}
    assert caps == {doc["name"]: {400}, f"{doc['name']}-confirm": {800}}
    floors = {json.loads(c)["steps"] for (c,) in sqlite3.connect(db).execute(
        "SELECT config FROM runs")}  # fmt: skip
    assert floors == {200, 400}
    table = cli(*args, "--confirm")  # the same command again: both answers from the store
    assert table.exit_code == 0, table.output
    assert "Confirmed at twice the cap (800 steps): k* = 2 (interval" in table.stdout
    assert "--confirm: trained 0 run(s)" in table.stderr
