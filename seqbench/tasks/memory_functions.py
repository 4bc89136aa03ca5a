"""The memory-function task's kernels and their closed form, torch-free (the checks run before
torch is imported; the Task itself is tasks/synthetic.MemoryFunction).

After Jiang, Bao, Wang and Li, "Numerical investigation of sequence modeling theory using
controllable memory functions" (arXiv 2506.05678, 2025): the target is a linear functional of
a white input, y_t = Σ_{s=0}^{t} ρ(s)·x_{t−s} + noise, with x_t ~ N(0, 1) and the memory
function ρ one of

- ``exp``: ρ(s) = decay^s (exponential memory, what a λ-contractive recurrence has);
- ``power``: ρ(s) = (s + 1)^−alpha (power-law memory; square-summable only for alpha > 1/2);
- ``impulse``: ρ(s) = 1 at s = delay, else 0 (exactly one lag matters);
- ``osc``: ρ(s) = decay^s·cos(omega·s) (a damped cosine: memory that changes sign).

ρ is scaled so that the output at the last step, where all T lags are present, has unit
variance (before the noise, whose sd is `noise`). Because the input is white, the best
predictor that sees only the last k inputs keeps the lags < k and leaves out the rest: its
mean squared error, averaged over the T steps (at step t only the lags up to t exist), is

    e*(k) = (1/T)·Σ_{s≥k} (T − s)·ρ(s)² + noise²,

e*(0) is the output's variance (the trivial baseline) and e*(T) = noise² (the best any model
can do). k*(ε) is the smallest k whose e*(k) is within ε of the gap between the two.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from seqbench.errors import UsageError
from seqbench.options import TASK, Option

MAX_NOISE = 1e6  # the output noise's sd: far past any signal (variance ~1)
NAME = "memory-function"
KERNELS = ("exp", "power", "impulse", "osc")
# each kernel's parameters and their defaults (set by resolution when unset)
PARAMS: dict[str, dict[str, Any]] = {
    "exp": {"decay": 0.9},
    "power": {"alpha": 1.0},
    "impulse": {"delay": 10},
    "osc": {"decay": 0.9, "omega": 0.5},
}
# the task's own config fields (its TaskSpec.options): unset on every other task, refused there
OPTIONS = (
    Option("kernel", str, TASK, "the memory function: exp, power, impulse or osc (exp when unset)"),
    Option("decay", float, TASK, "exp and osc: ρ(s) = decay^s, in (0, 1) (0.9)", positive=True),
    Option("alpha", float, TASK, "power: ρ(s) = (s + 1)^-alpha, alpha > 1/2 (1)", positive=True),
    Option("delay", int, TASK, "impulse: the one lag that matters, in [0, seq_len) (10)"),
    Option("omega", float, TASK, "osc: ρ(s) = decay^s·cos(omega·s) (0.5)", positive=True),
    Option("noise", float, TASK, "the output noise's sd, ≥ 0 (none when unset)"),
)
FIELDS = tuple(o.name for o in OPTIONS)


def check(c) -> None:
    """A memory-function config (a RunConfig or TaskArgs): a known kernel, only its own
    parameters, each in its range; UsageError (one line) otherwise."""
    kernel = _kernel(c)
    own = PARAMS[kernel]
    for name in ("decay", "alpha", "delay", "omega"):
        if getattr(c, name) is not None and name not in own:
            users = [k for k in KERNELS if name in PARAMS[k]]
            raise UsageError(
                f"{NAME}: {name} is a parameter of kernel={' or '.join(users)}, not {kernel}"
            )
    p = params(c)
    if "decay" in own and not 0 < p["decay"] < 1:
        raise UsageError(f"{NAME}: decay must lie in (0, 1), got {p['decay']:g}")
    if kernel == "power" and not p["alpha"] > 0.5:
        raise UsageError(
            f"{NAME}: alpha must exceed 1/2: (s + 1)^-alpha is not square-summable for "
            f"alpha ≤ 1/2 (the output's variance grows without bound with T), got {p['alpha']:g}"
        )
    if kernel == "impulse":
        T = c.seq_len
        if p["delay"] < 0 or (T is not None and p["delay"] >= T):
            raise UsageError(
                f"{NAME}: delay must lie in [0, seq_len) (the lag must fit in the sequence of "
                f"{T} steps), got {p['delay']}"
            )
    if c.noise is not None and not (math.isfinite(c.noise) and c.noise >= 0):
        raise UsageError(f"{NAME}: noise (the output noise's sd) must be ≥ 0, got {c.noise:g}")
    if c.noise is not None and c.noise > MAX_NOISE:
        raise UsageError(
            f"{NAME}: noise (the output noise's sd) must be at most {MAX_NOISE:g}, got "
            f"{c.noise:g}: the signal's variance is about 1, so that is already 1e-12 of signal "
            "to noise, and past ~1e18 the loss leaves float32"
        )


def _kernel(c) -> str:
    kernel = c.kernel or "exp"
    if kernel not in KERNELS:
        raise UsageError(f"{NAME}: kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    return kernel


def params(c) -> dict[str, Any]:
    """The kernel of a config and its parameters, the kernel's defaults where unset."""
    kernel = _kernel(c)
    own = {n: getattr(c, n) if getattr(c, n) is not None else d for n, d in PARAMS[kernel].items()}
    return {"kernel": kernel, **own, "noise": c.noise or 0.0}


def condition(cfg):
    """Resolution: the kernel (exp when unset) and its parameters written into the config, so
    the stored run says what it computed; the other kernels' parameters stay unset."""
    p = params(cfg)
    return replace(cfg, **{k: v for k, v in p.items() if k != "noise"})


def rho(c, T: int) -> list[float]:
    """ρ(0 … T−1) of a config, scaled to unit variance at the last step: Σ_s ρ(s)² = 1."""
    p = params(c)
    kernel = p["kernel"]
    if kernel == "exp":
        raw = [p["decay"] ** s for s in range(T)]
    elif kernel == "power":
        raw = [(s + 1.0) ** -p["alpha"] for s in range(T)]
    elif kernel == "impulse":
        raw = [1.0 if s == p["delay"] else 0.0 for s in range(T)]
    else:
        raw = [p["decay"] ** s * math.cos(p["omega"] * s) for s in range(T)]
    norm = math.sqrt(math.fsum(r * r for r in raw))
    return [r / norm for r in raw]


def optimal_truncated_error(c, T: int) -> list[float]:
    """e*(k) for k = 0 … T (module docstring): the error of the best predictor from the last
    k inputs, averaged over the T steps, plus the noise's variance."""
    r = rho(c, T)
    noise = params(c)["noise"] ** 2
    tail = [0.0] * (T + 1)
    for s in range(T - 1, -1, -1):
        tail[s] = tail[s + 1] + (T - s) * r[s] ** 2
    return [t / T + noise for t in tail]
