import json
import subprocess
import sys

import pytest

from seqbench import __version__
from seqbench.cli.main import app
from seqbench.configure import config_hash
from tests.conftest import sha256


def _all_commands():
    import typer.main

    root = typer.main.get_command(app)
    out = []

    def walk(cmd, path):
        sub = getattr(cmd, "commands", None)
        if sub:
            for name, c in sub.items():
                walk(c, [*path, name])
        else:
            out.append(path)

    walk(root, [])
    return out


@pytest.mark.parametrize("path", _all_commands(), ids=lambda p: " ".join(p))
def test_every_command_has_help_with_an_example(cli, path):
    result = cli(*path, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout, f"seqbench {' '.join(path)} --help lacks an example"
    # each example is printed as written, as it is pasted into a shell: a line of it ends the
    # example or continues it with a backslash, never as a command wrapped at the width
    lines = result.stdout.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("Example: "):
            while line.endswith(" \\") and i + 1 < len(lines):
                i, line = i + 1, lines[i + 1]
            assert i + 1 == len(lines) or not lines[i + 1].strip(), lines[i : i + 2]


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"seqbench {__version__}"


def test_db_current_creates_the_default_store_at_head(cli, tmp_path):
    result = cli("db", "current")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("(head)")
    assert (tmp_path / "seqbench.db").is_file()


def test_query_delete_fails_and_leaves_the_file_unchanged(cli, tmp_path):
    assert cli("db", "current").exit_code == 0
    db = tmp_path / "seqbench.db"
    before = sha256(db)
    result = cli("query", "DELETE FROM runs")
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error:")
    assert sha256(db) == before


def test_db_that_is_not_a_database_fails_with_one_line(cli, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# hello\n")
    before = sha256(readme)
    result = cli("--db", readme, "runs")
    assert result.exit_code == 1
    expected = f"Error: {str(readme)!r} is not a SQLite database"
    assert result.stderr.strip().splitlines() == [expected]
    assert sha256(readme) == before


def test_db_env_var(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQBENCH_DB", str(tmp_path / "env.db"))
    assert cli("db", "current").exit_code == 0
    assert (tmp_path / "env.db").exists() and not (tmp_path / "seqbench.db").exists()


def test_unknown_command_is_a_usage_error(cli):
    assert cli("frobnicate").exit_code == 2


@pytest.fixture
def runs_db(store):
    for model, status, v in [("rnn", "completed", 0.2), ("tcn", "failed", float("nan"))]:
        r = store.create_run(
            model=model, task="adding", config={"lr": 0.1}, config_hash="h", status=status, k=4
        )
        store.set_summaries(r.id, {"test_metric": v})
        store.log_metrics(r.id, [("train_loss", 0, 1.0), ("train_loss", 5, 0.5)])
    return store


def test_runs_lists_and_filters(cli, runs_db):
    result = cli("runs", "--format", "json")
    data = json.loads(result.stdout)
    assert [(d["model"], d["status"]) for d in data] == [("tcn", "failed"), ("rnn", "completed")]
    assert data[0]["test_metric"] == "nan"
    result = cli("runs", "--status", "completed", "--format", "csv")
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("id,name,kind,status,model") and len(lines) == 2
    assert "\x1b[" not in result.stdout


def test_show_run(cli, runs_db):
    result = cli("show", "1", "--format", "json")
    data = json.loads(result.stdout)
    assert data["model"] == "rnn" and data["config.lr"] == 0.1
    assert data["summary.test_metric"] == 0.2
    assert data["last.train_loss"] == 0.5 and data["last.train_loss.step"] == 5  # numbers
    result = cli("show", "99")
    assert result.exit_code == 1 and "no run '99'" in result.stderr


def test_query_formats_params_and_stdin(cli, runs_db):
    result = cli(
        "query", "SELECT model, k FROM runs WHERE model = :m", "-p", "m=rnn", "--format", "csv"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "model,k\nrnn,4\n"
    result = cli("query", "-", "--format", "json", input="SELECT COUNT(*) AS n FROM v_results")
    assert json.loads(result.stdout) == [{"n": 2}]
    result = cli("query", "SELECT model FROM runs ORDER BY id", "--format", "markdown")
    assert result.stdout == "| model |\n|---|\n| rnn |\n| tcn |\n"
    assert cli("query", "SELECT 1", "-p", "novalue").exit_code == 2


def test_query_help_names_every_table_and_each_can_be_read(cli):
    """The help's list of tables is the schema's, and query reads each of them."""
    from seqbench.store.schema import Base

    help_text = " ".join(cli("query", "--help").stdout.split())
    assert cli("db", "current").exit_code == 0  # a fresh store at head
    for table in Base.metadata.tables:
        assert f" {table}," in help_text or f" {table} (" in help_text, table
        result = cli("query", f"SELECT COUNT(*) AS n FROM {table}", "--format", "json")
        assert result.exit_code == 0 and json.loads(result.stdout) == [{"n": 0}], result.output


def test_python_dash_m_and_fast_help():
    """`python -m seqbench` works and --help does not import torch/pandas/triton."""
    code = (
        "import sys, runpy; sys.argv = ['seqbench', '--help']\n"
        "try:\n    runpy.run_module('seqbench', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'pandas', 'triton', 'matplotlib') if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Usage" in out.stdout and "HEAVY []" in out.stdout


def test_runs_says_how_many_it_does_not_show(cli, store):
    from tests.conftest import add_run

    for _ in range(5):
        add_run(store)
    r = cli("runs", "--limit", "3")
    assert r.exit_code == 0 and "showing 3 of 5 runs (--limit 0 for all)" in r.stderr
    assert "showing" not in cli("runs", "--limit", "0").stderr
    assert "showing" not in cli("runs", "--limit", "5").stderr


def test_runs_sweep_selects_what_report_sweep_reads(cli, store):
    """A sweep's point trained earlier by a plain `train` belongs to the sweep for both."""
    import json

    from seqbench.configure import make_config
    from tests.conftest import add_run

    cfg = make_config("rnn", "adding", {"steps": 3})
    store.plan_sweep("s", {"grids": []}, [(config_hash(cfg), cfg.to_dict())], False)
    run = add_run(store, {"test_metric": 0.5}, config_hash=config_hash(cfg), config=cfg.to_dict())
    add_run(store, {"test_metric": 0.9}, config_hash="other")
    listed = json.loads(cli("runs", "--sweep", "s", "-f", "json").stdout)
    assert [r["id"] for r in listed] == [run.id]
    rep = json.loads(cli("report", "--sweep", "s", "-f", "json").stdout)
    assert len(rep) == 1


def test_tag_untag_and_filter_runs_by_tag(cli, store):
    import json

    from tests.conftest import add_run

    a, b = add_run(store), add_run(store, tags={"owner": "you"})
    assert cli("runs", "tag", str(a.id), str(b.id), "--tag", "paper=fig2").exit_code == 0
    assert store.get_run(b.id).tags == {"owner": "you", "paper": "fig2"}  # merged

    def ids(*args):
        return [r["id"] for r in json.loads(cli("runs", *args, "-f", "json").stdout)]

    assert ids("--tag", "paper=fig2") == [b.id, a.id]
    assert ids("--tag", "paper=fig2", "--tag", "owner=you") == [b.id]
    assert cli("runs", "untag", str(b.id), "--key", "paper").exit_code == 0
    assert ids("--tag", "paper=fig2") == [a.id]
    r = cli("runs", "tag", "99", "--tag", "x=1")
    assert r.exit_code == 1 and "no run '99'" in r.stderr
    assert store.get_run(a.id).tags == {"paper": "fig2"}


def test_delete_takes_everything_of_the_run_and_nothing_else(cli, store):
    from seqbench.store.query import run_query
    from tests.conftest import add_run

    keep, gone = add_run(store, {"test_metric": 0.1}), add_run(store, {"test_metric": 0.2})
    for run in (keep, gone):
        store.log_metrics(run.id, [("valid_metric", 1, 0.5)])
        store.write_run(run.id, {}, curves={"g": ([0, 1], [1.0, 2.0])})
    live = add_run(store, status="running")
    r = cli("runs", "delete", str(gone.id), str(live.id), "--yes")
    assert r.exit_code == 2 and f"run {live.id} is running" in r.stderr  # all or none
    assert store.get_run(gone.id) is not None
    assert cli("runs", "delete", str(gone.id)).exit_code == 1  # not confirmed (no input)
    assert cli("runs", "delete", str(gone.id), "--yes").stdout.startswith("deleted 1 run(s)")
    assert store.get_run(gone.id) is None and store.get_run(keep.id) is not None
    for table in ("metrics", "summaries", "curves"):
        (n,) = run_query(store.url, f"SELECT COUNT(*) FROM {table} WHERE run_id = {gone.id}")[1][0]
        (m,) = run_query(store.url, f"SELECT COUNT(*) FROM {table} WHERE run_id = {keep.id}")[1][0]
        assert n == 0 and m > 0, table


@pytest.mark.postgres
def test_run_management_on_postgres(cli, pg_url):
    import json

    from seqbench.store.opening import open_store
    from tests.conftest import add_run

    store = open_store(pg_url)
    try:
        a, b = add_run(store, {"test_metric": 0.1}), add_run(store)
        assert cli("--db", pg_url, "runs", "tag", str(a.id), "--tag", "k=v").exit_code == 0
        got = json.loads(cli("--db", pg_url, "runs", "--tag", "k=v", "-f", "json").stdout)
        assert [r["id"] for r in got] == [a.id]
        assert cli("--db", pg_url, "runs", "delete", str(a.id), "--yes").exit_code == 0
        assert store.get_run(a.id) is None and store.get_run(b.id) is not None
    finally:
        store.dispose()


def test_an_ambiguous_uuid_prefix_is_refused(cli, store):
    from seqbench.store.schema import Run
    from tests.conftest import add_run

    a, b = add_run(store), add_run(store)
    with store.Session.begin() as s:  # give both uuids one prefix that is no id
        for run in (a, b):
            s.get(Run, run.id).uuid = "abc" + s.get(Run, run.id).uuid[3:]
    a = store.get_run(a.id)
    common = 3
    r = cli("show", a.uuid[:common])
    assert r.exit_code == 2 and f"matches several runs ({a.id}, {b.id})" in r.stderr
    assert cli("show", a.uuid[: common + 4]).exit_code == 0  # long enough: one run


@pytest.mark.parametrize(
    "flags",
    [
        ["--models", "rnn,lstm", "--tasks", "adding", "--seeds", "0,1"],
        ["--model", "rnn", "--model", "lstm", "--task", "adding", "--seed", "0", "--seed", "1"],
        ["--models", "rnn", "--models", "lstm", "--tasks", "adding", "--seeds", "0,1"],
    ],
)
def test_one_list_rule_comma_lists_or_repeats_singular_or_plural(cli, flags):
    r = cli("sweep", *flags, "--set", "steps=2", "--dry-run", "-f", "csv")
    assert r.exit_code == 0, r.output
    rows = r.stdout.strip().splitlines()[1:]
    assert len(rows) == 4 and {row.split(",")[1] for row in rows} == {"rnn", "lstm"}


def test_shell_completion_is_offered(cli):
    r = cli("--help")
    assert r.exit_code == 0 and "--install-completion" in r.stdout


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["train"],
        ["sweep"],
        ["sweep", "status"],
        ["runs"],
        ["runs", "tag"],
        ["report"],
        ["stress"],
        ["query"],
        ["curves"],
        ["baseline", "save"],
        ["bench", "kernels"],
    ],
)
def test_help_has_no_type_noise(cli, command):
    r = cli(*command, "--help")
    assert r.exit_code == 0, r.output
    assert "<str>" not in r.stdout and "<bool>" not in r.stdout and "<list[str]>" not in r.stdout
