"""Ahead-of-time compilation of Triton kernels for real GPUs, without one: what the IndRNN's
(ops/indrnn/aot.py) and the scan's (ops/scan/aot.py) checks share.

`triton.compile` lowers a kernel to PTX and, with Triton's bundled `ptxas`, to a cubin for a
chosen architecture (sm_80: A100; sm_90: H100/H200) on a machine with no GPU; `ptxas -v` reports
each variant's registers and spills. Each kernel package lists its variants and compiles them
through `compile_source`, in a process pool with `compile_many`.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

ARCHS = (80, 90)  # A100; H100 and H200


@dataclass(frozen=True)
class Compiled:
    variant: Any  # a Variant of a kernel package's aot.py
    arch: int
    registers: int
    spill_stores: int
    spill_loads: int
    ptxas: str  # ptxas -v's report


def ptxas_path(arch: int) -> str:
    """The bundled ptxas Triton itself compiles sm_`arch` with (a newer one from sm_90 on)."""
    from triton.backends.nvidia import compiler

    return compiler.get_ptxas(arch).path


def gpu_name(arch: int) -> str:
    """The ptxas architecture Triton's PTX targets (sm_90a on Hopper)."""
    from triton.backends.nvidia.compiler import sm_arch_from_capability

    return sm_arch_from_capability(arch)


_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")


def compile_source(
    fn, signature: dict, constexprs: dict, arch: int, warps: int, label: str
) -> tuple[int, int, int, str]:
    """Compile a JIT function's source for sm_`arch` with Triton and its bundled ptxas:
    (registers, spill-store bytes, spill-load bytes, ptxas -v's report). Every kernel's AOT
    check (IndRNN's here, the scan's in ops/scan/aot.py) goes through this."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from seqbench.ops.common import keep_fp_fusion

    keep_fp_fusion()  # as the kernels run (a spawned worker imports no kernel module first)
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    kernel = triton.compile(src, target=GPUTarget("cuda", arch, 32), options={"num_warps": warps})
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "k.ptx")
        with open(ptx, "w") as f:
            f.write(kernel.asm["ptx"])
        r = subprocess.run(
            [
                ptxas_path(arch),
                "-v",
                f"--gpu-name={gpu_name(arch)}",
                ptx,
                "-o",
                os.path.join(d, "k.cubin"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    if r.returncode:
        raise RuntimeError(f"ptxas failed for {label} on sm_{arch}: {r.stderr.strip()}")
    spills = [tuple(map(int, m.groups())) for m in _SPILL.finditer(r.stderr)]
    regs = [int(m.group(1)) for m in _REGS.finditer(r.stderr)]
    stores = sum(s for s, _ in spills)
    loads = sum(lo for _, lo in spills)
    return max(regs, default=0), stores, loads, r.stderr.strip()


def _compile_one(args):
    compile_fn, v, arch = args
    try:
        return compile_fn(v, arch)
    except Exception as e:  # reported by the caller, with the variant's label
        return f"{v.label} sm_{arch}: {type(e).__name__}: {str(e).strip().splitlines()[:1]}"


def compile_many(compile_fn, variants: list, processes: int = 2) -> list:
    """`compile_fn(variant, arch)` for every variant and arch in a process pool: its result,
    or a string for each that failed to compile (the scan's AOT check uses this too)."""
    import multiprocessing as mp

    jobs = [(compile_fn, v, arch) for v in variants for arch in ARCHS]
    with mp.get_context("fork").Pool(processes) as pool:  # no CUDA here: fork is safe
        return pool.map(_compile_one, jobs, chunksize=4)
