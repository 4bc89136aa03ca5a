import json

import pytest

from seqbench.store.opening import open_store

FAST = ["--seq-len", "20", "--steps", "20", "--hidden", "8", "--set", "eval_size=32", "--quiet"]


def test_train_prints_one_summary_line_and_saves_the_run(cli, tmp_path):
    result = cli("train", "--model", "gru", "--task", "adding", "--tag", "owner=me", *FAST)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("run 1 completed: test mse ")
    assert "(baseline 0.1667)" in result.stdout
    data = json.loads(cli("runs", "--format", "json").stdout)
    assert data[0]["model"] == "gru" and data[0]["status"] == "completed"
    shown = json.loads(cli("show", "1", "--format", "json").stdout)
    assert shown["tags"] == {"owner": "me"} and shown["config.steps"] == 20


def test_progress_bar_goes_to_stderr(cli):
    args = [a for a in FAST if a != "--quiet"]
    result = cli("train", "-m", "rnn", "-t", "adding", *args)
    assert result.exit_code == 0
    assert "train" in result.stderr and "run 1 completed" in result.stdout


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--lr", "0"], "lr must be positive"),
        (["--steps", "-5"], "steps must be positive"),
        (["--batch-size", "0"], "batch_size must be positive"),
        (["--clip", "-1"], "clip must be positive"),
        (["--set", "bogus=1"], "unknown config field 'bogus'"),
        (["--set", "hidden"], "--set expects key=value"),
        (["--config", "missing.toml"], "config file 'missing.toml' not found"),
        (["--model", "lstn"], "Did you mean 'lstm'?"),
    ],
)
def test_bad_input_is_one_line_and_leaves_no_run(cli, tmp_path, args, msg):
    base = ["train", "--model", "rnn", "--task", "adding", *FAST]
    if "--model" in args:
        base = ["train", "--task", "adding", *FAST]
    result = cli(*base, *args)
    assert result.exit_code in (1, 2), result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and msg in lines[0]
    store = open_store(tmp_path / "seqbench.db")
    assert store.list_runs() == []


def test_device_cuda_without_gpu(cli):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = cli("train", "-m", "rnn", "-t", "adding", *FAST, "--device", "cuda")
    assert result.exit_code == 2 and "no CUDA GPU" in result.stderr


def test_diverged_run_exits_non_zero(cli):
    result = cli(
        "train",
        "-m",
        "rnn",
        "-t",
        "adding",
        *FAST,
        "--lr",
        "1e12",
        "--optimizer",
        "sgd",
        "--set",
        "nonlinearity=relu",
        "--steps",
        "200",
    )
    assert result.exit_code == 1 and "diverged at step" in result.stderr
    data = json.loads(cli("runs", "--format", "json").stdout)
    assert data[0]["status"] == "diverged"


@pytest.mark.parametrize("fmt", ["csv", "json", "markdown", "table"])
def test_models_and_tasks_listings(cli, fmt):
    models = cli("models", "--format", fmt)
    tasks = cli("tasks", "--format", fmt)
    assert models.exit_code == 0 and tasks.exit_code == 0
    for name in ("rnn", "lstm", "gru", "indrnn", "tcn", "gcnn", "window", "transformer"):
        assert name in models.stdout
    for name in ("adding", "copy", "digits", "chorales", "ptb-char", "teacher"):
        assert name in tasks.stdout
    if fmt == "json":
        rows = {r["model"]: r for r in json.loads(models.stdout)}
        assert rows["rnn"]["params"] == 128 * 2 + 128 * 128 + 2 * 128 + 128 + 1


def test_text_task_path_option(cli, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the quick brown fox " * 100)
    ok = cli(
        "train",
        "-m",
        "gru",
        "-t",
        "text",
        "--path",
        corpus,
        "--seq-len",
        "16",
        "--steps",
        "5",
        "--hidden",
        "8",
        "--quiet",
    )
    assert ok.exit_code == 0, ok.output and "test bpc" in ok.stdout
    for bad, msg in ((tmp_path / "none.txt", "no such file"), (tmp_path, "is not a file")):
        r = cli("train", "-m", "gru", "-t", "text", "--path", bad, "--steps", "5", "--quiet")
        assert r.exit_code == 1 and msg in r.stderr
    (tmp_path / "empty.txt").write_text("")
    r = cli("train", "-m", "gru", "-t", "text", "--path", tmp_path / "empty.txt", "--quiet")
    assert r.exit_code == 1 and "is empty" in r.stderr


def test_dry_run_prints_a_config_that_train_config_reads_back(cli, tmp_path, db):
    args = ["-m", "tcn", "-t", "copy", "--tag", "owner=me", "--set", "init=paper", *FAST]
    first = cli("train", *args, "--dry-run")
    assert first.exit_code == 0, first.output
    assert 'init = "paper"' in first.stdout and "levels = 8" in first.stdout
    assert '[tags]\n"owner" = "me"' in first.stdout and 'symbols = "float"' in first.stdout
    assert not db.exists()  # nothing trained, no store
    path = tmp_path / "cfg.toml"
    path.write_text(first.stdout)
    again = cli("train", "-m", "tcn", "-t", "copy", "--config", path, "--dry-run")
    assert again.exit_code == 0 and again.stdout == first.stdout


def test_from_run_reruns_a_stored_config_with_changes(cli):
    assert cli("train", "-m", "rnn", "-t", "adding", "--set", "lr=0.003", *FAST).exit_code == 0
    shown = cli("train", "--from-run", "1", "--set", "seed=7", "--dry-run")
    assert shown.exit_code == 0, shown.output
    assert "lr = 0.003" in shown.stdout and "seed = 7" in shown.stdout
    assert "hidden = 8" in shown.stdout and "steps = 20" in shown.stdout
    same = cli("train", "--from-run", "1", "--quiet")
    assert same.exit_code == 0 and same.stdout.startswith("run 2 completed")
    runs = {r["id"]: r for r in json.loads(cli("runs", "--format", "json").stdout)}
    first, second = (json.loads(cli("show", str(i), "-f", "json").stdout) for i in (1, 2))
    assert runs[1]["test_metric"] == runs[2]["test_metric"]  # the same config, seed, data
    assert first["config_hash"] == second["config_hash"]


def test_from_run_is_an_api_function_too(cli, db):
    """A script reruns a stored config as the CLI does: api.train(from_run=...), with
    changes, and api.train_config_from gives the config without training."""
    from seqbench import api

    assert cli("train", "-m", "rnn", "-t", "adding", "--set", "lr=0.003", *FAST).exit_code == 0
    out = api.train(from_run="1", db=str(db), seed=7)
    assert out.status == "completed" and (out.config.lr, out.config.seed) == (0.003, 7)
    store = api.open_store(str(db), "read")
    try:
        cfg = api.train_config_from(from_run="1", store=store, overrides={"seed": 7})
    finally:
        store.dispose()
    assert cfg == out.config
    shown = cli("train", "--from-run", "1", "--set", "seed=7", "--dry-run").stdout
    assert shown == api.config_toml(cfg)


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--from-run", "99"], "no run '99'"),
        (["--from-run", "1", "-m", "lstm"], "--from-run trained model 'rnn', not 'lstm'"),
        (["--steps", "3"], "give --model and --task (or --from-run RUN)"),
    ],
)
def test_from_run_bad_input(cli, args, msg):
    assert cli("train", "-m", "rnn", "-t", "adding", *FAST).exit_code == 0
    r = cli("train", *args)
    assert r.exit_code != 0 and msg in r.stderr, r.output
    assert len(r.stderr.strip().splitlines()) == 1


def test_on_a_non_terminal_progress_is_plain_lines(cli, monkeypatch):
    """CliRunner's stderr is no terminal, like CI, `| tee` or nohup: plain lines, the run id
    first, the final state last; -q prints none of them."""
    monkeypatch.setenv("SEQBENCH_PROGRESS_EVERY", "0")
    args = [a for a in FAST if a != "--quiet"]
    r = cli("train", "-m", "rnn", "-t", "adding", *args)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 0 and lines[0] == "run 1 started: rnn on adding, T=20, 20 steps"
    assert lines[-1].startswith("train: 20/20 (100%) loss ") and "\x1b" not in r.stderr
    assert len(lines) > 3  # one per step at interval 0
    quiet = cli("train", "-m", "rnn", "-t", "adding", *FAST)
    assert quiet.stderr == ""


def test_stress_has_progress_and_quiet(cli, monkeypatch):
    monkeypatch.setenv("SEQBENCH_PROGRESS_EVERY", "0")
    r = cli("stress", "--models", "rnn,lstm", "--seq-len", "50", "--hidden", "8")
    assert r.exit_code == 0 and "stress: 2/2 (100%) last lstm seed 0" in r.stderr
    q = cli("stress", "--models", "rnn", "--seq-len", "50", "--hidden", "8", "-q")
    assert q.exit_code == 0 and q.stderr == ""


def test_train_help_lists_every_default_layer(cli):
    """--help shows where each default comes from: family, task and (model, task) pair, with
    the values resolution uses (the same tables config.resolve reads)."""
    from seqbench.configure import make_config
    from seqbench.models import MODELS

    out = cli("train", "--help").stdout
    flat = " ".join(out.replace("│", " ").split())
    assert "each field's own < the model family's < the task's < the papers'" in flat
    assert "tcn/copy hidden=10 kernel_size=8 levels=8 optimizer=rmsprop lr=0.0005;" in flat
    assert "copy steps=2000 symbols=float" in flat
    assert "chorales steps=1000 batch_size=16 lr=0.01" in flat
    pairs = [(m, t) for m in MODELS for t in MODELS.get(m).task_defaults]
    assert len(pairs) == 18
    for model, task in pairs:
        assert f"{model}/{task} " in flat, (model, task)
    cfg = make_config("tcn", "copy")  # and the help tells the truth about the resolved config
    assert (cfg.hidden, cfg.levels, cfg.optimizer, cfg.lr) == (10, 8, "rmsprop", 0.0005)


def test_a_budget_no_width_reaches_leaves_no_store(cli, db):
    """The width is fitted once the task is made, before the store is opened: a budget no
    width reaches is refused in one line and no store file is left behind."""
    r = cli("train", "-m", "tcn", "-t", "adding", "--params", "10", "--steps", "5", "-q")
    assert r.exit_code == 2 and "no width gives 10 parameters" in r.stderr
    assert not db.exists()
    assert cli("train", "-m", "tcn", "-t", "adding", *FAST).exit_code == 0
    assert db.exists()
