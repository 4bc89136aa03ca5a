"""Regenerate the frozen stores under tests/store/data/: seqbench_0001.db (revision 0001, one
run) and seqbench_0004.db (revision 0004: two runs, a sweep and a baseline point with a
variant).

Kept for the record: a frozen file is committed and must not be regenerated after its revision
ships. Usage: python tests/store/make_frozen_db.py [0001|0004]
"""

import sys
from pathlib import Path

from sqlalchemy import create_engine, text

from seqbench.store import migrate

DATA = Path(__file__).parent / "data"
DEST = DATA / "seqbench_0001.db"


def frozen_0004() -> Path:
    dest = DATA / "seqbench_0004.db"
    dest.unlink(missing_ok=True)
    engine = create_engine(f"sqlite:///{dest}")
    migrate.upgrade(engine, "0004")
    config = '{"model": "lstm", "task": "adding", "seq_len": 100, "seed": %d, "steps": 50}'
    with engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO sweeps (name, spec, created_at, status) VALUES"
                " ('old-sweep', '{}', '2026-11-30 12:00:00', 'completed')"
            )
        )
        for seed in (0, 1):
            c.execute(
                text(
                    "INSERT INTO runs (uuid, created_at, status, kind, model, task, k, seq_len,"
                    " seed, config, config_hash, sweep_id) VALUES (:uuid,"
                    " '2026-11-30 12:00:00', 'completed', 'train', 'lstm', 'adding', NULL, 100,"
                    " :seed, :config, :hash, 1)"
                ),
                {
                    "uuid": f"00000000-0000-0000-0000-00000000000{seed + 1}",
                    "seed": seed,
                    "config": config % seed,
                    "hash": f"h{seed}",
                },
            )
            c.execute(
                text(
                    "INSERT INTO summaries (run_id, key, value, value_kind) VALUES"
                    " (:run, 'test_metric', :v, 'finite')"
                ),
                {"run": seed + 1, "v": 0.01 * (seed + 1)},
            )
        c.execute(
            text(
                "INSERT INTO baselines (name, model, task, k, metric, variant, value, value_kind,"
                " tolerance, direction, created_at) VALUES ('old', 'lstm', 'adding', NULL,"
                " 'test_metric', :variant, 0.015, 'finite', 0.01, 'lower',"
                " '2026-11-30 12:00:00')"
            ),
            {"variant": '{"seq_len":100}'},
        )
    engine.dispose()
    return dest


if __name__ == "__main__" and sys.argv[1:] == ["0004"]:
    print(frozen_0004())
elif __name__ == "__main__":
    DEST.unlink(missing_ok=True)
    engine = create_engine(f"sqlite:///{DEST}")
    migrate.upgrade(engine, "0001")
    with engine.begin() as c:
        c.execute(
            text(
                "INSERT INTO runs (uuid, created_at, status, kind, model, task, k, seq_len, seed,"
                " config, config_hash) VALUES ('00000000-0000-0000-0000-000000000001',"
                " '2026-11-29 12:00:00', 'completed', 'train', 'lstm', 'adding', 10, 100, 0,"
                " '{\"model\": \"lstm\"}', 'abc')"
            )
        )
        c.execute(
            text(
                "INSERT INTO summaries (run_id, key, value, value_kind) VALUES"
                " (1, 'test_metric', 0.0042, 'finite'), (1, 'best_valid_metric', NULL, 'nan')"
            )
        )
        c.execute(
            text(
                "INSERT INTO metrics (run_id, key, step, value, value_kind) VALUES"
                " (1, 'train_loss', 0, 0.2, 'finite'), (1, 'train_loss', 1, NULL, 'inf')"
            )
        )
    engine.dispose()
    print(DEST)
