"""State size is recorded with every run and is a report axis (`--by state_size`), and
`seqbench models` shows it beside the parameter count."""

from __future__ import annotations

import csv
import io


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_runs_record_their_state_size_and_reports_group_by_it(cli, tmp_path):
    db = tmp_path / "s.db"
    for model, d_state in (("lru", 4), ("lru", 8), ("lstm", None)):
        args = ["--db", db, "train", "--model", model, "--task", "teacher", "--seq-len", "8"]
        args += ["--steps", "3", "--set", "hidden=8", "--set", "layers=1", "--quiet"]
        if d_state:
            args += ["--set", f"d_state={d_state}"]
        r = cli(*args)
        assert r.exit_code == 0, r.output
    r = cli("--db", db, "report", "--by", "state_size", "--format", "csv")
    assert r.exit_code == 0, r.output
    got = {(row["model"], row["state_size"]) for row in _rows(r.stdout)}
    # LRU: N complex modes, 2N reals; LSTM: h and c
    assert got == {("lru", "8"), ("lru", "16"), ("lstm", "16")}


def test_models_lists_params_and_state_for_the_new_families(cli):
    r = cli("models", "--format", "csv")
    assert r.exit_code == 0, r.output
    rows = {row["model"]: row for row in _rows(r.stdout)}
    for name, state in (("lru", 2 * 64 * 2), ("s4d", 64 * 64 * 2), ("mamba", 128 * 16 * 2)):
        assert int(rows[name]["state"]) == state
        assert int(rows[name]["params"]) > 0
    assert int(rows["linear-attention"]["state"]) == 2 * 4 * (16 * 16 + 16)
