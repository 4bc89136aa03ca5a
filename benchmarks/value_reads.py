"""A run's values read three ways, side by side in one process: what `Store.last_metrics` costs
a sweep's page, which reads it for every running point on each refresh.

- orm: the ORM query the Store ran before (SQLAlchemy session, pooled connection);
- sql, a connection each: the store's SQL path as it was on PostgreSQL (the read-only walls,
  one new connection per statement);
- sql, kept: the same statement on the store's kept read connection (now, both backends).

Each is the best of --rounds rounds of --reads reads, interleaved; `--busy N` runs N processes
spinning beside them (these machines are noisy). PostgreSQL rows need --pg URL (scripts/
start-postgres.sh prints one).

Usage: python benchmarks/value_reads.py [--pg URL] [--reads 200] [--rounds 5] [--busy 1]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

from sqlalchemy import select

from seqbench.store.opening import open_store
from seqbench.store.query import run_query
from seqbench.store.schema import Metric
from seqbench.store.values import join_float


def spin() -> None:
    while True:
        pass


def fill(url: str) -> int:
    store = open_store(url)
    run = store.create_run(status="running", kind="train", model="rnn", task="adding",
                           config={}, config_hash="bench")  # fmt: skip
    rows = [(key, step, 1.0 / step) for key in ("loss", "acc", "lr", "grad") for step in
            range(1, 51)]  # fmt: skip
    store.log_metrics(run.id, rows)
    store.dispose()
    return run.id


def orm(store, run_id: int) -> dict:
    q = select(Metric.key, Metric.step, Metric.value, Metric.value_kind).where(
        Metric.run_id == run_id
    )
    with store.Session() as s:
        rows = s.execute(q.order_by(Metric.key, Metric.step, Metric.id)).all()
    return {k: (step, join_float(v, vk)) for k, step, v, vk in rows}


def per_statement(store, run_id: int) -> dict:
    _cols, rows = run_query(
        store.url,
        "SELECT key, step, value, value_kind FROM metrics WHERE run_id = :r ORDER BY key, step, id",
        {"r": run_id},
    )
    return {k: (step, join_float(v, vk)) for k, step, v, vk in rows}


def kept(store, run_id: int) -> dict:
    return store.last_metrics(run_id)


def measure(url: str, reads: int, rounds: int) -> dict[str, float]:
    run_id = fill(url)
    store = open_store(url)
    ways = {"orm": orm, "sql, a connection each": per_statement, "sql, kept": kept}
    want = orm(store, run_id)
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(rounds):
        for name, read in ways.items():
            assert read(store, run_id) == want, name
            t = time.perf_counter()
            for _ in range(reads):
                read(store, run_id)
            best[name] = min(best[name], (time.perf_counter() - t) / reads)
    store.dispose()
    return best


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pg", default=None, help="a PostgreSQL URL whose public schema is scratch")
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--busy", type=int, default=0)
    a = p.parse_args()
    busy = [mp.Process(target=spin, daemon=True) for _ in range(a.busy)]
    for b in busy:
        b.start()
    with tempfile.TemporaryDirectory() as d:
        stores = {"sqlite": str(Path(d) / "bench.db")}
        if a.pg:
            from sqlalchemy import create_engine, text

            engine = create_engine(a.pg)
            with engine.begin() as c:
                c.execute(text("DROP SCHEMA public CASCADE"))
                c.execute(text("CREATE SCHEMA public"))
            engine.dispose()
            stores["postgresql"] = a.pg
        print(f"last_metrics of a run of 200 metric rows; ms a read, best of {a.rounds} rounds "
              f"of {a.reads}; {a.busy} busy neighbour(s)")  # fmt: skip
        print(f"{'backend':<11} {'orm':>8} {'sql, a connection each':>23} {'sql, kept':>10} "
              f"{'kept / orm':>11} {'kept / each':>12}")  # fmt: skip
        for backend, url in stores.items():
            t = measure(url, a.reads, a.rounds)
            o, e, k = t["orm"], t["sql, a connection each"], t["sql, kept"]
            print(f"{backend:<11} {o * 1e3:>8.3f} {e * 1e3:>23.3f} {k * 1e3:>10.3f} "
                  f"{k / o:>11.2f} {k / e:>12.2f}")  # fmt: skip
    for b in busy:
        b.terminate()


if __name__ == "__main__":
    main()
