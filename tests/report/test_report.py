import csv
import io
import json
import math
import statistics
from xml.etree import ElementTree as ET

import pandas as pd
import pytest

from seqbench.api import build_report
from seqbench.errors import SeqbenchError, UsageError
from seqbench.report.baseline_file import resolve_baseline
from seqbench.report.check import Point, check, judge, save_baseline
from seqbench.report.rows import comparison_rows, leaderboard_rows
from tests.conftest import add_run

# (model, task, k, seed, test_metric) — adding is lower-better, digits higher-better
RESULTS = [
    ("rnn", "adding", 4, 0, 0.20),
    ("rnn", "adding", 4, 1, 0.16),
    ("rnn", "adding", 4, 2, 0.18),
    ("tcn", "adding", 4, 0, 0.05),
    ("tcn", "adding", 4, 1, 0.07),
    ("rnn", "adding", 8, 0, 0.10),
    ("tcn", "adding", 8, 0, 0.01),
    ("rnn", "digits", None, 0, 0.80),
    ("tcn", "digits", None, 0, 0.95),
    ("tcn", "digits", None, 1, 0.93),
]


@pytest.fixture
def filled(store, db):
    for model, task, k, seed, v in RESULTS:
        r = add_run(store, model=model, task=task, k=k, seed=seed, seq_len=100)
        base = 1 / 6 if task == "adding" else 0.1
        store.set_summaries(r.id, {"test_metric": v, "baseline": base})
    bad = add_run(store, k=4, seed=9, seq_len=100, status="failed")
    store.set_summaries(bad.id, {"test_metric": 99.0})  # counted as lost, never in a mean
    return db


def test_comparison_numbers_equal_a_hand_computation(filled):
    rep = build_report(str(filled), compare=["rnn", "tcn"], tasks=["adding"], by="k")
    cols, rows, best = comparison_rows(rep)
    assert cols == ["task", "k", "rnn", "tcn", "rnn - tcn", "rnn / tcn", "baseline"]
    row4 = rows[0]
    rnn4 = [0.20, 0.16, 0.18]
    assert row4[:2] == ["adding", 4]
    mu, sd, n = row4[2]
    assert (n, mu) == (3, pytest.approx(statistics.mean(rnn4)))
    assert sd == pytest.approx(statistics.stdev(rnn4))
    assert row4[3][0] == pytest.approx(0.06) and row4[3][2] == 2
    assert row4[4] == pytest.approx(0.18 - 0.06) and row4[5] == pytest.approx(0.18 / 0.06)
    assert row4[6] == pytest.approx(1 / 6)
    # tcn (column 3) is best on both rows (lower is better); bold where it is ahead beyond the
    # seeds' noise: at k=4 (Welch p < 0.01), not at k=8 with one seed each
    assert best == [3, None]


def test_best_follows_the_metric_direction(filled, store):
    rep = build_report(str(filled), compare=["rnn", "tcn"], tasks=["digits"])
    _cols, rows, best = comparison_rows(rep)
    assert rows[0][1] == (0.8, 0.0, 1) and rows[0][2][0] == pytest.approx(0.94)
    assert best == [None]  # one rnn seed: nothing to test the difference against
    assert rows[0][-1] == pytest.approx(0.1)
    r = add_run(store, model="rnn", task="digits", k=None, seed=1, seq_len=100)
    store.set_summaries(r.id, {"test_metric": 0.82, "baseline": 0.1})
    rep = build_report(str(filled), compare=["rnn", "tcn"], tasks=["digits"])
    assert comparison_rows(rep)[2] == [2]  # column of tcn: higher accuracy wins


def test_leaderboard_ranks_models(filled):
    rep = build_report(str(filled), tasks=["adding"])
    _cols, rows, _ = leaderboard_rows(rep)
    assert [(r[1], r[2]) for r in rows] == [(1, "tcn"), (2, "rnn")]
    assert rows[0][5] == 3 and rows[1][5] == 4


def test_empty_store_and_missing_model(store, db):
    assert build_report(str(db)) is None
    add_run(store)
    with pytest.raises(SeqbenchError, match="no completed runs"):
        build_report(str(db), compare=["rnn", "gru"])


def test_missing_compared_model_is_named(filled):
    with pytest.raises(SeqbenchError, match="no completed runs for model 'gru'"):
        build_report(str(filled), compare=["rnn", "gru"])


def test_where_is_read_only_and_filters(filled):
    rep = build_report(str(filled), where="k = 8", by="k")
    assert set(rep.stats["k"]) == {8}
    with pytest.raises(SeqbenchError):
        build_report(str(filled), where="1=1; DELETE FROM runs")
    with pytest.raises(UsageError, match=r"unknown `by` field 'lrr'.*Did you mean 'lr'"):
        build_report(str(filled), by="lrr")
    with pytest.raises(UsageError, match="twice"):
        build_report(str(filled), by="k,k")


@pytest.mark.parametrize(
    ("direction", "value", "current", "tol", "status"),
    [
        ("lower", 1.0, 1.1, 0.1, "pass"),  # exactly at the edge passes
        ("lower", 1.0, 1.1000001, 0.1, "regressed"),
        ("lower", 1.0, 0.8, 0.1, "improved"),
        ("higher", 0.9, 0.85, 0.05, "pass"),
        ("higher", 0.9, 0.84, 0.05, "regressed"),
        ("higher", 0.9, 0.96, 0.05, "improved"),
        ("lower", 1.0, math.nan, 10.0, "regressed"),
        ("higher", 0.9, math.nan, 10.0, "regressed"),
        ("lower", 1.0, None, 0.1, "missing"),
        ("lower", 1.0, math.inf, 0.1, "regressed"),
    ],
)
def test_judge(direction, value, current, tol, status):
    p = Point("m", "t", None, "test_metric", value, tol, direction)
    assert judge(p, current, tol) == status


def test_save_and_check_round_trip(filled, store):
    points = save_baseline(store, "ref", rtol=0.1)
    by_key = {(p.model, p.task, p.k): p for p in points}
    assert by_key[("rnn", "adding", 4)].value == pytest.approx(0.18)  # median of 3 seeds
    assert by_key[("tcn", "digits", None)].direction == "higher"
    assert by_key[("rnn", "adding", 4)].tolerance == pytest.approx(0.018)
    rows = check(store, resolve_baseline(store, "ref"))
    assert {r.status for r in rows} == {"pass"}
    with pytest.raises(UsageError, match="no baseline named 'nope'"):
        resolve_baseline(store, "nope")


def test_cli_check_exit_codes_junit_and_json(cli, filled, store, tmp_path):
    assert cli("baseline", "save", "ref", "--rtol", "0.1").exit_code == 0
    path = tmp_path / "ref.json"
    assert cli("baseline", "export", "ref", path).exit_code == 0
    data = json.loads(path.read_text())
    assert len(data["points"]) == 6
    ok = cli("check", "--baseline", path, "--junit", tmp_path / "j.xml", "--format", "json")
    assert ok.exit_code == 0, ok.output
    assert {r["status"] for r in json.loads(ok.stdout)} == {"pass"}
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite.get("tests") == "6" and suite.get("failures") == "0"
    # make tcn on digits worse than its baseline: a regression, exit 1
    r = add_run(store, model="tcn", task="digits", seed=5, seq_len=100)
    store.set_summaries(r.id, {"test_metric": 0.1})
    add_run(store, model="tcn", task="digits", seed=6)  # no test_metric: ignored
    r2 = add_run(store, model="tcn", task="digits", seed=7, seq_len=100)
    store.set_summaries(r2.id, {"test_metric": 0.1})
    bad = cli("check", "--baseline", "ref", "--junit", tmp_path / "j2.xml")
    assert bad.exit_code == 1
    suite = ET.parse(tmp_path / "j2.xml").getroot().find("testsuite")
    assert suite.get("failures") == "1"
    assert suite.find("testcase/failure") is not None
    # a missing baseline is a usage error
    assert cli("check", "--baseline", "nope").exit_code == 2
    assert cli("check", "--baseline", tmp_path / "nofile.json").exit_code == 2
    # the baseline survives import into a fresh store
    fresh = tmp_path / "fresh.db"
    assert cli("--db", fresh, "baseline", "import", path).exit_code == 0
    assert "ref" in cli("--db", fresh, "baseline", "list", "--format", "csv").stdout
    assert cli("--db", fresh, "check", "--baseline", "ref").exit_code == 0  # all missing


def test_nan_result_regresses(cli, store, db):
    r = add_run(store, k=2, seed=0, status="diverged")
    store.set_summaries(r.id, {"test_metric": math.nan})
    path = db.parent / "b.json"
    path.write_text(
        json.dumps(
            {
                "name": "b",
                "points": [
                    {
                        "model": "rnn",
                        "task": "adding",
                        "k": 2,
                        "metric": "test_metric",
                        "value": 0.1,
                        "tolerance": 1.0,
                        "direction": "lower",
                    }
                ],
            }
        )
    )
    result = cli("check", "--baseline", path, "--format", "csv")
    assert result.exit_code == 1 and "regressed" in result.stdout


def test_cli_report_formats_and_plot(cli, filled, tmp_path):
    t = cli("report", "--compare", "rnn", "tcn", "--task", "adding", "--by", "k")
    assert t.exit_code == 0, t.output
    assert "0.18 ± 0.02 (n=3 of 4, 1 failed)" in t.stdout
    j = json.loads(
        cli(
            "report", "rnn,tcn", "--compare", "--task", "adding", "--by", "k", "--format", "json"
        ).stdout
    )
    assert j[0]["rnn_n"] == 3 and j[0]["tcn_mean"] == pytest.approx(0.06)
    assert (j[0]["rnn_ran"], j[0]["rnn_lost"], j[0]["tcn_lost"]) == (4, 1, 0)
    md = cli("report", "--format", "markdown").stdout
    assert md.startswith("| task | rank | model |")
    png = tmp_path / "r.png"
    p = cli("report", "--compare", "rnn", "tcn", "--by", "k", "--task", "adding", "--plot", png)
    assert p.exit_code == 0 and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_report_empty_and_missing(cli, store):
    empty = cli("report")
    assert empty.exit_code == 0 and empty.stdout.strip().startswith("no completed runs")
    assert len(empty.stdout.strip().splitlines()) == 1
    missing = cli("report", "--compare", "rnn", "gru")
    assert missing.exit_code == 1 and "no completed runs" in missing.stderr
    assert cli("report", "--compare").exit_code == 2


@pytest.mark.parametrize(
    ("flag", "value"), [("--rtol", "nan"), ("--atol", "nan"), ("--rtol", "-0.1"), ("--atol", "inf")]
)
def test_check_refuses_a_tolerance_that_is_not_finite_and_non_negative(cli, filled, flag, value):
    """A nan tolerance passed anything (0.0001 against 0.534 -> pass); now one line, exit 2."""
    assert cli("baseline", "save", "ref").exit_code == 0
    r = cli("check", "--baseline", "ref", flag, value)
    assert r.exit_code == 2, r.output
    assert "must be finite and ≥ 0" in r.stderr and "Traceback" not in r.output
    assert cli("baseline", "save", "bad", flag, value).exit_code == 2


@pytest.mark.parametrize("tol", ["NaN", "-1.0", "Infinity"])
def test_a_baseline_file_with_a_bad_tolerance_is_refused(cli, filled, tmp_path, tol):
    path = tmp_path / "b.json"
    path.write_text(
        '{"name": "b", "points": [{"model": "rnn", "task": "adding", "k": 4, "metric": '
        f'"test_metric", "value": 0.0001, "tolerance": {tol}, "direction": "lower"}}]}}'
    )
    r = cli("check", "--baseline", path)
    assert r.exit_code == 2 and "must be finite and ≥ 0" in r.stderr
    assert cli("baseline", "import", path).exit_code == 2


def test_baselines_are_stamped_in_utc(filled, store):
    from datetime import UTC, datetime

    from sqlalchemy import select

    from seqbench.store.schema import Baseline

    save_baseline(store, "ref")
    with store.Session() as s:
        stamp = s.scalars(select(Baseline.created_at)).first()
    now = datetime.now(UTC).replace(tzinfo=None)
    assert abs((now - stamp).total_seconds()) < 60


def test_a_non_finite_mean_is_never_the_leaderboards_best(store, db):
    for model, v in [("rnn", math.inf), ("tcn", 0.3), ("gru", math.nan)]:
        r = add_run(store, model=model, seed=0, seq_len=100)
        store.set_summaries(r.id, {"test_metric": v})
    _cols, rows, best = leaderboard_rows(build_report(db))
    assert [r[2] for r in rows] == ["tcn", "rnn", "gru"]
    assert best == [3, None, None]


def test_csv_and_json_reports_hold_plain_numbers(cli, filled):
    """No np.float64(...) in the difference columns, k printed as 4 not 4.0 (issues 14, 16)."""
    import csv
    import io

    r = cli("report", "--compare", "rnn", "tcn", "--by", "k", "--format", "csv")
    assert r.exit_code == 0 and "np." not in r.stdout
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    by_k = {row["k"]: row for row in rows}
    assert set(by_k) >= {"4", "8"}
    assert float(by_k["4"]["rnn - tcn"]) == pytest.approx(0.18 - 0.06)
    assert float(by_k["4"]["rnn / tcn"]) == pytest.approx(0.18 / 0.06)
    data = json.loads(cli("report", "--by", "k", "--format", "json").stdout)
    assert {d["k"] for d in data} >= {4, 8} and all(isinstance(d["mean"], float) for d in data)


def test_query_json_embeds_json_columns(cli, store, db):
    store.create_run(
        model="rnn", task="adding", config={"hidden": 8}, config_hash="h", tags={"owner": "me"}
    )
    r = cli("query", "SELECT config, tags, 'x' AS t, '[oops' AS u FROM runs", "--format", "json")
    assert json.loads(r.stdout) == [
        {"config": {"hidden": 8}, "tags": {"owner": "me"}, "t": "x", "u": "[oops"}
    ]


def test_the_full_model_is_the_reference_in_every_k_row(store, db):
    """Miller & Hardt's comparison: window(k) against the full RNN (k blank) in one row per k,
    with the difference and ratio filled; a model with its own k rows is not broadcast."""
    for model, k, v in [
        ("window", 1, 0.5),
        ("window", 4, 0.2),
        ("rnn", None, 0.1),
        ("tcn", 4, 0.3),
    ]:
        r = add_run(store, model=model, task="teacher", k=k, seed=0, seq_len=100)
        store.set_summaries(r.id, {"test_metric": v})
    cols, rows, _best = comparison_rows(build_report(db, compare=["window", "rnn"], by="k"))
    by_k = {r[1]: dict(zip(cols, r, strict=True)) for r in rows}
    assert by_k[1]["rnn"] == (0.1, 0.0, 1) and by_k[4]["rnn"] == (0.1, 0.0, 1)
    assert by_k[1]["window - rnn"] == pytest.approx(0.4)
    assert by_k[4]["window / rnn"] == pytest.approx(2.0)
    assert by_k[None]["window"] is None and by_k[None]["rnn"] == (0.1, 0.0, 1)
    cols, rows, _ = comparison_rows(build_report(db, compare=["window", "tcn"], by="k"))
    by_k = {r[1]: dict(zip(cols, r, strict=True)) for r in rows}
    assert by_k[1]["tcn"] is None and by_k[4]["tcn"] == (0.3, 0.0, 1)


def test_an_unknown_metric_is_named_not_an_empty_report(cli, filled):
    r = cli("report", "--metric", "test_metrc")
    assert r.exit_code == 2 and "Did you mean 'test_metric'?" in r.stderr
    assert "nothing to report" not in r.output


def test_ci_and_paired_comparison_across_seeds(cli, store):
    """Three seeds each: a's cell shows the t interval of its mean, and a − b is compared seed
    by seed (the shared seed-to-seed spread cancels: every pair differs by exactly 0.1 here,
    so the paired interval is a point and p is 0, while the cells' intervals overlap)."""
    from scipy import stats

    from seqbench.report.stats import interval, paired

    for seed, base in enumerate([0.3, 0.5, 0.9]):
        add_run(store, {"test_metric": base + 0.1}, model="lstm", seed=seed, config={"seed": seed})
        add_run(store, {"test_metric": base}, model="rnn", seed=seed, config={"seed": seed})
    r = cli("report", "--compare", "lstm", "rnn", "--ci", "-f", "markdown")
    assert r.exit_code == 0, r.output
    vals = [0.4, 0.6, 1.0]
    lo, hi = interval(statistics.mean(vals), statistics.stdev(vals), 3)
    assert f"0.6667 [{lo:.3g}, {hi:.3g}] (n=3)" in r.stdout
    assert "0.1 [0.1, 0.1] p=" in r.stdout and "(3 seeds)" in r.stdout
    flat = list(
        csv.DictReader(
            io.StringIO(cli("report", "--compare", "lstm", "rnn", "--ci", "-f", "csv").stdout)
        )
    )
    assert float(flat[0]["lstm_ci_lo"]) == pytest.approx(lo)
    assert float(flat[0]["lstm - rnn_paired"]) == pytest.approx(0.1)
    assert int(flat[0]["lstm - rnn_pairs"]) == 3
    # the paired test against scipy's own, on noisy differences
    a = pd.Series([1.0, 2.0, 4.0, 3.5], index=[0, 1, 2, 3])
    b = pd.Series([0.5, 2.5, 3.0, 3.0, 9.0], index=[0, 1, 2, 3, 4])  # seed 4: unpaired
    p = paired(a, b)
    ref = stats.ttest_rel(a.values, b.values[:4])
    assert p.pairs == 4 and p.p == pytest.approx(ref.pvalue)
    assert p.diff == pytest.approx(0.375)
    assert paired(a, pd.Series([1.0], index=[9])) is None  # no common seed


def test_plots_name_the_metric_and_its_direction_and_the_seeds(store, tmp_path):
    """The y axis says which way is better, k ticks are the k values, the caption says what
    a point and an error bar are, and the legend sits beside the axes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from seqbench.report import plots

    for k in (1, 4, 16, 64):
        for seed in (0, 1):
            add_run(
                store,
                {"test_metric": 0.9 - 0.1 * seed},
                model="window",
                task="digits",
                k=k,
                seed=seed,
                config={"k": k, "seed": seed},
            )
    rep = build_report(store.url, compare=["window"], by="k")
    saved = {}
    real_savefig = plt.Figure.savefig

    def keep(fig, *a, **kw):
        saved["fig"] = fig
        return real_savefig(fig, *a, **kw)

    plt.Figure.savefig = keep
    try:
        plots.plot_report(rep, str(tmp_path / "k.png"))
    finally:
        plt.Figure.savefig = real_savefig
    (ax,) = saved["fig"].axes
    assert ax.get_ylabel() == "test_metric (acc) ↑"  # accuracy: higher is better
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "4", "16", "64"]
    caption = " ".join(t.get_text() for t in saved["fig"].texts)
    assert "n = 2" in caption and "±1 std" in caption
    assert ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1


def test_the_best_cell_is_bold_only_beyond_the_seeds_noise():
    from seqbench.report.stats import clearly_ahead

    assert clearly_ahead((0.06, 0.014, 2), (0.18, 0.02, 3))  # p ≈ 0.005
    assert not clearly_ahead((0.10, 0.05, 3), (0.13, 0.05, 3))  # p ≈ 0.5
    assert not clearly_ahead((0.01, 0.0, 1), (0.10, 0.0, 1))  # one seed: no test
    assert clearly_ahead((0.01, 0.0, 2), (0.10, 0.0, 2))  # no spread at all, different means


def test_a_report_says_when_nothing_was_learned(store, db):
    """Cells at the trivial baseline (adding's 1/6 after too few steps) get a note; a task
    where one cell beats it by more than 5% does not."""
    for model, v in (("rnn", 0.1671), ("tcn", 0.1665)):
        r = add_run(store, model=model, seed=0, seq_len=100, config_hash=model)
        store.set_summaries(r.id, {"test_metric": v, "baseline": 1 / 6})
    rep = build_report(db)
    assert any("nothing learned at this budget on adding" in n for n in rep.notes)
    r = add_run(store, model="gru", seed=0, seq_len=100, config_hash="gru")
    store.set_summaries(r.id, {"test_metric": 0.12, "baseline": 1 / 6})
    assert not any("nothing learned" in n for n in build_report(db).notes)


def test_check_lists_k_in_numeric_order(cli, store):
    for k in (1, 16, 2, 20, None):
        add_run(store, {"test_metric": 0.1}, model="tcn" if k else "rnn", k=k,
                config_hash=f"h{k}", config={"k": k})  # fmt: skip
    assert cli("baseline", "save", "ref").exit_code == 0
    r = cli("check", "--baseline", "ref", "-f", "csv")
    assert r.exit_code == 0, r.output
    ks = [row["k"] for row in csv.DictReader(io.StringIO(r.stdout)) if row["model"] == "tcn"]
    assert ks == ["1", "2", "16", "20"]
