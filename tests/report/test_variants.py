"""Reports and baselines over runs told apart by config fields (seq_len, stable, teacher_lam),
and the truncation-gap decay fit."""

import json
import math

import numpy as np
import pytest

from seqbench.api import build_report
from seqbench.report.baseline_file import load_file, resolve_baseline
from seqbench.report.check import check, save_baseline
from seqbench.report.decay import fit_decay
from seqbench.report.rows import comparison_rows


def _run(store, model, task, value, *, k=None, seed=0, seq_len=100, **config):
    r = store.create_run(
        model=model,
        task=task,
        k=k,
        seed=seed,
        seq_len=seq_len,
        config={"seq_len": seq_len, "seed": seed, "k": k, **config},
        config_hash=f"h{model}{k}{seed}{seq_len}{config}",
        status="completed",
    )
    store.set_summaries(r.id, {"test_metric": value})
    return r


@pytest.fixture
def adding_by_length(store, db):
    # the IndRNN claim's shape: one model on one task at three lengths, two seeds each
    for T, vals in ((100, (0.001, 0.003)), (500, (0.01, 0.02)), (1000, (0.16, 0.17))):
        for seed, v in enumerate(vals):
            _run(store, "indrnn", "adding", v, seed=seed, seq_len=T, hidden=64)
    return db


def test_baseline_points_are_told_apart_by_the_fields_that_vary(adding_by_length, store):
    points = save_baseline(store, "repro", rtol=0.1)
    assert len(points) == 3  # one per seq_len, not one median over all three lengths
    by_var = {json.loads(p.variant)["seq_len"]: p.value for p in points}
    assert by_var == {
        100: pytest.approx(0.002),
        500: pytest.approx(0.015),
        1000: pytest.approx(0.165),
    }
    assert {r.status for r in check(store, points)} == {"pass"}
    # a worse T=500 run moves that point's median alone
    _run(store, "indrnn", "adding", 0.16, seed=2, seq_len=500, hidden=64)
    _run(store, "indrnn", "adding", 0.16, seed=3, seq_len=500, hidden=64)
    status = {json.loads(r.variant)["seq_len"]: r.status for r in check(store, points)}
    assert status == {100: "pass", 500: "regressed", 1000: "pass"}


def test_variant_survives_export_and_old_files_still_load(cli, adding_by_length, tmp_path):
    assert cli("baseline", "save", "repro").exit_code == 0
    path = tmp_path / "repro.json"
    assert cli("baseline", "export", "repro", path).exit_code == 0
    data = json.loads(path.read_text())
    assert sorted(p["variant"]["seq_len"] for p in data["points"]) == [100, 500, 1000]
    ok = cli("check", "--baseline", path, "--fail-on-missing")
    assert ok.exit_code == 0, ok.output
    assert "seq_len=500" in ok.stdout
    # a baseline file from before variants existed: no "variant" key, one point per (model, k)
    for p in data["points"]:
        del p["variant"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    assert {p.variant for p in load_file(old)[1]} == {""}
    bad = tmp_path / "bad.json"
    data["points"][0]["variant"] = [1, 2]
    bad.write_text(json.dumps(data))
    r = cli("check", "--baseline", bad)
    assert r.exit_code == 2 and "not a seqbench baseline" in r.stderr


def test_report_groups_by_config_fields(cli, store, db, tmp_path):
    for stable, vals in ((False, (4.0, 4.2)), (True, (4.4, 4.6))):
        for seed, v in enumerate(vals):
            _run(store, "rnn", "chorales", v, seed=seed, stable=stable)
            _run(store, "rnn", "chorales", v + 1, k=16, seed=seed, stable=stable)
            _run(store, "tcn", "chorales", 5.0 + seed, k=16, seed=seed)
    rep = build_report(str(db), compare=["rnn", "tcn"], by="k,stable")
    cols, rows, _ = comparison_rows(rep)
    assert cols[:5] == ["task", "k", "stable", "rnn", "tcn"]
    # (k, stable) pairs that some run has: no empty rows from the pivot's full product, and a
    # full model's unset k is blank
    pairs = [(r[1], r[2]) for r in rows]
    assert len(pairs) == 5 and set(pairs) == {
        (16.0, False),
        (16.0, True),
        (16.0, None),
        (None, False),
        (None, True),
    }
    cells = {(r[1], r[2]): r[3] for r in rows}
    assert cells[(None, True)][:2] == (pytest.approx(4.5), pytest.approx(math.sqrt(0.02)))
    assert cells[(16.0, False)][0] == pytest.approx(5.1)
    md = cli("report", "--compare", "rnn", "tcn", "--by", "k,stable", "--format", "markdown")
    assert md.exit_code == 0, md.output
    assert "| task | k | stable | rnn | tcn |" in md.stdout and "4.5 ± 0.14 (n=2)" in md.stdout
    png = tmp_path / "k.png"
    p = cli("report", "--compare", "rnn", "tcn", "--by", "k,stable", "--plot", png)
    assert p.exit_code == 0 and png.read_bytes()[:4] == b"\x89PNG"
    bars = tmp_path / "bars.png"  # no numeric axis: grouped bars
    b = cli("report", "--compare", "rnn", "tcn", "--by", "stable", "--plot", bars)
    assert b.exit_code == 0 and bars.read_bytes()[:4] == b"\x89PNG"
    unknown = cli("report", "--by", "stabel")
    assert unknown.exit_code == 2 and "Did you mean 'stable'" in unknown.stderr


def test_fit_decay_recovers_a_geometric_gap(cli, store, db):
    # window(k) = full + C·ρ^k with ρ = λ² for λ = 0.5 and 0.8, exactly; the full model has no k
    for lam in (0.5, 0.8):
        for seed in (0, 1):
            _run(store, "rnn", "teacher", 0.01, seed=seed, teacher_lam=lam)
            for k in (1, 2, 4, 8, 16):
                v = 0.01 + 0.5 * (lam**2) ** k
                _run(store, "window", "teacher", v, k=k, seed=seed, teacher_lam=lam)
    rep = build_report(str(db), compare=["window", "rnn"], by="teacher_lam,k")
    cols, rows = fit_decay(rep)
    fits = {r[1]: dict(zip(cols, r, strict=True)) for r in rows}
    assert set(fits) == {0.5, 0.8}
    for lam, f in fits.items():
        assert f["reference"] == pytest.approx(0.01)
        assert f["sqrt_rate"] == pytest.approx(lam, rel=1e-6)
        assert f["points"] >= 2
    # points lost in the noise floor (gap under a quarter of the reference) are left out
    assert fits[0.5]["k_used"] == "1,2" and fits[0.8]["k_used"] == "1,2,4,8"
    out = cli(
        "report",
        "--compare",
        "window",
        "rnn",
        "--by",
        "teacher_lam,k",
        "--fit-decay",
        "--format",
        "json",
    )
    assert out.exit_code == 0, out.output
    assert [round(r["sqrt_rate"], 6) for r in json.loads(out.stdout)] == [0.5, 0.8]
    assert cli("report", "--compare", "window", "--by", "teacher_lam", "--fit-decay").exit_code == 2


def test_resolve_baseline_reads_variant_files(adding_by_length, store, tmp_path):
    save_baseline(store, "r")
    path = tmp_path / "r.json"
    from seqbench.report.baseline_file import export_baseline

    export_baseline(store, "r", path)
    assert {p.variant for p in resolve_baseline(store, str(path))} == {
        '{"seq_len":100}',
        '{"seq_len":500}',
        '{"seq_len":1000}',
    }


def test_each_row_shows_its_own_trivial_baseline(store, db):
    # the teacher's baseline (Var y) depends on λ: a row per λ shows that λ's baseline
    for lam, base in ((0.5, 0.1), (1.5, 0.4)):
        for k in (1, None):
            r = _run(store, "window" if k else "rnn", "teacher", 0.05, k=k, teacher_lam=lam)
            store.set_summaries(r.id, {"baseline": base})
    rep = build_report(str(db), compare=["window", "rnn"], by="teacher_lam,k")
    cols, rows, _ = comparison_rows(rep)
    got = {(r[1], r[2]): r[cols.index("baseline")] for r in rows}
    assert got == {
        (0.5, 1.0): pytest.approx(0.1),
        (0.5, None): pytest.approx(0.1),
        (1.5, 1.0): pytest.approx(0.4),
        (1.5, None): pytest.approx(0.4),
    }


def test_fit_decay_pairs_gaps_by_seed(store, db):
    # each seed is another teacher with its own full-model error; a k where one seed's window
    # model is no worse than its full model is noise, not gap, even when the mean gap is large
    full = {0: 0.01, 1: 0.10}
    window = {1: (0.5, 0.6), 2: (0.2, 0.3), 4: (0.06, 0.16), 8: (0.2, 0.09)}
    for seed, ref in full.items():
        _run(store, "rnn", "teacher", ref, seed=seed)
    for k, vals in window.items():
        for seed, v in enumerate(vals):
            _run(store, "window", "teacher", v, k=k, seed=seed)
    rep = build_report(str(db), compare=["window", "rnn"], by="k")
    cols, (row,) = fit_decay(rep)
    f = dict(zip(cols, row, strict=True))
    assert f["k_used"] == "1,2,4" and f["reference"] == pytest.approx(0.055)
    gaps = [0.495, 0.195, 0.055]  # mean paired gaps at k = 1, 2, 4
    slope = np.polyfit([1, 2, 4], np.log(gaps), 1)[0]
    assert f["rate"] == pytest.approx(math.exp(slope))


def test_a_cell_never_averages_runs_of_different_configs(cli, store, db):
    """Runs of one model that differ in more than the seed (here T and the step budget) are
    variants, each with its own mean, named by the fields that differ; the same model with
    seeds alone stays one cell."""
    for seed, v in enumerate((0.10, 0.12)):
        _run(store, "lstm", "adding", v, seed=seed, seq_len=50, steps=20)
    _run(store, "lstm", "adding", 0.30, seq_len=100, steps=200)
    for seed, v in enumerate((0.05, 0.07)):
        _run(store, "tcn", "adding", v, seed=seed, seq_len=50, steps=20)
    rep = build_report(str(db), compare=["lstm", "tcn"])
    assert rep.models == [
        "lstm (seq_len=50 steps=20)",
        "lstm (seq_len=100 steps=200)",
        "tcn",
    ]
    cols, (row,), _ = comparison_rows(rep)
    cells = dict(zip(cols, row, strict=True))
    assert cells["lstm (seq_len=50 steps=20)"][::2] == (pytest.approx(0.11), 2)
    assert cells["lstm (seq_len=100 steps=200)"][::2] == (pytest.approx(0.30), 1)
    assert cells["tcn"][::2] == (pytest.approx(0.06), 2)
    (note,) = rep.notes
    assert note.startswith("lstm: runs differ in seq_len, steps beyond the seed")
    out = cli("report")  # the leaderboard splits them too, and says so on stderr
    assert out.exit_code == 0, out.output
    assert "lstm (seq_len=100 steps=200)" in out.stdout and "0.3" in out.stdout
    assert "note: lstm: runs differ in seq_len, steps" in out.stderr
    # by T, each cell holds one experiment (T and steps change together here): no variants,
    # but the rows' budgets differ, and the note says so
    by_t = build_report(str(db), compare=["lstm", "tcn"], by="seq_len")
    assert by_t.models == ["lstm", "tcn"]
    assert by_t.notes == [
        "lstm on adding: rows differ in steps, not only in seq_len (seq_len=50: steps=20; "
        "seq_len=100: steps=200); compare them with care, or `where` one config"
    ]


def test_a_model_split_on_one_task_keeps_its_cells_on_the_others(store, db):
    """Two TCN configs on copy (floats and tokens) and one on adding: the adding TCN keeps its
    own column, compared with the LSTM there, where before it was in no column at all."""
    for seed, v in enumerate((0.01, 0.03)):
        _run(store, "tcn", "adding", v, seed=seed, steps=20)
        _run(store, "lstm", "adding", 0.16, seed=seed, steps=20)
        _run(store, "tcn", "copy", 0.005, seed=seed, steps=20, symbols="float")
        _run(store, "tcn", "copy", 0.0001, seed=seed, steps=20, symbols="tokens")
        _run(store, "lstm", "copy", 0.09, seed=seed, steps=20, symbols="float")
    rep = build_report(str(db), compare=["tcn", "lstm"])
    assert rep.models == ["tcn", "tcn (symbols=float)", "tcn (symbols=tokens)", "lstm"]
    notes: list[str] = []
    cols, rows, _ = comparison_rows(rep, notes=notes)
    cells = {row[0]: dict(zip(cols, row, strict=True)) for row in rows}
    assert cells["adding"]["tcn"][::2] == (pytest.approx(0.02), 2)
    assert cells["adding"]["tcn - lstm"] == pytest.approx(-0.14)
    assert cells["copy"]["tcn (symbols=float) - lstm"] == pytest.approx(-0.085)
    assert cells["copy"]["tcn (symbols=tokens)"][::2] == (pytest.approx(0.0001), 2)
    assert "tcn (symbols=tokens): no lstm runs with the same symbols to compare it with" in notes


def test_a_row_mixing_experiments_with_different_baselines_shows_none(store, db):
    # copy at two lengths: memoryless baselines 10·ln 8/(T+20) differ; their mean is no baseline
    for T in (100, 200):
        r = _run(store, "tcn", "copy", 0.01, seq_len=T)
        store.set_summaries(r.id, {"baseline": 10 * math.log(8) / (T + 20)})
    rep = build_report(str(db), compare=["tcn"])
    cols, (row,), _ = comparison_rows(rep)
    assert row[cols.index("baseline")] is None
    rep = build_report(str(db), compare=["tcn"], by="seq_len")
    cols, rows, _ = comparison_rows(rep)
    assert [r[cols.index("baseline")] for r in rows] == [
        pytest.approx(10 * math.log(8) / 120),
        pytest.approx(10 * math.log(8) / 220),
    ]


def test_check_compares_a_point_only_with_runs_of_its_config(cli, store, tmp_path):
    """A preset's baseline against an ad-hoc run of the same (model, task, k, T) but another
    budget: not 'improved', but missing, with a note naming the difference; and the ad-hoc
    run does not move the median of the preset's own runs."""
    for seed, v in enumerate((0.10, 0.12)):
        _run(store, "lstm", "adding", v, seed=seed, seq_len=200, steps=5000)
    points = save_baseline(store, "preset", rtol=0.1)
    (p,) = points
    assert json.loads(p.config) == {"k": None, "seq_len": 200, "steps": 5000}
    path = tmp_path / "preset.json"
    assert cli("baseline", "export", "preset", path).exit_code == 0
    assert json.loads(path.read_text())["points"][0]["config"]["steps"] == 5000
    assert load_file(path)[1] == points  # the config survives the file
    for r in store.list_runs():
        store.delete_runs([r.id])
    _run(store, "lstm", "adding", 0.01, seq_len=200, steps=20)  # ad hoc, far "better"
    (row,) = check(store, points)
    assert row.status == "missing" and row.current is None
    assert row.note == "no run of this config; the nearest differs in steps (5000 → 20)"
    out = cli("check", "--baseline", path, "--fail-on-missing")
    assert out.exit_code == 1 and "differs in steps (5000 → 20)" in out.stderr
    junit = tmp_path / "c.xml"
    cli("check", "--baseline", path, "--junit", junit)
    assert "differs in steps" in junit.read_text()
    # with the preset's runs back, the ad-hoc one stays out of their median
    for seed, v in enumerate((0.10, 0.12)):
        _run(store, "lstm", "adding", v, seed=seed, seq_len=200, steps=5000)
    (row,) = check(store, points)
    assert row.status == "pass" and row.current == pytest.approx(0.11)


def test_an_old_baseline_without_configs_still_checks_by_variant(cli, adding_by_length, tmp_path):
    assert cli("baseline", "save", "repro").exit_code == 0
    path = tmp_path / "repro.json"
    cli("baseline", "export", "repro", path)
    data = json.loads(path.read_text())
    for p in data["points"]:
        del p["config"]  # as files written before points kept their config
    path.write_text(json.dumps(data))
    assert {p.config for p in load_file(path)[1]} == {""}
    ok = cli("check", "--baseline", path, "--fail-on-missing", "-f", "json")
    assert ok.exit_code == 0, ok.output
    assert {r["status"] for r in json.loads(ok.stdout)} == {"pass"}


def test_fit_decay_says_why_it_cannot_fit(cli, store, db):
    """`rate nan` came with no reason: now one note names the points needed and those had."""
    for seed in (0, 1):
        _run(store, "rnn", "teacher", 0.01, seed=seed, teacher_lam=0.5)
        for k, v in ((1, 0.5), (2, 0.0101), (4, 0.01)):  # only k = 1 stands clear of noise
            _run(store, "window", "teacher", v, k=k, seed=seed, teacher_lam=0.5)
    rep = build_report(str(db), compare=["window", "rnn"], by="teacher_lam,k")
    notes: list[str] = []
    cols, (row,) = fit_decay(rep, notes=notes)
    assert math.isnan(dict(zip(cols, row, strict=True))["rate"])
    (note,) = notes
    assert "needs at least 2 contiguous values of k" in note and "of k = 1,2,4 it had 1" in note
    assert "(stops at 2: its gap is lost in the noise)" in note
    r = cli("report", "--compare", "window", "rnn", "--by", "teacher_lam,k", "--fit-decay")
    assert r.exit_code == 0 and "no decay rate" in r.stderr
