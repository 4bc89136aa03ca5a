"""Ids and sizes past what the store or the machine can hold: one line and a non-zero exit
before any row, never a traceback or a hang; a diverged run says why; repeats of one seed are
one sample."""

from __future__ import annotations

import json

import pytest

from seqbench.store.opening import open_store
from tests.conftest import add_run, one_line_error

HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    "args",
    [
        ["show", HUGE],
        ["runs", "name", HUGE, "x-run"],
        ["runs", "delete", HUGE, "-y"],
        ["diff", "1", HUGE],
        ["curves", HUGE],
        ["train", "-m", "rnn", "-t", "adding", "--from-run", HUGE],
    ],
)
def test_ids_past_64_bits_are_unknown_runs(cli, store, args):
    add_run(store)
    store.dispose()
    assert "no run" in one_line_error(cli(*args), 1)


def test_limits_past_64_bits(cli, store):
    add_run(store)
    store.dispose()
    assert cli("runs", "--limit", HUGE).exit_code == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--hidden", HUGE], "64-bit"),
        (["--hidden", "3000000000"], "at most"),
        (["--set", "seed=9223372036854775807"], "seed must be in [0, 2^32)"),
        (["--set", "lr=1e38"], "lr must be at most"),
        (["--steps", "3", "--set", "steps=banana"], "given twice"),
        (["--steps", "3", "--set", "steps=5"], "given twice"),
    ],
)
def test_bad_sizes_and_seeds_are_refused_before_any_row(cli, db, args, words):
    r = cli("train", "-m", "rnn", "-t", "adding", "--steps", "2", *args)
    if "--steps" in args[:1]:
        r = cli("train", "-m", "rnn", "-t", "adding", *args)
    assert words in one_line_error(r)
    assert not db.exists()  # refused before a store was opened


@pytest.mark.parametrize(
    "model", ["rnn", "lstm", "gru", "indrnn", "tcn", "gcnn", "window", "transformer"]
)
def test_every_family_refuses_a_width_that_cannot_fit(cli, db, model):
    for hidden in ("3000000000", "1000000"):
        r = cli("train", "-m", model, "-t", "adding", "--hidden", hidden, "--steps", "2")
        assert "at most" in one_line_error(r) or "needs about" in r.output
    assert not db.exists()  # refused before a store was opened


def test_a_toml_size_that_is_a_float_is_refused(cli, tmp_path):
    (tmp_path / "h.toml").write_text("hidden = 1e20\n")
    one_line_error(cli("train", "-m", "rnn", "-t", "adding", "--config", tmp_path / "h.toml"))


def test_huge_workers_and_grids_are_refused_before_any_row(cli, db):
    grid = ["sweep", "--models", "rnn", "--tasks", "adding", "--set", "steps=2"]
    assert "--workers" in one_line_error(cli(*grid, "--workers", "1000000000000"))
    assert "at most 100,000" in one_line_error(
        cli(*grid, "--seeds", "0:1000000000:+1", "--dry-run")
    )
    assert "at most 100,000" in one_line_error(
        cli(*grid, "--seeds", "0:999:+1", "--k", "1:999:+1", "--dry-run")
    )
    assert not db.exists()


def test_a_diverged_run_says_why(cli, db):
    args = "train -m rnn -t adding --seq-len 8 --steps 20 --hidden 4 --set lr=1e12"
    r = cli(*args.split(), *"--set optimizer=sgd --set nonlinearity=relu -q".split())
    assert r.exit_code == 1 and "diverged" in r.output, r.output
    (run,) = open_store(db).list_runs()
    assert run.status == "diverged" and "loss became" in run.error


def test_repeats_of_one_seed_are_one_sample(cli, store):
    """The same (config, seed) trained three times is one sample in report --ci, not three."""
    for value in (0.1, 0.1, 0.1):
        add_run(store, {"test_metric": value}, seed=0, config_hash="h0", k=4)
    add_run(store, {"test_metric": 0.3}, seed=1, config_hash="h1", k=4)
    for extra in ([], ["--ci"]):
        args = ["report", "--compare", "rnn", "--by", "k", "-f", "json", *extra]
        (row,) = json.loads(cli(*args).stdout)
        assert (row["rnn_n"], row["rnn_mean"]) == (2, pytest.approx(0.2))
