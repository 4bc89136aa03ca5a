"""Reports that compare like with like (issue cases): rows resting on different configs are
named, a difference column never compares a model with itself, a cell says how many of its
seeds were lost, and a parameter budget lands within 5% for every family."""

import json

import pytest

from seqbench.api import build_report
from seqbench.report.rows import comparison_rows, format_cell, leaderboard_rows


def _run(store, model, value, *, k=None, seed=0, seq_len=100, status="completed", **config):
    config = {"seq_len": seq_len, "seed": seed, "k": k, "steps": 500, **config}
    r = store.create_run(
        model=model,
        task="adding",
        k=k,
        seed=seed,
        seq_len=seq_len,
        config=config,
        config_hash=json.dumps([model, config], sort_keys=True),
        status=status,
    )
    if value is not None:
        store.set_summaries(r.id, {"test_metric": value})
    return r


def test_rows_of_different_budgets_are_named_in_a_note(store, db):
    """The newcomer's k = 20 row: one 5000-step run between 500-step sweep rows."""
    for k in (16, 32):
        for seed in range(3):
            _run(store, "lstm", 0.174, k=k, seed=seed)
            _run(store, "rnn", 0.175, k=k, seed=seed)
    _run(store, "lstm", 0.0128, k=20, steps=5000)
    _run(store, "rnn", 0.17, k=20, steps=5000)
    rep = build_report(db, compare=["lstm", "rnn"], by="k")
    notes = [n for n in rep.notes if n.startswith("lstm on adding")]
    assert notes == [
        "lstm on adding: rows differ in steps, not only in k (k=16, k=32: steps=500; "
        "k=20: steps=5000); compare them with care, or `where` one config"
    ]
    # rows of one config say nothing
    assert build_report(db, compare=["lstm", "rnn"], by="k", where="k != 20").notes == []


def test_the_difference_compares_a_with_b_never_a_with_a(store, db):
    """rnn at two lengths against a tcn at one: rnn (seq_len=8) − rnn (seq_len=12) was the
    difference column, and tcn was in none."""
    for seed in range(2):
        _run(store, "rnn", 0.1, seed=seed, seq_len=8)
        _run(store, "rnn", 0.2, seed=seed, seq_len=12)
        _run(store, "tcn", 0.05, seed=seed, seq_len=8, k=8)
    rep = build_report(db, compare=["rnn", "tcn"])
    notes: list[str] = []
    cols, rows, _ = comparison_rows(rep, notes=notes)
    diffs = [c for c in cols if " - " in c or " / " in c]
    assert diffs == ["rnn (seq_len=8) - tcn", "rnn (seq_len=8) / tcn"]
    assert rows[0][cols.index("rnn (seq_len=8) - tcn")] == pytest.approx(0.05)
    assert notes == ["rnn (seq_len=12): no tcn runs with the same seq_len to compare it with"]
    # both split: each variant with its match
    for seed in range(2):
        _run(store, "tcn", 0.07, seed=seed, seq_len=12, k=12)
    cols, rows, _ = comparison_rows(build_report(db, compare=["rnn", "tcn"]))
    assert [c for c in cols if " - " in c] == [
        "rnn (seq_len=8) - tcn (k=8 seq_len=8)",
        "rnn (seq_len=12) - tcn (k=12 seq_len=12)",
    ]
    assert rows[0][cols.index("rnn (seq_len=12) - tcn (k=12 seq_len=12)")] == pytest.approx(0.13)


def test_two_families_on_different_tasks_get_no_difference(store, db):
    """An IndRNN with markers one in each half against an LSTM with uniform ones: two tasks,
    so no difference column compares them, and a note says why."""
    for seed in range(2):
        _run(store, "indrnn", 0.001, seed=seed, marker="halves")
        _run(store, "lstm", 0.1, seed=seed, marker="uniform")
    notes: list[str] = []
    cols, rows, _ = comparison_rows(build_report(db, compare=["indrnn", "lstm"]), notes=notes)
    assert not [c for c in cols if " - " in c or " / " in c]
    assert notes == [
        "indrnn: no lstm runs with the same marker to compare it with "
        "(marker: indrnn halves, lstm uniform)",
        "lstm: no indrnn runs with the same marker to compare it with "
        "(marker: indrnn halves, lstm uniform)",
    ]
    # on one task, the same two are compared
    for seed in range(2):
        _run(store, "lstm", 0.1, seed=seed, marker="halves", steps=400)
    rep = build_report(
        db, compare=["indrnn", "lstm"], where="json_extract(config, '$.marker') = 'halves'"
    )
    cols, rows, _ = comparison_rows(rep)
    assert rows[0][cols.index("indrnn - lstm")] == pytest.approx(-0.099)


def test_a_task_option_that_differs_makes_two_tasks_too(store, db):
    """copy's symbols are its own option (TaskSpec.options), not a RunConfig field: a TCN fed
    floats against an LSTM fed tokens ran two tasks all the same, and no column compares them."""
    for seed in range(2):
        for model, value, symbols in (("tcn", 0.01, "float"), ("lstm", 0.2, "tokens")):
            config = {"seq_len": 100, "seed": seed, "steps": 500, "symbols": symbols}
            r = store.create_run(
                model=model,
                task="copy",
                seed=seed,
                seq_len=100,
                config=config,
                config_hash=json.dumps([model, config]),
                status="completed",
            )
            store.set_summaries(r.id, {"test_metric": value})  # fmt: skip
    notes: list[str] = []
    cols, _, _ = comparison_rows(build_report(db, compare=["tcn", "lstm"]), notes=notes)
    assert not [c for c in cols if " - " in c or " / " in c]
    assert notes[0] == (
        "tcn: no lstm runs with the same symbols to compare it with "
        "(symbols: tcn float, lstm tokens)"
    )


def test_task_fields_that_differ_between_tasks_do_not_split_a_pair(store, db):
    """adding has markers and copy none: in a report of both tasks each row holds one task,
    so the pair is compared on each and nothing is noted."""
    for model, value in (("indrnn", 0.001), ("lstm", 0.1)):
        _run(store, model, value, marker="uniform")
        config = {"seq_len": 100, "seed": 0, "steps": 500}
        r = store.create_run(
            model=model,
            task="copy",
            seed=0,
            seq_len=100,
            config=config,
            config_hash=json.dumps([model, "copy", config], sort_keys=True),
            status="completed",
        )
        store.set_summaries(r.id, {"test_metric": value / 10})
    notes: list[str] = []
    cols, rows, _ = comparison_rows(build_report(db, compare=["indrnn", "lstm"]), notes=notes)
    assert notes == []
    diffs = {r[0]: r[cols.index("indrnn - lstm")] for r in rows}
    assert diffs == {"adding": pytest.approx(-0.099), "copy": pytest.approx(-0.0099)}


def test_two_tcns_of_one_context_are_not_pooled(store, db):
    """At T = 32 a TCN given no k (the fewest levels covering T) and one given k = 32 (sized
    to see exactly 32 inputs) both store context 32; they are two models, so the k = 32 row
    reports each apart rather than one cell of both."""
    for seed in range(2):
        for asked, value in ((None, 0.1), (32, 0.02)):
            config = {"seq_len": 32, "seed": seed, "k": asked, "steps": 500}
            r = store.create_run(
                model="tcn",
                task="adding",
                k=32,
                seed=seed,
                seq_len=32,
                config=config,
                config_hash=json.dumps(["tcn", config], sort_keys=True),
                status="completed",
            )
            store.set_summaries(r.id, {"test_metric": value})
        _run(store, "rnn", 0.16, seed=seed, seq_len=32)
    rep = build_report(db, compare=["tcn", "rnn"], by="k")
    cols, rows, _ = comparison_rows(rep)
    (row,) = [r for r in rows if r[cols.index("k")] == 32]
    assert tuple(row[cols.index("tcn (k=32)")])[:3] == (pytest.approx(0.02), 0.0, 2)
    assert tuple(row[cols.index("tcn (k=none)")])[:3] == (pytest.approx(0.1), 0.0, 2)
    assert "tcn" not in cols


def test_model_fields_need_not_match_across_families(store, db):
    """lstm at two widths against one tcn: each width is compared with the tcn (a width is a
    family's own field), the T they share."""
    for seed in range(2):
        _run(store, "lstm", 0.1, seed=seed, hidden=64)
        _run(store, "lstm", 0.2, seed=seed, hidden=128)
        _run(store, "tcn", 0.05, seed=seed, hidden=30, k=100)
    cols, _, _ = comparison_rows(build_report(db, compare=["lstm", "tcn"]))
    assert [c for c in cols if " - " in c] == ["lstm (hidden=64) - tcn", "lstm (hidden=128) - tcn"]


def test_a_cell_says_how_many_seeds_were_lost(store, db):
    """5 seeds, 3 diverged: the 2 survivors are the row's best only with that mark."""
    for seed in range(5):
        if seed < 2:
            _run(store, "tcn", 0.001, k=16, seed=seed)
        else:
            _run(store, "tcn", None, k=16, seed=seed, status="diverged")
    _run(store, "tcn", None, k=16, seed=5, status="failed")
    for seed in range(3):
        _run(store, "rnn", 0.16, k=16, seed=seed)
    rep = build_report(db, compare=["tcn", "rnn"], by="k")
    cols, rows, best = comparison_rows(rep)
    cell = rows[0][cols.index("tcn")]
    assert tuple(cell) == (pytest.approx(0.001), 0.0, 2)
    assert format_cell(cell) == "0.001 ± 0 (n=2 of 6, 3 diverged, 1 failed)"
    assert best[0] == cols.index("tcn")  # the best, with its mark
    assert format_cell(rows[0][cols.index("rnn")]) == "0.16 ± 0 (n=3)"
    cols, rows, _ = leaderboard_rows(build_report(db, by="k"))
    lost = {r[cols.index("model")]: r[cols.index("lost")] for r in rows}
    assert lost == {"tcn": "4 of 6: 3 diverged, 1 failed", "rnn": None}


def test_a_cell_whose_seeds_all_diverged_is_shown_not_dropped(store, db, cli):
    for seed in range(2):
        _run(store, "tcn", None, k=8, seed=seed, status="diverged")
        _run(store, "rnn", 0.16, k=8, seed=seed)
    _run(store, "tcn", 0.02, k=16)
    _run(store, "rnn", 0.15, k=16)
    r = cli("report", "--compare", "tcn", "rnn", "--by", "k", "--format", "csv")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    head = lines[0].split(",")
    row8 = dict(
        zip(head, next(ln for ln in lines if ln.startswith("adding,8,")).split(","), strict=True)
    )
    assert (row8["tcn_n"], row8["tcn_ran"], row8["tcn_lost"]) == ("0", "2", "2")
    assert row8["tcn - rnn"] == ""  # nothing to compare
    r = cli("report", "--compare", "tcn", "rnn", "--by", "k")
    assert "– (n=0 of 2, 2 diverged)" in r.output


def test_repeats_of_one_config_and_seed_are_one_sample(store, db):
    first = _run(store, "rnn", 0.5, seed=0)
    again = store.create_run(
        model="rnn",
        task="adding",
        seed=0,
        seq_len=100,
        config=first.config,
        config_hash=first.config_hash,
        status="completed",
    )
    store.set_summaries(again.id, {"test_metric": 0.3})
    rep = build_report(db)
    assert rep.stats["n"].tolist() == [1] and rep.stats["mean"].tolist() == [0.3]


@pytest.mark.parametrize("model", ["rnn", "lstm", "gru", "indrnn", "tcn", "gcnn", "window"])
@pytest.mark.parametrize("budget", [5_000, 20_000])
def test_params_lands_within_5_percent_through_the_cli(cli, db, model, budget):
    _train_and_check_budget(cli, db, model, budget)


@pytest.mark.parametrize("budget", [1_000, 5_000, 20_000, 100_000])
def test_params_lands_for_the_transformer_by_its_heads_too(cli, db, budget):
    """The width must divide by the heads: 20000 was 21673 at best with 4 heads."""
    cfg = _train_and_check_budget(cli, db, "transformer", budget)
    assert cfg["hidden"] % cfg["heads"] == 0


def _train_and_check_budget(cli, db, model, budget):
    k = [] if model in ("rnn", "lstm", "gru", "indrnn") else ["--k", 16]
    r = cli(
        "train", "--model", model, "--task", "adding", "--seq-len", 80, "--params", budget,
        "--steps", 1, "--set", "eval_size=8", "--quiet", *k,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    from seqbench.store.opening import open_store

    s = open_store(db)
    run = s.list_runs(limit=1)[0]
    s.dispose()
    assert abs(run.n_params - budget) <= 0.05 * budget, (run.n_params, run.config["hidden"])
    return run.config


def test_params_refuses_with_the_budgets_it_can_reach(cli, db):
    r = cli(
        "train", "--model", "gcnn", "--task", "adding", "--seq-len", 80, "--k", 16,
        "--params", 1000, "--steps", 1, "--quiet",
    )  # fmt: skip
    assert r.exit_code != 0
    assert "no width gives 1000 parameters within 5%" in r.output
    assert "the nearest reachable budgets are 694, 1057" in r.output
    assert not db.exists()  # refused before a store was opened: nothing written
