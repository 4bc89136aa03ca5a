"""seqbench's `mamba` mixer side by side with the reference code, state-spaces/mamba's
mamba_simple.Mamba, on CPU.

Needs einops and a clone of the reference; nothing of it is vendored here, and its CUDA
extensions are not built: its slow path runs (use_fast_path=False, the conv as nn.Conv1d)
with its own pure-PyTorch selective_scan_ref in place of the CUDA selective scan.

    git clone https://github.com/state-spaces/mamba /tmp/mamba
    pip install einops
    PYTHONPATH=. python scripts/parity/mamba.py /tmp/mamba

Prints, for one mixer (d_model 32, d_state 16, d_conv 4, expand 2) with the reference's
initial parameters loaded into seqbench's: the largest difference of the outputs and of the
input's gradient, relative to their scale. Exit 1 when either is above 1e-5 (float32).
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import torch

H, D_STATE, T, B = 32, 16, 40, 3


def reference_mixer(repo: str):
    """mamba_simple.Mamba, imported without the package's __init__ (which imports the CUDA and
    Triton ops) and with a stand-in for the Triton layer norm only the fused path uses."""
    pkg = types.ModuleType("mamba_ssm")
    pkg.__path__ = [str(Path(repo) / "mamba_ssm")]
    sys.modules["mamba_ssm"] = pkg
    for sub in ("ops", "ops.triton", "modules", "utils"):
        m = types.ModuleType(f"mamba_ssm.{sub}")
        m.__path__ = [str(Path(repo) / "mamba_ssm" / sub.replace(".", "/"))]
        sys.modules[f"mamba_ssm.{sub}"] = m
    ln = types.ModuleType("mamba_ssm.ops.triton.layer_norm")
    ln._layer_norm_fwd = None  # used by mamba_inner_fn (the fused CUDA path) only
    sys.modules["mamba_ssm.ops.triton.layer_norm"] = ln
    ssi = importlib.import_module("mamba_ssm.ops.selective_scan_interface")
    simple = importlib.import_module("mamba_ssm.modules.mamba_simple")
    simple.selective_scan_fn = ssi.selective_scan_ref  # the reference's own reference scan
    return simple.Mamba


def main(repo: str) -> int:
    from seqbench.models.mamba import MambaMixer

    Ref = reference_mixer(repo)
    torch.manual_seed(0)
    theirs = Ref(d_model=H, d_state=D_STATE, d_conv=4, expand=2, use_fast_path=False)
    ours = MambaMixer(H, D_STATE, backend="auto")
    missing = ours.load_state_dict(theirs.state_dict(), strict=True)
    print(f"parameters loaded by name, strict: {missing}")
    x = torch.randn(B, T, H)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya = theirs(xa)
    yb, _ = ours(xb, None)
    g = torch.randn_like(ya)
    (ya * g).sum().backward()
    (yb * g).sum().backward()
    out = ((ya - yb).abs().max() / ya.abs().max()).item()
    grad = ((xa.grad - xb.grad).abs().max() / xa.grad.abs().max()).item()
    print(f"output: max |Δ| / max |y| = {out:.2e}; input gradient: {grad:.2e}")
    # a carried state continues the sequence (the reference's step() path needs its cache
    # objects; ours is checked against its own whole-sequence output)
    y1, s = ours(x[:, :17], None)
    y2, _ = ours(x[:, 17:], s)
    cont = ((torch.cat([y1, y2], 1) - yb.detach()).abs().max() / ya.abs().max()).item()
    print(f"seqbench's carried state, split at 17: max |Δ| / max |y| = {cont:.2e}")
    return 0 if max(out, grad, cont) <= 1e-5 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
