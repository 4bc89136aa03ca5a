"""ModelArgs and TaskArgs are written out (an editor can open them), so this test holds them
in step with RunConfig: the same fields as RunConfig's model and task groups, in order, with
the same types and defaults (a model is built for a concrete T: ModelArgs.seq_len is 100)."""

from __future__ import annotations

import typing
from dataclasses import fields

import pytest

from seqbench.config import ModelArgs, RunConfig, TaskArgs
from seqbench.errors import UsageError
from seqbench.options import MODEL, TASK


@pytest.mark.parametrize(("part", "group"), [(ModelArgs, MODEL), (TaskArgs, TASK)])
def test_a_part_has_its_groups_fields_types_and_defaults(part, group):
    config = [f for f in fields(RunConfig) if group in f.metadata.get("groups", ())]
    own = [f for f in fields(part) if f.name != "extra"]  # the options (RunConfig.extra)
    assert [f.name for f in own] == [f.name for f in config]
    hints, config_hints = typing.get_type_hints(part), typing.get_type_hints(RunConfig)
    for f, c in zip(own, config, strict=True):
        assert hints[f.name] == config_hints[c.name], f.name
        expected = 100 if (part, f.name) == (ModelArgs, "seq_len") else c.default
        assert f.default == expected, f.name


def test_a_part_checks_its_positive_fields():
    with pytest.raises(UsageError, match="hidden must be positive"):
        ModelArgs(hidden=0)
    with pytest.raises(UsageError, match="eval_size must be positive"):
        TaskArgs(eval_size=-1)
    assert ModelArgs().with_(hidden=3).hidden == 3


def test_a_part_takes_its_options_by_name_as_a_config_does():
    """memory-function's kernel and alpha are the task's options (TaskSpec.options): the task's
    TaskArgs takes them by name, as RunConfig does, and carries them in `extra`; a name nobody
    declared is still a TypeError."""
    import seqbench.tasks  # noqa: F401  (declares the built-in tasks' options)

    args = TaskArgs(seq_len=30, kernel="power", alpha=1.0)
    assert (args.kernel, args.alpha, args.decay) == ("power", 1.0, None)
    assert args.extra == (("alpha", 1.0), ("kernel", "power"))
    assert args == TaskArgs(seq_len=30).with_(kernel="power", alpha=1.0)
    assert args.with_(alpha=2.0).extra == (("alpha", 2.0), ("kernel", "power"))
    with pytest.raises(TypeError, match="bogus"):
        TaskArgs(bogus=1)


def test_an_option_declared_alike_by_several_is_theirs_together():
    """d_state is the LRU's, S4D's and Mamba's option, declared alike in each family's file;
    the file tasks' data_hash is the text task's too. Declared otherwise (another kind), it is
    a programming error, said when the spec registers."""
    import seqbench.configure  # noqa: F401  (registers the built-ins)
    from seqbench.config import declare
    from seqbench.options import MODEL, OPTIONS, Option
    from seqbench.tasks.spec import TEST_STREAM

    assert set(OPTIONS["d_state"].owners) == {"lru", "s4d", "mamba"}
    assert set(OPTIONS["data_hash"].owners) == {
        "file-regression", "file-classification", "file-next-token", "text"
    }  # fmt: skip
    assert set(OPTIONS["x_cols"].owners) == {"file-regression"}  # a table is a forecast's
    from seqbench.tasks import TASKS

    assert TEST_STREAM in TASKS.get("ptb-word").options  # a task scoring a stream has it
    with pytest.raises(ValueError, match="declared otherwise by lru, s4d, mamba"):
        declare([Option("d_state", float, MODEL)], "mine")
    assert set(OPTIONS["d_state"].owners) == {"lru", "s4d", "mamba"}  # unchanged


def test_a_family_that_sizes_a_state_takes_d_state():
    """ModelSpec.state_units declares d_state (a plugin's SSM too, as docs/plugins.md says):
    the option is the spec's without its listing it."""
    from seqbench.models.spec import D_STATE, ModelSpec

    spec = ModelSpec("mine", "an SSM", True, lambda in_dim, args: None, state_units=lambda c, H: 0)
    assert D_STATE in spec.options
    assert D_STATE not in ModelSpec("plain", "an RNN", True, lambda in_dim, args: None).options


@pytest.mark.parametrize(
    ("model", "task", "over", "words"),
    [
        ("gru", "adding", {"d_state": 8}, "d_state is not read by gru"),
        (
            "window",
            "adding",
            {"base": "gru", "d_state": 8},
            "d_state is not read by window over gru",
        ),
        ("tcn", "mqar", {"symbols": "float"}, "symbols is not read by mqar"),
        ("tcn", "adding", {"forget_cap": 0.2}, "forget_cap is not read by tcn"),
        ("tcn", "teacher", {"vocab_size": 9}, "vocab_size is not read by teacher"),
    ],
)
def test_an_option_is_refused_where_no_owner_reads_it(model, task, over, words):
    from seqbench.configure import resolve
    from seqbench.errors import UsageError

    with pytest.raises(UsageError, match=f"^{words}, so it would change nothing"):
        resolve(model, task, over)


def test_a_window_over_an_owner_takes_its_option():
    from seqbench.configure import resolve

    cfg = resolve("window", "adding", {"base": "lru", "d_state": 8, "k": 4})
    assert cfg.d_state == 8 and cfg.model_args().d_state == 8
    assert resolve("gru", "adding", {}).d_state is None  # unset where nobody owns it


def test_a_shared_field_is_its_owners_option_at_its_frozen_value():
    """dropout … teacher_lam were RunConfig's fields when stores had runs (options.SHARED): now
    options of the families and tasks that read them, they read as their frozen value where
    unset, a config holds one given at that value as unset (one config however it was built),
    and a config is written with every one of them, where RunConfig's fields were."""
    import seqbench.configure  # noqa: F401  (registers the built-ins)
    from seqbench.options import OPTIONS, SHARED

    cfg = RunConfig("gru", "adding")
    assert (cfg.dropout, cfg.kernel_size, cfg.levels, cfg.marker) == (0.0, 7, None, "uniform")
    assert (ModelArgs().heads, TaskArgs().teacher_lam) == (4, 0.9)
    assert RunConfig("gru", "adding", dropout=0.0, base="lstm") == cfg and cfg.extra == ()
    assert RunConfig("gru", "adding", dropout=0).extra == (("dropout", 0),)  # as it was stored
    tcn = RunConfig("tcn", "adding", dropout=0.3)
    assert tcn.extra == (("dropout", 0.3),) and tcn.model_args().dropout == 0.3
    stored = RunConfig("tcn", "copy", dropout=0.3, symbols="tokens").to_dict()
    names = list(stored)
    assert names[names.index("plugin") - len(SHARED) : names.index("plugin")] == list(SHARED)
    assert names[-1] == "symbols" and stored["dropout"] == 0.3 and stored["heads"] == 4
    assert RunConfig(**stored) == RunConfig("tcn", "copy", dropout=0.3, symbols="tokens")
    assert {n: OPTIONS[n].default for n in SHARED} == SHARED
    assert OPTIONS["levels"].nullable and not OPTIONS["dropout"].nullable


def test_a_default_belongs_to_a_shared_field_only():
    """An option's value where unset is None (it stays out of the hash), unless it is a shared
    field, whose default is frozen (options.SHARED) and read from there: none can be given
    otherwise, and a shared field declared in the other group, or a non-shared one that is
    not nullable, is a programming error said when the spec registers."""
    from seqbench.config import declare
    from seqbench.options import MODEL, TASK, Option

    assert Option("dropout", float, MODEL, nullable=False).default == 0.0
    assert Option("leak", float, MODEL).default is None
    with pytest.raises(TypeError):
        Option("dropout", float, MODEL, default=0.5)  # the default is SHARED's alone
    for option, words in [
        (Option("leak", float, MODEL, nullable=False), "only as a shared field"),
        (Option("marker", str, MODEL), "a shared field of the other group"),
        (Option("dropout", float, TASK), "a shared field of the other group"),
    ]:
        with pytest.raises(ValueError, match=words):
            declare([option], "mine")


def test_the_train_part_is_taken_read_and_written_flat():
    """How a run is trained (TrainArgs: the optimiser, its schedule, evaluation, stopping) is
    RunConfig's `train` part, whose fields a config takes by name, reads as its own, replaces,
    and writes flat: where stored configs and the hash have always had them."""
    import copy
    import pickle
    from dataclasses import replace

    from seqbench.config import FIELDS, POSITIVE, TrainArgs
    from seqbench.parsing import FLOAT_FIELDS

    cfg = RunConfig("gru", "adding", lr=0.01, batch_size=8, steps=3)
    assert cfg.train == TrainArgs(lr=0.01, batch_size=8) and (cfg.lr, cfg.steps) == (0.01, 3)
    assert replace(cfg, lr=0.5).train == TrainArgs(lr=0.5, batch_size=8)
    over = RunConfig("gru", "adding", train=TrainArgs(lr=0.1, clip=1.0), lr=0.2)
    assert (over.lr, over.clip) == (0.2, 1.0)  # a field by name over the part given
    stored = cfg.to_dict()
    assert "train" not in stored and (stored["lr"], stored["clip"], stored["patience"]) == (
        0.01, None, None,
    )  # fmt: skip
    assert RunConfig(**stored) == cfg
    assert pickle.loads(pickle.dumps(cfg)) == cfg == copy.deepcopy(cfg)  # to Ray's workers
    assert {"lr", "eval_every", "min_steps"} <= set(FIELDS) and "train" not in FIELDS
    assert {"lr", "batch_size", "patience"} <= set(POSITIVE) and "lr_decay" in FLOAT_FIELDS
    with pytest.raises(UsageError, match="lr must be positive"):
        from seqbench.parsing import check_fields

        check_fields(RunConfig("gru", "adding", lr=-1.0, steps=3))
    # what every run has, and nothing a part of it owns: the model's and task's options are
    # theirs (options.OPTIONS), how it trains is TrainArgs
    assert len(fields(RunConfig)) <= 20
