"""Every numeric option of every command, and every numeric config field (`--set`), given 0,
−1, 1e20, nan and inf: refused in one line that names the option, with a non-zero exit, and no
store made or changed, or the value is one the option documents (ALLOWED, each with why).

The options are found by walking the CLI itself, so a new numeric option is walked as soon as
it exists; a command the walk cannot call (no entry in BASE) fails the test, so the walk cannot
shrink without anyone noticing."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import seqbench.models  # the families' options, declared on import
import seqbench.tasks  # noqa: F401  (the tasks' options, declared on import)
from seqbench.cli.main import app
from seqbench.config import FIELDS
from seqbench.parsing import field_type

VALUES = ("0", "-1", "1e20", "nan", "inf")

# how each command is called with its other arguments valid; "store": run on a copy of a real
# store (one run, one baseline) rather than a path with none
BASE: dict[str, tuple[list[str], bool]] = {
    "query": (["query", "SELECT 1"], True),
    "train": (["train", "--model", "rnn", "--task", "adding", "--dry-run", "--steps", "10"], False),
    "stress": (["stress", "--models", "rnn", "--seq-len", "20"], False),
    "check": (["check", "--baseline", "b"], True),
    "ui": (["ui"], True),
    "db reader-role": (["db", "reader-role", "analyst", "--print-sql"], False),
    "bench kernels": (["bench", "kernels", "--seq-len", "20", "--repeat", "1"], False),
    "sweep": (["sweep", "--models", "rnn", "--tasks", "adding", "--dry-run"], False),
    "memory": (["memory", "--task", "adding", "--dry-run"], False),
    "runs": (["runs"], True),
    "baseline save": (["baseline", "save", "b2"], True),
}
# options given as text that hold numbers (lists, ranges)
TEXT_NUMERIC = [
    ("sweep", "--k"),
    ("sweep", "--seeds"),
    ("memory", "--seeds"),
    ("memory", "--epsilon"),
    ("stress", "--seeds"),
]
EXTRA = {("train", "--lam"): ["--stable"], ("stress", "--seq-len"): []}

# (command, option or field) -> values it documents as meaningful, and why
ALLOWED: dict[tuple[str, str], tuple[set[str], str]] = {
    ("train", "--seed"): ({"0"}, "seeds are 0 … 2^32 − 1"),
    ("set", "seed"): ({"0"}, "seeds are 0 … 2^32 − 1"),
    ("train", "--lr"): ({"1e20"}, "an optimiser's step is free: the run diverges, recorded so"),
    ("set", "lr"): ({"1e20"}, "an optimiser's step is free: the run diverges, recorded so"),
    ("set", "lr_decay"): ({"1e20"}, "an optimiser's schedule is free, as lr is"),
    ("set", "weight_decay"): ({"0", "1e20"}, "0: none; the optimiser's penalty is free, as lr is"),
    ("train", "--clip"): ({"1e20"}, "a clip that never binds"),
    ("set", "clip"): ({"1e20"}, "a clip that never binds"),
    ("set", "clip_value"): ({"1e20"}, "a clamp that never binds"),
    ("set", "dropout"): ({"0"}, "no dropout"),
    ("set", "magnitude"): ({"1e20"}, "IndRNN's recurrent bound that never binds"),
    ("set", "noise"): ({"0"}, "no noise"),
    ("set", "forget_bias"): ({"0", "-1", "1e20"}, "any real bias of LSTM's forget gate"),
    ("stress", "--eps"): ({"0"}, "the perturbation's size is in [0, 1)"),
    ("check", "--rtol"): ({"0", "1e20"}, "a tolerance ≥ 0; a huge one passes everything"),
    ("check", "--atol"): ({"0", "1e20"}, "a tolerance ≥ 0; a huge one passes everything"),
    ("baseline save", "--rtol"): ({"0", "1e20"}, "a tolerance ≥ 0"),
    ("baseline save", "--atol"): ({"0", "1e20"}, "a tolerance ≥ 0"),
    ("runs", "--limit"): ({"0"}, "0: every run"),
    ("ui", "--port"): ({"0"}, "0: any free port"),
    ("sweep", "--seeds"): ({"0"}, "seed 0"),
    ("stress", "--seeds"): ({"0"}, "seed 0"),
}

# the (model, task) that reads a field that is not every run's
PAIR = {
    "teacher_lam": ("rnn", "teacher"),
    "subset": ("rnn", "digits"),
    "vocab_size": ("rnn", "mqar"),
    "num_pairs": ("rnn", "mqar"),
    "d_state": ("lru", "adding"),
    "heads": ("transformer", "adding"),
    "kernel_size": ("tcn", "adding"),
    "levels": ("tcn", "adding"),
    "magnitude": ("indrnn", "adding"),
    "forget_bias": ("lstm", "adding"),
    "forget_cap": ("lstm", "adding"),
    "split_seed": ("rnn", "sunspots"),
    "horizon": ("rnn", "sunspots"),
    **{n: ("rnn", "memory-function") for n in ("decay", "alpha", "delay", "omega", "noise")},
}


def _numeric_options() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []

    def walk(cmd, path: tuple[str, ...]) -> None:
        if cmd.callback is not None and path:
            for p in cmd.params:
                if p.bare_type() in ("int", "float"):
                    found.append((" ".join(path), p.opts[0]))
        for name, sub in (getattr(cmd, "commands", None) or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


OPTIONS = _numeric_options() + TEXT_NUMERIC
SET_FIELDS = [n for n in FIELDS if n not in ("tags", "extra") and field_type(n)[0] in (int, float)]


def test_the_walk_finds_the_options_it_should():
    assert len(OPTIONS) >= 45 and ("train", "--k") in OPTIONS and ("query", "--timeout") in OPTIONS
    assert {"lr", "eval_size", "teacher_lam", "noise", "d_state"} <= set(SET_FIELDS)
    assert {cmd for cmd, _ in OPTIONS} <= set(BASE), "add a BASE entry for a new command"


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("walk") / "base.db"
    r = CliRunner()
    for args in (
        ["train", "--model", "rnn", "--task", "adding", "--steps", "2", "--set", "seq_len=10",
         "--set", "eval_size=8", "-q"],
        ["baseline", "save", "b"],
    ):  # fmt: skip
        out = r.invoke(app, ["--db", str(db), *args])
        assert out.exit_code == 0, out.output
    return db


def _refused(args: list[str], db: Path, names: tuple[str, ...]) -> None:
    before = hashlib.sha256(db.read_bytes()).hexdigest() if db.exists() else None
    res = CliRunner().invoke(app, ["--db", str(db), *args])
    text = (res.stderr or res.output).strip()
    assert res.exit_code not in (0, None), (args, text)
    assert isinstance(res.exception, SystemExit), (args, res.exception)  # no traceback
    assert text.count("\n") == 0 and text.startswith("Error: "), (args, text)
    assert any(n in text for n in names), (args, text)  # names what was wrong
    after = hashlib.sha256(db.read_bytes()).hexdigest() if db.exists() else None
    assert after == before, (args, "the store changed or was made")


@pytest.mark.parametrize(("command", "option"), OPTIONS, ids=[" ".join(o) for o in OPTIONS])
def test_every_numeric_option_refuses_nonsense(command, option, real_store, tmp_path):
    base, needs_store = BASE[command]
    allowed, _why = ALLOWED.get((command, option), (set(), ""))
    flag = option.lstrip("-")
    names = (option, flag, flag.replace("-", "_"), flag.removesuffix("s"))  # --seeds: seed
    for value in VALUES:
        if value in allowed:
            continue
        db = tmp_path / f"{value}.db"
        if needs_store:
            shutil.copy(real_store, db)
        args = [*base, *EXTRA.get((command, option), []), f"{option}={value}"]
        if (command, option) == ("stress", "--seq-len"):
            args = ["stress", "--models", "rnn", f"{option}={value}"]
        _refused(args, db, names)


@pytest.mark.parametrize("field", SET_FIELDS)
def test_every_numeric_config_field_refuses_nonsense(field, tmp_path):
    model, task = PAIR.get(field, ("rnn", "adding"))
    allowed, _why = ALLOWED.get(("set", field), (set(), ""))
    for value in VALUES:
        if value in allowed:
            continue
        args = ["train", "--model", model, "--task", task, "--dry-run", "--set", f"{field}={value}"]
        if field not in ("steps", "epochs"):
            args += ["--steps", "10"] if task != "digits" else ["--epochs", "1"]
        if field == "lam":
            args.append("--stable")
        _refused(args, tmp_path / "none.db", (field,))
