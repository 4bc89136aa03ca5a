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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from seqbench import environment
from seqbench.config import RunConfig
from seqbench.configure import config_hash as hash_of
from seqbench.configure import stored_k
from seqbench.errors import RunFailedError
from seqbench.models.base import count_params
from seqbench.store.recorder import RunRecorder
from seqbench.store.store import Store
from seqbench.store.values import utcnow
from seqbench.tasks import TASKS
from seqbench.tasks.base import generator, to_device
from seqbench.training.checkpoint import save_checkpoint
from seqbench.training.convergence import still_improving
from seqbench.training.heap import heap_state, keep_freed_memory
from seqbench.training.progress import Progress
from seqbench.training.setup import make_optimizer, mixed_precision, prepare
from seqbench.training.threads import apply_threads, choose_threads, one_thread_for

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
class TrainOutcome:
    run_id: int
    status: str
    summaries: dict[str, float] = field(default_factory=dict)
    config: RunConfig | None = None
    error: str | None = None  # why it failed or diverged, as stored in runs.error


def peak_ram_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@dataclass
class _Run:
    """One run in progress: what it trains, and where its record goes."""

    cfg: RunConfig
    task: Any
    model: torch.nn.Module
    device: torch.device
    recorder: RunRecorder
    progress: Progress
    checkpoint_dir: Path
    t0: float = field(default_factory=time.perf_counter)
    buffer: list[tuple[str, int, float]] = field(default_factory=list)

    def flush(self) -> None:
        """Send the buffered metrics to the recorder, with a heartbeat."""
        self.recorder.log_metrics(self.buffer)
        self.buffer.clear()
        self.recorder.heartbeat()

    def finish(
        self, status: str, summaries: dict[str, float], error: str | None = None, **fields: Any
    ) -> TrainOutcome:
        wall = time.perf_counter() - self.t0
        summaries = {**summaries, "wall_seconds": wall}
        metrics, self.buffer = self.buffer, []
        run_id = self.recorder.finish(
            status, metrics=metrics, summaries=summaries, wall_seconds=wall, error=error, **fields
        )
        return TrainOutcome(run_id, status, summaries, self.cfg, error)


def train(
    cfg: RunConfig,
    recorder: RunRecorder | Store | Callable[[], Store],
    *,
    progress: Progress | None = None,
    sweep_id: int | None = None,
    checkpoint_dir: str | Path = "checkpoints",
    name: str | None = None,
    threads: int | None = None,
) -> TrainOutcome:
    """Train one run end to end and record it through `recorder` (a RunRecorder; a Store
    gets one of its own). Bad configs raise before any row is written; once the run exists,
    every outcome is recorded on it. `recorder` may be a function that opens the store: it is
    called once the task is made and the model built, so a config refused there leaves no
    store behind.

    The run's config_hash is the hash of `cfg` as given (resolved, before the values derived
    while building: a fitted width, steps from epochs), so the same command always dedupes."""
    progress = progress or Progress()
    config_hash = hash_of(cfg)
    n_threads, threads_from = choose_threads(threads, one_thread_for(cfg))
    apply_threads(n_threads)
    keep_freed_memory()
    cfg, task, model, device = prepare(cfg)
    if not isinstance(recorder, Store) and not hasattr(recorder, "start"):
        recorder = recorder()  # the function that opens the store
    if isinstance(recorder, Store):
        recorder = recorder.recorder()
    run_id = recorder.start(
        kind="train",
        status="running",
        model=cfg.model,
        task=cfg.task,
        k=stored_k(cfg),  # the context the model has, not only the one asked for
        seq_len=cfg.seq_len,
        seed=cfg.seed,
        config=cfg.to_dict(),
        config_hash=config_hash,
        sweep_id=sweep_id,
        name=name,
        environment=environment.capture(str(device), threads_from, heap_state()),
        tags=cfg.tags or None,
        n_params=count_params(model),
        started_at=utcnow(),
        heartbeat_at=utcnow(),
    )
    progress.on_run(run_id, cfg)
    run = _Run(cfg, task, model, device, recorder, progress, Path(checkpoint_dir))
    try:
        return _loop(run)
    except KeyboardInterrupt:
        run.finish("interrupted", {})
        raise
    except Exception as e:
        try:
            run.finish("failed", {}, traceback.format_exc())
        except Exception:  # the store itself failed (a full disk, a lost server)
            fail = getattr(recorder, "fail", None)
            if fail is not None:
                fail(f"the store failed while the run was being recorded: {type(e).__name__}: {e}")
            raise e from None
        raise RunFailedError(f"run {run_id} failed: {type(e).__name__}: {e}") from e
    finally:
        progress.on_end()


@dataclass
class _Curve:
    """The validation curve so far and its best point (whose weights the test pass scores)."""

    higher: bool
    valid: list[float] = field(default_factory=list)
    best: dict = field(default_factory=lambda: {"metric": None, "state": None, "step": 0})
    stale: int = 0  # evaluations in a row without a better validation metric

    @property
    def last(self) -> float:
        return self.valid[-1] if self.valid else math.nan


def _loop(run: _Run) -> TrainOutcome:
    """Train step by step, evaluate every eval_every steps, stop at the most steps or where
    early stopping or `--steps auto`'s rule ends it, then score the best point on test."""
    cfg, model = run.cfg, run.model
    opt = make_optimizer(cfg, model)
    sched = _scheduler(cfg, opt)
    gen = generator(cfg.seed, 3)
    steps = cfg.max_steps or cfg.steps  # the most it may train (auto: on past cfg.steps)
    eval_every = cfg.eval_every or max(cfg.steps // 10, 1)
    curve = _Curve(run.task.higher_is_better)
    converged = False
    train_time = 0.0
    amp, scaler = mixed_precision(cfg.precision, run.device)
    run.progress.on_start(steps)
    model.train()
    loss_v = math.nan
    for step in range(1, steps + 1):
        t_step = time.perf_counter()
        loss_v = _step(run, opt, scaler, amp, gen, step)
        if not math.isfinite(loss_v):
            return run.finish(
                "diverged",
                {"diverged_step": step, "final_train_loss": loss_v, "steps": step},
                f"the training loss became {loss_v} at step {step}",
            )
        if sched:
            sched.step()
        train_time += time.perf_counter() - t_step
        run.progress.on_step(step, loss_v)
        if step % eval_every == 0 or step in (cfg.steps, steps):
            _validate(run, opt, amp, curve, step)
            if cfg.patience and curve.stale >= cfg.patience and step >= (cfg.min_steps or 0):
                steps = step  # converged: no better validation in `patience` evaluations
                break
            if (
                cfg.max_steps
                and step >= cfg.steps
                and not still_improving(curve.valid, curve.higher)
            ):
                steps, converged = step, True  # trained out by the under-trained rule
                break
    return _finish(run, amp, curve, loss_v, steps, train_time, converged)


def _step(run: _Run, opt, scaler, amp, gen, step: int) -> float:
    """One training step on a fresh batch: the loss, the update, the model's constraints
    (IndRNN's clamp, `--stable`'s projection) and the logged curves. Returns the loss (not
    finite: logged, nothing updated, the caller records the run diverged)."""
    cfg, task, model, device = run.cfg, run.task, run.model, run.device
    x, y = task.train_batch(cfg.batch_size, gen)
    x, y = x.to(device), to_device(y, device)
    with amp():
        out = model(x, tbptt=cfg.k if model.recurrent else None)
        loss = task.loss(out, y)
    loss_v = float(loss.detach())
    if not math.isfinite(loss_v):
        run.buffer.append(("train_loss", step, loss_v))
        return loss_v
    log_now = step % LOG_EVERY == 0 or step == 1
    gnorm = _update(cfg, model, opt, scaler, loss, log_now)
    model.constrain_()
    if cfg.stable:
        model.backbone.project_(cfg.lam)
    if log_now:
        run.buffer += [("train_loss", step, loss_v), ("grad_norm", step, float(gnorm))]
    return loss_v


def _validate(run: _Run, opt, amp, curve: _Curve, step: int) -> None:
    """Score the validation split, log it, keep the best weights, and (lr_plateau) lower the
    rate after an evaluation that found nothing better."""
    cfg, model = run.cfg, run.model
    ev = _evaluate(run, amp, "valid")
    curve.valid.append(ev["metric"])
    run.buffer += [("valid_loss", step, ev["loss"]), ("valid_metric", step, ev["metric"])]
    bound = model.backbone.stability_bound()
    if bound is not None:
        run.buffer.append(("stability_bound", step, bound))
    if _better(ev["metric"], curve.best["metric"], curve.higher):
        curve.best = {"metric": ev["metric"], "state": copy.deepcopy(model.state_dict()),
                      "step": step}  # fmt: skip
        curve.stale = 0
    else:
        curve.stale += 1
        if cfg.lr_plateau:  # reduce on plateau: a smaller step where no better one was
            for group in opt.param_groups:
                group["lr"] *= cfg.lr_plateau
    if cfg.lr_plateau:  # the rate the next steps train at, beside the curve it follows
        run.buffer.append(("lr", step, opt.param_groups[0]["lr"]))
    run.flush()
    run.progress.on_eval(step, ev)


def _finish(run: _Run, amp, curve: _Curve, loss_v: float, steps: int, train_time: float,
            converged: bool) -> TrainOutcome:  # fmt: skip
    """Score the best validation point on test and record the run: completed, or diverged
    where the test pass blew up although training did not."""
    if curve.best["state"] is not None:
        run.model.load_state_dict(curve.best["state"])
    test = _evaluate(run, amp, "test")
    summaries, baseline = _summaries(run, test, curve.best, curve.last, loss_v, steps, train_time)
    if run.cfg.max_steps:  # --steps auto: whether the rule ended it (else the cap did, improving)
        summaries["converged"] = float(converged)
    why = blown_up(test["metric"], baseline, curve.higher)
    if why:  # the test pass blew up although training did not: diverged, never a result
        return run.finish("diverged", summaries, why)
    if run.cfg.save_checkpoint:
        return run.finish(
            "completed",
            summaries,
            checkpoint=save_checkpoint(run.checkpoint_dir, run.recorder.run_id, run.cfg, run.model),
        )
    return run.finish("completed", summaries)


def _scheduler(cfg: RunConfig, opt: torch.optim.Optimizer):
    """The learning rate times lr_decay every lr_decay_every steps; None without a decay."""
    if not cfg.lr_decay_every:
        return None
    return torch.optim.lr_scheduler.StepLR(opt, cfg.lr_decay_every, gamma=cfg.lr_decay)


def _evaluate(run: _Run, amp, split: str) -> dict:
    """The model scored on `split` in eval mode (a language model's test split whole, as
    tasks/text.py streams it), back in train mode after."""
    cfg, task, model, device = run.cfg, run.task, run.model, run.device
    model.eval()
    with amp():
        if split == "test" and cfg.test_stream:
            ev = task.evaluate_stream(model, split, device)
        else:
            ev = task.evaluate(lambda x: model(x.to(device)), split, cfg.eval_batch_size)
    model.train()
    return ev


def _update(cfg: RunConfig, model, opt, scaler, loss, log_now: bool) -> torch.Tensor | None:
    """One optimiser step from `loss`: backward, clipping, the step (fp16: through the
    gradient scaler, which skips a step with inf gradients). Returns the gradient norm where
    it was computed (when clipping by norm, when logging, and always under fp16)."""
    gnorm = None
    opt.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
    else:  # fp16: scale the loss, unscale before clipping; a step with inf grads is skipped
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
    if cfg.clip or log_now or scaler is not None:  # the norm costs a pass: only when used
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip or math.inf)
    if cfg.clip_value:
        torch.nn.utils.clip_grad_value_(model.parameters(), cfg.clip_value)
    if scaler is None:
        opt.step()
    else:
        scaler.step(opt)
        scaler.update()
    return gnorm


def _better(value: float, best: float | None, higher: bool) -> bool:
    """Whether a validation metric beats the best so far (a non-finite one never does)."""
    if not math.isfinite(value):
        return False
    return best is None or (value > best if higher else value < best)


def _summaries(run: _Run, test: dict, best: dict, last_valid: float, loss_v: float,
               steps: int, train_time: float) -> tuple[dict[str, float], float | None]:  # fmt: skip
    """What a finished run stores as its summaries (the test pass, the best validation
    point, the steps it trained, its cost, the task's baselines), and the trivial baseline."""
    cfg, task, model, device = run.cfg, run.task, run.model, run.device
    summaries = {
        "test_metric": test["metric"],
        "test_loss": test["loss"],
        f"test_{task.metric}": test["metric"],
        "best_valid_metric": best["metric"] if best["metric"] is not None else math.nan,
        "best_step": best["step"],
        "final_valid_metric": last_valid,
        "final_train_loss": loss_v,
        "steps": steps,  # trained: fewer than cfg.steps when it stopped early
        "throughput": steps * cfg.batch_size / max(train_time, 1e-9),
        "peak_memory_mb": peak_ram_mb(device),
        "n_params": count_params(model),
    }
    if cfg.patience:  # early stopping asked for: whether it stopped before its most steps
        summaries["stopped_early"] = float(steps < (cfg.max_steps or cfg.steps))
    if test.get("n"):  # the predictions scored: chance's spread on the test set (memory/answer)
        summaries["test_count"] = float(test["n"])
    if "const" in test:  # one test split for every seed: its best constant and noise (answer)
        summaries["test_const"] = test["const"]
        summaries["test_gain_se"] = test["gain_se"]
    bound = model.backbone.stability_bound()
    if bound is not None:
        summaries["stability_bound"] = bound
    state_size = getattr(model.backbone, "state_size", None)  # a plugin's may not declare it
    if state_size is not None:
        summaries["state_size"] = state_size
    baseline = task.baseline()
    if baseline is not None:
        summaries["baseline"] = baseline
    summaries.update(task.other_baselines())
    if not TASKS.is_builtin(cfg.task):  # a plugin task: reports read its direction from here
        summaries["higher_is_better"] = float(task.higher_is_better)
    return summaries, baseline
