import math
import os
import signal
import subprocess
import time

import pytest
import torch

from seqbench import api
from seqbench.configure import config_hash
from seqbench.errors import RunFailedError, SeqbenchError, UsageError
from seqbench.store.opening import open_store
from seqbench.tasks.synthetic import Adding
from seqbench.training.checkpoint import load_checkpoint
from tests.conftest import seqbench_cmd

FAST = {"seq_len": 20, "steps": 30, "hidden": 16, "eval_size": 64}


def _train(store, model="rnn", task="adding", **kw):
    return api.train(model, task, db=store, **{**FAST, **kw})


def test_completed_run_is_fully_recorded(store):
    out = _train(store, "lstm", k=5)
    assert out.status == "completed"
    run = store.get_run(out.run_id)
    assert run.status == "completed" and run.kind == "train" and run.k == 5
    assert run.config["hidden"] == 16 and run.config["seq_len"] == 20
    assert run.config_hash == config_hash(out.config) and len(run.config_hash) == 64
    assert run.environment["torch"] == torch.__version__ and run.n_params > 0
    s = store.summaries(out.run_id)
    for key in (
        "test_metric",
        "test_mse",
        "best_valid_metric",
        "final_valid_metric",
        "steps",
        "throughput",
        "peak_memory_mb",
        "n_params",
        "wall_seconds",
        "baseline",
    ):
        assert key in s, key
    assert s["baseline"] == pytest.approx(1 / 6) and s["steps"] == 30
    keys = {k for k, _, _ in store.metrics(out.run_id)}
    assert {"train_loss", "grad_norm", "valid_loss", "valid_metric"} <= keys
    assert run.finished_at is not None and run.wall_seconds > 0


def test_same_config_and_seed_give_identical_history(store):
    a = _train(store, "gru", k=7, seed=3)
    b = _train(store, "gru", k=7, seed=3)
    c = _train(store, "gru", k=7, seed=4)
    assert store.metrics(a.run_id) == store.metrics(b.run_id)
    assert store.metrics(a.run_id) != store.metrics(c.run_id)
    assert config_hash(a.config) == config_hash(b.config) != config_hash(c.config)


def test_diverged_run_keeps_non_finite_values(store):
    out = _train(store, "rnn", lr=1e12, optimizer="sgd", steps=200, nonlinearity="relu")
    assert out.status == "diverged"
    run = store.get_run(out.run_id)
    assert run.status == "diverged"
    s = store.summaries(out.run_id)
    step = int(s["diverged_step"])
    last = next(v for k, st, v in store.metrics(out.run_id, "train_loss") if st == step)
    assert not math.isfinite(last) and not math.isfinite(s["final_train_loss"])


def test_failed_run_stores_the_traceback(store, monkeypatch):
    calls = {"n": 0}
    real = Adding.loss

    def flaky(self, out, y):
        calls["n"] += 1
        if calls["n"] == 5:
            raise RuntimeError("boom at step 5")
        return real(self, out, y)

    monkeypatch.setattr(Adding, "loss", flaky)
    with pytest.raises(RunFailedError, match="RuntimeError: boom at step 5"):
        _train(store)
    (run,) = store.list_runs()
    assert run.status == "failed" and "boom at step 5" in run.error
    assert "Traceback" in run.error and run.finished_at is not None
    assert [st for _, st, _ in store.metrics(run.id, "train_loss")] == [1]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_marks_the_run_interrupted_and_keeps_its_metrics(tmp_path, sig, code):
    """Ctrl-C, and SIGTERM (kill, docker stop, a job scheduler) alike."""
    db = tmp_path / "int.db"
    cmd = seqbench_cmd(
        db,
        "train --model rnn --task adding --seq-len 20 --steps 100000 --hidden 8 --set",
        "eval_every=20 --quiet",
    )
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    store = open_store(db)
    deadline = time.time() + 60
    while time.time() < deadline:
        runs = store.list_runs()
        if runs and store.metrics(runs[0].id, "valid_metric"):
            break
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    (run,) = store.list_runs()
    assert run.status == "interrupted" and run.finished_at is not None
    assert store.metrics(run.id, "valid_metric")
    store.dispose()


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"lr": 0}, "lr must be positive"),
        ({"lr": -1e-3}, "lr must be positive"),
        ({"steps": 0}, "steps must be positive"),
        ({"batch_size": 0}, "batch_size must be positive"),
        ({"clip": 0}, "clip must be positive"),
        ({"optimizer": "lbfgs"}, "optimizer must be one of"),
        ({"device": "tpu"}, "device must be one of"),
        ({"nosuch": 1}, "unknown config field 'nosuch'"),
        ({"k": 0}, "k must be positive"),
        ({"seq_len": 0}, "seq_len must be positive"),
        ({"hidden": -4}, "hidden must be positive"),
        ({"lr": math.inf}, "lr must be a finite number"),
        ({"weight_decay": math.nan}, "weight_decay must be a finite number"),
        ({"weight_decay": -0.1}, "weight_decay must be ≥ 0"),
        ({"eval_batch_size": 0}, "eval_batch_size must be positive"),
        ({"model": "transformer", "heads": 0}, "heads must be positive"),
        ({"seed": -1}, "seed must be in"),
        ({"lr": [1, 2]}, "lr must be a number, got list"),
        ({"steps": 2.5}, "steps must be an integer or none, got float"),
        ({"stable": "yes please"}, "stable must be true or false"),
        ({"hidden": "wide"}, "hidden must be an integer, got 'wide'"),
        ({"hidden": 10**6}, r"needs about .* GiB .* available"),
        ({"eval_size": 10**9}, r"needs about .* GiB .* available"),
        ({"layers": 10**12}, "layers must be at most 1000"),
        ({"model": "tcn", "levels": 64}, "levels must be at most 40"),
    ],
)
def test_bad_config_fails_before_any_run_is_written(store, kw, msg):
    with pytest.raises(SeqbenchError, match=msg):
        _train(store, **kw)
    assert store.list_runs() == []


def test_a_config_file_naming_model_and_task(cli, tmp_path):
    """A TOML config with model/task keys works like the flags when it agrees, else one line."""
    good = tmp_path / "good.toml"
    good.write_text('model = "rnn"\ntask = "adding"\nsteps = 2\nseq_len = 10\neval_size = 8\n')
    r = cli("train", "--model", "rnn", "--task", "adding", "--config", good, "-q")
    assert r.exit_code == 0, r.output
    bad = tmp_path / "bad.toml"
    bad.write_text('task = "copy"\n')
    r = cli("train", "--model", "rnn", "--task", "adding", "--config", bad, "-q")
    assert r.exit_code == 2 and "config file says task = 'copy'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_a_gpu_is_refused(store):
    with pytest.raises(UsageError, match="no CUDA GPU"):
        _train(store, device="cuda")
    assert store.list_runs() == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_unavailable_backend_is_refused_before_the_run(store, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(UsageError, match="backend 'triton' is unavailable"):
        _train(store, "indrnn", backend="triton")
    with pytest.raises(UsageError, match="backend must be one of"):
        _train(store, "indrnn", backend="fast")
    assert store.list_runs() == []


@pytest.mark.parametrize("backend", ["torch", "cpu", "numba"])
def test_indrnn_backends_train_identically(store, backend):
    out = _train(store, "indrnn", backend=backend, seed=1)
    ref = _train(store, "indrnn", backend="torch", seed=1)
    a = [v for _, _, v in store.metrics(out.run_id, "valid_metric")]
    b = [v for _, _, v in store.metrics(ref.run_id, "valid_metric")]
    assert a == pytest.approx(b, rel=1e-4)


def test_k_for_a_model_that_cannot_use_it(store):
    with pytest.raises(UsageError, match="not both"):
        _train(store, "tcn", k=10, levels=2)
    assert store.list_runs() == []


def test_epochs_need_a_fixed_training_set(store):
    with pytest.raises(UsageError, match="use `steps`"):
        _train(store, steps=None, epochs=1)
    out = _train(
        store, "tcn", "digits", steps=None, epochs=1, batch_size=256, eval_size=100, seq_len=None
    )
    assert out.summaries["steps"] == math.ceil(1078 / 256)


@pytest.mark.parametrize(("model", "lam"), [("rnn", 0.5), ("lstm", 0.8), ("indrnn", 0.9)])
def test_stable_projection_bounds_the_recurrence(store, model, lam):
    out = _train(store, model, stable=True, lam=lam, lr=0.05)
    bounds = [v for _, _, v in store.metrics(out.run_id, "stability_bound")]
    assert bounds and max(bounds) <= lam + 1e-6
    assert out.summaries["stability_bound"] <= lam + 1e-6


def test_unstable_rnn_is_free_to_exceed_the_bound(store):
    out = _train(store, "rnn", lr=0.05, hidden=32)
    assert out.summaries["stability_bound"] > 0.5


def test_stable_is_refused_for_models_without_a_condition(store):
    with pytest.raises(UsageError, match="`stable` is defined for"):
        _train(store, "gru", stable=True)
    with pytest.raises(UsageError, match="window model needs a base"):
        _train(store, "window", stable=True, base="gru", k=4)
    assert store.list_runs() == []
    out = _train(store, "window", stable=True, base="rnn", k=4, lam=0.5, lr=0.05)
    assert out.status == "completed" and out.summaries["stability_bound"] <= 0.5 + 1e-6


def test_checkpoint_saved_and_loaded_weights_only(store, tmp_path):
    out = _train(store, "indrnn", save_checkpoint=True)
    run = store.get_run(out.run_id)
    assert run.checkpoint and os.path.exists(run.checkpoint)
    ck = load_checkpoint(run.checkpoint)
    assert ck["config"]["model"] == "indrnn" and "backbone.layers.0.u" in ck["state_dict"]


def test_parameter_budget(store):
    out = _train(store, "lstm", hidden=None, params=20_000)
    assert abs(out.summaries["n_params"] - 20_000) <= 1000
    assert out.config.hidden == store.get_run(out.run_id).config["hidden"]


def test_config_file_and_overrides(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('hidden = 24\nlr = 0.01\nseq_len = 30\n[tags]\nowner = "me"\n')
    cfg = api.make_config("gru", "adding", {"lr": 0.02}, str(f))
    assert (cfg.hidden, cfg.lr, cfg.seq_len, cfg.tags) == (24, 0.02, 30, {"owner": "me"})
    assert config_hash(cfg) == config_hash(api.make_config("gru", "adding", {"lr": 0.02}, str(f)))


@pytest.mark.parametrize(
    ("text", "msg"),
    [("hidden = [", "does not parse"), ("bogus = 1", "unknown config field 'bogus'")],
)
def test_bad_config_file(tmp_path, text, msg):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(SeqbenchError, match=msg):
        api.make_config("gru", "adding", {}, str(f))


def test_fixed_length_tasks_refuse_another_length(store):
    with pytest.raises(UsageError, match="fixed length of 64"):
        _train(store, "tcn", "digits", seq_len=100)
    assert api.make_config("tcn", "digits", {}).seq_len == 64


def test_paper_defaults_apply_per_pair():
    # the IndRNN authors' adding script: 2x128, Adam 2e-4, batch 32, an element-wise clip at
    # 10 and no norm clip, lr /10 after every 20,100 steps; the task's markers stay the task's
    cfg = api.make_config("indrnn", "adding", {})
    assert (cfg.layers, cfg.hidden, cfg.lr, cfg.batch_size) == (2, 128, 2e-4, 32)
    assert (cfg.clip, cfg.clip_value, cfg.lr_decay_every, cfg.lr_decay) == (None, 10.0, 20100, 0.1)
    assert cfg.marker == api.make_config("lstm", "adding", {}).marker == "uniform"
    cfg = api.make_config("tcn", "copy", {})
    assert (cfg.optimizer, cfg.kernel_size, cfg.hidden) == ("rmsprop", 8, 10)


def test_an_explicit_context_overrides_a_default_depth():
    # the chorales TCN defaults to 4 levels; asking for a context k sizes the depth instead
    assert api.make_config("tcn", "chorales", {}).levels == 4
    cfg = api.make_config("tcn", "chorales", {"k": 16})
    assert (cfg.k, cfg.levels) == (16, None)
    with pytest.raises(UsageError, match="not both"):
        api.make_config("tcn", "chorales", {"k": 16, "levels": 3})


def test_seqbench_train_can_be_called_again(tmp_path):
    """The README's API example in a loop: the function stays the package's `train` after the
    first call has imported the training code (its package used to shadow the name)."""
    import seqbench

    db = str(tmp_path / "api.db")
    outs = [
        seqbench.train("rnn", "adding", seq_len=10, steps=2, eval_size=8, db=db, seed=s)
        for s in (0, 1)
    ]
    assert [o.status for o in outs] == ["completed", "completed"]
    assert callable(seqbench.train)


def test_a_run_that_ends_far_worse_than_its_baseline_is_diverged(store):
    """lr 50 without clipping: training stays finite but the model ends thousands of times
    worse than predicting the mean; recorded as diverged with the reason, summaries kept."""
    out = _train(store, "rnn", lr=50.0, clip=None, steps=5, seed=0)
    assert out.status == "diverged"
    run = store.get_run(out.run_id)
    assert run.status == "diverged" and "trivial baseline" in run.error
    s = store.summaries(out.run_id)
    assert s["test_metric"] > 1000 * s["baseline"]


def test_blown_up():
    from seqbench.training.loop import blown_up

    assert "inf" in blown_up(math.inf, 0.1, False)
    assert "nan" in blown_up(math.nan, None, True)
    assert blown_up(2.3, 0.02, False) is None  # an untrained copy model: ~110×, a result
    assert blown_up(1638.0, 1 / 6, False) is not None
    assert blown_up(0.05, 0.1, True) is None  # accuracy: no "far worse" rule


def test_lr_decay_every_divides_the_step_after_every_n_steps(store):
    """lr_decay_every = 2: the third SGD step is a tenth of the same step undecayed, and the
    first two are untouched. Measured on the weights: with one seed every run sees the same
    batches, so after step 2 the runs agree and step 3 moves lr·b (momentum buffer b) or
    lr/10·b from the same point."""

    def weights(steps, every=None):
        kw = {**FAST, "steps": steps, "optimizer": "sgd", "lr": 0.05, "lr_decay_every": every}
        out = _train(store, **kw, eval_every=steps, save_checkpoint=True)
        return load_checkpoint(store.get_run(out.run_id).checkpoint)["state_dict"]

    two, two_decayed = weights(2), weights(2, every=2)
    full, decayed = weights(3), weights(3, every=2)
    for name, w in two.items():
        assert torch.equal(two_decayed[name], w)  # no decay within the first 2 steps
        step, step_decayed = full[name] - w, decayed[name] - w
        assert float(step.abs().max()) > 0
        torch.testing.assert_close(step_decayed, 0.1 * step, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("clip_value", [None, 1e-3])
def test_clip_value_bounds_every_gradient_element(store, tmp_path, clip_value):
    """clip_value clamps each gradient element: one SGD step (momentum buffer = the gradient
    on the first step) then moves no weight by more than lr·clip_value."""
    from seqbench.configure import make_config
    from seqbench.training.setup import prepare

    kw = {**FAST, "steps": 1, "optimizer": "sgd", "lr": 1.0, "clip_value": clip_value}
    _, _, before, _ = prepare(make_config("rnn", "adding", kw))
    out = _train(store, **{**kw, "save_checkpoint": True}, eval_every=1)
    after = load_checkpoint(store.get_run(out.run_id).checkpoint)["state_dict"]
    moved = max(float((after[n] - p.detach()).abs().max()) for n, p in before.state_dict().items())
    if clip_value is None:
        assert moved > 1e-2  # unclipped, some gradient element is far larger
    else:
        assert 0 < moved <= 1.0 * clip_value * (1 + 1e-5)


def test_a_budget_on_a_task_that_loads_its_data_on_first_use(cli):
    """`--params` sizes the model on the meta device; ptb-char loads its text on first use, and
    did so there, leaving data tensors without data ("Cannot copy out of meta tensor")."""
    r = cli("train", "--model", "tcn", "--task", "ptb-char", "--k", "4", "--params", "10000",
            "--set", "seq_len=20", "--set", "steps=2", "--set", "eval_size=8", "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "completed" in r.output


@pytest.mark.parametrize("params", [5000, None])
def test_a_run_builds_its_network_once(tmp_path, monkeypatch, params):
    """A run builds its network for real once, and counts it on the meta device (nothing
    allocated) at most once per width: fit_size's search and the memory check share their
    counts. A spy around models.build_model records where each build was made."""
    import seqbench.models as models
    import seqbench.training.setup as setup
    from seqbench import api

    calls, real = [], models.build_model

    def spy(name, task, args):
        m = real(name, task, args)
        calls.append((args.hidden, next(m.parameters()).device.type))
        return m

    monkeypatch.setattr(models, "build_model", spy)
    monkeypatch.setattr(setup, "build_model", spy)
    models._COUNTS.clear()
    extra = {"params": params} if params else {}
    out = api.train("tcn", "adding", seq_len=20, steps=2, eval_size=16, db=str(tmp_path / "a.db"),
                    **extra)  # fmt: skip
    assert out.status == "completed"
    for_real = [c for c in calls if c[1] != "meta"]
    on_meta = [c for c in calls if c[1] == "meta"]
    assert len(for_real) == 1 and for_real[0][0] == out.config.hidden
    assert len(on_meta) == len(set(on_meta)) >= 1  # no width counted twice
    if params is None:
        assert len(on_meta) == 1


def test_a_state_too_large_is_refused_before_it_is_allocated(tmp_path):
    """d_state sizes the LRU's state and weights: a million modes asked 84 GiB and was killed by
    the kernel at 22 GB after 115 s. Now train and stress refuse it with the estimate, in a
    process held to 6 GB of address space (an allocation of the state would fail there with a
    MemoryError, not this line); a family with no diagonal state refuses the field. train
    refuses from the config's activations alone (configure.check_fits), before it opens a
    store or imports torch: 0.3 s where the full check took 5 s."""
    import resource
    import subprocess
    import sys

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))

    db = str(tmp_path / "s.db")
    cases = [
        (["train", "--model", "lru", "--task", "adding", "--seq-len", "20", "--steps", "5",
          "--set", "d_state=1000000"], "lower hidden, layers, d_state"),
        (["stress", "--models", "lru", "--seq-len", "50", "--set", "d_state=1000000"],
         "--set d_state"),
        (["train", "--model", "linear-attention", "--task", "adding", "--set", "d_state=5"],
         "d_state is not read by linear-attention"),
    ]  # fmt: skip
    for args, said in cases:
        out = subprocess.run(
            [sys.executable, "-m", "seqbench", "--db", db, *args],
            capture_output=True, text=True, timeout=120, preexec_fn=limited,
        )  # fmt: skip
        assert out.returncode != 0, out.stdout[-500:]
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], out.stderr[-1000:]
        assert "needs about" in lines[0] or "is not read by" in lines[0]  # not a MemoryError
        if args[0] == "train" and args[2] == "lru":  # from the config alone: no store, no torch
            assert not (tmp_path / "s.db").exists()
    if (tmp_path / "s.db").exists():  # the store may be opened first: no run in it
        import sqlite3

        con = sqlite3.connect(tmp_path / "s.db")
        assert con.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)
        con.close()
