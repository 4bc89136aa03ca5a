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


def test_a_deep_stack_reads_its_per_step_rate(cli, tmp_path, monkeypatch):
    """A 2-layer IndRNN trained with --stable --lam 0.8: `stress --run` stores the per-step
    decay of its own truncation error, ≤ 0.8 (fitted without the k^(L−1) factor two stacked
    contractions leave, the same weights read 0.81)."""
    import sqlite3

    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "d.db")
    r = cli("--db", db, "train", "-m", "indrnn", "-t", "adding", "--stable", "--lam", "0.8",
            "--steps", "30", "--seq-len", "50", "--save-checkpoint", "-q")  # fmt: skip
    assert r.exit_code == 0, r.output
    r = cli("--db", db, "stress", "--models", "", "--run", "1", "--seq-len", "100", "-q")
    assert r.exit_code == 0, r.output
    con = sqlite3.connect(db)
    ((layers, bound, decay),) = con.execute(
        "SELECT json_extract(t.config, '$.layers'), b.value, d.value FROM runs t "
        "JOIN summaries b ON b.run_id = t.id AND b.key = 'stability_bound' "
        "JOIN runs s ON s.kind = 'stress' "
        "JOIN summaries d ON d.run_id = s.id AND d.key = 'decay_rate' WHERE t.id = 1"
    ).fetchall()
    con.close()
    assert layers == 2 and bound <= 0.8 + 1e-6
    assert 0 < decay <= 0.8, decay


def test_the_decay_fit_is_per_step_for_a_stack():
    """On errors of exactly C·k^(L−1)·λ^k the fit returns λ for depth L; a depth-1 fit of the
    same errors overstates it."""
    import numpy as np

    from seqbench.stress.analysis import decay_rate

    ks = [1, 2, 4, 8, 16, 32]
    for depth, lam in ((1, 0.5), (2, 0.8), (3, 0.9)):
        errs = 3.0 * np.array(ks, float) ** (depth - 1) * lam ** np.array(ks, float)
        assert abs(decay_rate(ks, errs, 0.0, depth) - lam) < 1e-9
        if depth > 1:
            assert decay_rate(ks, errs, 0.0, 1) > lam + 0.01
