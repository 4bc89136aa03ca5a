"""Linear Recurrent Unit (Orvieto et al. 2023): models/lru.py."""

from __future__ import annotations

from seqbench.models.spec import BACKEND, DROPOUT, ModelSpec, builder

# the parameters minimal-LRU trains without weight decay at half the learning rate
_SSM = ("nu_log", "theta_log", "gamma_log", "B_re", "B_im")


def _half(lr: float) -> float:
    return 0.5 * lr


SPEC = ModelSpec(
    "lru",
    "Linear Recurrent Unit (Orvieto et al. 2023): complex diagonal, |λ| < 1 by construction",
    True,
    builder("seqbench.models.lru", "LRU"),
    {"hidden": 64, "d_state": 64, "layers": 2},
    stable=True,
    activation_units=16,
    # complex h, its input b and their gradients: 2 × 2 × 2 reals per mode and step,
    # past the default 64 modes that activation_units already covers
    state_units=lambda c, H: 8 * max(0, (c.d_state or 64) - 64),
    # minimal-LRU's optimiser (train_helpers.create_train_state, run_train.py's
    # lr_factor 0.5): Adam without weight decay at half the learning rate on these
    no_decay=_SSM,
    own_lr=(_SSM, _half),
    options=(DROPOUT, BACKEND),
    reads=(),
)
