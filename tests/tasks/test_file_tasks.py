"""The user's own data through the CLI, on a fresh store: a dataset these tests make (not one
of seqbench's tasks) trained with a recurrent and a feedforward model, swept over k and
reported against the file's own trivial baseline; every bad file one line, no row."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from seqbench.tasks.filedata import Dataset, describe, split_indices


def _lagged(n=400, T=16, lag=5, seed=0):
    """y = x[T - lag] + 0.5 x[T - 1]: a target that needs exactly `lag` steps of context."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, T, 1)).astype(np.float32)
    y = (x[:, T - lag, 0] + 0.5 * x[:, -1, 0]).astype(np.float32)
    return x, y


@pytest.fixture
def lagged(tmp_path) -> Path:
    x, y = _lagged(T=32)
    p = tmp_path / "lagged.npz"
    np.savez(p, x=x, y=y)
    return p


def _runs(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT id, model, task, k, status, config FROM runs").fetchall()
    finally:
        con.close()


def test_train_sweep_and_report_on_a_file(cli, db, lagged):
    same = ("--path", lagged, "--steps", "400", "--lr", "0.01", "-q")
    r = cli("train", "-m", "gru", "-t", "file", *same)
    assert r.exit_code == 0, r.output
    r = cli("train", "-m", "tcn", "-t", "file", *same)
    assert r.exit_code == 0, r.output
    (_, _, task, _, status, conf), (_, _, task2, k2, *_) = _runs(db)
    assert task == task2 == "file-regression" and status == "completed"
    conf = json.loads(conf)
    assert conf["target"] == "regression" and conf["seq_len"] == 32 and k2 == 32
    assert conf["data_hash"] == describe(str(lagged)).data_hash and conf["split_seed"] == 0

    r = cli(
        "sweep", "--models", "tcn", "--tasks", "file", "--set", f"path={lagged}",
        "--set", "steps=400", "--set", "lr=0.01", "--k", "1:32:x2", "--seeds", "0", "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    r = cli("report", "--compare", "gru", "tcn", "--by", "k", "--format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    base = describe(str(lagged)).baseline
    idx = split_indices(400, 0, ("train", "valid", "test"))  # the recorded split seed 0
    y = _lagged(T=32)[1].astype(np.float64)
    assert base == pytest.approx(float(np.mean((y[idx["test"]] - y[idx["train"]].mean()) ** 2)))
    by_k = {row["k"]: row for row in rows if row.get("k") is not None}
    assert sorted(by_k) == [1, 2, 4, 8, 16, 32]
    sd = Dataset(str(lagged)).moments()["y_sd"]  # the model sees standardised targets
    assert all(row["baseline"] == pytest.approx(base / sd**2) for row in rows)
    # the trained TCN (no k: the fewest levels covering T, context 32) and the swept one
    # asked for k = 32 at one budget across k are two configs, so each is its own variant,
    # never one cell of both (on inputs of exactly T = 32 they happen to compute alike); the
    # budget names the variant, the width it fitted follows
    tcn = {k: row[f"tcn (k={k} params=10000)_mean"] for k, row in by_k.items()}
    assert by_k[32]["tcn (k=none params=none)_n"] == by_k[32]["tcn (k=32 params=10000)_n"] == 1
    # a context short of the lag cannot see x[T-5]: the rest of y is noise to it
    assert tcn[4] > 0.5 * base
    assert tcn[8] < 0.2 * tcn[4] and tcn[32] < 0.2 * tcn[4]  # sees x[T-5] too
    assert by_k[32]["gru_mean"] < 0.6 * base  # the full GRU (k blank) as every row's reference


def _save(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


def _npy_dir(d: Path, **arrays) -> Path:
    d.mkdir()
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", a)
    return d


def _bad_files(tmp: Path) -> list[tuple[Path, str]]:
    x, y = _lagged(n=30, T=6)
    xi = np.random.default_rng(0).integers(0, 4, size=(30, 6))
    cases = [
        (_save(tmp / "nokeys.npz", inputs=x, y=y), "missing x; arrays found: inputs, y"),
        (_save(tmp / "noy.npz", x_train=x, x_test=x, y_test=y), "missing y_train"),
        (_save(tmp / "mismatch.npz", x=x, y=y[:-3]), "has 30 sequences but y has 27"),
        (_save(tmp / "steps.npz", x=x, y=np.zeros((30, 5), np.float32)), "y has shape (30, 5)"),
        (
            _save(tmp / "widths.npz", x_train=x, y_train=y, x_test=x[:, :, :0], y_test=y),
            "differ in dtype, length or width",
        ),
        (_save(tmp / "nan.npz", x=np.where(x > 1.5, np.nan, x), y=y), "x has NaN or infinite"),
        (_save(tmp / "inf.npz", x=x, y=np.where(y > 1, np.inf, y)), "y has NaN or infinite"),
        (
            _save(tmp / "neg.npz", x=x, y=np.arange(30) % 3 - 1),
            "class labels in y must be ≥ 0, found -1",
        ),
        (
            _save(tmp / "range.npz", x=x, y=np.arange(30) % 5, meta=json.dumps({"n_classes": 3})),
            "a label 4 is out of range for n_classes = 3",
        ),
        (_save(tmp / "tokens.npz", x=xi - 1), "token ids in x must be ≥ 0"),
        (
            _save(tmp / "empty.npz", x_train=x, y_train=y, x_test=x[:0], y_test=y[:0]),
            "the test split is empty",
        ),
        (_save(tmp / "dtype.npz", x=x > 0, y=y), "x has dtype bool"),
        (_save(tmp / "shape.npz", x=x[:, :, 0, None, None], y=y), "x has shape (30, 6, 1, 1)"),
        (
            _save(tmp / "cls_float.npz", x=x, y=y, meta='{"target": "classification"}'),
            "classification targets y must be integer",
        ),
        (_save(tmp / "meta.npz", x=x, y=y, meta="{not json"), "metadata is not JSON"),
    ]
    ragged = tmp / "ragged.npz"
    np.savez(ragged, x=np.array([np.zeros(3), np.zeros(4)], dtype=object), y=np.zeros(2))
    cases.append((ragged, "object array (ragged sequences?)"))
    whole = (tmp / "nan.npz").read_bytes()
    (tmp / "truncated.npz").write_bytes(_save(tmp / "ok.npz", x=x, y=y).read_bytes()[:300])
    cases.append((tmp / "truncated.npz", "truncated?"))
    assert whole
    (tmp / "notnpz.txt").write_text("a,b\n1,2\n")
    cases.append((tmp / "notnpz.txt", "expected an .npz file or a directory of .npy"))
    cases.append((tmp / "absent.npz", "no such file or directory"))
    d = _npy_dir(tmp / "npydir", x=x, y=y)
    (d / "y.npy").write_bytes((d / "y.npy").read_bytes()[:100])  # cut short
    cases.append((d, "y.npy cannot be read"))
    return cases


def test_each_bad_file_is_one_line_and_no_row(cli, db, tmp_path):
    (tmp_path / "bad").mkdir()
    for path, msg in _bad_files(tmp_path / "bad"):
        r = cli("train", "-m", "gru", "-t", "file", "--path", path, "--steps", "2", "-q")
        assert r.exit_code != 0, (path, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0], (path, r.output)
        assert "Traceback" not in r.output
        r = cli("tasks", "--path", path)
        assert r.exit_code != 0 and msg in r.output, (path, r.output)
    assert _runs(db) == []


@pytest.mark.parametrize(
    ("arrays", "kind", "source", "per_step"),
    [
        ({"x": "float", "y": "float"}, "regression", "inferred", False),
        ({"x": "float", "y": "int"}, "classification", "inferred", False),
        ({"x": "int"}, "next-token", "inferred", True),
        ({"x": "int", "y": "int_steps"}, "classification", "inferred", True),
        ({"x": "float", "y": "int", "meta": "regression"}, "regression", "metadata", False),
    ],
)
def test_the_kind_is_declared_or_inferred(tmp_path, arrays, kind, source, per_step):
    rng = np.random.default_rng(1)
    made = {
        "float": rng.normal(size=(50, 8)).astype(np.float32),
        "int": rng.integers(0, 3, size=(50, 8)),
    }
    out = {"x": made[arrays["x"]]}
    if arrays.get("y") == "float":
        out["y"] = rng.normal(size=50)
    elif arrays.get("y") == "int":
        out["y"] = rng.integers(0, 4, size=50)
    elif arrays.get("y") == "int_steps":
        out["y"] = rng.integers(0, 4, size=(50, 8))
    if "meta" in arrays:
        out["meta"] = json.dumps({"target": arrays["meta"]})
    p = _save(tmp_path / "d.npz", **out)
    f = describe(str(p))
    assert (f.kind, f.kind_source, f.per_step) == (kind, source, per_step)
    assert f.seq_len == (7 if kind == "next-token" else 8)


def test_the_trivial_baselines_are_the_train_split_predictors(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(10, 4, 1)).astype(np.float32)
    ytr, yte = np.array([1.0, 3.0] * 5), np.array([0.0, 4.0])
    p = _save(tmp_path / "r.npz", x_train=x, y_train=ytr, x_valid=x[:2], y_valid=yte,
              x_test=x[:2], y_test=yte)  # fmt: skip
    assert describe(str(p)).baseline == pytest.approx(((0 - 2) ** 2 + (4 - 2) ** 2) / 2)
    c = _save(tmp_path / "c.npz", x_train=x, y_train=np.array([2] * 7 + [0] * 3),
              x_valid=x[:4], y_valid=np.array([2, 2, 0, 1]), x_test=x[:4],
              y_test=np.array([2, 0, 0, 1]))  # fmt: skip
    assert describe(str(c)).baseline == pytest.approx(0.25)  # majority class 2: 1 of 4
    tok = np.array([[0, 0, 0, 1]] * 4)  # train next tokens: 0, 0, 1 per row
    t = _save(tmp_path / "t.npz", x_train=tok, x_valid=tok, x_test=np.array([[1, 1, 1, 1]]))
    p1 = (4 + 1) / (12 + 2)  # add-one unigram of train targets over a vocabulary of 2
    assert describe(str(t)).baseline == pytest.approx(-np.log2(p1))


def test_the_content_not_the_path_is_the_experiment(cli, db, tmp_path, lagged):
    from seqbench.configure import config_hash, make_config

    copy = tmp_path / "elsewhere" / "same.npz"
    copy.parent.mkdir()
    copy.write_bytes(lagged.read_bytes())
    other = _save(tmp_path / "other.npz", x=_lagged(seed=1)[0], y=_lagged(seed=1)[1])
    h = [config_hash(make_config("gru", "file", {"path": str(p)})) for p in (lagged, copy, other)]
    assert h[0] == h[1] != h[2]
    for p in (lagged, copy):
        r = cli("train", "-m", "gru", "-t", "file", "--path", p, "--steps", "5", "-q")
        assert r.exit_code == 0, r.output
    r = cli("report", "--format", "json")
    cells = json.loads(r.stdout)
    assert "variant" not in r.stdout, r.stdout  # the two paths pooled as seeds of one
    assert cells, r.stdout


def test_a_changed_file_is_refused_by_the_config_made_before(tmp_path, lagged):
    from seqbench.configure import make_config
    from seqbench.errors import SeqbenchError
    from seqbench.tasks import make_task

    cfg = make_config("gru", "file", {"path": str(lagged)})
    x, y = _lagged(seed=3)
    np.savez(lagged, x=x, y=y)
    with pytest.raises(SeqbenchError, match="has changed since this config was made"):
        make_task(cfg.task, cfg.task_args())


def test_a_directory_of_npy_is_memory_mapped(tmp_path):
    x, y = _lagged(n=200)
    d = _npy_dir(tmp_path / "npy", x=x, y=y)
    ds = Dataset(str(d))
    assert isinstance(ds.splits["train"][0], np.memmap)
    bx, by = ds.rows("train", np.array([5, 1, 3]))
    rows = ds.splits["train"][2]
    assert np.array_equal(bx, x[rows[[5, 1, 3]]]) and np.array_equal(by, y[rows[[5, 1, 3]]])
    npz = _save(tmp_path / "a.npz", x=x, y=y)
    assert describe(str(d)).data_hash != describe(str(npz)).data_hash


def test_split_seed_is_recorded_and_refused_where_the_file_has_splits(tmp_path):
    from seqbench.configure import make_config
    from seqbench.errors import UsageError

    x, y = _lagged(n=60)
    p = _save(tmp_path / "s.npz", x_train=x, y_train=y, x_valid=x, y_valid=y, x_test=x, y_test=y)
    assert make_config("gru", "file", {"path": str(p)}).split_seed is None
    with pytest.raises(UsageError, match="has its own train/valid/test splits"):
        make_config("gru", "file", {"path": str(p), "split_seed": 3})
    q = _save(tmp_path / "q.npz", x=x, y=y)
    a, b = Dataset(str(q), split_seed=1), Dataset(str(q), split_seed=2)
    assert not np.array_equal(a.splits["test"][2], b.splits["test"][2])
    with pytest.raises(UsageError, match="target is not read by"):
        make_config("gru", "adding", {"target": "regression"})


def test_a_training_batch_is_the_rows_drawn_in_the_order_drawn(tmp_path):
    import torch

    from seqbench.configure import make_config
    from seqbench.tasks import make_task
    from seqbench.tasks.base import generator

    x, y = _lagged(n=100)
    d = _npy_dir(tmp_path / "npy", x=x, y=y)
    cfg = make_config("gru", "file", {"path": str(d), "scale": "raw"})  # the rows as stored
    task = make_task(cfg.task, cfg.task_args())
    bx, by = task.train_batch(16, generator(7))
    drawn = torch.randint(0, task.n_train, (16,), generator=generator(7)).numpy()
    rows = task.data.splits["train"][2][drawn]
    assert np.array_equal(bx.numpy(), x[rows]) and np.array_equal(by.numpy(), y[rows])


@pytest.mark.parametrize("model", ["lstm", "tcn"])
@pytest.mark.parametrize("kind", ["next-token", "per-step classes"])
def test_token_and_per_step_files_train(cli, db, tmp_path, model, kind):
    rng = np.random.default_rng(0)
    tok = rng.integers(0, 6, size=(120, 12))
    arrays = {"x": tok} if kind == "next-token" else {"x": tok, "y": (tok + 1) % 6}
    p = _save(tmp_path / "t.npz", **arrays)
    r = cli("train", "-m", model, "-t", "file", "--path", p, "--steps", "20")
    assert r.exit_code == 0, r.output
    ((_, _, task, _, status, _),) = _runs(db)
    assert status == "completed"
    assert task == ("file-next-token" if kind == "next-token" else "file-classification")


def test_an_array_file_is_fed_standardised_with_the_training_split(tmp_path):
    """scale=standard (the default): the model sees (v − mean) / sd of the training split, in
    inputs and regression target, and the baseline is in the same units; scale=raw feeds the
    file as it is (how runs before the field were fed, and hashed as they were)."""
    from seqbench.configure import config_hash, make_config
    from seqbench.errors import UsageError
    from seqbench.tasks import make_task

    rng = np.random.default_rng(5)
    x = (rng.normal(size=(300, 6, 2)) * [3.0, 0.01] + [100.0, -2.0]).astype(np.float32)
    y = (1000 * x[:, 2, 0]).astype(np.float32)
    p = _save(tmp_path / "s.npz", x=x, y=y)
    std = make_config("tcn", "file", {"path": str(p)})
    raw = make_config("tcn", "file", {"path": str(p), "scale": "raw"})
    assert (std.scale, raw.scale) == ("standard", "raw")
    assert config_hash(std) != config_hash(raw)
    task = make_task(std.task, std.task_args())
    xs, ys = task.data.rows("train", slice(None))
    xt, yt = task._tensors(xs, ys)
    assert xt.mean((0, 1)).abs().max() < 1e-4 and (xt.std((0, 1)) - 1).abs().max() < 1e-2
    assert abs(float(yt.mean())) < 1e-4 and abs(float(yt.std()) - 1) < 1e-2
    raw_task = make_task(raw.task, raw.task_args())
    assert task.baseline() == pytest.approx(raw_task.baseline() / task.moments["y_sd"] ** 2)
    assert 0.5 < task.baseline() < 2  # about the test targets' variance in sd units
    with pytest.raises(UsageError, match="scale must be one of standard, raw"):
        make_config("tcn", "file", {"path": str(p), "scale": "minmax"})
    with pytest.raises(UsageError, match="scale is not read by"):
        make_config("tcn", "adding", {"scale": "raw"})


def test_a_shared_test_split_scores_its_best_constant_and_its_noise(tmp_path):
    """Every seed of own data is scored on one test split: evaluate gives that split's best
    constant (its targets' mean; for classes, its most frequent class) and the standard error
    of a prediction's gain on it over the test sequences, as NumPy computes them from the same
    arrays; a valid split has none."""
    import torch

    from seqbench.configure import make_config
    from seqbench.tasks import make_task

    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 6, 1)).astype("float32")
    y = (3 + 2 * x[:, -2, 0] + rng.standard_normal(500)).astype("float32")
    p = tmp_path / "reg.npz"
    np.savez(p, x=x, y=y)
    cfg = make_config("gru", "file", {"path": str(p)})
    task = make_task(cfg.task, cfg.task_args())
    ev = task.evaluate(lambda xb: 0.5 * xb[:, -2, :], "test", 64)  # (B, 1): a half-right guess
    ys = np.concatenate([yb.numpy() for _, yb in task.eval_batches("test", 64)])
    xs = np.concatenate([xb.numpy()[:, -2, 0] for xb, _ in task.eval_batches("test", 64)])
    const = ((ys - ys.mean()) ** 2).mean()
    gain = (ys - ys.mean()) ** 2 - (0.5 * xs - ys) ** 2
    assert ev["const"] == pytest.approx(const, rel=1e-4)
    assert ev["gain_se"] == pytest.approx(gain.std(ddof=1) / np.sqrt(len(gain)), rel=1e-3)
    assert ev["metric"] == pytest.approx(((0.5 * xs - ys) ** 2).mean(), rel=1e-4)
    assert "const" not in task.evaluate(lambda xb: 0.5 * xb[:, -2, :], "valid", 64)
    # classes: the constant is the test split's most frequent class, the gain a right answer
    labels = (y > 3.5).astype("int64")  # unbalanced: about 40% ones
    np.savez(p, x=x, y=labels)
    cfg = make_config("gru", "file", {"path": str(p)})
    cls = make_task(cfg.task, cfg.task_args())
    guess = lambda xb: torch.cat([-xb[:, -2, :], xb[:, -2, :]], -1)  # noqa: E731  class 1 iff x > 0
    ev = cls.evaluate(guess, "test", 64)
    ys = np.concatenate([yb.numpy() for _, yb in cls.eval_batches("test", 64)])
    xs = np.concatenate([xb.numpy()[:, -2, 0] for xb, _ in cls.eval_batches("test", 64)])
    major = np.bincount(ys).argmax()
    gain = (((xs > 0).astype(int) == ys).astype(float) - (ys == major)).astype(float)
    assert ev["const"] == pytest.approx((ys == major).mean(), rel=1e-6)
    assert ev["gain_se"] == pytest.approx(gain.std(ddof=1) / np.sqrt(len(gain)), rel=1e-6)


def test_what_is_not_a_regular_file_is_refused_whatever_its_name(cli, tmp_path):
    """A FIFO named x.npz made `tasks` wait for ever (the same FIFO named .csv was refused)."""
    import os

    os.mkfifo(tmp_path / "x.npz")
    d = tmp_path / "dir"
    d.mkdir()
    np.save(d / "y.npy", np.zeros(4))
    os.mkfifo(d / "x.npy")
    for path in (tmp_path / "x.npz", d):
        r = cli("tasks", "--task", "file", "--path", str(path))
        assert r.exit_code != 0 and "is not a regular file" in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1


def test_an_npz_header_is_checked_before_anything_is_decompressed(cli, tmp_path):
    """A header claiming 364 TiB was a traceback: now one line naming the array, its claim
    and what the file holds."""
    import zipfile

    from numpy.lib import format as fmt

    with zipfile.ZipFile(tmp_path / "forged.npz", "w") as zf:
        with zf.open("x.npy", "w") as f:
            fmt.write_array_header_1_0(
                f, {"descr": "<f8", "fortran_order": False, "shape": (1 << 22, 1 << 22, 3)}
            )
            f.write(bytes(100))
        with zf.open("y.npy", "w") as f:
            fmt.write_array(f, np.zeros(10))
    r = cli("tasks", "--task", "file", "--path", str(tmp_path / "forged.npz"))
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1, r.output
    assert "x: its header claims 393216.0 GiB (4194304×4194304×3 float64)" in r.output


def test_an_npz_that_expands_past_the_memory_limit_is_refused_in_one_line(tmp_path):
    """A 7.8 MB .npz that expanded to 8 GB raised MemoryError in a 118-line traceback. Its
    members' declared sizes are counted against what the process may allocate (here an
    address-space limit of its current size plus 1.5 GiB) before a byte is decompressed."""
    import subprocess
    import sys
    import zipfile

    from numpy.lib import format as fmt

    bomb = tmp_path / "bomb.npz"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("x.npy", "w", force_zip64=True) as f:  # 1 GiB of zeros, ~1 MB on disk
            fmt.write_array_header_1_0(
                f, {"descr": "<f4", "fortran_order": False, "shape": (32768, 4096, 2)}
            )
            for _ in range(64):
                f.write(bytes(1 << 24))
        with zf.open("y.npy", "w") as f:
            fmt.write_array(f, np.zeros(32768, np.float32))
    assert bomb.stat().st_size < 5e6
    code = (
        "import resource, sys\n"
        "from seqbench.environment import _status_bytes, available_ram\n"
        "from seqbench.tasks.arrays import Arrays\n"
        "limit = _status_bytes('VmSize') + 3 * 2**29\n"
        "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
        "assert available_ram() <= 3 * 2**29, available_ram()\n"
        "try:\n"
        "    Arrays(sys.argv[1])\n"
        "except Exception as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("FileDataError data file"), out.stdout
    assert "its arrays take 1.0 GiB once decompressed" in out.stdout
