"""scripts/rebold.py re-marks old tables by the report's rule: bold only beyond the noise."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "rebold.py"
spec = importlib.util.spec_from_file_location("rebold", SCRIPT)
rebold = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rebold)


def test_a_bold_cell_within_the_noise_loses_its_bold_and_a_clear_one_keeps_it():
    lines = [
        "| task | k | rnn | tcn | baseline |",
        "|---|---|---|---|---|",
        "| adding | 4 | **0.10 ± 0.05 (n=3)** | 0.13 ± 0.05 (n=3) | 0.1667 |",  # p ≈ 0.5
        "| adding | 8 | **0.06 ± 0.014 (n=2)** | 0.18 ± 0.02 (n=3) | 0.1667 |",  # p ≈ 0.005
        "| digits | 8 | 0.80 [0.7, 0.9] (n=3) | **0.95 [0.94, 0.96] (n=3)** | 0.1 |",
    ]
    out, changed = rebold.rebold(lines)
    assert changed == 1
    assert out[2] == "| adding | 4 | 0.10 ± 0.05 (n=3) | 0.13 ± 0.05 (n=3) | 0.1667 |"
    assert out[3:] == lines[3:]
