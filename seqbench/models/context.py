"""The context of every feedforward family, exact by construction, without torch.

A feedforward model's output at t depends on x_{t-k+1..t} and nothing earlier, where k is the
context the user gave (`--k`), and k ≥ T means the whole sequence. The layer plans below are
what the backbones build; models.context(c, steps) is what a run records as its k (tests/
models/test_context.py measures it from the gradient of the outputs). Torch-free, and free of
seqbench's other modules.

A stack of causal convolutions depends on the Minkowski sum of its layers' tap lags: a conv
of kernel n and dilation d has lags {0, d, …, (n−1)d}, and the sum of such sets is contiguous,
0 … Σ(n−1)d, as long as each dilation is at most one more than the span of the layers before
it (residual paths add only lag 0). So the context is 1 + Σ(n−1)d exactly, and a plan that
makes that sum k − 1 has context k.
"""

from __future__ import annotations

import functools
import math

# A TCN level: (kernel, dilation) of its two convolutions.
Level = tuple[tuple[int, int], tuple[int, int]]


def whole(k: int | None, seq_len: int) -> bool:
    """No context given, or one that covers the whole sequence."""
    return k is None or k >= seq_len


def tcn_receptive_field(kernel_size: int, levels: int) -> int:
    """1 + 2(K-1)(2^L - 1): two convolutions per level, dilation 2^i at level i."""
    return 1 + 2 * (kernel_size - 1) * (2**levels - 1)


def tcn_levels_for(k: int, kernel_size: int) -> int:
    """The fewest levels whose receptive field covers k inputs (kernel_size ≥ 2, or k = 1)."""
    if kernel_size < 2:
        return 1
    levels = 1
    while tcn_receptive_field(kernel_size, levels) < k:
        levels += 1
    return levels


@functools.lru_cache(maxsize=1024)
def tcn_plan(
    kernel_size: int, levels: int | None, k: int | None, seq_len: int
) -> tuple[Level, ...]:
    """The TCN's levels as (kernel, dilation) pairs, worked out once per arguments (a run
    asks for them to store its k, to hash its config and to build its network).

    - `levels` given (the papers' configurations): Bai et al.'s levels, both convs of level i
      with kernel K and dilation 2^i; receptive field 1 + 2(K−1)(2^L − 1).
    - k < T: the fewest such levels L covering k, with the last level resized so that the
      total is exactly k. The first L−1 levels span S = 2(K−1)(2^(L−1) − 1); the last must add
      E = k − 1 − S = q(K−1) + r (0 ≤ r < K−1): its first conv keeps kernel K at dilation q
      (kernel 1 when q = 0), its second has kernel r + 1 at dilation 1. Both spans add to E,
      and q ≤ 2^L − 1 ≤ S + 1 keeps the lags contiguous (k equal to a standard receptive field
      keeps the standard level).
    - otherwise (no k, or k ≥ T): the fewest standard levels covering T.
    """
    K = kernel_size

    def standard(n: int) -> tuple[Level, ...]:
        return tuple(((K, 2**i), (K, 2**i)) for i in range(n))

    if levels is not None:
        return standard(levels)
    if whole(k, seq_len):
        return standard(tcn_levels_for(seq_len, K))
    L = tcn_levels_for(k, K)
    if K < 2 or tcn_receptive_field(K, L) == k:
        return standard(L)
    span = k - tcn_receptive_field(K, L - 1)  # E: what the last level must add
    q, r = divmod(span, K - 1)
    first = (K, q) if q else (1, 1)
    return (*standard(L - 1), (first, (r + 1, 1)))


def plan_span(plan: tuple[Level, ...]) -> int:
    return sum((n - 1) * d for level in plan for n, d in level)


def gcnn_kernels(kernel_size: int, levels: int | None, k: int | None, seq_len: int) -> list[int]:
    """The gated CNN's layer kernels (no dilation; receptive field 1 + Σ(K_i − 1)).

    `levels` given: L layers of kernel K. Otherwise the context k (default min(T, 32), the
    window model's), k < T: the fewest layers L = ⌈(k−1)/(K−1)⌉ (at least 1), the last with
    kernel k − (L−1)(K−1) ≤ K so that the total is exactly k. k ≥ T: ⌈(T−1)/(K−1)⌉ full
    layers."""
    K = kernel_size
    if levels is not None:
        return [K] * levels
    k = default_window(seq_len) if k is None else k
    target = min(k, seq_len)
    layers = max(1, math.ceil((target - 1) / (K - 1)))
    if whole(k, seq_len):
        return [K] * layers
    return [K] * (layers - 1) + [k - (layers - 1) * (K - 1)]


def transformer_windows(layers: int, k: int | None, seq_len: int) -> list[int]:
    """Each layer's attention window. Position t of a layer with window w attends t−w+1..t, so
    a stack sees 1 + Σ(w_i − 1). k < T: k − 1 split as evenly as possible over the layers
    (earlier layers take the remainder), so the stack's context is exactly k. Otherwise every
    layer attends to the whole (causal) past, T positions."""
    if whole(k, seq_len):
        return [seq_len] * layers
    q, r = divmod(k - 1, layers)
    return [1 + q + (1 if i < r else 0) for i in range(layers)]


def default_window(seq_len: int) -> int:
    """The context of a window model or gated CNN given no k: min(T, 32)."""
    return min(seq_len, 32)


def tcn_context(c, T: int) -> int:
    return 1 + plan_span(tcn_plan(c.kernel_size, c.levels, c.k, T))


def gcnn_context(c, T: int) -> int:
    return 1 + sum(n - 1 for n in gcnn_kernels(c.kernel_size, c.levels, c.k, T))


def transformer_context(c, T: int) -> int:
    return 1 + sum(w - 1 for w in transformer_windows(c.layers, c.k, T))


def window_context(c, T: int) -> int:
    return default_window(T) if c.k is None else c.k


def legacy_context(c, steps: int) -> int | None:
    """The context the config's network had before contexts were exact (store revision
    0006, whose migration holds the same rules): where it differs from context(c), the
    network is another one, and config_hash keeps the two apart. `steps`: the steps fed (the
    cap). None for the other families (recurrent ones, and any family added since)."""
    if c.model not in ("tcn", "gcnn", "transformer", "window"):
        return None
    T, k, K = c.seq_len, c.k, c.kernel_size
    if c.model == "tcn":
        levels = c.levels if c.levels is not None else tcn_levels_for(k or T, K)
        rf = tcn_receptive_field(K, levels)
    elif c.model == "gcnn":
        want = k if k is not None else default_window(T)
        levels = c.levels if c.levels is not None else max(1, math.ceil((want - 1) / (K - 1)))
        rf = 1 + levels * (K - 1)
    elif c.model == "transformer":
        rf = 1 + ((k if k is not None else T) - 1) * c.layers
    else:
        rf = window_context(c, T)
    return min(rf, steps)
