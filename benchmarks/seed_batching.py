"""What training a cell's seeds together would save: three seeds of one TCN cell (the README
example's budget, 10,000 parameters, T = 16, batch 32, one thread) stepped one after another,
against the same three stacked into one vectorised model (torch.func.vmap over stacked
parameters, one Adam over the stacks), ms per training step of all three, best of two
interleaved rounds of 200 steps. A measurement for issue 49 (the answer's cost), not a
feature: memory trains each seed as its own run.

    .venv/bin/python benchmarks/seed_batching.py    # ~1 min
"""

from __future__ import annotations

import copy
import time
import warnings

import torch
from torch.func import functional_call, stack_module_state, vmap

from seqbench.config import RunConfig
from seqbench.training.setup import prepare

SEEDS, BATCH, T, STEPS = 3, 32, 16, 200


def cell(k: int) -> tuple[list[torch.nn.Module], object]:
    out, task = [], None
    for seed in range(SEEDS):
        cfg = RunConfig(model="tcn", task="teacher", k=k, params=10000, teacher_kind="linear",
                        teacher_lam=0.5, seq_len=T, steps=800, seed=seed)  # fmt: skip
        _, task, model, _ = prepare(cfg)
        out.append(model)
    return out, task


def bench(k: int) -> tuple[float, float]:
    models, task = cell(k)
    xs, ys = torch.randn(SEEDS, BATCH, T, task.in_dim), torch.randn(SEEDS, BATCH, task.out_dim)
    opts = [torch.optim.Adam(m.parameters(), 1e-3) for m in models]

    def one_after_another():
        for m, opt, x, y in zip(models, opts, xs, ys, strict=True):
            loss = ((m(x).reshape(BATCH, -1)[:, : task.out_dim] - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    base = copy.deepcopy(models[0]).to("meta")
    params, buffers = stack_module_state(models)
    params = {name: p.detach().requires_grad_() for name, p in params.items()}
    opt = torch.optim.Adam(params.values(), 1e-3)
    forward = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))

    def together():
        out = forward(params, buffers, xs).reshape(SEEDS, BATCH, -1)[:, :, : task.out_dim]
        loss = ((out - ys) ** 2).mean(dim=(1, 2)).sum()  # each seed's gradient is its own
        opt.zero_grad()
        loss.backward()
        opt.step()

    best = {one_after_another: [], together: []}
    for step in [one_after_another, together] * 2:
        for _ in range(10):
            step()
        t = time.perf_counter()
        for _ in range(STEPS):
            step()
        best[step].append((time.perf_counter() - t) / STEPS * 1000)
    return min(best[one_after_another]), min(best[together])


def main() -> None:
    torch.set_num_threads(1)
    # weight_norm has no batching rule: vmap loops over it (a warning each process)
    warnings.filterwarnings("ignore", message="There is a performance drop")
    print("| k | one after another, ms/step | together (vmap), ms/step | together / apart |")
    print("|---|---|---|---|")
    for k in (16, 4, 1):
        apart, together = bench(k)
        print(f"| {k} | {apart:.2f} | {together:.2f} | {together / apart:.2f} |")


if __name__ == "__main__":
    main()
