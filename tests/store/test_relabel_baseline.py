"""scripts/relabel_baseline.py: a baseline file from before revision 0006, relabelled by that
migration, equals what a re-run of its preset wrote (bai-tcn at --scale tiny: no network
changed, only the TCN points' k, NULL before, the context after). The re-run is kept as it was
committed then: the preset has since changed (size-matched, copy fed floats, 2026-12-02)."""

import json
import runpy
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OLD = Path(__file__).parent / "data" / "bai-tcn-tiny-0005.json"  # as committed before 0006
RERUN = Path(__file__).parent / "data" / "bai-tcn-tiny-0006.json"  # reproduce.sh tiny after it


def _points(path):
    return {
        (p["model"], p["task"], p["metric"]): (p["k"], p["value"])
        for p in json.loads(Path(path).read_text())["points"]
    }


def test_a_relabelled_file_equals_the_rerun_one(tmp_path):
    path = tmp_path / "old.json"
    shutil.copy(OLD, path)
    relabel = runpy.run_path(str(ROOT / "scripts" / "relabel_baseline.py"))["relabel"]
    assert relabel(path) == 16
    old, new = _points(OLD), _points(path)
    rerun = _points(RERUN)
    assert new == rerun
    changed = {key for key in old if old[key] != new[key]}
    assert changed == {key for key in new if key[0] == "tcn"} and len(changed) == 4
    assert all(old[key][1] == new[key][1] and old[key][0] is None for key in changed)
