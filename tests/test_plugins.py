"""Models and tasks from other packages, through the CLI as users run it (subprocesses, so each
command discovers the installed distributions afresh): the example plugin that setup.sh
installs (examples/seqbench-example-plugin), distributions made here on a PYTHONPATH (real
.dist-info metadata, as pip writes it), and `module:name` references to code in the current
directory."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
EXAMPLE = "seqbench-example-plugin 0.1.0"


def sb(db: Path, *args, cwd: Path | None = None, path: Path | None = None):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [str(BIN / "seqbench"), "--db", str(db), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )


def rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def make_dist(root: Path, name: str, version: str, module: str, body: str, eps: str) -> Path:
    """An installed distribution on `root`: the module and its .dist-info (METADATA and
    entry_points.txt), which importlib.metadata reads as it reads pip's installs."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(body))
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    if info.parent.exists():
        for old in info.parent.glob(f"{name.replace('-', '_')}-*.dist-info"):
            for f in old.iterdir():
                f.unlink()
            old.rmdir()
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(eps))
    (info / "top_level.txt").write_text(module + "\n")
    (info / "RECORD").write_text(f"{module}.py,,\n")
    return root


TOY = """
    from seqbench.models import ModelSpec

    def _build(in_dim, args):
        import torch
        from torch import nn
        from seqbench.models.base import Backbone

        class Toy(Backbone):
            recurrent = True

            def __init__(self):
                super().__init__()
                self.rnn = nn.RNN(in_dim, args.hidden, batch_first=True)
                self.out_dim = args.hidden

            def forward(self, x, state=None):
                return self.rnn(x, state)

        return Toy()

    toy = ModelSpec("toy", "a toy plugin RNN", True, _build, {"hidden": 8})
"""


def test_the_example_plugin_trains_stresses_sweeps_and_reports(tmp_path):
    db = tmp_path / "p.db"
    r = sb(db, "models", "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert "diag,recurrent,32" in r.stdout and EXAMPLE in r.stdout
    r = sb(db, "tasks", "--format", "csv")
    assert "sunspots,mse,lower,24" in r.stdout and EXAMPLE in r.stdout

    r = sb(db, "train", "-m", "diag", "-t", "sunspots", "--steps", "200", "-q")
    assert r.returncode == 0, r.stderr
    ((conf, status),) = rows(db, "SELECT config, status FROM runs")
    assert status == "completed"
    assert json.loads(conf)["plugin"] == f"model: {EXAMPLE}; task: {EXAMPLE}"
    ((test, base),) = rows(
        db,
        "SELECT MAX(CASE WHEN key = 'test_metric' THEN value END), "
        "MAX(CASE WHEN key = 'baseline' THEN value END) FROM summaries",
    )
    assert test < 0.8 * base  # it learned something from 200 steps: the cycle is ~11 years

    r = sb(db, "train", "-m", "diag", "-t", "sunspots", "--steps", "5", "--stable", "--lam",
           "0.5", "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    (bound,) = rows(db, "SELECT value FROM summaries WHERE key = 'stability_bound'")[-1]
    assert bound <= 0.5 + 1e-6  # its project_ hook: a from up to 0.99 clamped to λ

    r = sb(db, "stress", "--models", "diag", "--seq-len", "300")
    assert r.returncode == 0, r.stderr
    assert "diag" in r.stdout and "stable" in r.stdout  # |a| ≤ 0.99 at init

    r = sb(db, "sweep", "--models", "diag,tcn", "--tasks", "sunspots", "--k", "12",
           "--set", "steps=100", "--name", "two", "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "ran 2: 2 completed" in r.stdout
    r = sb(db, "report", "--compare", "diag", "tcn", "--sweep", "two", "--format", "json")
    assert r.returncode == 0, r.stderr
    (row,) = json.loads(r.stdout)
    assert row["task"] == "sunspots" and row["diag_n"] == 1 and row["tcn_n"] == 1


def test_a_new_plugin_version_reruns_a_sweeps_points(tmp_path):
    db, site = tmp_path / "u.db", tmp_path / "site"
    eps = "[seqbench.models]\ntoy = seqbench_toy:toy\n"
    make_dist(site, "seqbench-toy", "0.1.0", "seqbench_toy", TOY, eps)
    sweep = ("sweep", "--models", "toy", "--tasks", "adding", "--seeds", "0,1", "--name", "v",
             "--set", "steps=3", "--set", "seq_len=10", "--set", "eval_size=16", "-q")  # fmt: skip
    r = sb(db, *sweep, path=site)
    assert r.returncode == 0, r.stderr
    assert "ran 2: 2 completed" in r.stdout
    r = sb(db, *sweep, path=site)
    assert "2 already done" in r.stdout and "ran 0" in r.stdout, r.stdout
    make_dist(site, "seqbench-toy", "0.2.0", "seqbench_toy", TOY, eps)
    r = sb(db, *sweep, path=site)
    assert r.returncode == 0, r.stderr
    assert "ran 2: 2 completed" in r.stdout, r.stdout
    plugins = rows(db, "SELECT DISTINCT json_extract(config, '$.plugin') FROM runs ORDER BY 1")
    assert plugins == [("model: seqbench-toy 0.1.0",), ("model: seqbench-toy 0.2.0",)]
    r = sb(db, "report", "--format", "csv", path=site)
    assert "plugin=model: seqbench-toy 0.1.0" in r.stdout  # two versions: never one cell
    assert "plugin=model: seqbench-toy 0.2.0" in r.stdout


def test_a_module_reference_from_the_current_directory(tmp_path):
    db = tmp_path / "m.db"
    (tmp_path / "mymodels.py").write_text(textwrap.dedent(TOY))
    args = ("train", "-m", "mymodels:toy", "-t", "adding", "--steps", "2", "--seq-len", "10",
            "--set", "eval_size=16", "-q")  # fmt: skip
    r = sb(db, *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (tmp_path / "mymodels.py").write_text(textwrap.dedent(TOY) + "\n# edited\n")
    r = sb(db, *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = rows(db, "SELECT model, json_extract(config, '$.plugin'), config_hash FROM runs")
    assert [m for m, *_ in got] == ["mymodels:toy"] * 2
    assert all(p.startswith("model: mymodels sha256:") for _, p, _ in got)
    assert got[0][1] != got[1][1] and got[0][2] != got[1][2]  # the edit is another experiment


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["train", "-m", "nomod:x", "-t", "adding"], "plugin 'nomod:x' failed to import"),
        (["train", "-m", "json:nothing", "-t", "adding"], "has no attribute 'nothing'"),
        (["train", "-m", "json:__name__", "-t", "adding"], "gives a str, not a ModelSpec"),
        (
            ["train", "-m", "broken", "-t", "adding"],
            "seqbench.models:broken (seqbench_broken:spec)",
        ),
        (["train", "-m", "rnn", "-t", "badtask"], "seqbench.tasks:badtask"),
    ],
)
def test_a_plugin_that_fails_is_one_line_and_no_row(tmp_path, args, msg):
    db, site = tmp_path / "b.db", tmp_path / "site"
    eps = (
        "[seqbench.models]\nbroken = seqbench_broken:spec\n"
        "[seqbench.tasks]\nbadtask = seqbench_broken:task\n"
    )
    make_dist(site, "seqbench-broken", "1.0", "seqbench_broken", "raise ImportError('no')\n", eps)
    r = sb(db, *args, "--steps", "2", path=site)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert not db.exists() or rows(db, "SELECT COUNT(*) FROM runs") == [(0,)]


def test_a_broken_plugin_leaves_the_catalog_and_the_built_ins_working(tmp_path):
    db, site = tmp_path / "c.db", tmp_path / "site"
    eps = "[seqbench.models]\nbroken = seqbench_broken:spec\n"
    make_dist(site, "seqbench-broken", "1.0", "seqbench_broken", "raise ImportError('no')\n", eps)
    r = sb(db, "models", "--format", "csv", path=site)
    assert r.returncode == 0, r.stderr
    assert "warning: plugin seqbench.models:broken" in r.stderr and "rnn,recurrent" in r.stdout
    r = sb(db, "train", "-m", "rnn", "-t", "adding", "--steps", "2", "--seq-len", "10", "-q",
           path=site)  # fmt: skip
    assert r.returncode == 0, r.stderr
    r = sb(db, "train", "-m", "brokn", "-t", "adding", path=site)
    assert r.returncode == 2 and "Did you mean 'broken'?" in r.stderr  # listed, not imported


@pytest.fixture(scope="module")
def plugin_runs(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("plugin-runs") / "r.db"
    for model in ("diag", "tcn"):
        r = sb(db, "train", "-m", model, "-t", "sunspots", "--steps", "3", "--k", "4", "-q")
        assert r.returncode == 0, r.stderr
    r = sb(db, "baseline", "save", "b")  # for `check --baseline b`
    assert r.returncode == 0, r.stderr
    return db


PROBE = """
import sys
from seqbench.cli.main import app
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
finally:
    print("PLUGINS=" + ",".join(m for m in sys.modules if m.startswith("seqbench_")),
          file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["report", "--format", "json"],
        ["report", "--compare", "diag", "tcn", "--by", "k", "--format", "csv"],
        ["runs"],
        ["query", "SELECT model, task FROM runs"],
        ["check", "--baseline", "b"],
    ],
)
def test_read_commands_import_no_plugin(plugin_runs, tmp_path, args):
    db = plugin_runs
    r = subprocess.run(
        [sys.executable, "-c", PROBE, "--db", str(db), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    line = [x for x in r.stderr.splitlines() if x.startswith("PLUGINS=")][-1]
    assert line == "PLUGINS=", (args, r.stderr[-1500:])
    assert "Error" not in r.stderr, r.stderr


def test_a_task_reference_and_the_example_dataset_script(tmp_path):
    """`--task module:attr` for a task; examples/co2_arrays.py writes an .npz that the file
    task reads (a real series: the Mauna Loa CO2 record that statsmodels ships)."""
    db = tmp_path / "t.db"
    r = sb(db, "train", "-m", "gru", "-t", "seqbench_example:sunspots", "--steps", "3", "-q")
    assert r.returncode == 0, r.stderr
    ((task, plugin),) = rows(db, "SELECT task, json_extract(config, '$.plugin') FROM runs")
    assert task == "seqbench_example:sunspots" and plugin == f"task: {EXAMPLE}"

    script = Path(__file__).resolve().parents[1] / "examples" / "co2_arrays.py"
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "co2.npz")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    r = sb(db, "tasks", "--path", tmp_path / "co2.npz", "--format", "csv")
    assert r.returncode == 0, r.stderr
    facts = dict(line.split(",", 1) for line in r.stdout.strip().splitlines()[1:])
    assert facts["task"] == "file-regression" and facts["T"] == "48"
    assert facts["split"] == "the file's" and facts["train/valid/test"] == "328/60/84"
    r = sb(db, "train", "-m", "tcn", "-t", "file", "--path", tmp_path / "co2.npz", "--k", "16",
           "--steps", "150", "-q")  # fmt: skip
    assert r.returncode == 0, r.stderr
    (test,) = rows(db, "SELECT value FROM summaries WHERE key = 'test_metric'")[-1:]
    (base,) = rows(db, "SELECT value FROM summaries WHERE key = 'baseline'")[-1:]
    assert test[0] < 0.5 * base[0]  # the seasonal cycle: a year of changes predicts the next 6


ZOO = """
    '''A new family and a new task in one file of their own: everything seqbench needs to
    know of them is on their specs (defaults, the family's defaults on each task, the
    family's own conditions and config fields, the task's budget, checks and fields).'''
    from dataclasses import replace

    import torch

    from seqbench.config import MODEL, TASK, Option
    from seqbench.errors import UsageError
    from seqbench.models import ModelSpec
    from seqbench.tasks import TaskSpec
    from seqbench.tasks.base import Task, generator


    def _build(in_dim, args):
        from torch import nn

        from seqbench.models.base import Backbone

        class Leaky(Backbone):
            recurrent = True

            def __init__(self):
                super().__init__()
                self.inp = nn.Linear(in_dim, args.hidden)
                self.out_dim = args.hidden

            def forward(self, x, state=None):
                h, out = torch.zeros(x.shape[0], self.out_dim), []
                for t in range(x.shape[1]):
                    h = args.leak * h + self.inp(x[:, t])
                    out.append(h)
                return torch.stack(out, 1), h

        return Leaky()


    def _halve_lr_on_long_sequences(cfg):
        return replace(cfg, lr=cfg.lr / 2) if cfg.seq_len > 20 else cfg


    class Sum(Task):
        '''Regress the sum of the inputs.'''

        name = "zoo:sum"
        in_dim, out_dim = 1, 1

        def _draw(self, n, gen):
            x = torch.randn(n, self.seq_len, 1, generator=gen)
            return x, (self.args.gain or 1.0) * x.sum((1, 2))

        def train_batch(self, batch_size, gen):
            return self._draw(batch_size, gen)

        def eval_batches(self, split, batch_size):
            yield self._draw(64, generator(self.args.seed, {"valid": 1, "test": 2}[split]))

        def loss(self, out, y):
            return ((out.squeeze(-1) - y) ** 2).mean()

        def metric_sums(self, out, y):
            sq = float(((out.squeeze(-1) - y) ** 2).sum())
            return sq, sq, float(y.numel())

        def baseline(self):
            return float(self.seq_len)


    def _check_sum(c):
        if c.seq_len is not None and c.seq_len > 64:
            raise UsageError(f"zoo:sum is at most 64 steps, got {c.seq_len}")


    leaky = ModelSpec(
        "leaky", "a leaky integrator", True, _build, {"hidden": 8, "leak": 0.5},
        options=(Option("leak", float, MODEL, "what h keeps per step", positive=True),),
        task_defaults={"zoo:sum": {"lr": 0.02}, "adding": {"steps": 3}},
        condition=_halve_lr_on_long_sequences,
    )
    sum = TaskSpec(
        "zoo:sum", "zoo:Sum", "regress the sum of the inputs", "mse", 10,
        defaults={"steps": 40}, check=_check_sum,
        options=(Option("gain", float, TASK, "the target's scale (unset: 1)"),),
    )
"""


def test_a_new_family_and_task_from_their_own_file(tmp_path):
    """The rule of docs/architecture.md: a new model family or task edits only its own files.
    A family and a task written in one new file are trained through the CLI with the defaults,
    per-task defaults, conditions and checks their specs declare, and no other file."""
    db = tmp_path / "zoo.db"
    (tmp_path / "zoo.py").write_text(textwrap.dedent(ZOO))
    r = sb(db, "train", "-m", "zoo:leaky", "-t", "zoo:sum", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = sb(db, "train", "-m", "zoo:leaky", "-t", "zoo:sum", "--seq-len", "30", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = sb(db, "train", "-m", "zoo:leaky", "-t", "adding", "--seq-len", "10", "-q", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = rows(
        db,
        "SELECT task, status, json_extract(config, '$.hidden'), json_extract(config, '$.lr'),"
        " json_extract(config, '$.steps'), seq_len FROM runs ORDER BY id",
    )
    assert got == [
        ("zoo:sum", "completed", 8, 0.02, 40, 10),  # family, pair and task defaults
        ("zoo:sum", "completed", 8, 0.01, 40, 30),  # the family's condition
        ("adding", "completed", 8, 0.001, 3, 10),  # its default on a built-in task
    ]
    r = sb(db, "train", "-m", "zoo:leaky", "-t", "zoo:sum", "--seq-len", "99", cwd=tmp_path)
    assert r.returncode == 2 and "zoo:sum is at most 64 steps" in r.stderr
    assert len(rows(db, "SELECT id FROM runs")) == 3
    # their own config fields: stored with the run, refused elsewhere
    r = sb(db, "train", "-m", "zoo:leaky", "-t", "zoo:sum", "--set", "leak=0.25", "--set",
           "gain=2", "-q", cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    ((leak, gain),) = rows(db, "SELECT json_extract(config, '$.leak'), "
                           "json_extract(config, '$.gain') FROM runs WHERE id = 4")  # fmt: skip
    assert (leak, gain) == (0.25, 2.0)
    r = sb(db, "train", "-m", "zoo:leaky", "-t", "adding", "--set", "gain=2", cwd=tmp_path)
    # (no zoo:sum loaded in that process, so no one has declared `gain` there)
    assert r.returncode == 2 and "unknown config field 'gain'" in r.stderr
    r = sb(db, "train", "-m", "tcn", "-t", "zoo:sum", "--set", "leak=0.5", cwd=tmp_path)
    assert r.returncode == 2 and "unknown config field 'leak'" in r.stderr
    r = sb(db, "train", "-m", "zoo:leaky", "-t", "zoo:sum", "--set", "leak=0", cwd=tmp_path)
    assert r.returncode == 2 and "leak must be positive" in r.stderr


def test_the_catalogue_lists_a_plugins_own_options_beside_any():
    """`models`/`tasks` show a part's --set fields: a plugin that does not declare `reads` may
    read any shared field, and its own options are listed after "any", not hidden by it."""
    from seqbench.catalog import _own_fields
    from seqbench.config import MODEL, Option
    from seqbench.models import MODELS, ModelSpec

    leak = Option("leak", float, MODEL, "what h keeps", positive=True)
    spec = ModelSpec("zoo:leaky", "a leaky integrator", True, lambda *a: None, {}, options=(leak,))
    assert _own_fields(spec) == "any, leak"
    assert _own_fields(MODELS.get("rnn")) == "nonlinearity"  # a built-in: what it reads
    assert _own_fields(MODELS.get("tcn")) == "dropout, kernel_size, levels, init"
