"""`curves --group-by ... --band`: one curve per config over its seeds, the band the seeds'
spread (or the mean's 95% interval), a legend entry per group and colours that never repeat."""

from __future__ import annotations

import csv
import io
import statistics

import pytest

from seqbench.report.curves import distinct_colors
from seqbench.report.stats import interval
from tests.conftest import add_run

CONFIGS = [("rnn", None, 1.0), ("tcn", 4, 2.0), ("tcn", 8, 3.0)]


@pytest.fixture
def curves_db(store, db):
    for model, k, level in CONFIGS:
        for seed in range(3):
            r = add_run(store, model=model, k=k, seed=seed, config={"seed": seed},
                        config_hash=f"{model}{k}{seed}")  # fmt: skip
            store.log_metrics(
                r.id, [("valid_metric", step, level + 0.1 * seed + step) for step in range(5)]
            )
    return db


@pytest.mark.parametrize("band", ["std", "ci"])
def test_one_curve_per_config_with_its_band(cli, curves_db, tmp_path, band):
    png = tmp_path / "g.png"
    r = cli("curves", "--model", "tcn", "--group-by", "model,k", "--band", band, "--plot", png,
            "-f", "csv")  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert {x["group"] for x in rows} == {"model=tcn k=4", "model=tcn k=8"}
    assert len(rows) == 2 * 5 and "(2 groups)" in r.output and png.stat().st_size > 0
    row = next(x for x in rows if x["group"] == "model=tcn k=8" and x["step"] == "2")
    seeds = [3.0 + 0.1 * s + 2 for s in range(3)]
    mean, sd = statistics.mean(seeds), statistics.stdev(seeds)
    lo, hi = (mean - sd, mean + sd) if band == "std" else interval(mean, sd, 3)
    assert float(row["mean"]) == pytest.approx(mean) and row["n"] == "3"
    assert (float(row["lo"]), float(row["hi"])) == (pytest.approx(lo), pytest.approx(hi))


def test_a_63_run_sweep_gives_one_legend_entry_per_group(store, db, tmp_path):
    from seqbench import api

    runs = []
    for i in range(63):
        r = add_run(store, model="tcn", k=1 + i // 3, seed=i % 3, config_hash=f"h{i}")
        store.log_metrics(r.id, [("valid_metric", s, 1.0 / (1 + s + i)) for s in range(3)])
        runs.append(store.require_run(str(r.id)))
    groups, frame = api.grouped_curves(store, runs, "valid_metric", ["k"], "std")
    drawn = api.plot_grouped(frame, groups, "valid_metric", "std", str(tmp_path / "s.png"))
    assert len(groups) == len(drawn) == 21  # one line (and legend entry) per config
    assert len({c for _, c in drawn}) == 21
    assert api.plot_curves(store, runs, "valid_metric", str(tmp_path / "r.png")) == 63


@pytest.mark.parametrize("n", [3, 10, 15, 63])
def test_colours_never_repeat_in_a_figure(n):
    assert len(set(distinct_colors(n))) == n


def test_a_bad_group_field_or_band_is_one_line(cli, curves_db):
    r = cli("curves", "--model", "rnn", "--group-by", "modle")
    assert r.exit_code == 2 and "unknown --group-by field 'modle'" in r.output
    r = cli("curves", "--model", "rnn", "--group-by", "model", "--band", "iqr")
    assert r.exit_code == 2 and "--band must be std or ci" in r.output
