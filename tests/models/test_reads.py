"""What each family and task reads, measured from the outside (the options each declares,
ModelSpec.options and TaskSpec.options): a field a family does not read leaves the network it
builds bit for bit the same (parameters and outputs, dropout drawn from the same seed), and
giving it is refused in one line naming who reads it; a field it reads changes the network, or
the family refuses every value but its own (irnn's ReLU). Tasks likewise, by the batches they
draw."""

from __future__ import annotations

import json

import pytest
import torch

from seqbench.configure import make_config
from seqbench.errors import UsageError
from seqbench.models import MODELS, make_backbone
from seqbench.options import MODEL, OPTIONS, SHARED, SHARED_MODEL, SHARED_TASK, TASK
from seqbench.tasks import TASKS, make_task
from seqbench.tasks.base import generator

# values to try, the first that differs from the family's default (valid where it is read)
ALT = {
    "dropout": [0.3], "kernel_size": [3], "levels": [3], "nonlinearity": ["relu", "tanh"],
    "base": ["gru"], "magnitude": [5.0], "deep": [True], "heads": [2], "forget_bias": [1.0],
    "forget_cap": [0.3], "init": ["paper"], "d_state": [8], "backend": ["torch"],
}  # fmt: skip
# fields that matter only beside another: the LSTM's forget cap under --stable
WITH = {"forget_cap": {"stable": True}}
# how, not what: the IndRNN and scan kernels compute the same numbers on every backend
HOW = {"backend"}
BUILT_IN = [m for m in MODELS if MODELS.get(m).plugin is None]
# the options built-in families declare: the shared ones (dropout, kernel_size …) and their own
MODEL_OPTIONS = [n for n, o in OPTIONS.items() if o.group == MODEL and set(o.owners) & {*BUILT_IN}]


def _reads(spec) -> set[str]:
    """What a spec says it reads: its options (and, for a plugin, the shared fields it lists)."""
    return set(spec.reads or ()) | {o.name for o in spec.options}


T = 30


def _network(model: str, args) -> tuple[int, torch.Tensor]:
    torch.manual_seed(0)
    net = make_backbone(model, 2, args)
    net.train()  # dropout on, drawn from the seed below
    torch.manual_seed(1)
    y = net(torch.randn(2, T, 2))
    y = y[0] if isinstance(y, tuple) else y
    return sum(p.numel() for p in net.parameters()), y.detach()


def _same(a, b) -> bool:
    return a[0] == b[0] and a[1].shape == b[1].shape and torch.equal(a[1], b[1])


def test_every_built_in_part_declares_what_it_reads():
    """A built-in lists no shared field in `reads`: it declares what it reads as options. Each
    shared field is some built-in's option, declared at its frozen value (SHARED)."""
    assert [m for m in BUILT_IN if MODELS.get(m).reads != ()] == []
    assert [t for t in TASKS if TASKS.get(t).plugin is None and TASKS.get(t).reads != ()] == []
    assert set(MODEL_OPTIONS) == {*SHARED_MODEL, "d_state", "forget_cap"}
    built_in_tasks = {t for t in TASKS if TASKS.get(t).plugin is None}
    for name, value in SHARED.items():
        option = OPTIONS[name]
        assert option.default == value and set(option.owners) & {*BUILT_IN, *built_in_tasks}
        assert option.group == (MODEL if name in SHARED_MODEL else TASK), name
    assert set(SHARED_TASK) <= {n for n, o in OPTIONS.items() if o.group == TASK}


@pytest.mark.parametrize("model", BUILT_IN)
def test_a_family_reads_what_it_says_and_nothing_else(model):
    base = {"seq_len": T}
    reads = _reads(MODELS.get(model))
    if MODELS.get(model).wraps_base:
        reads |= _reads(MODELS.get(make_config(model, "adding", base).base))
    for name in MODEL_OPTIONS:
        over = {**base, **(WITH.get(name, {}) if name in reads else {})}
        cfg = make_config(model, "adding", over)
        alt = next(v for v in ALT[name] if v != getattr(cfg, name))
        if name in reads:
            try:
                changed = make_config(model, "adding", {**over, name: alt})
            except UsageError as e:  # refused: a value the family does not take
                assert "is not read by" not in str(e), (model, name, e)
                continue
            if name not in HOW:
                assert not _same(_network(model, cfg.model_args()),
                                 _network(model, changed.model_args())), (model, name)  # fmt: skip
        else:
            with pytest.raises(UsageError, match=f"{name} is not read by {model}"):
                make_config(model, "adding", {**over, name: alt})
            if name in HOW or name == "base":
                continue  # a non-window ignores `base` by construction; `how` is not numbers
            # built past the refusal, the field changes nothing: it was right to refuse it
            args = cfg.model_args()
            assert _same(_network(model, args), _network(model, args.with_(**{name: alt}))), (
                model, name,
            )  # fmt: skip


SYNTHETIC = ["adding", "copy", "teacher", "mqar", "selective-copy", "induction",
             "memory-function"]  # fmt: skip
TASK_ALT = {"marker": "fixed", "subset": 50, "path": "x.txt", "teacher_lam": 0.5,
            "teacher_kind": "linear", "vocab_size": 64, "num_pairs": 2, "symbols": "tokens",
            "test_stream": True, "target": "regression", "data_hash": "ab12", "split_seed": 3,
            "scale": "raw", "x_cols": "a", "y_cols": "b", "time_col": "t", "series_col": "s",
            "horizon": 2, "split": "time"}  # fmt: skip


def _batch(task: str, args) -> torch.Tensor:
    """A batch as the model sees it: its numbers, and whether they are token ids (copy's
    symbols fed as tokens are the same numbers, embedded) and of how many channels."""
    t = make_task(task, args)
    x, y = t.train_batch(4, generator(0, 3))
    shape = torch.tensor([t.vocab or 0, t.in_dim], dtype=torch.float)
    return torch.cat([shape, x.float().flatten(), torch.as_tensor(y).float().flatten()])


# the options built-in tasks declare that TASK_ALT has a value for (the memory function's own,
# each of which matters only beside its kernel, are measured in tests/tasks)
TASK_OPTIONS = [n for n, o in OPTIONS.items() if o.group == TASK and n in TASK_ALT]


@pytest.mark.parametrize("task", SYNTHETIC)
def test_a_task_reads_what_it_says_and_nothing_else(task):
    reads = _reads(TASKS.get(task))
    cfg = make_config("tcn", task, {"steps": 10})
    for name in TASK_OPTIONS:
        alt = TASK_ALT[name]
        if name in reads:
            try:
                changed = make_config("tcn", task, {"steps": 10, name: alt})
            except UsageError as e:
                assert "is not read by" not in str(e), (task, name, e)
                continue
            assert not torch.equal(_batch(task, cfg.task_args()),
                                   _batch(task, changed.task_args())), (task, name)  # fmt: skip
        else:
            with pytest.raises(UsageError, match=f"{name} is not read by {task}"):
                make_config("tcn", task, {"steps": 10, name: alt})
            if name == "path":
                continue  # no file to read: the refusal is the test
            args = cfg.task_args()
            try:
                ignored = _batch(task, args.with_(**{name: alt}))
            except UsageError:  # past the refusal, the task's own check refuses it too
                continue
            assert torch.equal(_batch(task, args), ignored), (task, name)


# -- what a user sees --------------------------------------------------------------------------
def test_train_refuses_a_field_the_pair_does_not_read_in_one_line(cli, db):
    for args, words in [
        (["-m", "rnn", "-t", "adding", "--set", "kernel_size=3"],
         "kernel_size is not read by rnn, so it would change nothing; leave it out (it is read "
         "by tcn, gcnn)"),
        (["-m", "gru", "-t", "adding", "--set", "teacher_lam=0.5"],
         "teacher_lam is not read by adding"),
        (["-m", "window", "-t", "adding", "--k", "4", "--set", "nonlinearity=relu"],
         "nonlinearity is not read by window over lstm"),
        (["-m", "tcn", "-t", "copy", "--set", "d_state=8"], "d_state is not read by tcn"),
    ]:  # fmt: skip
        r = cli("train", *args, "--steps", "2", "-q")
        lines = r.output.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1 and words in lines[0], r.output
    assert not db.exists()  # refused before a store was opened
    # what the family reads is taken: a window over an rnn reads the rnn's nonlinearity
    r = cli("train", "-m", "window", "-t", "adding", "--k", "4", "--set", "base=rnn",
            "--set", "nonlinearity=relu", "--steps", "2", "--seq-len", "8", "-q")  # fmt: skip
    assert r.exit_code == 0, r.output


def test_a_dry_run_config_file_trains_as_written(cli, tmp_path):
    """--dry-run prints every field, the ones the model does not read at their defaults:
    that file is accepted as it is, and trains the experiment it printed (one hash)."""
    r = cli("train", "-m", "rnn", "-t", "adding", "--steps", "2", "--seq-len", "8", "--dry-run")
    assert r.exit_code == 0 and "kernel_size = 7" in r.output, r.output
    (tmp_path / "c.toml").write_text(r.output)
    assert cli("train", "-m", "rnn", "-t", "adding", "--config", tmp_path / "c.toml",
               "-q").exit_code == 0  # fmt: skip
    assert cli("train", "-m", "rnn", "-t", "adding", "--steps", "2", "--seq-len", "8",
               "-q").exit_code == 0  # fmt: skip
    hashes = cli("query", "SELECT DISTINCT config_hash FROM runs", "-f", "csv").stdout
    assert len(hashes.split()) == 2  # the header and one hash


def test_a_grid_applies_a_set_where_it_is_read(cli):
    r = cli("sweep", "--models", "rnn,tcn", "--tasks", "adding", "--set", "kernel_size=3,5",
            "--set", "steps=2", "--set", "seq_len=8", "--dry-run", "-f", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    points = json.loads(r.stdout)
    got = sorted((p["model"], p.get("kernel_size")) for p in points)
    assert got == [("rnn", None), ("tcn", 3), ("tcn", 5)]  # one rnn: the axis is not its
    r = cli("sweep", "--models", "rnn,gru", "--tasks", "adding", "--set", "kernel_size=3",
            "--dry-run")  # fmt: skip
    msg = "--set kernel_size is read by none of the grid's models (rnn, gru)"
    assert r.exit_code == 2 and msg in r.output, r.output
    # memory's grids (one a searched model) take it where read: the TCN's, not the GRU's
    r = cli("memory", "--task", "adding", "--set", "seq_len=10", "--set", "kernel_size=3",
            "--families", "tcn", "--references", "gru", "--dry-run", "-f", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    points = json.loads(r.stdout)
    assert {p.get("kernel_size") for p in points if p["model"] == "tcn"} == {3}
    assert {p.get("kernel_size") for p in points if p["model"] == "gru"} == {None}
    r = cli("stress", "--models", "rnn", "--seq-len", "20", "--set", "heads=2")
    assert r.exit_code == 2 and "--set heads is read by none of rnn" in r.output, r.output


def test_a_plugin_that_does_not_say_what_it_reads_is_refused_what_it_always_was():
    """The example plugin's task declares no reads: every task field passes as before, but
    the built-in file tasks' own (and copy's symbols) are refused, as they always were."""
    assert TASKS.get("sunspots").reads is None
    make_config("rnn", "sunspots", {"teacher_lam": 0.5, "marker": "fixed"})
    for name, value in (("split_seed", 3), ("horizon", 2), ("symbols", "tokens")):
        with pytest.raises(UsageError, match=f"{name} is not read by sunspots"):
            make_config("rnn", "sunspots", {name: value})
