"""benchmarks/gpu_check.sh keeps to its time budget: a step that does not fit in what is left
is skipped with a line, a step that runs past it is cut, and the log has every line."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_steps_that_do_not_fit_are_skipped_and_logged(tmp_path):
    log = tmp_path / "gpu.txt"
    env = {**os.environ, "GPU_CHECK_BUDGET": "5", "GPU_CHECK_LOG": str(log)}
    t0 = time.monotonic()
    r = subprocess.run(
        ["bash", str(ROOT / "benchmarks/gpu_check.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    for step in ("1.", "2.", "3.", "4."):
        assert f"== SKIPPED {step}" in text
    assert "== done in" in text and time.monotonic() - t0 < 60
