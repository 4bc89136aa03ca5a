"""Revision 0006: feedforward runs recorded before contexts were exact get the context their
networks had as k (the old rules), on SQLite and PostgreSQL; downgrade restores the given k."""

import json

import pytest
from sqlalchemy import create_engine, text

from seqbench.configure import config_hash
from seqbench.store import migrate

OLD_RUNS = [
    # (model, task, config, k the old code stored, the context its network had)
    ("tcn", "adding", {"seq_len": 100, "kernel_size": 7, "k": 4, "levels": None}, 4, 13),
    ("tcn", "adding", {"seq_len": 100, "kernel_size": 7, "k": 16, "levels": None}, 16, 37),
    ("tcn", "adding", {"seq_len": 200, "kernel_size": 7, "k": None, "levels": None}, None, 200),
    ("tcn", "copy", {"seq_len": 200, "kernel_size": 8, "k": None, "levels": 8}, None, 220),
    ("gcnn", "adding", {"seq_len": 100, "kernel_size": 5, "k": None, "levels": None}, None, 33),
    ("gcnn", "adding", {"seq_len": 80, "kernel_size": 5, "k": 8, "levels": None}, 8, 9),
    ("transformer", "adding", {"seq_len": 80, "k": 8, "layers": 2}, 8, 15),
    ("transformer", "adding", {"seq_len": 80, "k": None, "layers": 2}, None, 80),
    ("window", "teacher", {"seq_len": 100, "k": None}, None, 32),
    ("window", "teacher", {"seq_len": 100, "k": 4}, 4, 4),
    ("rnn", "adding", {"seq_len": 100, "k": None}, None, None),  # recurrent: untouched
    ("lstm", "adding", {"seq_len": 100, "k": 8}, 8, 8),
    ("tcn", "adding", {}, 5, 5),  # no config: left alone
]


def _fill(engine):
    with engine.begin() as c:
        for i, (model, task, cfg, k, _) in enumerate(OLD_RUNS):
            c.execute(
                text(
                    "INSERT INTO runs (uuid, created_at, status, kind, model, task, k, seq_len,"
                    " seed, config, config_hash) VALUES (:u, '2026-11-30 12:00:00', 'completed',"
                    " 'train', :m, :t, :k, :T, 0, :c, :h)"
                ),
                {
                    "u": f"u{i}",
                    "m": model,
                    "t": task,
                    "k": k,
                    "T": cfg.get("seq_len"),
                    "c": json.dumps({"model": model, "task": task, **cfg}),
                    "h": f"h{i}",
                },
            )
        # TCNs given k = 1 and 2 were one network (context 13): two points, one k after
        for given in (1, 2):
            cfg = {"seq_len": 100, "kernel_size": 7, "k": given, "levels": None}
            c.execute(
                text(
                    "INSERT INTO baselines (name, model, task, k, metric, value, value_kind,"
                    " tolerance, direction, created_at, variant, config) VALUES ('b', 'tcn',"
                    " 'adding', :k, 'test_metric', 0.1, 'finite', 0.1, 'lower',"
                    " '2026-11-30 12:00:00', '', :c)"
                ),
                {"k": given, "c": json.dumps(cfg, sort_keys=True)},
            )


def _ks(engine):
    with engine.connect() as c:
        runs = [r[0] for r in c.execute(text("SELECT k FROM runs ORDER BY id"))]
        points = c.execute(text("SELECT k, variant FROM baselines ORDER BY id")).fetchall()
    return runs, [tuple(p) for p in points]


def _check(url):
    engine = create_engine(url)
    try:
        migrate.upgrade(engine, "0005")
        _fill(engine)
        migrate.upgrade(engine, "0006")
        runs, points = _ks(engine)
        assert runs == [ctx for *_, ctx in OLD_RUNS]
        assert points == [(13, '{"k":1}'), (13, '{"k":2}')]
        migrate.downgrade(engine, "0005")
        runs, points = _ks(engine)
        assert runs == [k for _, _, _, k, _ in OLD_RUNS]
        assert points == [(1, ""), (2, "")]
    finally:
        engine.dispose()


def test_old_feedforward_runs_get_the_context_they_had_sqlite(tmp_path):
    _check(f"sqlite:///{tmp_path / 'old.db'}")


def test_old_feedforward_runs_get_the_context_they_had_postgres(pg_url):
    _check(pg_url)


def _old_hash(cfg) -> str:
    import hashlib

    from seqbench.config import ADDED_LATER, NOT_HASHED

    # the fields a config had at revision 0006 (those added since did not exist)
    old = {k: v for k, v in cfg.to_dict().items() if k not in NOT_HASHED and k not in ADDED_LATER}
    blob = json.dumps(old, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


@pytest.mark.parametrize(
    ("model", "over", "changed"),
    [
        ("tcn", {"k": 4}, True),  # was context 13
        ("tcn", {"k": 85}, False),  # a standard receptive field: the same network
        ("tcn", {}, False),  # the fewest levels covering T, as before
        ("tcn", {"levels": 3}, False),
        ("gcnn", {"k": 8}, True),  # was 9
        ("gcnn", {"k": 9}, False),
        ("gcnn", {}, True),  # was 33
        ("transformer", {"k": 8}, True),  # was 15
        ("transformer", {"k": 8, "layers": 1}, False),
        ("transformer", {}, False),
        ("window", {"k": 8}, False),
        ("rnn", {"k": 4}, False),  # recurrent hashes never change
    ],
)
def test_only_a_changed_network_gets_a_new_hash(model, over, changed):
    """A config whose network changed never dedupes with a run of the old one; an unchanged
    network keeps its hash (its old runs stay done in a resumed sweep)."""
    from seqbench.configure import resolve

    cfg = resolve(model, "adding", {"seq_len": 100, **over})
    assert (config_hash(cfg) != _old_hash(cfg)) is changed


@pytest.mark.parametrize("model", ["tcn", "gcnn", "transformer", "window"])
def test_the_migration_knows_every_feedforward_family(model):
    """A new feedforward family needs its old rule here (or none: it has no old runs)."""
    import importlib.util
    from pathlib import Path

    from seqbench.models import MODELS

    path = Path(migrate.migrations_dir()) / "versions" / "0006_feedforward_context_k.py"
    spec = importlib.util.spec_from_file_location("_m0006", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert model in mod.FEEDFORWARD and MODELS.get(model).context is not None


def test_the_migration_and_the_hash_know_the_same_old_rules():
    """migrations/0006 and models.context.legacy_context each hold the pre-0006 rules (a
    migration cannot import code that changes): they must agree."""
    import importlib.util
    import itertools
    from dataclasses import replace
    from pathlib import Path

    from seqbench.configure import fed_steps, resolve
    from seqbench.models.context import legacy_context

    path = Path(migrate.migrations_dir()) / "versions" / "0006_feedforward_context_k.py"
    spec = importlib.util.spec_from_file_location("_m0006b", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    grid = itertools.product(
        ["tcn", "gcnn", "transformer", "window"],
        ["adding", "copy"],
        [None, 1, 4, 16, 50, 300],
        [20, 100],
    )
    for model, task, k, T in grid:
        # a k past the sequence is refused today, and stored runs may hold one: set it as is
        cfg = replace(resolve(model, task, {"seq_len": T}), k=k)
        stored = cfg.to_dict()
        old = legacy_context(cfg, fed_steps(cfg))
        assert mod._old_context(model, task, stored) == old, (model, task, k, T)
