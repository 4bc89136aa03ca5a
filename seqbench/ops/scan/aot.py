"""Ahead-of-time compilation of the Triton scan kernels for sm_80 and sm_90, without a GPU
(the method and its limits: ops/aot.py). `variants()` lists every launch the autograd
function can make: kernel × real/complex × constant/per-step a × h0 × autotune config; the
kernels take float32 (complex as real pairs), cast by the launcher."""

from __future__ import annotations

from dataclasses import dataclass

from seqbench.ops.aot import ARCHS, Compiled, compile_many, compile_source

__all__ = ["ARCHS", "Compiled", "Variant", "compile_all", "compile_variant", "variants"]


@dataclass(frozen=True)
class Variant:
    kernel: str  # "fwd" or "bwd"
    complex: bool
    a_const: bool
    has_h0: bool
    block: int
    warps: int

    @property
    def label(self) -> str:
        kind = "complex" if self.complex else "real"
        a = "aconst" if self.a_const else "avary"
        h0 = "h0" if self.has_h0 else "noh0"
        return f"scan-{self.kernel}-{kind}-{a}-{h0}-B{self.block}w{self.warps}"


def launch_configs() -> list[tuple[int, int]]:
    from seqbench.ops.scan.triton_kernel import _configs

    return [(c.kwargs["BLOCK"], c.num_warps) for c in _configs(interpret=False)]


def variants() -> list[Variant]:
    return [
        Variant(kernel, cplx, const, h0, block, warps)
        for kernel in ("fwd", "bwd")
        for cplx in (False, True)
        for const in (False, True)
        for h0 in (False, True)
        for block, warps in launch_configs()
    ]


def _signature(v: Variant) -> dict[str, str]:
    names = (
        ("a_ptr", "b_ptr", "h0_ptr", "h_ptr")
        if v.kernel == "fwd"
        else ("a_ptr", "h_ptr", "h0_ptr", "gout_ptr", "db_ptr", "da_ptr", "dh0_ptr")
    )
    ints = {"B": "i32", "T": "i32", "N": "i32", "BN": "i32"}
    flags = dict.fromkeys(("A_CONST", "COMPLEX", "HAS_H0", "BLOCK"), "constexpr")
    return {**dict.fromkeys(names, "*fp32"), **ints, **flags}


def compile_variant(v: Variant, arch: int, fn=None) -> Compiled:
    """Compile `v` for sm_`arch` and read ptxas -v; `fn` replaces the kernel (tests)."""
    from seqbench.ops.scan import triton_kernel as tk

    if fn is None:
        fn = (tk._scan_fwd_kernel if v.kernel == "fwd" else tk._scan_bwd_kernel).fn
    constexprs = {"A_CONST": v.a_const, "COMPLEX": v.complex, "HAS_H0": v.has_h0}
    constexprs["BLOCK"] = v.block
    return Compiled(v, arch, *compile_source(fn, _signature(v), constexprs, arch, v.warps, v.label))


def compile_all(processes: int = 2) -> list[Compiled | str]:
    """Every variant for every arch; a string for each that failed to compile."""
    return compile_many(compile_variant, variants(), processes)
