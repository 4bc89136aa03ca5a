"""A CSV or Parquet time series as it comes: windowed, split by time and standardised by
seqbench, with facts measured from the outside (the rows a window holds, the times each split
covers, the statistics of the train rows, a persistence forecast computed here by hand), the
same runs from both formats, k* = m for a series whose target is the input m steps back, and
every bad table one line with nothing written."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from seqbench.tasks.series import Choice, Table, choice_from


def _lag_frame(n=600, m=3, seed=0) -> pd.DataFrame:
    """x ~ N(0, 1) and y_t = x_{t−m}: the target one step after a window ending at row e is
    x_{e+1−m}, inside a context of k rows iff k ≥ m."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n)
    y = np.r_[np.zeros(m), x[:-m]]
    return pd.DataFrame({"t": np.arange(n) + 1900, "x": x, "y": y})


LAG = ["--set", "y_cols=y", "--set", "x_cols=x", "--set", "time_col=t", "--set", "seq_len=8"]


def _runs(db) -> list[tuple]:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT id, config_hash, status, config FROM runs").fetchall()
    finally:
        con.close()


def test_windows_hold_the_rows_before_their_target(tmp_path):
    """A window ending at row e holds rows e−T+1 … e of the inputs and its target is row
    e + horizon, read back from the standardised values by undoing the train statistics."""
    n, T, h = 200, 5, 3
    df = pd.DataFrame({"t": np.arange(n), "a": np.arange(n) * 1.0, "b": np.arange(n) ** 2.0})
    df["y"] = np.sin(np.arange(n))
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    tab = Table(str(path), Choice(("y",), ("a", "b"), "t", None, h, T))
    (ma, sa), (mb, sb), (my, sy) = (tab.stats[c] for c in ("a", "b", "y"))
    for split in ("train", "valid", "test"):
        x = tab.windows(split, slice(None))
        raw_a = x[..., 0] * sa + ma  # the row index itself
        e = np.rint(raw_a[:, -1]).astype(int)  # each window's last row
        assert np.allclose(raw_a, e[:, None] - np.arange(T)[::-1], atol=1e-3)
        assert np.allclose(x[..., 1] * sb + mb, raw_a**2, rtol=1e-4, atol=0.5)
        y = tab.y[split][:, 0] * sy + my
        assert np.allclose(y, np.sin(e + h), atol=1e-5)
    assert len(tab.starts["train"]) + len(tab.starts["valid"]) + len(tab.starts["test"]) == (
        n - T - h + 1
    )


def test_split_by_time_and_train_statistics_only(tmp_path):
    """Every training target precedes every validation target, which precede every test one
    (60/20/20 of the windows); the statistics are those of the rows up to the last training
    target, so changing later rows leaves the training windows as they were."""
    df = _lag_frame(n=500)
    path = tmp_path / "s.csv"
    df.to_csv(path, index=False)
    choice = Choice(("y",), ("x",), "t", None, 1, 8)
    tab = Table(str(path), choice)
    r = tab.time_range
    assert r["train"][1] < r["valid"][0] and r["valid"][1] < r["test"][0]
    sizes = [len(tab.starts[s]) for s in ("train", "valid", "test")]
    assert sum(sizes) == 500 - 8 - 1 + 1 and abs(sizes[0] / sum(sizes) - 0.6) < 0.01
    last_train_time = r["train"][1]
    fit = df[df["t"] <= last_train_time]
    assert tab.stats["x"] == pytest.approx((fit["x"].mean(), fit["x"].std(ddof=0)))
    later = df.copy()
    later.loc[later["t"] > last_train_time, ["x", "y"]] *= 100.0  # a different future
    later.to_csv(tmp_path / "later.csv", index=False)
    other = Table(str(tmp_path / "later.csv"), choice)
    assert np.array_equal(other.windows("train", slice(None)), tab.windows("train", slice(None)))
    assert not np.allclose(other.windows("test", slice(None)), tab.windows("test", slice(None)))


def test_series_are_windowed_apart_and_split_on_one_clock(tmp_path):
    """Two series (one longer, starting later): no window mixes them, and the time cut is
    one for both, so no test target of one precedes a training target of the other."""
    a = pd.DataFrame({"id": "a", "t": np.arange(0, 120), "v": np.arange(0, 120) * 1.0})
    b = pd.DataFrame({"id": "b", "t": np.arange(40, 200), "v": 1000.0 + np.arange(40, 200)})
    path = tmp_path / "two.csv"
    pd.concat([b, a]).to_csv(path, index=False)  # series in any order
    tab = Table(str(path), Choice(("v",), None, "t", "id", 1, 10))
    m, s = tab.stats["v"]
    assert tab.n_series == 2
    for split in ("train", "valid", "test"):
        raw = tab.windows(split, slice(None))[..., 0] * s + m
        same = (raw >= 1000).all(axis=1) | (raw < 1000).all(axis=1)
        assert same.all()  # never a window across two series
        assert np.allclose(np.diff(raw, axis=1), 1.0, atol=1e-3)  # consecutive rows
    assert tab.time_range["train"][1] < tab.time_range["valid"][0]
    assert tab.time_range["valid"][1] < tab.time_range["test"][0]


def test_an_unsorted_table_is_sorted_by_its_time(tmp_path):
    """The documented choice: rows are sorted by time; the data, and so its hash and its
    windows, are the same whatever the file's row order."""
    df = _lag_frame(n=300)
    df.to_csv(tmp_path / "a.csv", index=False)
    df.sample(frac=1.0, random_state=3).to_csv(tmp_path / "b.csv", index=False)
    choice = Choice(("y",), ("x",), "t", None, 1, 8)
    a, b = Table(str(tmp_path / "a.csv"), choice), Table(str(tmp_path / "b.csv"), choice)
    assert a.data_hash == b.data_hash
    assert np.array_equal(a.windows("test", slice(None)), b.windows("test", slice(None)))


def test_persistence_and_mean_baselines_by_hand(tmp_path):
    """A random walk: persistence (y at the window's last row) computed here from the
    standardised series, beside the mean of the train targets; persistence is far better."""
    rng = np.random.default_rng(5)
    y = np.cumsum(rng.standard_normal(400))
    pd.DataFrame({"y": y}).to_csv(tmp_path / "walk.csv", index=False)
    T, h = 6, 2
    tab = Table(str(tmp_path / "walk.csv"), Choice(("y",), None, None, None, h, T))
    m, s = tab.stats["y"]
    z = (y - m) / s
    e = np.arange(T - 1, len(y) - h)  # each window's last row, in time order
    n_test = len(tab.starts["test"])
    e_test = e[-n_test:]
    persistence = float(np.mean((z[e_test + h] - z[e_test]) ** 2))
    n_train = len(tab.starts["train"])
    mean = float(np.mean(z[e[:n_train] + h]))
    base = tab.baselines()
    assert base["persistence"] == pytest.approx(persistence, rel=1e-5)
    assert base["mean"] == pytest.approx(float(np.mean((z[e_test + h] - mean) ** 2)), rel=1e-5)
    assert base["persistence"] < 0.2 * base["mean"]


def test_csv_and_parquet_give_the_same_runs(cli, tmp_path):
    """One data, two formats (and two names): the same config hash, the same metrics."""
    df = _lag_frame(n=400)
    df.to_csv(tmp_path / "d.csv", index=False)
    df.to_parquet(tmp_path / "d.parquet")
    out = []
    for name in ("d.csv", "d.parquet"):
        db = tmp_path / f"{name}.db"
        r = cli("--db", db, "train", "-m", "tcn", "-t", "file", "--path", tmp_path / name,
                *LAG, "--steps", "60", "-q")  # fmt: skip
        assert r.exit_code == 0, r.output
        ((run_id, h, status, conf),) = _runs(db)
        shown = json.loads(cli("--db", db, "show", run_id, "--format", "json").stdout)
        out.append((h, shown["summary.test_metric"], shown["summary.persistence"]))
        conf = json.loads(conf)
        assert status == "completed" and conf["split"] == "time" and conf["horizon"] == 1
        assert (conf["x_cols"], conf["y_cols"], conf["time_col"]) == ("x", "y", "t")
    assert out[0] == out[1]


def test_another_choice_of_the_same_file_is_another_experiment(cli, db, tmp_path):
    """The same file pools only with the same columns, horizon and T."""
    _lag_frame(n=300).to_csv(tmp_path / "d.csv", index=False)
    base = ["train", "-m", "tcn", "-t", "file", "--path", tmp_path / "d.csv", "--steps", "5",
            "-q", "--set", "y_cols=y", "--set", "time_col=t"]  # fmt: skip
    for extra in ([], ["--set", "horizon=2"], ["--set", "seq_len=16"], ["--set", "x_cols=x"]):
        r = cli(*base, *extra)
        assert r.exit_code == 0, r.output
    hashes = [h for _, h, _, _ in _runs(db)]
    assert len(set(hashes)) == 4


def test_memory_finds_k_star_m_on_a_table(cli, db, tmp_path):
    """The acceptance: a series whose target is the input m = 3 steps back gives k* = 3, and
    the answer carries the persistence forecast (far worse here: the target is not the
    series' own last value)."""
    _lag_frame(n=600, m=3).to_csv(tmp_path / "lag.csv", index=False)
    r = cli("memory", "--task", "file", "--path", tmp_path / "lag.csv", *LAG,
            "--set", "steps=600", "--set", "patience=2", "--families", "tcn", "--references", "gru",
            "--params", "3000", "--workers", "2", "--quiet", "--format", "json",
            "--lr-search", "none")  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "matches" and doc["k_star"] == 3, doc
    assert doc["k_low"] <= 3 <= doc["k_high"]
    assert doc["persistence"] > doc["baseline"]
    assert f"persistence {doc['persistence']:.4g}" in doc["sentence"]
    short = [c for c in doc["cells"] if c["k"] is not None and c["k"] < 3]
    assert short and not any(c["matches"] or c["learned"] for c in short)


def test_a_report_shows_both_baselines(cli, db, tmp_path):
    _lag_frame(n=300).to_csv(tmp_path / "d.csv", index=False)
    r = cli("train", "-m", "tcn", "-t", "file", "--path", tmp_path / "d.csv", *LAG,
            "--steps", "5", "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = json.loads(cli("report", "--format", "json").stdout)
    (row,) = rows if isinstance(rows, list) else rows["rows"]
    assert row["baseline"] > 0 and row["persistence"] > row["baseline"]


def test_a_sweep_takes_a_column_list_as_one_choice(cli, db, tmp_path):
    df = _lag_frame(n=300)
    df["z"] = 0.5 * df["x"]
    df.to_csv(tmp_path / "d.csv", index=False)
    r = cli("sweep", "--models", "tcn", "--tasks", "file", "--set", f"path={tmp_path / 'd.csv'}",
            "--set", "x_cols=x,z", "--set", "y_cols=y", "--set", "seq_len=8",
            "--set", "steps=5", "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    ((_, _, _, conf),) = _runs(db)
    assert json.loads(conf)["x_cols"] == "x,z"


def _write(df: pd.DataFrame, path, text: str | None = None):
    if text is not None:
        path.write_text(text)
    elif path.suffix == ".parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False)
    return path


def _bad_tables(d):
    good = _lag_frame(n=100)
    missing = good.copy()
    missing.loc[7, "x"] = np.nan
    text = good.astype({"x": object})
    text.loc[3, "x"] = "n/a?"
    dup = pd.concat([good, good.iloc[[10]]])
    two = pd.concat([good.assign(id="a"), good.iloc[:5].assign(id="b")])
    dates = good.assign(t=["not a date"] * len(good))
    inf = good.copy()
    inf.loc[2, "y"] = np.inf
    outlier = good.copy()
    outlier.loc[4, "x"] = 1e29
    huge = good.copy()
    huge.loc[5, "y"], huge.loc[6, "y"] = 1e308, -1e308
    constant = good.assign(y=3.0)
    zones = good.assign(t=[f"2020-03-{1 + i % 28:02d}T{i // 28:02d}:00:00" for i in range(100)])
    zones.loc[7, "t"] = "2020-03-08T00:30:00+01:00"
    (d / "environ.csv").symlink_to("/proc/self/environ")
    (d / "loop.csv").symlink_to(d / "loop2.csv")
    (d / "loop2.csv").symlink_to(d / "loop.csv")
    return [
        (_write(missing, d / "missing.csv"), LAG, "column 'x' has 1 missing value(s)"),
        (_write(text, d / "text.csv"), LAG, "column 'x' is not numeric (data row 4"),
        (_write(dup, d / "dup.csv"), LAG, "appears more than once"),
        (
            _write(two, d / "short.csv"),
            [*LAG, "--set", "series_col=id"],
            "series 'b' has 5 rows; a window of T = 8 and horizon 1 needs 9",
        ),
        (
            _write(good, d / "leak.csv"),
            [*LAG, "--set", "horizon=0", "--set", "x_cols=x,y"],
            "is also an input at lag 0",
        ),
        (
            _write(good, d / "own.csv"),
            ["--set", "y_cols=y", "--set", "horizon=0"],
            "is also an input at lag 0",
        ),
        (_write(good, d / "col.csv"), ["--set", "y_cols=price"], "no column 'price'"),
        (_write(good, d / "noy.csv"), [], "name its target column(s) with --set y_cols"),
        (_write(dates, d / "dates.csv"), LAG, "is neither numbers nor dates"),
        (_write(inf, d / "inf.csv"), LAG, "column 'y' has an infinite value"),
        (_write(good, d / "neg.csv"), [*LAG, "--set", "horizon=-1"], "horizon must be"),
        (_write(good, d / "empty.csv", ""), LAG, "the file is empty"),
        (_write(good, d / "cut.parquet", "PAR1 not really"), LAG, "cannot be read as a table"),
        (_write(good.iloc[:10], d / "few.csv"), LAG, "leave the test split empty"),
        (_write(good, d / "seed.csv"), [*LAG, "--set", "split_seed=1"], "split by time"),
        # hardening IV: sizes past 64 bits, a repeated column, extreme and constant columns,
        # dates with and without an offset, the kernel's files and a link loop
        (_write(good, d / "h64.csv"), [*LAG, "--set", "horizon=100000000000000000000"],
         "horizon 100000000000000000000 is more rows than a table holds"),
        (_write(good, d / "t64.csv"), [*LAG[:-1], "seq_len=100000000000000000000"],
         "seq_len 100000000000000000000 is more rows than a table holds"),
        (_write(good, d / "twice.csv", "t,y,y\n1,2,3\n2,3,4\n"), ["--set", "y_cols=y"],
         "column 'y' appears more than once in the header"),
        (_write(outlier, d / "outlier.csv"), LAG, "column 'x' has 1e+29 at data row 5"),
        (_write(huge, d / "huge.csv"), LAG, "column 'y' has 1e+308 at data row 6: beyond"),
        (_write(constant, d / "constant.csv"), LAG, "target column 'y' is constant"),
        (_write(zones, d / "zones.csv"), LAG, "mixes times with and without a UTC offset"),
        (d / "environ.csv", LAG, "is a system file, not data"),
        (d / "loop.csv", LAG, "a loop of symbolic links"),
    ]  # fmt: skip


def test_each_bad_table_is_one_line_and_nothing_written(cli, db, tmp_path):
    (tmp_path / "bad").mkdir()
    for path, sets, msg in _bad_tables(tmp_path / "bad"):
        r = cli("train", "-m", "tcn", "-t", "file", "--path", path, *sets, "--steps", "2", "-q")
        assert r.exit_code != 0, (path, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and msg in lines[0], (path, r.output)
        r = cli("tasks", "--path", path, *sets)
        assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1, (path, r.output)
        assert msg in r.output or "split_seed" in sets[-1], (path, r.output)
    assert not db.exists()


@pytest.mark.parametrize(
    ("times", "note"),
    [
        ([f"{1900 + i // 12}-{1 + i % 12:02d}-01" for i in range(120)], "ISO dates"),
        ([f"2021-01-01 {i // 60:02d}:{i % 60:02d}:00" for i in range(120)], "date and time"),
        ([f"2021-01-01T{i // 60:02d}:{i % 60:02d}:00Z" for i in range(120)], "UTC"),
        # a summer and a winter offset: one clock once both are in UTC
        (
            [f"2021-03-28T00:{i:02d}:00+01:00" for i in range(60)]
            + [f"2021-03-28T02:{i:02d}:00+02:00" for i in range(60)],
            "mixed offsets",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_dates_as_people_write_them_are_a_time_column(cli, db, tmp_path, times, note):
    """Text dates, as pandas 3 reads them (dtype str; 2.x said object): the table is sorted and
    split by them, and the run trains. Offsets are normalised to UTC."""
    frame = _lag_frame(n=120).assign(t=times).iloc[::-1]  # written newest first
    path = _write(frame, tmp_path / "dated.csv")
    r = cli("train", "-m", "tcn", "-t", "file", "--path", path, *LAG, "--steps", "2", "-q")
    assert r.exit_code == 0, r.output
    t = Table(str(path), choice_from({"y_cols": "y", "x_cols": "x", "time_col": "t",
                                      "seq_len": 8}, str(path)))  # fmt: skip
    when = pd.to_datetime(pd.Series(times), format="mixed", utc=note in ("UTC", "mixed offsets"))
    first, last = (when.min().as_unit("ns").value, when.max().as_unit("ns").value)
    assert t.time_range["train"][1] < t.time_range["valid"][0] <= t.time_range["test"][0]
    assert first < t.time_range["train"][0] and t.time_range["test"][1] == last


def test_tasks_takes_task_file_as_memory_does(cli, db, tmp_path):
    path = _write(_lag_frame(n=100), tmp_path / "lag.csv")
    r = cli("tasks", "--task", "file", "--path", path, *LAG)
    assert r.exit_code == 0 and "file-regression" in r.output, r.output
    r = cli("tasks", "--task", "adding", "--path", path, *LAG)
    assert r.exit_code != 0 and "--task with --path is file or file-KIND" in r.output
    r = cli("tasks", "--task", "file")
    assert r.exit_code != 0 and "give --path too" in r.output
    assert not db.exists()


def test_table_fields_elsewhere_are_refused(cli, db, tmp_path):
    np.savez(tmp_path / "a.npz", x=np.zeros((10, 4, 1), "float32"), y=np.zeros(10, "float32"))
    for args, msg in [
        (["-t", "file", "--path", tmp_path / "a.npz", "--set", "y_cols=y"], "is not one"),
        (["-t", "adding", "--set", "horizon=2"], "horizon is not read by adding"),
    ]:
        r = cli("train", "-m", "tcn", *args, "--steps", "2", "-q")
        assert r.exit_code != 0 and msg in r.output and len(r.output.strip().splitlines()) == 1
    assert not db.exists()


def test_choice_from_reads_a_config(tmp_path):
    c = choice_from({"y_cols": " y , w ", "x_cols": "a,b", "horizon": 2, "seq_len": 12}, "p")
    assert c.y_cols == ("y", "w") and c.inputs == ("a", "b") and c.fields()["y_cols"] == "y,w"
    assert choice_from({"y_cols": "y"}, "p").inputs == ("y",)


def test_what_a_user_reads_about_a_table_says_what_it_holds(cli, tmp_path):
    """Tried as a new user would: a time column ending on 1970-01-01 printed its test span as
    `1969-12-15–0` (the epoch, 0 ns, read as a number); a repeated time was "time
    np.int64(0)"; a 1 MB column name made a 1 MB error line."""
    days = pd.date_range(end="1970-01-01", periods=200, freq="D").strftime("%Y-%m-%d")
    pd.DataFrame({"day": days, "y": np.sin(np.arange(200))}).to_csv(tmp_path / "e.csv",
                                                                   index=False)  # fmt: skip
    r = cli("tasks", "--task", "file", "--path", tmp_path / "e.csv", "--set", "y_cols=y",
            "--set", "time_col=day", "--set", "seq_len=8", "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    (split,) = [row["value"] for row in json.loads(r.stdout) if row["field"] == "split"]
    assert split.endswith("test 1969-11-25–1970-01-01)"), split
    pd.DataFrame({"t": [0, 1, 1, 2] * 5, "y": np.arange(20.0)}).to_csv(tmp_path / "d.csv",
                                                                      index=False)  # fmt: skip
    r = cli("tasks", "--task", "file", "--path", tmp_path / "d.csv", "--set", "y_cols=y",
            "--set", "time_col=t", "--set", "seq_len=2")  # fmt: skip
    assert r.exit_code != 0 and "time 0 appears more than once (data row 1)" in r.output
    (tmp_path / "w.csv").write_text("a" * 1_000_000 + ",y\n1,2\n")
    r = cli("tasks", "--task", "file", "--path", tmp_path / "w.csv", "--set", "y_cols=z",
            "--set", "seq_len=2")  # fmt: skip
    assert r.exit_code != 0 and len(r.output) < 1200, len(r.output)
    assert "no column 'z'; its columns: " + "a" * 40 + "…, y" in r.output
    assert "no column 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb…;" in cli(
        "tasks", "--task", "file", "--path", tmp_path / "w.csv", "--set", "y_cols=" + "b" * 10**5,
        "--set", "seq_len=2").output  # fmt: skip
    # and any error line: its start and end, the middle left out
    r = cli("train", "--model", "rnn", "--task", "adding", "--set", "c" * 10**5 + "=1")
    assert r.exit_code == 2 and len(r.output) < 1200 and "characters left out" in r.output


def test_a_large_table_is_read_with_a_bar_and_as_one_read_gives_it(cli, tmp_path, monkeypatch):
    """Past PROGRESS_BYTES a CSV is read in chunks, each drawn on the bar: the table is the
    one a single read gives (a chunk of ints beside one of floats, a series column, a
    repeated time found across chunks), with the same content hash."""
    from seqbench.tasks import table_file

    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({
        "s": np.repeat(["a", "b", "c"], n // 3),
        "t": np.tile(np.arange(n // 3), 3),
        "y": np.r_[rng.integers(0, 9, n // 2), rng.standard_normal(n - n // 2)],  # ints, floats
    })  # fmt: skip
    frame.to_csv(tmp_path / "big.csv", index=False)
    args = ("tasks", "--task", "file", "--path", tmp_path / "big.csv", "--set", "y_cols=y",
            "--set", "time_col=t", "--set", "series_col=s", "--set", "seq_len=8",
            "--format", "json")  # fmt: skip
    whole = cli(*args)
    assert whole.exit_code == 0, whole.output
    assert "reading the table" not in whole.stderr  # 60 kB: one read, no bar

    monkeypatch.setattr(table_file, "PROGRESS_BYTES", 0)
    monkeypatch.setattr(table_file, "CHUNK_ROWS", 700)  # five chunks, ints and floats apart
    from seqbench.tasks import filedata

    filedata._OPENED.clear()
    chunked = cli(*args)
    assert chunked.exit_code == 0, chunked.output
    bar = [line for line in chunked.stderr.splitlines() if "reading the table (MiB)" in line]
    assert bar[0].startswith("reading the table (MiB): 0/1 (0%)")
    assert bar[-1].startswith("reading the table (MiB): 1/1 (100%)")
    assert json.loads(chunked.stdout) == json.loads(whole.stdout)  # the sha256 row included

    frame.loc[2500, "t"] = frame.loc[2499, "t"]  # series c repeats a time, in the last chunk
    frame.to_csv(tmp_path / "big.csv", index=False)
    r = cli(*args)
    assert r.exit_code == 1 and r.stderr.strip().endswith(
        f"time {frame.loc[2499, 't']} in series 'c' appears more than once (data row 2500); "
        "one row per time"
    ), r.stderr
