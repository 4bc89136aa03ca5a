import math
import sys

import pytest
import torch

from seqbench.errors import MissingDependencyError, SeqbenchError, UnknownNameError, UsageError
from seqbench.tasks import TASKS, make_task
from seqbench.tasks.base import TaskArgs, generator

QUICK = {
    "adding": {},
    "copy": {"seq_len": 30},
    "teacher": {"seq_len": 30},
    "digits": {},
    "pdigits": {},
    "fashion": {"subset": 200},
    "pfashion": {"subset": 200},
    "chorales": {"subset": 12},
    "ptb-char": {"subset": 5000},
    "ptb-word": {"subset": 3000},
    "mqar": {"seq_len": 16, "vocab_size": 32, "num_pairs": 2},
    "selective-copy": {"seq_len": 16},
    "induction": {"seq_len": 16},
    "memory-function": {"seq_len": 30, "kernel": "power", "alpha": 1.0},
}


def _task(name, seed=0, **kw):
    return make_task(name, TaskArgs(seed=seed, eval_size=64, **{**QUICK.get(name, {}), **kw}))


def _eval_set(task, split):
    xs, ys = zip(*task.eval_batches(split, 1000), strict=True)
    return xs, ys


def _flat(ys):
    return torch.cat([y[0] if isinstance(y, tuple) else y for y in ys]).float()


@pytest.mark.parametrize("name", list(QUICK))
def test_deterministic_for_a_seed(name):
    a, b = _task(name), _task(name)
    xa, ya = a.train_batch(8, generator(0))
    xb, yb = b.train_batch(8, generator(0))
    assert torch.equal(xa, xb)
    assert torch.equal(_flat([ya]), _flat([yb]))
    for split in ("valid", "test"):
        assert torch.equal(torch.cat(_eval_set(a, split)[0]), torch.cat(_eval_set(b, split)[0]))


@pytest.mark.parametrize("name", ["adding", "teacher", "digits", "chorales", "ptb-char"])
def test_other_seed_other_data(name):
    xa, _ = _task(name, seed=0).train_batch(8, generator(0))
    xb, _ = _task(name, seed=1).train_batch(8, generator(1))
    assert not torch.equal(xa, xb)


@pytest.mark.parametrize("name", ["adding", "copy", "teacher"])
def test_synthetic_valid_and_test_differ(name):
    t = _task(name)
    assert not torch.equal(torch.cat(_eval_set(t, "valid")[0]), torch.cat(_eval_set(t, "test")[0]))


def _rows(x):
    return {bytes(r.numpy().tobytes()) for r in x.reshape(x.shape[0], -1)}


@pytest.mark.parametrize("name", ["digits", "fashion"])
def test_image_splits_are_disjoint(name):
    t = _task(name, subset=None) if name == "digits" else _task(name)
    sets = {s: t.split_tensors(s)[0] for s in ("train", "valid", "test")}
    idx = {s: _rows(x) for s, x in sets.items()}
    # digits has a handful of duplicate images in the raw data; disjointness is by example,
    # so compare sizes of the union against the parts
    total = sum(len(x) for x in sets.values())
    if name == "digits":
        assert total == 1797
        assert [len(x) for x in sets.values()] == [1078, 359, 360]
    assert len(idx["train"] & idx["test"]) <= 0.01 * len(idx["test"])


def test_adding_baseline_is_one_sixth():
    t = make_task("adding", TaskArgs(seq_len=50, eval_size=20000))
    x, y = next(t.eval_batches("test", 20000))
    assert float(((1.0 - y) ** 2).mean()) == pytest.approx(1 / 6, abs=0.005)
    assert t.baseline() == pytest.approx(1 / 6)
    assert (x[..., 1].sum(1) == 2).all()  # two distinct markers


def test_adding_halves_marker_placement():
    t = make_task("adding", TaskArgs(seq_len=10, marker="halves"))
    x, _ = t.train_batch(500, generator(0))
    marks = x[..., 1]
    assert (marks[:, :5].sum(1) == 1).all() and (marks[:, 5:].sum(1) == 1).all()
    with pytest.raises(UsageError, match="marker"):
        make_task("adding", TaskArgs(marker="middle"))


def test_copy_memoryless_predictor_scores_the_baseline():
    T = 30
    t = make_task("copy", TaskArgs(seq_len=T, eval_size=32))
    x, y = next(t.eval_batches("test", 32))
    assert x.shape == (32, T + 20) and (x[:, T + 9 :] == 9).all()  # the paper's 11 nines
    assert (x[:, 10 : T + 9] == 0).all() and ((x[:, :10] >= 1) & (x[:, :10] <= 8)).all()
    assert torch.equal(y[:, -10:], x[:, :10]) and (y[:, :-10] == 0).all()
    logits = torch.full((32, T + 20, 10), -1e9)
    logits[:, :-10, 0] = 0.0  # certain blank until the recall window
    logits[:, -10:, 1:9] = 0.0  # then a uniform guess over the 8 symbols
    loss, _, n = t.metric_sums(logits, y)
    assert loss / n == pytest.approx(10 * math.log(8) / (T + 20), rel=1e-6)
    assert t.baseline() == pytest.approx(10 * math.log(8) / (T + 20))


def test_teacher_has_the_requested_spectral_norm():
    for lam in (0.5, 0.9, 1.2):
        t = make_task("teacher", TaskArgs(seq_len=20, teacher_lam=lam))
        assert float(torch.linalg.matrix_norm(t.W.double(), 2)) == pytest.approx(lam, rel=1e-5)
    x, y = _task("teacher").train_batch(4, generator(0))
    torch.testing.assert_close(y, _task("teacher").run_teacher(x))


def test_digits_real_loader():
    t = _task("digits")
    x, y = t.split_tensors("train")
    assert x.shape[1:] == (64, 1) and float(x.min()) >= 0 and float(x.max()) <= 1.0
    assert set(y.tolist()) == set(range(10)) and t.baseline() == 0.1


def test_permuted_digits_is_one_fixed_permutation():
    plain, perm = _task("digits"), _task("pdigits")
    xp, xq = plain.split_tensors("test")[0], perm.split_tensors("test")[0]
    assert not torch.equal(xp, xq)
    assert torch.equal(xp.sort(dim=1).values, xq.sort(dim=1).values)
    assert torch.equal(xq, _task("pdigits", seed=0).split_tensors("test")[0])


@pytest.mark.slow
def test_fashion_real_loader():
    t = _task("fashion")
    x, y = t.split_tensors("test")
    assert x.shape == (200, 784, 1) and y.min() >= 0 and y.max() <= 9
    assert 0.1 < float(x.mean()) < 0.5  # real clothing images, not noise or zeros
    assert t.split_tensors("train")[0].shape == (200, 784, 1)


def test_idx_reader_rejects_garbage(tmp_path):
    from seqbench.tasks.images import read_idx

    bad = tmp_path / "bad.idx"
    bad.write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05abc")
    with pytest.raises(SeqbenchError, match="expected 5 values"):
        read_idx(bad)


@pytest.mark.slow
def test_chorales_real_loader_and_cache(tmp_path):
    from seqbench.tasks.base import cache_dir

    t = _task("chorales")
    assert t.n_chorales == 12
    assert (cache_dir() / "chorales-12.npz").exists()
    x, (y, mask) = next(t.eval_batches("train", 4))
    assert x.shape[-1] == 88 and torch.equal(x[:, 1:][mask[:, 1:] > 0], y[:, :-1][mask[:, 1:] > 0])
    active = x[mask > 0].sum(-1)
    assert float(active.mean()) > 2.5  # four voices sound most of the time
    # the context-free baseline: per-pitch training frequencies, about 4-5 of 88 pitches on
    base = t.baseline()
    assert 5.0 < base < 25.0
    assert base <= _bernoulli_nll(t, 4.75 / 88)  # frequencies beat one rate for every pitch
    again = _task("chorales")  # from the cache this time
    assert torch.equal(next(again.eval_batches("train", 4))[0], x)


def test_chorales_parsed_by_two_processes_at_once(tmp_path):
    """Two sweep workers meeting an empty cache take turns: both get the same rolls and the
    cache is written once (side by side, one read music21's half-written pickle)."""
    import os
    import subprocess

    code = (
        "from seqbench.tasks.music import load_chorales; import numpy as np; "
        "r = load_chorales(4); print(len(r), int(sum(x.sum() for x in r)))"
    )
    env = {**os.environ, "SEQBENCH_CACHE": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-500:] for o in outs]
    assert outs[0][0] == outs[1][0] and outs[0][0].startswith("4 ")
    assert [f.name for f in tmp_path.glob("chorales-4*.npz")] == ["chorales-4.npz"]


def _bernoulli_nll(t, p: float) -> float:
    test = torch.cat([s[1:] for s in t._splits["test"]])
    return float(-(test * math.log(p) + (1 - test) * math.log(1 - p)).sum(-1).mean())


def test_ptb_real_loader():
    t = make_task("ptb-char", TaskArgs())
    ids = t._data[0]
    assert len(ids["train"]) == 5_101_619 and 45 <= t.vocab <= 55
    w = _task("ptb-word")
    assert w.metric == "ppl" and w.vocab > 1000


def test_text_task(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("hello world, " * 200)
    t = make_task("text", TaskArgs(path=str(f), seq_len=16))
    x, y = t.train_batch(2, generator(0))
    assert x.shape == (2, 16) and torch.equal(x[:, 1:], y[:, :-1])
    assert t.vocab == len(set("hello world, "))


@pytest.mark.parametrize(("path", "msg"), [(None, "needs a file"), ("nope.txt", "no such file")])
def test_text_task_bad_path(tmp_path, path, msg):
    with pytest.raises(SeqbenchError, match=msg):
        make_task("text", TaskArgs(path=path))


def test_text_task_empty_file(tmp_path):
    (tmp_path / "e.txt").write_text("")
    with pytest.raises(SeqbenchError, match="empty"):
        make_task("text", TaskArgs(path=str(tmp_path / "e.txt")))


def test_missing_package_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'seqbench\[datasets\]'"):
        _task("digits").split_tensors("train")


def test_unknown_task_and_bad_lengths():
    with pytest.raises(UnknownNameError, match="Did you mean 'adding'"):
        TASKS.get("addin")
    with pytest.raises(UsageError, match="seq_len must be positive"):
        make_task("adding", TaskArgs(seq_len=0))


def test_every_task_is_registered():
    files = {"file-regression", "file-classification", "file-next-token"}
    built_in = {n for n in TASKS.names() if TASKS.is_builtin(n)}  # plugins aside
    assert built_in == set(QUICK) | {"text"} | files


def test_registry_entries_load_their_classes():
    for name in TASKS:
        cls = TASKS.get(name).load()
        if name.startswith("file-"):  # one class, named by the kind its data is
            assert cls.__name__ == "FileTask"
            continue
        assert cls.name == name and make_task.__module__ == "seqbench.tasks"


@pytest.mark.parametrize(
    ("task", "kw", "msg"),
    [
        ("adding", {"seq_len": 1}, "adding needs seq_len >= 2"),
        ("adding", {"marker": "middle"}, "marker must be uniform or halves"),
        ("digits", {"seq_len": 50}, "digits has a fixed length of 64 steps"),
        ("teacher", {"teacher_lam": 0.0}, "teacher_lam must be positive"),
    ],
)
def test_task_rules_hold_for_configs_and_for_task_args(task, kw, msg):
    """One rule, two doors: a config (before any run row) and the library's make_task."""
    from seqbench.configure import resolve

    with pytest.raises(UsageError, match=msg):
        resolve("rnn", task, {**kw, "steps": 1})
    with pytest.raises(UsageError, match=msg):
        make_task(task, TaskArgs(**kw))


def test_resolving_a_config_imports_no_torch():
    from tests.conftest import loads_module

    code = (
        "from seqbench.configure import resolve; "
        "c = resolve('tcn', 'digits', {'stable': False}); "
        "assert c.seq_len == 64 and c.hidden == 25, c"
    )
    assert not loads_module(code, "torch")
