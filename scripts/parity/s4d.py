"""seqbench's `s4d` layer side by side with the reference code, state-spaces/s4's
models/s4/s4d.py (the minimal S4D its example.py trains).

Needs einops and a clone of the reference; nothing of it is vendored here:

    git clone https://github.com/state-spaces/s4 /tmp/s4
    pip install einops
    PYTHONPATH=. python scripts/parity/s4d.py /tmp/s4

Prints, for one layer (d_model 32, N 64) with the reference's initial parameters loaded into
seqbench's: the largest difference of the outputs (seqbench's FFT path in training mode and
its recurrence in eval mode, against the reference's FFT) and of the input's gradient,
relative to their scale. Exit 1 when any is above 1e-5 (float32).
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import torch
from torch import nn

H, N, T, B = 32, 64, 40, 3


def reference_layer(repo: str):
    """s4d.S4D, loaded from its file; its one import from the repository's src package,
    DropoutNd, is used only when dropout > 0 and stands in as nn.Identity."""
    stub = types.ModuleType("src.models.nn")
    stub.DropoutNd = lambda p: nn.Identity()
    for name in ("src", "src.models"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["src.models.nn"] = stub
    spec = importlib.util.spec_from_file_location("s4d", Path(repo) / "models/s4/s4d.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.S4D


def main(repo: str) -> int:
    from seqbench.models.s4d import S4DLayer

    Ref = reference_layer(repo)
    torch.manual_seed(0)
    theirs = Ref(H, d_state=N, dropout=0.0, transposed=False)
    ours = S4DLayer(H, N, dropout=0.0, backend="auto")
    conv = theirs.output_linear[0]
    state = {
        "log_dt": theirs.kernel.log_dt,
        "C": theirs.kernel.C,
        "log_A_real": theirs.kernel.log_A_real,
        "A_imag": theirs.kernel.A_imag,
        "D": theirs.D,
        "output_linear.weight": conv.weight[..., 0],
        "output_linear.bias": conv.bias,
    }
    print(f"parameters loaded, strict: {ours.load_state_dict(state, strict=True)}")
    x = torch.randn(B, T, H)
    worst = 0.0
    for conv_path in (True, False):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, _ = theirs(xa)
        yb, _ = ours(xb, None, conv_path)
        g = torch.randn_like(ya)
        (ya * g).sum().backward()
        (yb * g).sum().backward()
        out = ((ya - yb).abs().max() / ya.abs().max()).item()
        grad = ((xa.grad - xb.grad).abs().max() / xa.grad.abs().max()).item()
        how = "FFT (training)" if conv_path else "recurrence (eval, stress)"
        print(f"seqbench's {how}: output max |Δ| / max |y| = {out:.2e}; input gradient {grad:.2e}")
        worst = max(worst, out, grad)
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
