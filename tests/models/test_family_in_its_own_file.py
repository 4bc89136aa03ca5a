"""A built-in family is two files of its own and nothing else: its spec in models/families/
(torch-free: defaults, its own config field, context rule, --stable) and its network in
models/ (the stability projection and the spectra stress reads); a built-in task likewise
(tasks/specs/ and its class). This test writes such a family and such a task, each with a
config field of its own, into a copy of the package, touching no other file, and runs
`models`, `train`, `sweep`, `stress` and `memory` on them through the CLI, each checked from
the outside: the context it stores is the one its gradient spans, its own field reaches its
network, --stable holds the trained decay at λ, and memory states the k* of the task's own
lag, lag + 1."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import seqbench

SPEC = '''
"""A toy family for the test: a depthwise convolution over exactly the last k inputs whose
weights decay at a per-channel rate."""

from __future__ import annotations

from seqbench.options import MODEL, Option
from seqbench.models.spec import ModelSpec, builder


def _context(c, T: int) -> int:
    return min(T, 16) if c.k is None else c.k


SPEC = ModelSpec(
    "decay-window",
    "Decaying depthwise convolution over the last k inputs (a test family)",
    False,
    builder("seqbench.models.decay_window", "DecayWindow"),
    {"hidden": 8, "decay_init": 0.5},
    stable=True,
    options=(Option("decay_init", float, MODEL, "the decay a starts at", positive=True),),
    context=_context,
    context_rule="exactly k; no k: min(T, 16)",
)
'''

NETWORK = '''
"""y_t = W·Σ_{s<k} (a^s ⊙ v_s) ⊙ (U x)_{t−s}, a ∈ (0, 1) per channel: a window of exactly k
steps whose weights decay at a (the stability quantity --stable bounds)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from seqbench.models.base import Backbone


class DecayWindow(Backbone):
    translation_invariant = True

    def __init__(self, in_dim, args):
        super().__init__()
        self.k = min(args.seq_len, 16) if args.k is None else args.k
        self.inp = nn.Linear(in_dim, args.hidden)
        a = torch.full((args.hidden,), float(args.decay_init))
        self.logit = nn.Parameter(torch.logit(a))
        self.v = nn.Parameter(torch.randn(args.hidden, self.k) / self.k**0.5)
        self.out = nn.Linear(args.hidden, args.hidden)
        self.out_dim = args.hidden

    @property
    def receptive_field(self):
        return self.k

    @property
    def state_size(self):
        return self.k * self.out_dim

    def _decay(self):
        return torch.sigmoid(self.logit)

    def project_(self, lam):
        with torch.no_grad():
            self.logit.clamp_(max=torch.logit(torch.tensor(lam)).item())
        return self.stability_bound()

    def stability_bound(self):
        return float(self._decay().max())

    def spectra(self):
        return {"decay_bound": self.stability_bound()}

    def forward(self, x, state=None):
        u = self.inp(x).transpose(1, 2)  # (B, H, T)
        s = torch.arange(self.k - 1, -1, -1, device=x.device, dtype=u.dtype)
        w = self._decay()[:, None] ** s * self.v.flip(1)  # (H, k): oldest lag first
        y = F.conv1d(F.pad(u, (self.k - 1, 0)), w[:, None, :], groups=u.shape[1])
        return self.out(y.transpose(1, 2)), None
'''

TASK_SPEC = '''
"""A toy task for the test: the input `lag` steps back, its own field."""

from __future__ import annotations

from seqbench.options import TASK, Option
from seqbench.tasks.spec import TaskSpec

SPEC = TaskSpec(
    "lag",
    "seqbench.tasks.lag:Lag",
    "regress the input lag steps back (MSE; k* = lag + 1)",
    "mse",
    8,
    defaults={"steps": 300, "lag": 2},
    options=(Option("lag", int, TASK, "how far back the target is", positive=True),),
)
'''

TASK = '''
"""y_t = x_{t−lag} for white x (0 before the first input)."""

from __future__ import annotations

import torch

from seqbench.tasks.synthetic import RegressionTask


class Lag(RegressionTask):
    readout = "all"
    in_dim, out_dim = 1, 1

    def sample(self, n, gen):
        x = torch.randn(n, self.seq_len, 1, generator=gen)
        y = torch.zeros_like(x)
        y[:, self.args.lag :] = x[:, : -self.args.lag]
        return x, y

    def baseline(self):
        y = self._eval_sets["test"][1]
        return float(((y - y.mean()) ** 2).mean())
'''


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A copy of the package with the family's two files added, and nothing else changed."""
    root = tmp_path_factory.mktemp("tree")
    pkg = root / "src" / "seqbench"
    source = Path(seqbench.__file__).parent
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(source, pkg, ignore=skip)
    if not (pkg / "migrations").is_dir():  # a checkout keeps them beside the package
        shutil.copytree(source.parent / "migrations", root / "src" / "migrations", ignore=skip)
    (pkg / "models" / "families" / "decay_window.py").write_text(SPEC)
    (pkg / "models" / "decay_window.py").write_text(NETWORK)
    (pkg / "tasks" / "specs" / "lag.py").write_text(TASK_SPEC)
    (pkg / "tasks" / "lag.py").write_text(TASK)
    return root


def sb(tree: Path, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "seqbench", "--db", str(tree / "runs.db"), *map(str, args)],
        capture_output=True, text=True, cwd=tree, env=env, timeout=600,
    )  # fmt: skip


def rows(tree: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(tree / "runs.db")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_family_is_built_in_and_trains_with_its_context_and_stable(tree):
    r = sb(tree, "models", "-f", "json")
    assert r.returncode == 0, r.stderr
    (row,) = [m for m in json.loads(r.stdout) if m["model"] == "decay-window"]
    assert (row["source"], row["kind"]) == ("built-in", "feedforward")
    assert row["context k"] == "exactly k; no k: min(T, 16)"

    # its code is the copy's (the checkout's seqbench has no such family)
    r = sb(tree, "train", "--model", "decay-window", "--task", "adding", "--seq-len", "20",
           "--k", "6", "--steps", "40", "--stable", "--lam", "0.8", "--save-checkpoint",
           "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    ((run_id, k, status),) = rows(tree, "SELECT id, k, status FROM runs")
    assert (k, status) == (6, "completed")

    # from the outside: the trained weights' own decay under --stable, and the gradient span
    r = sb(tree, "stress", "--models", "", "--run", run_id, "--seq-len", "40", "-f", "json", "-q")
    assert r.returncode == 0, r.stderr
    (trained,) = json.loads(r.stdout)
    assert 0 < trained["decay bound"] <= 0.8 + 1e-6
    probe = textwrap.dedent("""
        import torch
        from seqbench.config import ModelArgs
        from seqbench.models import make_backbone
        torch.manual_seed(0)
        from seqbench.configure import make_config
        torch.manual_seed(0)
        args = ModelArgs(seq_len=40, k=6, hidden=8).with_(decay_init=0.5)
        net = make_backbone("decay-window", 1, args)
        x = torch.randn(1, 40, 1, requires_grad=True)
        net(x)[0][0, -1].sum().backward()
        print((x.grad[0, :, 0].abs() > 0).nonzero().min().item())
        cfg = make_config("decay-window", "lag", {"steps": 1, "decay_init": 0.3})
        print(make_backbone("decay-window", 1, cfg.model_args())._decay().tolist())
    """)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=tree, env=env, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    first, decays = out.stdout.splitlines()
    assert 40 - int(first) == 6  # the last output reads exactly the last 6 inputs
    assert json.loads(decays) == pytest.approx([0.3] * 8)  # its own field reaches its network


def test_own_fields_are_stored_hashed_and_refused_elsewhere(tree):
    fast = ["--seq-len", "8", "--steps", "5", "-q"]
    for init in ("0.3", "0.6"):
        r = sb(tree, "train", "--model", "decay-window", "--task", "lag", "--set",
               f"decay_init={init}", "--set", "lag=3", *fast)  # fmt: skip
        assert r.returncode == 0, r.stderr
    stored = rows(tree, "SELECT config, config_hash FROM runs WHERE task = 'lag' ORDER BY id")
    configs = [json.loads(c) for c, _ in stored]
    assert [(c["decay_init"], c["lag"]) for c in configs] == [(0.3, 3), (0.6, 3)]
    assert len({h for _, h in stored}) == 2  # different experiments
    for args, words in (
        (["--model", "tcn", "--task", "lag", "--set", "decay_init=0.3"],
         "decay_init is not read by tcn, so it would change nothing; leave it out (it is read "
         "by decay-window)"),
        (["--model", "tcn", "--task", "adding", "--set", "lag=2"],
         "lag is not read by adding, so it would change nothing; leave it out (it is read by "
         "lag)"),
        (["--model", "decay-window", "--task", "lag", "--set", "decay_init=-1"],
         "decay_init must be positive"),
        (["--model", "decay-window", "--task", "lag", "--set", "lag=two"],
         "lag must be an integer"),
    ):  # fmt: skip
        r = sb(tree, "train", *args, *fast)
        assert r.returncode == 2 and words in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def test_sweep_stress_and_memory_run_on_the_family(tree):
    r = sb(tree, "sweep", "--models", "decay-window", "--tasks", "lag", "--k", "2,4",
           "--set", "lag=1,2", "--set", "steps=10", "--name", "dw", "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    swept = rows(tree, "SELECT r.k, r.config FROM runs r JOIN sweeps s ON r.sweep_id = s.id")
    got = sorted((k, json.loads(c)["lag"]) for k, c in swept)
    assert got == [(2, 1), (2, 2), (4, 1), (4, 2)]

    r = sb(tree, "stress", "--models", "decay-window,tcn", "--seq-len", "30", "--k", "5",
           "--hidden", "8", "--batch", "1", "-f", "json", "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert [row["model"] for row in json.loads(r.stdout)] == ["decay-window", "tcn"]

    # the task's own field: the input 2 steps back needs the last 3, k* = lag + 1
    r = sb(tree, "memory", "--task", "lag", "--set", "lag=2", "--families", "decay-window",
           "--references", "gru", "--lr-search", "none", "--set", "steps=300", "--params",
           "3000", "--workers", "2", "-q", "-f", "json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["verdict"], doc["k_star"]) == ("matches", 3), doc
