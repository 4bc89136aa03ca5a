"""Every Triton scan variant a launch can choose compiles ahead of time for sm_80 and sm_90
with Triton's bundled ptxas, no GPU, and spills no register."""

from __future__ import annotations

import os

import pytest

triton = pytest.importorskip("triton")
if os.environ.get("TRITON_INTERPRET") == "1":
    pytest.skip("ahead-of-time compilation runs without TRITON_INTERPRET", allow_module_level=True)

from seqbench.ops.scan import aot  # noqa: E402


def test_every_scan_variant_compiles_for_sm80_and_sm90_without_spills():
    variants = aot.variants()
    # 2 kernels × real/complex × constant/per-step a × with/without h0 × the autotune configs
    assert len(variants) == 2 * 2 * 2 * 2 * len(aot.launch_configs())
    results = aot.compile_all(processes=2)
    failed = [r for r in results if isinstance(r, str)]
    assert not failed, failed[:5]
    assert len(results) == len(variants) * len(aot.ARCHS)
    spilled = [r.variant.label for r in results if r.spill_stores or r.spill_loads]
    assert not spilled, spilled[:5]
    assert all(0 < r.registers <= 255 for r in results)


def test_a_broken_scan_kernel_is_caught():
    import triton.language as tl

    @triton.jit
    def broken(a_ptr, b_ptr, h0_ptr, h_ptr, B, T, N, BN, A_CONST: tl.constexpr,
               COMPLEX: tl.constexpr, HAS_H0: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
        lane = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(h_ptr + lane, tl.no_such_op(tl.load(b_ptr + lane)))

    v = aot.Variant("fwd", True, True, False, 128, 2)
    with pytest.raises(Exception, match="no_such_op"):
        aot.compile_variant(v, 90, fn=broken)
