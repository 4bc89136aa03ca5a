"""Reports in a store with a history (issue 38, item 3): runs of two data files are two tasks,
each named by its file and a short hash, with its own trivial baseline; `--task file` names
them all; `--sweep a,b` takes several sweeps; `--where` filters on any config field."""

import itertools
import json

import pytest

from seqbench.api import build_report
from seqbench.report.rows import comparison_rows
from tests.report.test_variants import _run

H1, H2 = "a" * 64, "b" * 64


def _file_runs(store, tmp_path):
    for digest, name, base, values in ((H1, "co2.npz", 1.0, (0.3, 0.01)),
                                       (H2, "sun.npz", 2.0, (1.5, 0.02))):  # fmt: skip
        path = str(tmp_path / name)
        for seed in (0, 1):
            for model, k, v in (("tcn", 2, values[0]), ("tcn", 8, values[1]), ("gru", None, 0.01)):
                r = _run(store, model, "file-regression", v + 0.001 * seed, k=k, seed=seed,
                         data_hash=digest, path=path, target="regression")  # fmt: skip
                store.set_summaries(r.id, {"baseline": base})


def test_two_data_files_are_two_tasks_with_their_own_baselines(store, db, tmp_path, cli):
    _file_runs(store, tmp_path)
    rep = build_report(str(db), compare=["gru", "tcn"], by="k")
    cols, rows, _ = comparison_rows(rep)
    tasks = sorted({r[0] for r in rows})
    assert tasks == ["file-regression (co2.npz·aaaaaaaa)", "file-regression (sun.npz·bbbbbbbb)"]
    assert cols[2:4] == ["gru", "tcn"]  # one column per model: no variant per data file
    base = {r[0]: r[cols.index("baseline")] for r in rows}
    assert base == {tasks[0]: pytest.approx(1.0), tasks[1]: pytest.approx(2.0)}
    assert rep.row_notes == []  # cells at 0.01 against baselines of 1 and 2: something learned
    out = cli("report", "--compare", "gru", "tcn", "--by", "k", "--task", "file", "-f", "json")
    assert out.exit_code == 0, out.output
    assert H1 not in out.stdout
    assert {row["task"] for row in json.loads(out.stdout)} == set(tasks)
    listed = cli("runs", "--task", "file", "-f", "json")  # every file task's runs
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) == 12


def test_where_filters_on_any_config_field(store, db, tmp_path, cli):
    _file_runs(store, tmp_path)
    r = cli("report", "--compare", "gru", "tcn", "--by", "k", "--where", "path LIKE '%sun%'",
            "-f", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert {row["task"] for row in json.loads(r.stdout)} == {"file-regression (sun.npz·bbbbbbbb)"}
    for seed in (0, 1):
        _run(store, "rnn", "teacher", 0.1, seed=seed, teacher_lam=0.5, lr=0.01)
        _run(store, "rnn", "teacher", 0.2, seed=seed, teacher_lam=0.9, lr=0.001)
    rep = build_report(str(db), compare=["rnn"], where="teacher_lam > 0.6 AND lr < 0.005")
    assert list(rep.stats["mean"]) == [pytest.approx(0.2)]
    bad = cli("report", "--where", "no_such_field = 1")
    assert bad.exit_code != 0 and "no such column: no_such_field" in bad.output


def test_sweep_takes_several_sweeps(cli, tmp_path):
    small = ["--set", "steps=3", "--set", "hidden=4", "--set", "seq_len=8",
             "--set", "eval_size=8", "--quiet", "--workers", "1"]  # fmt: skip
    for name, model in (("one", "rnn"), ("two", "tcn")):
        r = cli("sweep", "--models", model, "--tasks", "adding", "--seeds", "0,1",
                "--name", name, *small)  # fmt: skip
        assert r.exit_code == 0, r.output
    both = cli("report", "--compare", "rnn", "tcn", "--sweep", "one,two", "-f", "json")
    assert both.exit_code == 0, both.output
    assert {"rnn_mean", "tcn_mean"} <= set(json.loads(both.stdout)[0])
    listed = cli("runs", "--sweep", "one,two", "-f", "json")
    assert {r["model"] for r in json.loads(listed.stdout)} == {"rnn", "tcn"}
    curves = cli("curves", "--sweep", "one,two", "--metric", "train_loss", "-f", "csv")
    assert curves.exit_code == 0, curves.output
    one = cli("report", "--compare", "rnn", "tcn", "--sweep", "one")
    assert one.exit_code != 0 and "tcn" in one.output


def test_a_plot_with_many_lines_keeps_its_axes_and_its_ticks_apart(store, db):
    """Fourteen variants (a store with a history) and the bisection's neighbouring k: the
    legend goes below, the axes keep most of the width, and no two k labels overlap."""
    from seqbench.report.plots import plot_report

    for i in range(14):
        for k in (1, 2, 3, 4, 8, 16, 32):
            _run(store, "tcn", "teacher", 0.1 / k + 0.01 * i, k=k, lr=0.001 * (i + 1))
    rep = build_report(str(db), compare=["tcn"], by="k")
    assert len(rep.models) == 14
    fig = plot_report(rep, None)
    fig.canvas.draw()
    (ax,) = fig.axes
    assert ax.get_position().width >= 0.6
    boxes = [t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()]
    assert len(boxes) >= 5
    for a, b in itertools.pairwise(boxes):
        assert a.x1 < b.x0, "two k labels overlap"


def test_rows_at_one_budget_differ_in_width_by_design(store, db):
    """A k-sweep at one budget fits a width per k: not a difference to warn about. Rows at
    two budgets are."""
    for k, hidden in ((1, 93), (2, 67), (4, 48)):
        _run(store, "tcn", "teacher", 0.1 / k, k=k, params=10000, hidden=hidden)
    assert build_report(str(db), compare=["tcn"], by="k").row_notes == []
    _run(store, "tcn", "teacher", 0.01, k=8, params=20000, hidden=80)
    (note,) = build_report(str(db), compare=["tcn"], by="k").row_notes
    assert "rows differ in hidden, params" in note
