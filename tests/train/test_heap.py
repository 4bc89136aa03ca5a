"""Freed memory is kept between training steps (training/heap.py), measured from outside: the
minor page faults a step of an IndRNN at T = 5000 takes, counted by the kernel (getrusage),
with glibc's defaults and with seqbench's setting, each in a fresh process (mallopt is per
process). With the defaults every step faults its buffers of over 32 MiB in again; kept, a
step reuses the pages the one before it freed."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from tests.conftest import seqbench_cmd

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc"
)

# B·T·N = 32 × 5000 × 64 floats: 41 MB a state buffer, past glibc's largest dynamic threshold
STEPS = """
import resource, torch
from seqbench.configure import make_config
from seqbench.training.heap import keep_freed_memory
from seqbench.training.setup import prepare
from seqbench.tasks.base import generator
torch.set_num_threads(1)
state = keep_freed_memory()
cfg = make_config("indrnn", "adding", {"seq_len": 5000, "hidden": 64, "batch_size": 32})
cfg, task, model, _ = prepare(cfg)
opt = torch.optim.Adam(model.parameters(), 2e-4)
gen = generator(0, 3)
def step():
    x, y = task.train_batch(32, gen)
    opt.zero_grad()
    task.loss(model(x), y).backward()
    opt.step()
step()  # the first step faults its pages in either way
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    step()
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
print(state, (after - before) / 3)
"""


def _faults_per_step(keep: str) -> tuple[str, float]:
    env = {**os.environ, "SEQBENCH_KEEP_FREED": keep}
    out = subprocess.run(
        [sys.executable, "-c", STEPS], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return " ".join(out[:-1]), float(out[-1])


def test_a_step_reuses_the_pages_the_step_before_freed():
    off_state, off = _faults_per_step("0")
    on_state, on = _faults_per_step("1")
    assert off_state == "off" and on_state.startswith("kept")
    # 4 KiB pages: the defaults fault in 2 layers × 41 MB several times a step (about 41,000
    # faults measured); kept, 2,000-7,000, what little the step has not held before
    assert off > 20_000, off
    assert on < off / 3, (on, off)


def test_the_run_records_what_was_done(db):
    cmd = seqbench_cmd(db, "train", *"-m tcn -t adding --seq-len 8 --steps 2 -q".split())
    subprocess.run([*cmd, "--set", "eval_size=8"], check=True, capture_output=True)
    show = subprocess.run(
        seqbench_cmd(db, "show", "1", "--format", "json"), capture_output=True, text=True
    )
    assert json.loads(show.stdout)["env.heap"].startswith("kept")
