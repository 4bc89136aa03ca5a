"""Ahead-of-time compilation of the Triton IndRNN kernels for real GPUs, without one.

`triton.compile` lowers a kernel to PTX and, with Triton's bundled `ptxas`, to a cubin for a
chosen architecture (sm_80: A100; sm_90: H100/H200) on a machine with no GPU. The interpreter
(`TRITON_INTERPRET=1`) runs the kernels' arithmetic but never sees what only the compiler
does: the types of constexprs, pointer arithmetic widths, unsupported ops, and register
pressure. `variants()` lists every launch the autograd function can make (kernel × dtypes ×
HAS_H0 × autotune config); `compile_variant` compiles one and reads `ptxas -v`'s registers and
spills. tests/ops/test_triton_aot.py compiles them all and fails on an error or a spill.

What this cannot show: speed, occupancy under real load, and the numbers themselves on the
device (benchmarks/gpu_check.sh does, when a GPU is lent).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

ARCHS = (80, 90)  # A100; H100 and H200
# the dtypes a launch can see: x is the input projection's output (fp32, or bf16/fp16 under
# autocast), h the stored history (fp32, or bf16), gout h's gradient (h's dtype), dx x's
X_DTYPES = ("fp32", "bf16", "fp16")
H_DTYPES = ("fp32", "bf16")


@dataclass(frozen=True)
class Variant:
    kernel: str  # "fwd" or "bwd"
    x: str
    h: str
    has_h0: bool
    block: int
    warps: int

    @property
    def label(self) -> str:
        h0 = "h0" if self.has_h0 else "noh0"
        return f"{self.kernel}-x{self.x}-h{self.h}-{h0}-B{self.block}w{self.warps}"


@dataclass(frozen=True)
class Compiled:
    variant: Any  # a Variant of this module's kernels or of the scan's (ops/scan/aot.py)
    arch: int
    registers: int
    spill_stores: int
    spill_loads: int
    ptxas: str  # ptxas -v's report


def launch_configs() -> list[tuple[int, int]]:
    """(BLOCK, num_warps) of every autotune config a GPU launch can choose."""
    from seqbench.ops.indrnn.triton_kernel import _configs

    return [(c.kwargs["BLOCK"], c.num_warps) for c in _configs(interpret=False)]


def variants() -> list[Variant]:
    return [
        Variant(kernel, x, h, has_h0, block, warps)
        for kernel in ("fwd", "bwd")
        for x in X_DTYPES
        for h in H_DTYPES
        for has_h0 in (False, True)
        for block, warps in launch_configs()
    ]


def _signature(v: Variant) -> dict[str, str]:
    ints = {"B": "i32", "T": "i32", "N": "i32", "BN": "i32"}
    flags = {"HAS_H0": "constexpr", "BLOCK": "constexpr"}
    if v.kernel == "fwd":
        ptrs = {"x_ptr": v.x, "u_ptr": "fp32", "h0_ptr": "fp32", "h_ptr": v.h}
    else:
        ptrs = {
            "gout_ptr": v.h,
            "h_ptr": v.h,
            "u_ptr": "fp32",
            "h0_ptr": "fp32",
            "dx_ptr": v.x,
            "du_part_ptr": "fp32",
            "dh0_ptr": "fp32",
        }
    return {**{k: f"*{t}" for k, t in ptrs.items()}, **ints, **flags}


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


def compile_variant(v: Variant, arch: int, fn=None) -> Compiled:
    """Compile `v` for sm_`arch` (raises what Triton or ptxas raise) and read ptxas -v.
    `fn` replaces the kernel's JIT function (tests pass a broken one on purpose)."""
    from seqbench.ops.indrnn import triton_kernel as tk

    if fn is None:
        fn = (tk._indrnn_fwd_kernel if v.kernel == "fwd" else tk._indrnn_bwd_kernel).fn
    constexprs = {"HAS_H0": v.has_h0, "BLOCK": v.block}
    return Compiled(v, arch, *compile_source(fn, _signature(v), constexprs, arch, v.warps, v.label))


def compile_source(
    fn, signature: dict, constexprs: dict, arch: int, warps: int, label: str
) -> tuple[int, int, int, str]:
    """Compile a JIT function's source for sm_`arch` with Triton and its bundled ptxas:
    (registers, spill-store bytes, spill-load bytes, ptxas -v's report). Every kernel's AOT
    check (IndRNN's here, the scan's in ops/scan/aot.py) goes through this."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

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


def compile_all(processes: int = 2) -> list[Compiled | str]:
    """Every variant for every arch; a string for each that failed to compile."""
    return compile_many(compile_variant, variants(), processes)
