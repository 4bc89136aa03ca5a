"""The CPU thread policy: --threads reaches torch and the run's environment says where the
count came from; the default gives small fused-RNN steps one thread and otherwise the free
cores, so a busy neighbour never gets a thread of ours waiting for its core."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from seqbench.training import threads as th
from tests.conftest import seqbench_cmd

TINY = "-m tcn -t adding --seq-len 8 --steps 2 --set eval_size=8 -q".split()


def _env(cli, run: str = "1") -> dict:
    r = cli("show", run, "--format", "json")
    assert r.exit_code == 0, r.output
    return {k.removeprefix("env."): v for k, v in json.loads(r.stdout).items()}


def test_the_flag_reaches_torch_and_the_environment(db):
    """In a fresh process (torch's thread count is per process): the run says 2 and 'flag'."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "SEQBENCH_THREADS")}
    cmd = seqbench_cmd(db, "train", *TINY, "--threads", "2")
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    show = subprocess.run(
        seqbench_cmd(db, "show", "1", "--format", "json"), capture_output=True, text=True
    )
    data = json.loads(show.stdout)
    assert (data["env.threads"], data["env.threads_from"]) == ("2", "flag")


def test_the_environment_variables_come_next(cli, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("SEQBENCH_THREADS", "1")
    assert cli("train", *TINY).exit_code == 0
    assert (_env(cli)["threads"], _env(cli)["threads_from"]) == ("1", "SEQBENCH_THREADS")
    monkeypatch.delenv("SEQBENCH_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert th.choose_threads() == (1, "OMP_NUM_THREADS")
    monkeypatch.setenv("SEQBENCH_THREADS", "lots")
    r = cli("train", *TINY)
    assert r.exit_code == 2 and "SEQBENCH_THREADS" in r.output


@pytest.mark.parametrize("bad", ["0", "-1", "100000"])
def test_a_bad_thread_count_is_one_line_before_any_row(cli, db, bad):
    r = cli("train", *TINY, "--threads", bad)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert not db.exists()


def test_stress_and_bench_take_threads_too(cli):
    assert (
        cli("stress", "--models", "rnn", "--seq-len", "50", "--threads", "1", "-q").exit_code == 0
    )
    assert _env(cli)["threads_from"] == "flag"
    r = cli(
        "bench", "kernels", "--seq-len", "20", "--batch", "2", "--hidden", "4", "--threads", "1"
    )
    assert r.exit_code == 0, r.output
    assert _env(cli, "2")["threads"] == "1"


def test_small_fused_rnn_steps_get_one_thread(monkeypatch):
    from seqbench.configure import make_config

    for name in ("OMP_NUM_THREADS", "SEQBENCH_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert th.one_thread_for(make_config("lstm", "adding"))
    assert th.one_thread_for(make_config("window", "adding", {"k": 4}))  # its base is an LSTM
    assert not th.one_thread_for(make_config("lstm", "adding", {"hidden": 512, "batch_size": 256}))
    assert not th.one_thread_for(make_config("tcn", "adding"))
    assert not th.one_thread_for(make_config("indrnn", "adding"))
    assert th.choose_threads(small=True) == (1, "auto")


def test_a_busy_neighbour_takes_its_core_from_the_default(monkeypatch):
    """With a process burning a core, the default leaves that core to it."""
    for name in ("OMP_NUM_THREADS", "SEQBENCH_THREADS"):
        monkeypatch.delenv(name, raising=False)
    cores = th.usable_cpus()
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        seen = max(th.busy_cpus() for _ in range(5))
        assert seen >= 1
        n, source = th.choose_threads()
        assert source == "auto" and n <= max(1, cores - 1)
    finally:
        hog.kill()
        hog.wait()
