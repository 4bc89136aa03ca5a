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

from dataclasses import dataclass

from seqbench.ops.aot import ARCHS, Compiled, compile_many, compile_source

__all__ = ["ARCHS", "Compiled", "Variant", "compile_all", "compile_variant", "variants"]

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


def compile_variant(v: Variant, arch: int, fn=None) -> Compiled:
    """Compile `v` for sm_`arch` (raises what Triton or ptxas raise) and read ptxas -v.
    `fn` replaces the kernel's JIT function (tests pass a broken one on purpose)."""
    from seqbench.ops.indrnn import triton_kernel as tk

    if fn is None:
        fn = (tk._indrnn_fwd_kernel if v.kernel == "fwd" else tk._indrnn_bwd_kernel).fn
    constexprs = {"HAS_H0": v.has_h0, "BLOCK": v.block}
    return Compiled(v, arch, *compile_source(fn, _signature(v), constexprs, arch, v.warps, v.label))


def compile_all(processes: int = 2) -> list[Compiled | str]:
    """Every variant for every arch; a string for each that failed to compile."""
    return compile_many(compile_variant, variants(), processes)
