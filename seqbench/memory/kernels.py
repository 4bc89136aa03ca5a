"""Which family captures which memory: the runs of a sweep on the memory-function task (the
`memory-functions` preset) read against each kernel's closed form.

Every cell (a kernel, a family, its context) gets its test error, mean over seeds, beside the
optimal error e*(k) at that family's own context (a feedforward family's stored k; a recurrent
one sees the whole sequence, k = T, where e*(T) is the noise floor) and the *equivalent
context*: the smallest k whose optimal predictor does as well, min{k : e*(k) ≤ error·(1 + m)},
where m = 2·√(2/n) is twice the relative sampling error of a mean of n squared Gaussian
residuals (n: the test predictions the cell's runs scored together, the runs' test_count): a
cell a hair below e*(k) on its test set has not beaten the optimum, and is read as k. A TCN
that matches e*(k) at its own k has learned what its context allows; a recurrent model whose
equivalent context is small has, whatever its state could hold, learned a short memory.
"""

from __future__ import annotations

import math

from seqbench.config import RunConfig
from seqbench.errors import NotFoundError
from seqbench.store.opening import reads
from seqbench.tasks import memory_functions as mf

COLUMNS = ["kernel", "family", "context", "error", "e*(context)", "equivalent k", "seeds"]


def kernel_label(cfg: RunConfig) -> str:
    p = mf.params(cfg)
    shown = ", ".join(f"{k} {p[k]:g}" for k in mf.PARAMS[p["kernel"]])
    return f"{p['kernel']} ({shown})" + (f", noise {p['noise']:g}" if p["noise"] else "")


def family_label(cfg: RunConfig) -> str:
    return cfg.model + (f" stable λ={cfg.lam:g}" if cfg.stable else "")


def equivalent_k(errors: list[float], error: float, n: float) -> str:
    """The smallest context whose optimal predictor does as well as `error`, measured on `n`
    test predictions (module docstring), as text: "0" when no context is needed to do that
    badly (at or above the trivial baseline), ">T" when no context does as well."""
    if not math.isfinite(error):
        return ""
    margin = 2 * math.sqrt(2 / n) if n > 0 else 0.0
    for k, e in enumerate(errors):
        if e <= error * (1 + margin):
            return str(k)
    return f">{len(errors) - 1}"


@reads
def kernel_table(store, sweep: str) -> tuple[list[str], list[list]]:
    """One row per kernel, family and context of `sweep`'s memory-function runs (COLUMNS),
    kernels in the order of tasks/memory_functions.KERNELS. NotFoundError when it has none."""
    from seqbench.configure import stored_k
    from seqbench.report.frames import results_frame
    from seqbench.store.results import RunFilter

    ran = RunFilter(sweep=sweep, statuses=("completed", "diverged"))
    df = results_frame(store, "test_metric", ran)
    df = df[df["task"] == mf.NAME] if not df.empty else df
    if df.empty:
        raise NotFoundError(f"sweep {sweep!r} has no finished run of the {mf.NAME} task")
    counts = results_frame(store, "test_count", ran)
    count = dict(zip(counts["run_id"], counts["value"], strict=True)) if not counts.empty else {}
    cells: dict[tuple, dict] = {}
    for run_id, config, value in zip(df["run_id"], df["config"], df["value"], strict=True):
        cfg = RunConfig(**config)
        k = stored_k(cfg)
        key = (kernel_label(cfg), cfg.seq_len, family_label(cfg), k)
        cell = cells.setdefault(key, {"cfg": cfg, "values": [], "n": 0.0})
        cell["values"].append(float(value))
        cell["n"] += float(count.get(run_id, 0.0))
    rows = []
    order = {name: i for i, name in enumerate(mf.KERNELS)}
    for (kernel, T, family, k), cell in sorted(
        cells.items(),
        key=lambda kv: (
            order[mf.params(kv[1]["cfg"])["kernel"]],
            kv[0][0],
            kv[0][2],
            kv[0][3] or 1e9,
        ),
    ):
        errors = mf.optimal_truncated_error(cell["cfg"], T)
        values = cell["values"]
        mean = math.fsum(values) / len(values) if all(map(math.isfinite, values)) else math.nan
        context = T if k is None else min(k, T)
        rows.append(
            [
                kernel,
                family,
                "full" if k is None else str(k),
                _g(mean),
                _g(errors[context]),
                equivalent_k(errors, mean, cell["n"]),
                len(values),
            ]
        )
    return list(COLUMNS), rows


def _g(v: float) -> str:
    return f"{v:.4g}" if math.isfinite(v) else "diverged"
