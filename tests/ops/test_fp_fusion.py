"""The Triton kernels keep FP fusion (a·b + c as one FMA), as they were tested and measured with:
Triton 3.9 fuses by default, warns on every first compile that 3.10 will not, and
TRITON_DEFAULT_FP_FUSION decides. Read from Triton's own knob, in a fresh process."""

import os
import subprocess
import sys

import pytest

CODE = """
import warnings
warnings.simplefilter("error")  # Triton's warning about its default is an error here
import seqbench.ops.{module}.triton_kernel
from triton import knobs
print(knobs.language.fp_fusion_enabled(None))
"""


def _fusion(module: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    r = subprocess.run([sys.executable, "-c", CODE.format(module=module)], env={**base, **env},
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.strip()


@pytest.mark.parametrize("module", ["indrnn", "scan"])
def test_the_kernels_keep_fp_fusion_without_triton_s_warning(module):
    assert _fusion(module) == "True"


def test_the_user_s_setting_still_decides():
    assert _fusion("scan", TRITON_DEFAULT_FP_FUSION="0") == "False"
    assert _fusion("indrnn", TRITON_FORCE_DISABLE_FP_FUSION="1") == "False"
