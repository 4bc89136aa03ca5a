"""Every Triton kernel variant a launch can choose compiles ahead of time for sm_80 (A100) and
sm_90 (H100/H200), with Triton's bundled ptxas and no GPU, and spills no register. The
interpreter tests (test_indrnn_triton.py) check the arithmetic; this checks what only the
compiler sees. Runs in the main (non-interpreter) pytest invocation."""

from __future__ import annotations

import os

import pytest

triton = pytest.importorskip("triton")
if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter has no compiler to test
    pytest.skip("ahead-of-time compilation runs without TRITON_INTERPRET", allow_module_level=True)

from seqbench.ops.indrnn import aot  # noqa: E402


def test_every_launchable_variant_compiles_for_sm80_and_sm90_without_spills():
    variants = aot.variants()
    # 2 kernels × 3 input dtypes × 2 history dtypes × with/without h0 × the autotune configs
    assert len(variants) == 2 * 3 * 2 * 2 * len(aot.launch_configs())
    results = aot.compile_all(processes=2)
    assert len(results) == len(variants) * len(aot.ARCHS)
    failed = [r for r in results if isinstance(r, str)]
    assert not failed, failed[:5]
    spilled = [
        f"{r.variant.label} sm_{r.arch}: {r.spill_stores}/{r.spill_loads} bytes"
        for r in results
        if r.spill_stores or r.spill_loads
    ]
    assert not spilled, spilled[:5]
    assert all(0 < r.registers <= 255 for r in results)


def test_a_mistyped_variant_fails_to_compile():
    """A BLOCK that is not a power of two (tl.arange refuses it) runs in no interpreter test
    but fails here, as it would on a GPU."""
    bad = aot.Variant("fwd", "fp32", "fp32", False, 96, 2)
    with pytest.raises(Exception, match=r"power of 2|arange"):
        aot.compile_variant(bad, 80)


def test_a_broken_kernel_is_caught():
    """A kernel that stores a float through an int64-offset pointer of the wrong element type
    and calls an op that does not exist: the compiler, not the interpreter run, refuses it."""
    import triton.language as tl

    @triton.jit
    def broken(x_ptr, u_ptr, h0_ptr, h_ptr, B, T, N, BN, HAS_H0: tl.constexpr, BLOCK: tl.constexpr):
        lane = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(h_ptr + lane, tl.no_such_op(tl.load(x_ptr + lane)))

    v = aot.Variant("fwd", "fp32", "fp32", False, 256, 4)
    with pytest.raises(Exception, match="no_such_op"):
        aot.compile_variant(v, 90, fn=broken)


def test_the_spill_check_sees_a_spill():
    """The check can fail: a config with 64 lanes per thread (BLOCK 2048 on one warp) spills,
    and the report says so."""
    r = aot.compile_variant(aot.Variant("bwd", "fp32", "fp32", True, 2048, 1), 80)
    assert r.spill_stores > 0 and r.spill_loads > 0, r.ptxas
