"""Regenerate tests/store/data/seqbench_0001.db, a store frozen at revision 0001 with one run.

Kept for the record: the frozen file is committed and must not be regenerated after 0001 ships.
Usage: python tests/store/make_frozen_db.py
"""

from pathlib import Path

from sqlalchemy import create_engine, text

from seqbench.store import migrate

DEST = Path(__file__).parent / "data" / "seqbench_0001.db"

if __name__ == "__main__":
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
