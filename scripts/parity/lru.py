"""seqbench's `lru` side by side with the reference code, NicolasZucchet/minimal-LRU (JAX/flax).

Needs jax, flax and a clone of the reference; nothing of it is vendored here:

    git clone https://github.com/NicolasZucchet/minimal-LRU /tmp/minimal-LRU
    pip install jax flax
    PYTHONPATH=. python scripts/parity/lru.py /tmp/minimal-LRU

Prints two things, each theirs beside ours:
1. the initial parameters' statistics over 20 draws (|λ|, phase, γ, B, C, D, the dense layers,
   the norms), and
2. the stacked encoder's output on one input with their initial parameters copied into ours
   (pre-norm, layer norm, as seqbench builds it): the largest difference, relative to the
   output's scale. Exit 1 when it is above 1e-5 (float32).
"""

from __future__ import annotations

import sys
from functools import partial

import numpy as np
import torch

H, N, LAYERS, T, IN = 32, 64, 2, 50, 3
DRAWS = 20


def theirs(repo: str):
    sys.path.insert(0, repo)
    import jax
    import jax.numpy as jnp
    from lru.model import LRU, StackedEncoderModel

    model = StackedEncoderModel(
        lru=partial(LRU, d_hidden=N, d_model=H),
        d_model=H,
        n_layers=LAYERS,
        norm="layer",
        prenorm=True,
        training=False,
    )
    x = np.random.default_rng(0).standard_normal((T, IN)).astype(np.float32)

    def init(seed):
        return model.init(jax.random.PRNGKey(seed), jnp.asarray(x))["params"]

    return model, x, init


def flat_theirs(p) -> dict[str, np.ndarray]:
    """Their parameters under seqbench's names (dense kernels transposed to torch's layout)."""
    out = {"encoder.weight": p["encoder"]["kernel"].T, "encoder.bias": p["encoder"]["bias"]}
    for i in range(LAYERS):
        layer = p[f"layers_{i}"]
        for name in ("nu_log", "theta_log", "gamma_log", "B_re", "B_im", "C_re", "C_im", "D"):
            out[f"lrus.{i}.{name}"] = layer["seq"][name]
        for d in ("out1", "out2"):
            out[f"{d}.{i}.weight"] = layer[d]["kernel"].T
            out[f"{d}.{i}.bias"] = layer[d]["bias"]
        out[f"norms.{i}.weight"] = layer["normalization"]["scale"]
        out[f"norms.{i}.bias"] = layer["normalization"]["bias"]
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def ours(seed: int):
    from seqbench.config import ModelArgs
    from seqbench.models import make_backbone

    torch.manual_seed(seed)
    return make_backbone("lru", IN, ModelArgs(hidden=H, d_state=N, layers=LAYERS, seq_len=T))


def kind(name: str) -> str:
    """A parameter's role, the same in every layer."""
    parts = name.split(".")
    return ".".join(p for p in parts if not p.isdigit())


def stats(values: list[np.ndarray]) -> tuple[float, float, float, float]:
    v = np.concatenate([np.ravel(a) for a in values])
    return v.mean(), v.std(), v.min(), v.max()


def main(repo: str) -> int:
    model, x, init = theirs(repo)
    theirs_by_kind: dict[str, list] = {}
    ours_by_kind: dict[str, list] = {}
    for seed in range(DRAWS):
        for k, v in flat_theirs(init(seed)).items():
            theirs_by_kind.setdefault(kind(k), []).append(v)
        for k, v in ours(seed).named_parameters():
            ours_by_kind.setdefault(kind(k), []).append(v.detach().double().numpy())
    # |λ| and the phase, derived the same way from both
    for by in (theirs_by_kind, ours_by_kind):
        by["|λ|"] = [np.exp(-np.exp(v)) for v in by["lrus.nu_log"]]
        by["phase"] = [np.exp(v) for v in by["lrus.theta_log"]]
    print(f"1. initial parameters over {DRAWS} draws (H = {H}, N = {N}): mean, std, min, max")
    print(f"{'parameter':<20} {'minimal-LRU':>40}   {'seqbench':>40}")
    worst = 0.0
    for k in sorted(theirs_by_kind):
        a, b = stats(theirs_by_kind[k]), stats(ours_by_kind[k])
        fa = " ".join(f"{v:9.4f}" for v in a)
        fb = " ".join(f"{v:9.4f}" for v in b)
        print(f"{k:<20} {fa:>40}   {fb:>40}")
        if a[1] > 0:  # constants (bias 0, scale 1) compare in the columns above
            worst = max(worst, abs(a[1] - b[1]) / a[1])
    print(f"largest relative difference of a standard deviation: {worst:.3f}")

    params = init(0)
    bb = ours(0).eval()
    with torch.no_grad():
        named = dict(bb.named_parameters())
        for k, v in flat_theirs(params).items():
            named[k].copy_(torch.as_tensor(v, dtype=named[k].dtype))
        y_ours = bb(torch.as_tensor(x)[None])[0][0].double().numpy()
    y_theirs = np.asarray(model.apply({"params": params}, x), dtype=np.float64)
    diff = np.abs(y_ours - y_theirs).max() / np.abs(y_theirs).max()
    print(
        f"2. the stacked encoder's output, their parameters in ours: {diff:.2e} (max |Δ| / max |y|)"
    )
    return 0 if diff <= 1e-5 else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
