"""The calibration's CI slice (scripts/calibrate_memory.py --slice ci): a delay whose k* is
known and a null task whose honest answer is "nothing learned", each through `seqbench
memory` in a fresh store. The whole suite and its table are in docs/memory.md."""

import importlib.util
import json
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "calibrate_memory.py"


def test_the_calibration_slice_holds_its_goals(tmp_path):
    spec = importlib.util.spec_from_file_location("calibrate_memory", SCRIPT)
    cal = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = cal  # its dataclasses look their module up
    try:
        spec.loader.exec_module(cal)
    finally:
        sys.modules.pop(spec.name, None)
    out = tmp_path / "cal.json"
    assert cal.main(["--slice", "ci", "--workers", "2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    r = doc["rates"]
    assert r["nulls"] >= 1 and r["null_stated"] == 0  # no answer where nothing can be learned
    assert r["known"] >= 1 and r["held"] == r["known"] and r["exact"] == r["known"]
    null = next(row for row in doc["rows"] if row["truth"] is None)
    assert null["answer"]["verdict"] == "nothing-learned"
