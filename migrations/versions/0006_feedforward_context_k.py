"""runs.k of a feedforward run is the context its model had.

Before 0006 a run stored the k it was given (NULL without one), while the networks built had
another context: a TCN the receptive field of the fewest levels covering k, a gated CNN whole
layers, a transformer L(k − 1) + 1 over its L layers, and a model given no k its default.
From 0006 on, the models' context is exactly k and a run stores it. This migration relabels
the training runs (and baseline points) of tcn, gcnn, transformer and window recorded before
it with the context their networks really had, by the rules of that code (written out here,
not imported: the rules are history). A run whose config lacks the fields is left alone.

Their config_hash is kept: it differs from any new run's of the same fields anyway (new
feedforward hashes include the exact context), so old and new networks never dedupe.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

import json
import math

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

FEEDFORWARD = ("tcn", "gcnn", "transformer", "window")


def _old_context(model: str, task: str, cfg: dict) -> int | None:
    """The context the pre-0006 network of `model` had, capped at the steps it was fed."""
    try:
        T = int(cfg["seq_len"])
        k, levels = cfg.get("k"), cfg.get("levels")
        fed = T + (20 if task == "copy" else 0)  # copy: T blanks between 20 symbols
        if model == "tcn":
            K = int(cfg["kernel_size"])
            if levels is None:
                if K < 2:
                    return 1
                want, levels = (k if k is not None else T), 1
                while 1 + 2 * (K - 1) * (2**levels - 1) < want:
                    levels += 1
            rf = 1 + 2 * (K - 1) * (2 ** int(levels) - 1)
        elif model == "gcnn":
            K = int(cfg["kernel_size"])
            if levels is None:
                want = k if k is not None else min(T, 32)
                levels = max(1, math.ceil((want - 1) / (K - 1)))
            rf = 1 + int(levels) * (K - 1)
        elif model == "transformer":
            window = k if k is not None else T
            rf = 1 + (window - 1) * int(cfg["layers"])
        else:  # window
            rf = k if k is not None else min(T, 32)
        return min(int(rf), fed)
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _config(value) -> dict:
    if isinstance(value, dict):
        return value
    try:
        out = json.loads(value) if value else {}
    except (TypeError, ValueError):
        return {}
    return out if isinstance(out, dict) else {}


def upgrade() -> None:
    bind = op.get_bind()
    names = ", ".join(f"'{m}'" for m in FEEDFORWARD)
    runs = bind.execute(
        sa.text(
            f"SELECT id, model, task, k, config FROM runs WHERE kind = 'train' "
            f"AND model IN ({names})"
        )
    ).fetchall()
    for run_id, model, task, k, config in runs:
        new = _old_context(model, task, _config(config))
        if new is not None and new != k:
            bind.execute(sa.text("UPDATE runs SET k = :k WHERE id = :id"), {"k": new, "id": run_id})
    points = bind.execute(
        sa.text(
            f"SELECT id, model, task, k, config, variant FROM baselines WHERE model IN ({names})"
        )
    ).fetchall()
    for point_id, model, task, k, config, variant in points:
        cfg = _config(config)
        if "seq_len" not in cfg:
            continue  # a point saved before 0005 has no config: matched by variant as before
        new = _old_context(model, task, {**cfg, "k": cfg.get("k", k)})
        if new is not None and new != k:
            # TCNs given k = 1, 2, 4, 8 were one network (context 13): their points stay apart
            # by the k they were given, in the variant
            told = {**_config(variant), "k": cfg.get("k", k)}
            bind.execute(
                sa.text("UPDATE baselines SET k = :k, variant = :v WHERE id = :id"),
                {
                    "k": new,
                    "v": json.dumps(told, sort_keys=True, separators=(",", ":")),
                    "id": point_id,
                },
            )


def downgrade() -> None:
    """Back to the k each run was given (its config's; NULL without one)."""
    bind = op.get_bind()
    names = ", ".join(f"'{m}'" for m in FEEDFORWARD)
    rows = bind.execute(
        sa.text(f"SELECT id, config FROM runs WHERE model IN ({names}) AND kind = 'train'")
    ).fetchall()
    for row_id, config in rows:
        cfg = _config(config)
        if "seq_len" not in cfg:
            continue  # not relabelled by upgrade()
        bind.execute(
            sa.text("UPDATE runs SET k = :k WHERE id = :id"), {"k": cfg.get("k"), "id": row_id}
        )
    rows = bind.execute(
        sa.text(f"SELECT id, variant FROM baselines WHERE model IN ({names})")
    ).fetchall()
    for row_id, variant in rows:
        told = _config(variant)
        if "k" not in told:
            continue  # not relabelled by upgrade()
        given = told.pop("k")
        bind.execute(
            sa.text("UPDATE baselines SET k = :k, variant = :v WHERE id = :id"),
            {
                "k": given,
                "v": json.dumps(told, sort_keys=True, separators=(",", ":")) if told else "",
                "id": row_id,
            },
        )
