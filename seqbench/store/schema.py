"""The results schema as a SQLAlchemy 2.0 typed ORM. Alembic migrations in migrations/versions
create exactly this (tests/store/test_migrations.py compares them).

Non-finite floats: SQLite cannot store NaN (it becomes NULL), so every float that may blow up
is stored as (value, value_kind) with value NULL unless value_kind == "finite". Use
:func:`split_float` / :func:`join_float` to convert.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from uuid import uuid4

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from seqbench.store.values import join_float, split_float, utcnow

__all__ = ["join_float", "split_float", "utcnow"]  # the value codec lives in store/values.py


class Base(DeclarativeBase):
    type_annotation_map: ClassVar = {dict[str, Any]: JSON}


class Sweep(Base):
    __tablename__ = "sweeps"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    status: Mapped[str] = mapped_column(String(20), default="running")

    runs: Mapped[list[Run]] = relationship(back_populates="sweep")


class SweepPoint(Base):
    """One point of a sweep's expanded grid; done when any run with its config_hash is."""

    __tablename__ = "sweep_points"
    __table_args__ = (UniqueConstraint("sweep_id", "config_hash", name="uq_sweep_points_hash"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    sweep_id: Mapped[int] = mapped_column(ForeignKey("sweeps.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    config_hash: Mapped[str] = mapped_column(String(64), index=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(String(36), unique=True, default=lambda: str(uuid4()))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    status: Mapped[str] = mapped_column(String(20), default="running", index=True)
    kind: Mapped[str] = mapped_column(String(20), default="train")
    model: Mapped[str] = mapped_column(String(50), index=True)
    task: Mapped[str] = mapped_column(String(50), index=True)
    k: Mapped[int | None] = mapped_column(Integer)
    seq_len: Mapped[int | None] = mapped_column(Integer)
    seed: Mapped[int | None] = mapped_column(Integer)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    config_hash: Mapped[str] = mapped_column(String(64), index=True)
    sweep_id: Mapped[int | None] = mapped_column(ForeignKey("sweeps.id", ondelete="SET NULL"))
    environment: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime)
    wall_seconds: Mapped[float | None] = mapped_column(Float)
    n_params: Mapped[int | None] = mapped_column(Integer)
    tags: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    checkpoint: Mapped[str | None] = mapped_column(Text)
    name: Mapped[str | None] = mapped_column(String(200), index=True)  # people's label
    archived_at: Mapped[datetime | None] = mapped_column(DateTime)  # set: out of lists/reports

    sweep: Mapped[Sweep | None] = relationship(back_populates="runs")


class _Value:
    """A float that may be ±inf or nan: value, NULL unless value_kind is "finite"."""

    value: Mapped[float | None] = mapped_column(Float)
    value_kind: Mapped[str] = mapped_column(String(8), default="finite")


class _RunValue(_Value):
    """One of a run's values, deleted with its run; id and run_id first, as its table has them."""

    id: Mapped[int] = mapped_column(primary_key=True, sort_order=-1)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), sort_order=-1)


class Metric(_RunValue, Base):
    """A logged value at a step: the training curve's points."""

    __tablename__ = "metrics"
    __table_args__ = (Index("ix_metrics_run_key_step", "run_id", "key", "step"),)
    key: Mapped[str] = mapped_column(String(100))
    step: Mapped[int] = mapped_column(Integer)


class Summary(_RunValue, Base):
    """A run's one value under a key (test_metric, baseline, …)."""

    __tablename__ = "summaries"
    __table_args__ = (UniqueConstraint("run_id", "key", name="uq_summaries_run_key"),)
    key: Mapped[str] = mapped_column(String(100), index=True)


class Curve(_RunValue, Base):
    """A curve's point at x (a stress test's gradient norm by distance, …)."""

    __tablename__ = "curves"
    __table_args__ = (Index("ix_curves_run_kind", "run_id", "kind"),)
    kind: Mapped[str] = mapped_column(String(50))
    x: Mapped[float] = mapped_column(Float)


class Baseline(Base):
    __tablename__ = "baselines"
    __table_args__ = (
        UniqueConstraint(
            "name", "model", "task", "k", "metric", "variant", name="uq_baselines_point"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    model: Mapped[str] = mapped_column(String(50))
    task: Mapped[str] = mapped_column(String(50))
    k: Mapped[int | None] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(100))
    # canonical JSON of the config fields telling apart points of one (model, task, k)
    variant: Mapped[str] = mapped_column(String(500), default="", server_default="")
    # canonical JSON of the config the point was measured on, seed aside ('' for old points)
    config: Mapped[str] = mapped_column(Text, default="", server_default="")
    value: Mapped[float | None] = mapped_column(Float)
    value_kind: Mapped[str] = mapped_column(String(8), default="finite")
    tolerance: Mapped[float] = mapped_column(Float, default=0.0)
    direction: Mapped[str] = mapped_column(String(8))  # "lower" or "higher" is better
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class AnswerRow(Base):
    """`seqbench memory`'s answer for one name: how much context the task needs, derived from
    the runs linked in answer_runs (re-derived each time the command runs; stale when a run
    it rests on was deleted or archived since)."""

    __tablename__ = "answers"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)  # its sweep's name
    task: Mapped[str] = mapped_column(String(50), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    verdict: Mapped[str] = mapped_column(String(20))
    k_star: Mapped[int | None] = mapped_column(Integer)
    k_low: Mapped[int | None] = mapped_column(Integer)
    k_high: Mapped[int | None] = mapped_column(Integer)  # NULL with k_star: past the largest k
    max_k: Mapped[int] = mapped_column(Integer)
    epsilon: Mapped[float] = mapped_column(Float)
    metric: Mapped[str] = mapped_column(String(100))
    n_runs: Mapped[int] = mapped_column(Integer)
    sentence: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)  # cells, warnings, best, baseline


class AnswerRun(Base):
    """A run an answer rests on."""

    __tablename__ = "answer_runs"

    answer_id: Mapped[int] = mapped_column(
        ForeignKey("answers.id", ondelete="CASCADE"), primary_key=True
    )
    run_id: Mapped[int] = mapped_column(
        ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True, index=True
    )
