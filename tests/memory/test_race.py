"""The race (memory/race.py): a cell gets no more seeds once its part in the answer is decided
at the race's level — shown within the tolerance in its family's sequence from the longest
context down, or shown outside it — and the best cell, the references and an answer that
learned nothing get every seed. No context is left untrained on monotonicity. End to end: on a
delay whose k* is known, the cells clearly out stop at two seeds, and the answer is the one
every seed gives (the same store run again with --no-race)."""

import json
import sqlite3

import pytest

from seqbench.memory.answer import ALPHA, derive
from seqbench.memory.race import RACE_SEEDS, boundary, looks, settled
from tests.memory.test_answer import runs
from tests.memory.test_memory_command import TRAIN, lag_data

# two seeds each: what the race judges first
FAR = [1.0, 0.98]  # no better than the trivial baseline (1.0)
NEAR = [0.0102, 0.0099]
BEST = [0.0100, 0.0098]
BEHIND = [0.0200, 0.0201]  # within the tolerance, shown behind the best: it cannot be the best
NOISY = [0.9, 0.05]  # the seeds disagree: neither within nor outside


def answer(cells, epsilon=0.05, alpha=ALPHA):
    return derive(
        runs(cells), task="t", higher_is_better=False, max_k=16, epsilon=epsilon, alpha=alpha
    )


BEST3 = [0.0100, 0.0098, 0.0102]
BEHIND3 = [0.0200, 0.0201, 0.0202]


def test_cells_decided_away_from_the_ends_of_the_sequences_are_settled():
    a = answer(
        {
            ("tcn", 1): FAR,
            ("tcn", 2): NOISY,
            ("tcn", 4): NEAR,
            ("tcn", 8): BEST,
            ("tcn", 16): BEHIND,
            ("tcn", 32): BEHIND,
            ("gru", None): [0.0101, 0.0099],
        }
    )
    status = {c.k: c.status for c in a.cells if c.k is not None}
    assert (a.k_star, status[1], status[2], status[4], status[16], status[32]) == (
        4, "outside", "undecided", "within", "within", "within",
    )  # fmt: skip
    # k = 16 and 32 are within above the best, and shown behind it: no seed of theirs can
    # move k* or the best. k* = 4 and k = 2 below it end the sequence from the best down,
    # k = 1 and 2 the one from the shortest up: a third seed there may move k* or the
    # interval. k = 8 is the best every cell is measured against, gru the ceiling.
    assert boundary(a) == {("tcn", 1), ("tcn", 2), ("tcn", 4)}
    assert settled([a]) == {("tcn", 16), ("tcn", 32)}


def test_a_cell_below_one_shown_outside_is_not_settled_by_it():
    """k = 2 is shown outside; k = 1 is undecided. A shorter context need not do worse than a
    longer one (a trained model can overfit), so k = 1 keeps its seeds, and the interval
    reaches down to it."""
    a = answer({("tcn", 1): NOISY, ("tcn", 2): FAR, ("tcn", 4): BEST, ("tcn", 8): BEHIND})
    assert [c.status for c in a.cells] == ["undecided", "outside", "within", "within"]
    assert a.k_low == 1
    assert ("tcn", 1) not in settled([a]) and ("tcn", 8) in settled([a])


def test_every_context_gets_its_first_seeds_whatever_a_longer_one_shows():
    """The race trains no context less than RACE_SEEDS seeds: none is left untrained because
    a longer one was shown outside."""
    from seqbench.memory.plan import make_plan
    from seqbench.memory.runner import wanted

    plan = make_plan("teacher", sets=["seq_len=8"], families=["tcn"], references=[],
                     seeds=[0, 1, 2], params=3000)  # fmt: skip
    first = wanted(plan, RACE_SEEDS, frozenset())  # nothing run yet: nothing settled
    assert {(c.k, c.seed) for c in first} == {(k, s) for k in (1, 2, 4, 8) for s in (0, 1)}
    a = answer({("tcn", 1): NOISY, ("tcn", 2): FAR, ("tcn", 4): BEST, ("tcn", 8): BEHIND})
    third = {(c.k, c.seed) for c in wanted(plan, 3, settled([a]))}
    # k = 1, below k = 2 shown outside, still gets its third seed; the settled 8 does not
    assert (1, 2) in third and (4, 2) in third and (8, 2) not in third


def test_nothing_learned_settles_nothing():
    """Where no cell beats the baseline yet, another seed may show one that does."""
    a = answer({("tcn", 1): FAR, ("tcn", 2): [0.99, 1.02], ("tcn", 4): [1.01, 0.97]})
    assert a.verdict == "nothing-learned"
    assert settled([a]) == frozenset()


def test_a_profile_settles_only_what_every_tolerance_settles():
    """k = 2 at 0.29 ± 0.04: at ε = 0.5 within the tolerance, above k* = 1; at ε = 0.05 shown
    outside, below k = 4 (outside too); at ε = 0.2 neither, undecided: it needs its seeds,
    whatever the other tolerances say."""
    x = ("tcn", 2)
    cells = {("tcn", 1): [0.40, 0.41, 0.39], x: [0.25, 0.33, 0.29],
             ("tcn", 4): [0.10, 0.11, 0.09], ("tcn", 8): BEST3, ("tcn", 16): BEHIND3}  # fmt: skip
    loose, mid, tight = (answer(cells, eps) for eps in (0.5, 0.2, 0.05))
    assert (loose.k_star, mid.k_star, tight.k_star) == (1, 4, 8)
    assert x in settled([loose]) and x in settled([tight]) and x not in settled([mid])
    assert x not in settled([loose, mid, tight])
    assert ("tcn", 16) in settled([loose, mid, tight])


def test_the_race_judges_at_alpha_over_its_looks():
    """Each look is a test; over looks at 2 and 3 seeds each runs at ALPHA / 2, so that a cell
    is wrongly stopped at most ALPHA of the time. A cell shown outside at ALPHA but not at
    ALPHA / 2 is not settled at that level."""
    assert (looks(3), looks(6), looks(RACE_SEEDS)) == (2, 5, 1)
    cells = {("tcn", 1): [0.0903, 0.09151], ("tcn", 2): FAR, ("tcn", 4): FAR, ("tcn", 8): BEST,
             ("tcn", 16): NEAR, ("tcn", 32): NEAR}  # fmt: skip
    at = {alpha: answer(cells, alpha=alpha) for alpha in (ALPHA, ALPHA / 2)}
    assert at[ALPHA].cells[0].outside and not at[ALPHA / 2].cells[0].outside
    assert ("tcn", 1) in settled([at[ALPHA]]) and ("tcn", 1) not in settled([at[ALPHA / 2]])


@pytest.mark.slow
def test_cells_clearly_out_get_no_more_seeds_and_the_answer_is_every_seeds(cli, db, tmp_path):
    data = lag_data(tmp_path / "lag.npz", 3)
    args = ["memory", "--task", "file", "--path", data, *TRAIN, "--format", "json"]
    raced = cli(*args)
    assert raced.exit_code == 0, raced.output
    doc = json.loads(raced.stdout)
    seeds = {c["k"]: c["seeds"] for c in doc["cells"]}
    assert (doc["k_star"], doc["k_low"], doc["k_high"]) == (3, 3, 3)
    # k = 1 and 2 cannot see the input 3 steps back: no better than the baseline, shown
    # outside at two seeds. k = 1 stops there; k = 2, the last context shown outside, and
    # k* = 3 end the answer's sequences and get all three, as do the best and the reference
    best = next(c for c in doc["cells"] if c["model"] == "tcn" and doc["best_cell"].endswith(
        f"k={c['k']}"))  # fmt: skip
    assert seeds[1] == 2 and seeds[2] == seeds[3] == 3
    assert best["seeds"] == seeds[None] == 3
    spared = sum(3 - n for n in seeds.values())
    assert spared >= 1 and f"{spared} spared by the race" in raced.stderr
    assert n_runs(db) == len(doc["run_ids"]) == sum(seeds.values())  # it trained nothing else
    full = cli(*args, "--no-race")  # the same store: trains the seeds the race spared
    assert full.exit_code == 0, full.output
    assert f"trained {spared} run(s)" in full.stderr and "spared" not in full.stderr
    every = json.loads(full.stdout)
    assert all(c["seeds"] == 3 for c in every["cells"])
    assert same_answer(doc, every)
    assert [c["outside"] for c in every["cells"]] == [c["outside"] for c in doc["cells"]]


@pytest.mark.slow
def test_every_context_is_trained_and_a_rerun_replays_the_race(cli, db, tmp_path):
    """A delay of 5 at T = 8: every context of the grid gets its first two seeds (k = 1 and 2
    too, below k = 4 shown outside: the race no longer leaves them untrained), the cells
    shown outside away from the interval's end stop there, and the search lands on 5 (7, 6, 5)."""
    data = lag_data(tmp_path / "lag.npz", 5)
    args = ["memory", "--task", "file", "--path", data, *TRAIN, "--format", "json"]
    raced = cli(*args)
    assert raced.exit_code == 0, raced.output
    doc = json.loads(raced.stdout)
    assert (doc["k_star"], doc["k_low"], doc["k_high"]) == (5, 5, 5)
    seeds = {c["k"]: c["seeds"] for c in doc["cells"]}
    # k = 4, the last context shown outside, ends the sequence from the shortest up: it gets
    # every seed; k = 1 and 2 stop at two
    assert {1, 2, 4} <= set(seeds) and seeds[1] == seeds[2] == 2 and seeds[4] == 3
    assert not any("not trained" in w for w in doc["warnings"])
    assert n_runs(db) == len(doc["run_ids"])
    # the same command again, on its own store: it replays the race on the stored runs (the
    # search's contexts are no part of the grid it searches), trains nothing and states the
    # same answer on the same runs
    again = cli(*args)
    assert again.exit_code == 0, again.output
    assert "trained 0 run(s)" in again.stderr and n_runs(db) == len(doc["run_ids"])
    assert f"trained 0 run(s) ({n_runs(db)} already stored)" in again.stderr, again.stderr
    redone = json.loads(again.stdout)
    assert sorted(redone["run_ids"]) == sorted(doc["run_ids"]) and same_answer(doc, redone)
    assert redone["warnings"] == doc["warnings"]
    # the dry run replays it too: nothing to train, not a bound on the search
    dry = cli(*args, "--dry-run").stderr
    n = len(doc["run_ids"])
    said = f"nothing to train: the store has all {n} runs the answer rests on, 3 search"
    assert said in dry and "more to search" not in dry
    # a run of the last search round deleted: the replay stops there and counts it alone
    con = sqlite3.connect(db)
    ((victim,),) = con.execute("SELECT min(id) FROM runs WHERE json_extract(config, '$.k') = 5")
    con.close()
    assert cli("runs", "delete", victim, "--yes").exit_code == 0
    dry = cli(*args, "--dry-run").stderr
    assert "the first round is in the store" in dry
    assert "search round 3 has 1 to train at most" in dry and "at most 0 more" in dry
    again = cli(*args)
    assert "trained 1 run(s)" in again.stderr and same_answer(doc, json.loads(again.stdout))
    full = cli(*args, "--no-race")
    assert full.exit_code == 0, full.output
    every = json.loads(full.stdout)
    assert all(c["seeds"] == 3 for c in every["cells"]) and same_answer(doc, every)


def n_runs(db) -> int:
    con = sqlite3.connect(db)
    ((n,),) = con.execute("SELECT count(*) FROM runs")
    con.close()
    return n


def same_answer(a: dict, b: dict) -> bool:
    """The same statement: verdict, k* and its interval (the best cell may differ where the
    race left a cell within the tolerance at two seeds whose third would have made it the
    best)."""
    keys = ("verdict", "k_star", "k_low", "k_high", "baseline")
    return all(a[k] == b[k] for k in keys)
