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
    # an exact k* is a truth shown within by its own test, at the level the answer gave it
    assert r["shown_at_level"] == r["shown_at_alpha"] == r["known"]
    for row in doc["rows"]:
        test = row["answer"]["truth_test"]
        if row["truth"] is None:
            assert test is None
        else:
            assert 0 <= test["p"] < test["level"] <= test["alpha"] == 0.05
    null = next(row for row in doc["rows"] if row["truth"] is None)
    assert null["answer"]["verdict"] == "nothing-learned"


def test_follow_advice_runs_the_seeds_the_answer_names():
    """--follow-advice reads the seeds an answer's own warning asks for, as `--seeds` parses
    them (six after three: 0 … 5), and none from an answer that asks for none; a teacher's
    truth follows the teachers those seeds draw."""
    import pandas as pd

    from seqbench.memory.answer import derive

    def answer(cells):
        rows = [(i, m, k, s, v, 1.0) for i, ((m, k), vs) in enumerate(cells.items())
                for s, v in enumerate(vs)]  # fmt: skip
        df = pd.DataFrame(rows, columns=["run_id", "model", "k", "seed", "value", "baseline"])
        return derive(df, task="t", higher_is_better=False, max_k=8, metric="mse").to_dict()

    low, flat = [0.010, 0.011, 0.009], [1.0, 0.99, 1.01]
    noisy = answer({("tcn", 1): flat, ("tcn", 2): [0.05, 0.9, 0.04], ("tcn", 4): low,
                    ("tcn", 8): low})  # fmt: skip
    clean = answer({("tcn", 1): flat, ("tcn", 2): flat, ("tcn", 4): low, ("tcn", 8): low})
    with script_module("calibrate_memory") as cal:
        assert cal.advised_seeds(noisy) == [0, 1, 2, 3, 4, 5], noisy["warnings"]
        assert cal.advised_seeds(clean) is None
        case = cal.Case("teacher", cal.teacher_truth(0.5, 16, (3, 4, 5)), [], teacher=(0.5, 16))
        assert case.truth_at([3, 4, 5]) == case.truth == 2  # docs/memory.md's row
        assert case.truth_at(list(range(6))) == cal.teacher_truth(0.5, 16, tuple(range(6)))
