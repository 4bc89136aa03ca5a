"""Where sweep points run: a local process pool or a Ray cluster. Workers never touch the
store: they train into an in-memory recorder and send the record back to the driver, the one
process that writes (SQLite allows one writer; a shared PostgreSQL store needs no more)."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing as mp
import os
import signal
import socket
import sys
import threading
import traceback
from typing import Any, NamedTuple

from seqbench.errors import RunFailedError, SeqbenchError, UsageError
from seqbench.store.liveness import process_alive, process_start
from seqbench.store.recorder import BufferRecorder
from seqbench.training.threads import POOL_THREADS, usable_cpus


class Finished(NamedTuple):
    """A point whose work ended: its record, or an error; `crashed` when the process running
    it died (not the config's fault: the point is run again)."""

    handle: Any
    record: dict | None
    error: str | None = None
    crashed: bool = False


def execute_point(run_id: int, config: dict, checkpoint_dir: str = "checkpoints") -> dict:
    """Train one point (in a worker) and return its record. Never raises for a failed run."""
    import time

    from seqbench.config import RunConfig
    from seqbench.training.loop import train

    t0 = time.perf_counter()
    rec = BufferRecorder(run_id, stream=_STREAM)
    try:
        train(RunConfig(**config), rec, checkpoint_dir=checkpoint_dir)
    except RunFailedError:
        pass  # the recorder holds status "failed" and the traceback
    except Exception:
        rec.fields.update(status="failed", error=traceback.format_exc())
    if _STREAM is not None:  # after every streamed batch of this point (one queue, in order)
        _STREAM.put((run_id, None))
    if _GPU is not None:  # the worker's pinned GPU, stored with the run
        env = rec.fields.get("environment") or {}
        rec.fields["environment"] = {**env, "gpu": str(_GPU), "cuda_visible_devices": str(_GPU)}
    # the whole point's time in the worker (building included): benchmarks/sweep_overhead.py
    return {**rec.record(), "worker_seconds": time.perf_counter() - t0}


_GPU: int | None = None  # the GPU this worker process is pinned to (set by _worker_init)
_STREAM = None  # the queue a worker sends its metrics to the driver on, as they are logged


def _worker_init(threads: int, driver: int, gpu_slots=None, stream=None) -> None:
    global _GPU, _STREAM
    _STREAM = stream
    if gpu_slots is not None:  # before anything initialises CUDA in this process
        _GPU = gpu_slots.get(timeout=60)
        os.environ["CUDA_VISIBLE_DEVICES"] = str(_GPU)
    import torch

    torch.set_num_threads(threads)
    # train() takes at most the worker's share (and one thread for small fused steps, as
    # outside a sweep): the share is a cap, not the user's SEQBENCH_THREADS
    os.environ[POOL_THREADS] = str(threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the driver's to handle

    host, born = socket.gethostname(), process_start(driver)

    def watchdog():  # an orphaned worker (driver killed with SIGKILL) stops promptly
        import time

        # a zombie driver is dead too (os.kill(pid, 0) answered it: 2 of 5 kill -9s left
        # workers running 16 s later), and so is another process given its pid
        while process_alive(host, driver, born) is not False:
            time.sleep(0.5)
        os._exit(1)  # its run stays 'running' until the next command marks it crashed

    threading.Thread(target=watchdog, daemon=True).start()


def threads_per_worker(workers: int) -> int:
    """Torch threads for each of `workers` pool processes: OMP_NUM_THREADS when the user set
    it (as torch itself honours it), else the usable CPUs shared out. It is a cap: each point
    takes no more than the cores free when it starts (training/threads.choose_threads), as
    more threads than cores slows torch's CPU kernels several-fold."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, usable_cpus() // workers)


def gpu_slots(gpus: list[int], runs_per_gpu: int) -> list[int]:
    """One slot per worker: each GPU `runs_per_gpu` times, spread round-robin."""
    return [g for _ in range(runs_per_gpu) for g in gpus]


@contextlib.contextmanager
def interrupts_held():
    """Ctrl-C and SIGTERM held while the block runs, then delivered as they came. A submit
    may start a worker (the fork server's first one takes seconds); interrupted there, the
    worker was started but never registered, so shutdown could not stop it, and it printed a
    traceback once the driver had gone. Only the main thread sets handlers: elsewhere, as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    old = {s: signal.signal(s, lambda signum, _frame: held.append(signum))
           for s in (signal.SIGINT, signal.SIGTERM)}  # fmt: skip
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        for s in dict.fromkeys(held):
            os.kill(os.getpid(), s)  # the handler the block found raises it now


class LocalExecutor:
    """A process pool; `threads` torch threads per worker (cores / workers).

    With `gpus`, there are len(gpus) × runs_per_gpu workers and each is pinned to one GPU
    (CUDA_VISIBLE_DEVICES, set before torch initialises CUDA in it), so `runs_per_gpu` small
    runs share each GPU; the assignment is stored with each run (environment.gpu).

    Workers come from a fork server that has imported torch but never computed with it: a
    plain fork of a driver whose OpenMP pool is live can deadlock in the child (GNU libgomp
    is not fork-safe), and spawn would pay torch's import in every worker."""

    def __init__(self, workers: int, gpus: list[int] | None = None, runs_per_gpu: int = 1):
        slots = gpu_slots(gpus, runs_per_gpu) if gpus else None
        self.workers = len(slots) if slots else workers
        threads = threads_per_worker(self.workers)
        if sys.platform.startswith("linux"):
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(["torch", "seqbench.training.loop"])
        else:
            ctx = mp.get_context("spawn")

        self.stream = ctx.Queue()  # metrics from the workers, as they are logged

        def make():  # a fresh pool (after a worker died) gets every slot again
            queue = None
            if slots:
                queue = ctx.Queue()
                for g in slots:
                    queue.put(g)
            return cf.ProcessPoolExecutor(
                self.workers,
                mp_context=ctx,
                initializer=_worker_init,
                initargs=(threads, os.getpid(), queue, self.stream),
            )

        self._make = make
        self.pool = self._make()

    def submit(self, run_id: int, config: dict):
        with interrupts_held():
            try:
                return self.pool.submit(execute_point, run_id, config)
            except cf.process.BrokenProcessPool:  # a worker died earlier: start a fresh pool
                self.pool.shutdown(wait=False, cancel_futures=True)
                self.pool = self._make()
                return self.pool.submit(execute_point, run_id, config)

    def wait(self, handles: list, timeout: float) -> list[Finished]:
        done, _ = cf.wait(handles, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        out = []
        for h in done:
            try:
                out.append(Finished(h, h.result()))
            except cf.process.BrokenProcessPool as e:
                # a worker died (SIGKILL, the OOM killer): the pool fails every point in flight,
                # the innocent neighbours too, and cannot say whose worker it was
                out.append(Finished(h, None, f"worker process died: {e}", crashed=True))
            except Exception as e:
                out.append(Finished(h, None, f"worker error: {type(e).__name__}: {e}"))
        return out

    def drain(self) -> list[tuple[int, list]]:
        """The (run id, metric rows) the workers have sent since the last call."""
        import queue

        out = []
        while True:
            try:
                out.append(self.stream.get_nowait())
            except queue.Empty:
                return out

    def shutdown(self) -> None:
        # stop the workers too: a point still training (after Ctrl-C) would otherwise hold the
        # driver at exit, where Python joins the pool, until it finished for nothing
        procs = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            if proc.is_alive():
                proc.terminate()


def check_address(address: str) -> None:
    """HOST:PORT must accept a TCP connection (fail fast instead of Ray's long retries)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"`address` must be auto, local or HOST:PORT, got {address!r}")
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise SeqbenchError(f"cannot reach the Ray cluster at {address}: {e.strerror or e}") from e


class RayExecutor:
    """Each point is a Ray task: one CPU, and 1/runs_per_gpu of a GPU when the config asks for
    cuda (Ray packs that many points on each GPU)."""

    def __init__(self, address: str, workers: int | None, runs_per_gpu: int = 1):
        self.gpu_share = 1.0 / runs_per_gpu
        try:
            import ray
        except ImportError:
            raise SeqbenchError("the ray executor needs Ray: pip install 'seqbench[ray]'") from None
        if address not in ("auto", "local"):
            check_address(address)
        self.ray = ray
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "log_to_driver": False,
            "ignore_reinit_error": True,
        }
        if address == "local":
            # a single-machine cluster, kept on loopback
            kwargs["num_cpus"] = workers or os.cpu_count()
            kwargs["_node_ip_address"] = "127.0.0.1"
        else:
            kwargs["address"] = address
        try:
            ray.init(**kwargs)
        except ConnectionError as e:
            raise SeqbenchError(f"cannot connect to Ray at {address}: {e}") from e
        self.workers = workers or int(ray.cluster_resources().get("CPU", 1))
        self.remote = ray.remote(execute_point)

    def submit(self, run_id: int, config: dict):
        gpus = self.gpu_share if config.get("device") == "cuda" else 0
        return self.remote.options(num_cpus=1, num_gpus=gpus).remote(run_id, config)

    def wait(self, handles: list, timeout: float) -> list[Finished]:
        ready, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        exc = self.ray.exceptions
        died = tuple(
            getattr(exc, n)
            for n in ("WorkerCrashedError", "OutOfMemoryError", "NodeDiedError")
            if hasattr(exc, n)
        )
        out = []
        for ref in ready:
            try:
                out.append(Finished(ref, self.ray.get(ref)))
            except died as e:
                out.append(Finished(ref, None, f"ray worker died: {type(e).__name__}: {e}", True))
            except Exception as e:
                out.append(Finished(ref, None, f"ray task error: {type(e).__name__}: {e}"))
        return out

    def drain(self) -> list[tuple[int, list]]:
        return []  # Ray points send their metrics with their record

    def shutdown(self) -> None:
        self.ray.shutdown()
