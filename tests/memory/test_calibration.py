"""The calibration's CI slice (scripts/calibrate_memory.py --slice ci): a delay whose k* is
known and two null tasks whose honest answer is "nothing learned" (a target independent of
the input, and an offset on a shared split), each through `seqbench memory` in a fresh store.
The whole suite and its table are in docs/memory.md."""

import json

from tests.conftest import script_module


def test_the_calibration_slice_holds_its_goals(tmp_path):
    out = tmp_path / "cal.json"
    with script_module("calibrate_memory") as cal:
        assert cal.main(["--slice", "ci", "--workers", "2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    r = doc["rates"]
    assert r["nulls"] >= 2 and r["null_stated"] == 0  # no answer where nothing can be learned
    assert r["known"] >= 1 and r["held"] == r["known"] and r["exact"] == r["known"]
    null = next(row for row in doc["rows"] if row["truth"] is None)
    assert null["answer"]["verdict"] == "nothing-learned"
