"""S4D-Lin (Gu et al. 2022): models/s4d.py."""

from __future__ import annotations

from seqbench.errors import UsageError
from seqbench.models.spec import BACKEND, DROPOUT, ModelSpec, builder

# the parameters s4d.py trains without weight decay at lr = min(0.001, lr)
_SSM = ("log_dt", "log_A_real", "A_imag")


def _at_most_1e3(lr: float) -> float:
    return min(1e-3, lr)


def _check(c) -> None:
    if c.d_state is not None and (c.d_state < 2 or c.d_state % 2):
        raise UsageError(f"s4d: d_state (N, its N/2 complex modes) must be even, got {c.d_state}")


SPEC = ModelSpec(
    "s4d",
    "S4D-Lin (Gu et al. 2022): diagonal SSM, trained as an FFT convolution, run as a scan",
    True,
    builder("seqbench.models.s4d", "S4D"),
    {"hidden": 64, "d_state": 64, "layers": 2},
    activation_units=8,
    # the kernel's N/2 complex modes per channel (FFT path) or the scan's state (eval):
    # H·N reals a step, with gradients, past the default N = 64
    state_units=lambda c, H: 2 * H * max(0, (c.d_state or 64) - 64),
    check=_check,
    # s4d.py registers these with weight decay 0 and lr = min(0.001, lr) (example.py)
    no_decay=_SSM,
    own_lr=(_SSM, _at_most_1e3),
    options=(DROPOUT, BACKEND),
    reads=(),
)
