"""The library's words for a parameter, as the command line spells them (cli/_flags.py): a
script calling the library reads `max_k` and `steps=200`, a shell user reads --max-k and
--set steps=200, from the same error."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from seqbench import api
from seqbench.cli._flags import flags, flags_in, options
from seqbench.cli.main import app
from seqbench.errors import UsageError
from tests.test_architecture import _library_texts

# spans the library writes in backticks that are not a parameter: a command, a status
NOT_PARAMETERS = {"seqbench", "running"}


def test_every_parameter_the_library_names_is_an_option_of_the_cli():
    """An oracle from outside the renderer: each `name` the library writes, read from its
    source, is an option some seqbench command declares (so a renamed option or a typo cannot
    leave a message naming a flag that does not exist)."""
    table = options()
    named = {
        (m.group(1), f"{path.name}:{line}")
        for path, line, text in _library_texts()
        for m in re.finditer(r"`([A-Za-z_]\w*)( [^`]*)?`", text)
    }
    assert len(named) >= 80  # the library's messages name its parameters
    missing = sorted(f"{where}: `{name}`" for name, where in named
                     if name not in table and name not in NOT_PARAMETERS)  # fmt: skip
    assert missing == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("`max_k` must be at least 2, got 1", "--max-k must be at least 2, got 1"),
        ("more seeds (`seeds` 0:5:+1)", "more seeds (--seeds 0:5:+1)"),
        ("train longer (`max_steps=1200`, twice)", "train longer (--set max_steps=1200, twice)"),
        ("`set` kernel_size is read by none", "--set kernel_size is read by none"),
        ("`relative_to` and `lr_search`", "--relative-to and --lr-search"),
        ("see `seqbench runs` and `status` failed", "see `seqbench runs` and --status failed"),
        ("`no_such_option` stays", "`no_such_option` stays"),  # no command has it
        ("`tasks` of a sweep", "--tasks of a sweep"),  # spelled as the flag is
        ("plain text", "plain text"),
    ],
)
def test_a_parameter_is_shown_as_its_flag(text, shown):
    assert flags(text) == shown


def test_json_answers_are_shown_in_flags_too():
    doc = {"sentence": "`seeds` 0:5:+1", "warnings": ["(`max_k`)"], "k": 3, "none": None}
    assert flags_in(doc) == {"sentence": "--seeds 0:5:+1", "warnings": ["(--max-k)"], "k": 3,
                             "none": None}  # fmt: skip


def test_one_error_in_the_words_of_each_caller(tmp_path):
    """The same refusal: the library's names for a script, the flags for a shell."""
    with pytest.raises(UsageError) as e:
        api.memory_plan("adding", sets=["seq_len=8"], max_k=1)
    assert str(e.value) == "`max_k` must be at least 2, got 1"
    r = CliRunner().invoke(
        app, ["--db", str(tmp_path / "s.db"), "memory", "--task", "adding", "--max-k", "1"]
    )
    assert r.exit_code == 2 and r.stderr.strip() == "Error: --max-k must be at least 2, got 1"
    with pytest.raises(UsageError, match=r"^`seed=` is not for memory; give `seeds`$"):
        api.memory_plan("adding", sets=["seed=3"])
    r = CliRunner().invoke(app, ["memory", "--task", "adding", "--set", "seed=3"])
    assert r.stderr.strip() == "Error: --set seed= is not for memory; give --seeds"


@pytest.mark.parametrize("command", [["models"], ["tasks"], ["tasks", "--format", "csv"]])
def test_the_catalogues_show_flags_not_parameters(command):
    """What the catalogues print of the specs (a task's description says where its data comes
    from) is shown in flags: nothing is left for `flags` to render."""
    r = CliRunner().invoke(app, command, terminal_width=400)
    assert r.exit_code == 0, r.output
    assert flags(r.stdout) == r.stdout
    if command == ["tasks", "--format", "csv"]:
        assert "your own data (--path FILE.npz" in r.stdout
