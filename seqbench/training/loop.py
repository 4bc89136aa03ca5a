"""One model-agnostic training loop; everything that varies comes in through the config, the
model (TBPTT for recurrent backbones) and small callbacks (progress display).

Outcomes, all recorded in the store:
- completed: summaries written, test metric taken at the best valid checkpoint;
- diverged: the loss became nan/inf; the step is stored as `diverged_step`;
- failed: an exception; its traceback goes to `runs.error` and RunFailedError is raised;
- interrupted: Ctrl-C; what was logged so far is kept and KeyboardInterrupt propagates.
"""

from __future__ import annotations

import copy
import math
import resource
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from seqbench import environment
from seqbench.config import RunConfig
from seqbench.errors import RunFailedError, UsageError
from seqbench.models import build_model, fit_hidden
from seqbench.models.base import MODEL_ARG_NAMES, ModelArgs, count_params
from seqbench.store.schema import utcnow
from seqbench.store.store import Store
from seqbench.tasks import make_task
from seqbench.tasks.base import TaskArgs, generator, to_device
from seqbench.training import stability

LOG_EVERY = 10  # train_loss / grad_norm are logged every this many steps
# A lower-is-better test metric this many times the task's trivial baseline is a blow-up, not a
# result (an lr of 50 on adding ends at MSE 1638 against 0.167). An untrained model stays far
# below it: cross-entropy ln 10 against the copy task's baseline at T = 1000 is ~110×.
FAR_WORSE = 1000.0


def blown_up(metric: float, baseline: float | None, higher_is_better: bool) -> str | None:
    """Why a finished run's test metric is not a result (then the run is `diverged`), else
    None: it is not finite, or (lower is better) FAR_WORSE times the trivial baseline."""
    if not math.isfinite(metric):
        return f"the test metric is {metric}"
    if not higher_is_better and baseline and baseline > 0 and metric > FAR_WORSE * baseline:
        return (
            f"the test metric {metric:.4g} is more than {FAR_WORSE:g}× the trivial "
            f"baseline {baseline:.4g}"
        )
    return None


@dataclass
class Progress:
    """Callbacks the loop calls; the CLI passes one that draws a rich progress bar."""

    on_start: Callable[[int], None] = lambda total: None
    on_step: Callable[[int, float], None] = lambda step, loss: None
    on_eval: Callable[[int, dict[str, float]], None] = lambda step, ev: None
    on_end: Callable[[], None] = lambda: None


@dataclass
class TrainOutcome:
    run_id: int
    status: str
    summaries: dict[str, float] = field(default_factory=dict)
    config: RunConfig | None = None
    error: str | None = None  # why it failed or diverged, as stored in runs.error


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA GPU is available here (use --device cpu)")
    return torch.device(name)


def task_args(cfg: RunConfig) -> TaskArgs:
    return TaskArgs(
        seq_len=cfg.seq_len,
        seed=cfg.seed,
        marker=cfg.marker,
        subset=cfg.subset,
        path=cfg.path,
        lam=cfg.teacher_lam,
        eval_size=cfg.eval_size,
    )


def model_args(cfg: RunConfig, seq_len: int) -> ModelArgs:
    """The model's hyperparameters: every ModelArgs field is a RunConfig field of that name."""
    fields = {n: getattr(cfg, n) for n in MODEL_ARG_NAMES if n != "seq_len"}
    return ModelArgs(seq_len=seq_len, **fields)


def preflight(cfg: RunConfig) -> None:
    """What prepare() checks, without building the model: device, backend, task arguments and
    memory. A sweep runs it on every point before it writes a row."""
    device = resolve_device(cfg.device)
    if cfg.model == "indrnn" or (cfg.model == "window" and cfg.base == "indrnn"):
        from seqbench.ops.indrnn import resolve_backend

        resolve_backend(cfg.backend, device)
    task = make_task(cfg.task, task_args(cfg))
    if cfg.params is None:
        check_memory(replace(cfg, seq_len=task.seq_len), task)


def prepare(cfg: RunConfig):
    """Build task and model from a config (validating everything a user can get wrong), and
    return the config with the derived values filled in: T, the fitted width, the steps."""
    device = resolve_device(cfg.device)
    if cfg.model == "indrnn" or (cfg.model == "window" and cfg.base == "indrnn"):
        from seqbench.ops.indrnn import resolve_backend

        resolve_backend(cfg.backend, device)  # an unavailable backend fails before the run
    task = make_task(cfg.task, task_args(cfg))
    cfg = replace(cfg, seq_len=task.seq_len)
    if cfg.params is not None:
        cfg = replace(
            cfg, hidden=fit_hidden(cfg.model, task, model_args(cfg, task.seq_len), cfg.params)
        )
    if cfg.epochs is not None:
        n_train = getattr(task, "n_train", None)
        if n_train is None:
            raise UsageError(
                f"--epochs needs a task with a fixed training set; {cfg.task} draws "
                "fresh data every batch: use --steps"
            )
        cfg = replace(cfg, steps=cfg.epochs * math.ceil(n_train / cfg.batch_size))
    check_memory(cfg, task)
    torch.manual_seed(cfg.seed)
    model = build_model(cfg.model, task, model_args(cfg, task.seq_len)).to(device)
    return cfg, task, model, device


def check_memory(cfg: RunConfig, task) -> None:
    """Refuse, before anything is allocated, a config that cannot fit in memory: parameters
    with their gradients and Adam moments (counted on the meta device, which allocates
    nothing), the activations of one batch, and the fixed evaluation sets."""
    from seqbench.environment import available_memory
    from seqbench.stress.analysis import activation_bytes

    # what build_model reads from the task, computed on the real device first: a task that
    # loads data lazily (a text file's vocabulary) must not cache meta tensors
    _ = (task.vocab, task.in_dim, task.out_dim, task.readout)
    try:
        with torch.device("meta"):
            n = count_params(build_model(cfg.model, task, model_args(cfg, task.seq_len)))
    except (NotImplementedError, RuntimeError):  # an init the meta device lacks: no estimate
        return
    hidden, layers = cfg.hidden or 128, cfg.layers or 1
    need = 16 * n + activation_bytes(cfg.model, cfg.batch_size, cfg.seq_len, hidden,
                                     task.in_dim, layers, 4)  # fmt: skip
    if getattr(task, "synthetic", False):
        need += 2 * cfg.eval_size * cfg.seq_len * (task.in_dim + task.out_dim) * 4
    have = available_memory()
    if need > 0.8 * have:
        raise UsageError(
            f"{cfg.model} on {cfg.task} needs about {need / 2**30:.1f} GiB ({n:,} parameters, "
            f"batch {cfg.batch_size} × T={cfg.seq_len}) but {have / 2**30:.1f} GiB is "
            "available: lower hidden, layers, batch_size, seq_len or eval_size"
        )


def make_optimizer(cfg: RunConfig, params) -> torch.optim.Optimizer:
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.SGD(params, lr=cfg.lr, momentum=0.9, weight_decay=cfg.weight_decay)


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def train(
    cfg: RunConfig,
    store: Store,
    *,
    progress: Progress | None = None,
    sweep_id: int | None = None,
    checkpoint_dir: str | Path = "checkpoints",
) -> TrainOutcome:
    """Train one run end to end and record it in `store` (a Store, or anything with its
    create_run / log_metrics / heartbeat / set_summaries / update_run, such as the sweep
    workers' in-memory recorder). Bad configs raise before any row is written; once the run
    row exists, every outcome is recorded on it.

    The run's config_hash is the hash of `cfg` as given (resolved, before the values derived
    while building: a fitted width, steps from epochs), so the same command always dedupes."""
    progress = progress or Progress()
    config_hash = cfg.config_hash()
    cfg, task, model, device = prepare(cfg)
    n_params = count_params(model)
    run = store.create_run(
        kind="train",
        status="running",
        model=cfg.model,
        task=cfg.task,
        k=cfg.k,
        seq_len=cfg.seq_len,
        seed=cfg.seed,
        config=cfg.to_dict(),
        config_hash=config_hash,
        sweep_id=sweep_id,
        environment=environment.capture(str(device)),
        tags=cfg.tags or None,
        n_params=n_params,
        started_at=utcnow(),
        heartbeat_at=utcnow(),
    )
    buffer: list[tuple[str, int, float]] = []
    t0 = time.perf_counter()

    def finish(status: str, summaries: dict[str, float], error: str | None = None):
        store.log_metrics(run.id, buffer)
        buffer.clear()
        wall = time.perf_counter() - t0
        summaries = {**summaries, "wall_seconds": wall}
        store.set_summaries(run.id, summaries)
        store.update_run(
            run.id, status=status, finished_at=utcnow(), wall_seconds=wall, error=error
        )
        if hasattr(store, "ensure_present"):  # a Store (not a sweep worker's memory recorder)
            store.ensure_present()
        return TrainOutcome(run.id, status, summaries, cfg, error)

    try:
        return _loop(
            cfg, task, model, device, store, run.id, buffer, progress, finish, checkpoint_dir
        )
    except KeyboardInterrupt:
        finish("interrupted", {})
        raise
    except Exception as e:
        finish("failed", {}, traceback.format_exc())
        raise RunFailedError(f"run {run.id} failed: {type(e).__name__}: {e}") from e
    finally:
        progress.on_end()


def _loop(cfg, task, model, device, store, run_id, buffer, progress, finish, checkpoint_dir):
    opt = make_optimizer(cfg, model.parameters())
    sched = (
        torch.optim.lr_scheduler.StepLR(opt, cfg.lr_decay_every, gamma=cfg.lr_decay)
        if cfg.lr_decay_every
        else None
    )
    gen = generator(cfg.seed, 3)
    steps = cfg.steps
    eval_every = cfg.eval_every or max(steps // 10, 1)
    tbptt = cfg.k if model.recurrent else None
    higher = task.higher_is_better
    best = {"metric": None, "state": None, "step": 0}
    last_valid = math.nan
    train_time = 0.0

    def evaluate(split):
        model.eval()
        ev = task.evaluate(lambda x: model(x.to(device)), split, cfg.eval_batch_size)
        model.train()
        return ev

    progress.on_start(steps)
    model.train()
    loss_v = math.nan
    for step in range(1, steps + 1):
        t_step = time.perf_counter()
        x, y = task.train_batch(cfg.batch_size, gen)
        x, y = x.to(device), to_device(y, device)
        out = model(x, tbptt=tbptt)
        loss = task.loss(out, y)
        loss_v = float(loss.detach())
        if not math.isfinite(loss_v):
            buffer.append(("train_loss", step, loss_v))
            return finish(
                "diverged", {"diverged_step": step, "final_train_loss": loss_v, "steps": step}
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        log_now = step % LOG_EVERY == 0 or step == 1
        if cfg.clip or log_now:  # the norm costs a pass over every gradient: only when used
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip or math.inf)
        opt.step()
        if sched:
            sched.step()
        model.constrain_()
        if cfg.stable:
            stability.project_(model, cfg.lam)
        train_time += time.perf_counter() - t_step
        if log_now:
            buffer += [("train_loss", step, loss_v), ("grad_norm", step, float(gnorm))]
        progress.on_step(step, loss_v)

        if step % eval_every == 0 or step == steps:
            ev = evaluate("valid")
            last_valid = ev["metric"]
            buffer += [("valid_loss", step, ev["loss"]), ("valid_metric", step, ev["metric"])]
            bound = stability.achieved_bound(model)
            if bound is not None:
                buffer.append(("stability_bound", step, bound))
            if math.isfinite(last_valid) and (
                best["metric"] is None
                or (last_valid > best["metric"] if higher else last_valid < best["metric"])
            ):
                best = {
                    "metric": last_valid,
                    "state": copy.deepcopy(model.state_dict()),
                    "step": step,
                }
            store.log_metrics(run_id, buffer)
            buffer.clear()
            store.heartbeat(run_id)
            progress.on_eval(step, ev)

    if best["state"] is not None:
        model.load_state_dict(best["state"])
    test = evaluate("test")
    summaries = {
        "test_metric": test["metric"],
        "test_loss": test["loss"],
        f"test_{task.metric}": test["metric"],
        "best_valid_metric": best["metric"] if best["metric"] is not None else math.nan,
        "best_step": best["step"],
        "final_valid_metric": last_valid,
        "final_train_loss": loss_v,
        "steps": steps,
        "throughput": steps * cfg.batch_size / max(train_time, 1e-9),
        "peak_memory_mb": peak_memory_mb(device),
        "n_params": count_params(model),
    }
    bound = stability.achieved_bound(model)
    if bound is not None:
        summaries["stability_bound"] = bound
    baseline = task.baseline()
    if baseline is not None:
        summaries["baseline"] = baseline
    why = blown_up(test["metric"], baseline, higher)
    if why:  # the test pass blew up although training did not: diverged, never a result
        return finish("diverged", summaries, why)
    if cfg.save_checkpoint:
        path = Path(checkpoint_dir) / f"run-{run_id}.pt"
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"config": cfg.to_dict(), "state_dict": model.state_dict()}, path)
        store.update_run(run_id, checkpoint=str(path.resolve()))
    return finish("completed", summaries)


def load_checkpoint(path: str | Path, map_location="cpu") -> dict[str, Any]:
    """Load a checkpoint written by train(); weights only (no pickled code is executed)."""
    return torch.load(path, map_location=map_location, weights_only=True)
