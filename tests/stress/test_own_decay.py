"""The reproduction's λ^k test on trained weights (scripts/sql/teacher-own-decay.sql over
`stress --run`): an RNN trained on the teacher task held to ‖W‖₂ ≤ λ forgets at ≤ λ per
step, and the IRNN control, not made to forget, does not."""

import csv
import io
from pathlib import Path

SQL = Path(__file__).parents[2] / "scripts" / "sql"


def test_held_rnns_forget_at_lambda_and_the_control_does_not(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # checkpoints/ lands here
    db = str(tmp_path / "t.db")
    common = (
        'tasks = ["teacher"]\nseeds = [0]\n[grid.set]\nseq_len = [32]\nsteps = [60]\n'
        "hidden = [16]\nsave_checkpoint = [true]\neval_size = [64]\n"
    )
    (tmp_path / "own.toml").write_text(
        f'name = "own"\n[[grid]]\nmodels = ["rnn", "irnn"]\n{common}'
        f'[[grid]]\nmodels = ["rnn"]\n{common}stable = [true]\nlam = [0.5, 0.8]\n'
    )
    r = cli("--db", db, "sweep", "--spec", tmp_path / "own.toml", "-q", "--workers", "2")
    assert r.exit_code == 0, r.output
    r = cli("--db", db, "query", "-", "-p", "sweep=own", "-f", "csv",
            input=(SQL / "teacher-runs.sql").read_text())  # fmt: skip
    ids = r.stdout.split()[1:]
    assert len(ids) == 4, r.output
    run_args = [a for i in ids for a in ("--run", i)]
    r = cli("--db", db, "stress", "--models", "", *run_args, "--seq-len", "32", "-q")
    assert r.exit_code == 0, r.output
    r = cli("--db", db, "query", "-", "-p", "sweep=own", "-f", "csv",
            input=(SQL / "teacher-own-decay.sql").read_text())  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    held = {float(x["held_to"]): float(x["decay_hi"]) for x in rows if x["held_to"]}
    assert set(held) == {0.5, 0.8}
    assert all(decay <= lam for lam, decay in held.items()), held
    (irnn,) = [float(x["decay_lo"]) for x in rows if x["model"] == "irnn"]
    assert irnn > 0.8, rows  # the control: what a model that keeps its past measures
