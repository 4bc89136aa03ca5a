"""The read API (pandas), `seqbench diff` and `seqbench curves`, on a real store."""

from __future__ import annotations

import json
import math

import pytest

import seqbench.api as sb
from tests.conftest import add_run


@pytest.fixture
def two_runs(store):
    a = add_run(
        store,
        {"test_metric": 0.5, "gain": math.inf},
        k=4,
        seed=0,
        config={"lr": 0.001, "hidden": 8, "seed": 0},
        tags={"owner": "me"},
    )
    b = add_run(
        store,
        {"test_metric": 0.25},
        model="lstm",
        seed=1,
        config={"lr": 0.01, "hidden": 8, "seed": 1},
    )
    store.log_metrics(
        a.id, [("valid_metric", 10, 0.9), ("valid_metric", 20, 0.5), ("train_loss", 10, math.nan)]
    )
    store.log_metrics(b.id, [("valid_metric", 10, 0.7), ("valid_metric", 20, math.inf)])
    return a, b


def test_runs_frame_flattens_config_tags_and_summaries(store, two_runs):
    a, b = two_runs
    df = sb.runs_frame(store.url)
    assert list(df.index) == [a.id, b.id]
    assert df.loc[a.id, "config.lr"] == 0.001 and df.loc[b.id, "config.lr"] == 0.01
    assert df.loc[a.id, "tags.owner"] == "me"
    assert df.loc[a.id, "summary.gain"] == math.inf  # kept, not dropped or stringified
    assert math.isnan(df.loc[b.id, "summary.gain"])  # missing
    assert list(sb.runs_frame(store.url, model="lstm").index) == [b.id]


def test_curves_frame_long_and_wide_keep_inf_and_nan(store, two_runs):
    a, b = two_runs
    long = sb.curves_frame(store.url, [a.id, b.id], ["valid_metric"])
    assert list(long.columns) == ["run_id", "key", "step", "value"] and len(long) == 4
    assert long[long.run_id == b.id]["value"].tolist() == [0.7, math.inf]
    wide = sb.curves_frame(store.url, [a.id], wide=True)
    assert wide.loc[(a.id, 20), "valid_metric"] == 0.5
    assert math.isnan(wide.loc[(a.id, 10), "train_loss"])


def test_diff_shows_what_differs_and_the_summaries(cli, two_runs, tmp_path):
    a, b = two_runs
    r = cli("diff", str(a.id), str(b.id), "-f", "json")
    assert r.exit_code == 0, r.output
    config, summaries = _two_json(r.stdout)
    assert {c["config field"] for c in config} == {"lr", "seed"}
    rows = {s["summary"]: s for s in summaries}
    assert rows["test_metric"][f"run {b.id} − run {a.id}"] == pytest.approx(-0.25)
    plot = tmp_path / "out" / "diff.png"
    r = cli("diff", str(a.id), str(b.id), "--plot", plot)
    assert r.exit_code == 0 and plot.stat().st_size > 1000
    assert "2 curves" in r.stderr
    md = cli("diff", str(a.id), str(b.id), "-f", "markdown").stdout.splitlines()
    at = md.index(next(ln for ln in md if ln.startswith("| summary |")))
    assert md[at - 1] == ""  # two markdown tables, apart: one without a gap renders as one


def _two_json(text: str):
    dec, i, out = json.JSONDecoder(), 0, []
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        obj, i = dec.raw_decode(text, i)
        out.append(obj)
    return out


def test_curves_by_ids_or_by_filters(cli, two_runs, tmp_path):
    a, b = two_runs
    r = cli("curves", str(a.id), str(b.id), "-f", "csv")
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == "run,step,valid_metric"
    assert f"{a.id},10,0.9" in r.stdout
    plot = tmp_path / "c.png"
    assert cli("curves", "--model", "lstm", "--plot", plot).exit_code == 0 and plot.exists()


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["curves"], "name runs (seqbench curves 3 4) or select them"),
        (["curves", "99"], "no run '99'"),
        (["curves", "1", "--metric", "nosuch"], "no 'nosuch' values logged"),
        (["diff", "1", "99"], "no run '99'"),
    ],
)
def test_bad_input_is_one_line(cli, two_runs, args, msg):
    r = cli(*args)
    assert r.exit_code != 0 and msg in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1
