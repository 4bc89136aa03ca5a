"""The element-wise scan h = a ⊙ h + b (ops/scan): forward + backward of each backend against
the naive loop and against the copy bandwidth, side by side in one process.

Usage: python benchmarks/scan_kernels.py [--device cpu|cuda] [--seq-len 100 1000] [--busy]
Cases: the LRU's (complex, one a per channel), the selective SSM's (real, a per step) and a
real constant a. Bytes are what each pass must move at least (forward: b, a per step, h;
backward: the gradient, h, a per step, db, da per step); "of copy" divides that rate by the
rate of torch's clone of the same bytes on this machine. --busy runs a CPU-bound neighbour
process during the measurement (these machines are shared).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import torch

from seqbench.ops.scan import scan


def burn(stop):
    x = 0
    while not stop.is_set():
        x += 1


def timed(fn, repeat: int, device: str) -> float:
    fn()  # warm-up (and Triton's autotune)
    if device == "cuda":
        torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--seq-len", type=int, nargs="+", default=[100, 1000])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--channels", type=int, default=256)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--busy", action="store_true")
    a = p.parse_args()
    stop = mp.Event()
    neighbour = mp.Process(target=burn, args=(stop,)) if a.busy else None
    if neighbour:
        neighbour.start()
    backends = ["torch", "cpu"] + (["triton"] if a.device == "cuda" else [])
    print(f"device {a.device}, B={a.batch}, N={a.channels}, busy neighbour: {a.busy}")
    print("| case | T | backend | ms fwd+bwd | GB/s | copy GB/s | of copy | × naive |")
    print("|---|---|---|---|---|---|---|---|")
    cases = {
        "lru (complex, a per channel)": (torch.complex64, True),
        "mamba (real, a per step)": (torch.float32, False),
        "real, a per channel": (torch.float32, True),
    }
    for T in a.seq_len:
        for case, (dtype, const) in cases.items():
            B, N = a.batch, a.channels
            shape = (N,) if const else (B, T, N)
            av = (torch.rand(shape) * 0.99).to(dtype).to(a.device)
            b = torch.randn(B, T, N, dtype=dtype, device=a.device).requires_grad_()
            g = torch.randn(B, T, N, dtype=dtype, device=a.device)
            item = b.element_size()
            per = B * T * N * item
            moved = per * (2 + 3) + (0 if const else per * 3)  # fwd b,h; bwd g,h,db; a: r, r, w
            copy_s = timed(lambda b=b: b.detach().clone(), a.repeat, a.device)
            copy_rate = 2 * per / copy_s
            base = None
            for be in backends:
                if be == "torch" and T > 1000:
                    continue

                def run(be=be, av=av, b=b, g=g):
                    h = scan(av, b, backend=be)
                    h.backward(g)

                s = timed(run, a.repeat, a.device)
                base = s if be == "torch" else base
                rate = moved / s
                speed = f"{base / s:.1f}" if base else "-"
                print(
                    f"| {case} | {T} | {be} | {s * 1e3:.1f} | {rate / 1e9:.2f} | "
                    f"{copy_rate / 1e9:.1f} | {rate / copy_rate:.1%} | {speed} |"
                )
    if neighbour:
        stop.set()
        neighbour.join()


if __name__ == "__main__":
    main()
