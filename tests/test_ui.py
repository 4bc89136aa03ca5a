"""`seqbench ui` in a real browser: Debian's Chromium (installed by scripts/setup.sh), driven
by Playwright, against the real server (`seqbench ui` in its own process) over a real store
filled through the CLI. Every page loads; a filter narrows the runs; the compare page's
numbers are `report --compare`'s; charts carry the right number of series; a running sweep's
page updates by itself; nothing is written."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("SEQBENCH_CI"),
    reason="needs Debian's chromium (scripts/setup.sh installs it; CI requires it)",
)
BIN = Path(sys.executable).parent
SMALL = ["--set", "steps=30", "--set", "seq_len=20", "--set", "eval_size=32", "-q"]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def sb(db: Path, *args, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "250"}
    out = subprocess.run(
        [str(BIN / "seqbench"), "--db", str(db), *map(str, args)],
        capture_output=True, text=True, env=env, timeout=600, **kw,
    )  # fmt: skip
    assert out.returncode == 0, (args, out.stderr[-2000:])
    return out


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Path:
    """The Quick start's kinds of work, small: training runs of a sweep, a stress run, a
    baseline."""
    db = tmp_path_factory.mktemp("ui") / "ui.db"
    sb(db, "sweep", "--models", "rnn,tcn", "--tasks", "adding", "--k", "4,8", "--seeds", "0,1",
       "--name", "s", "--workers", "2", *SMALL)  # fmt: skip
    sb(db, "stress", "--models", "rnn,tcn", "--seq-len", "60", "--hidden", "16")
    sb(db, "baseline", "save", "b")
    return db


class Server:
    """`seqbench ui` in its own process. Its stderr is read as it comes (a pipe nobody reads
    would block the server once full), and a server that does not stop is made to dump every
    thread's stack (faulthandler on SIGABRT), so that the failure says where it hung."""

    def __init__(self, db: Path, *extra: str):
        self.proc = subprocess.Popen(
            [str(BIN / "seqbench"), "--db", str(db), "ui", "--port", "0", *extra],
            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )  # fmt: skip
        line = self.proc.stderr.readline()
        found = re.search(r"serving (http://127\.0\.0\.1:\d+/)", line)
        assert found, line
        self.url = found.group(1)
        self.log: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.log.append(line)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            self.proc.wait(timeout=30)
            self._reader.join(timeout=10)
            log = "".join(self.log)
            raise AssertionError(f"the server did not stop on SIGTERM:\n{log}") from None
        self._reader.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    sync = pytest.importorskip("playwright.sync_api")
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def served(filled):
    before = hashlib.sha256(filled.read_bytes()).hexdigest()
    server = Server(filled)
    yield server
    server.stop()
    assert hashlib.sha256(filled.read_bytes()).hexdigest() == before  # read-only


def _cells(page, table: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"#{table} tbody tr",
        "rows => rows.map(r => [...r.children].map(c => c.innerText.trim()))",
    )


def test_every_page_loads(browser, served):
    page = browser.new_page()
    for path, title in [("", "Runs"), ("run/1", "run 1"), ("compare?sweep=s", "Compare"),
                        ("curves?sweep=s", "Curves"), ("sweeps", "Sweeps"),
                        ("sweep?name=s", "sweep s"), ("stress", "Stress"),
                        ("checks", "Checks"), ("memory", "Memory")]:  # fmt: skip
        resp = page.goto(served.url + path)
        assert resp.status == 200, (path, page.content()[:2000])
        assert page.locator("h1").inner_text() == title
        assert "Traceback" not in page.content()
    page.close()


def test_a_filter_narrows_the_runs_and_a_selection_compares(browser, served):
    page = browser.new_page()
    page.goto(served.url)
    assert len(_cells(page, "runs")) == 8
    page.fill("input[name=model]", "tcn")
    with page.expect_navigation():  # the filter is a GET form: wait for its page, not the old
        page.click("#filter")
    rows = _cells(page, "runs")
    assert len(rows) == 4 and {r[3] for r in rows} == {"tcn"}
    page.fill("input[name=model]", "")
    page.fill("input[name=q]", "rnn")
    with page.expect_navigation():
        page.click("#filter")
    assert {r[3] for r in _cells(page, "runs")} == {"rnn"}
    page.goto(served.url)
    page.locator("#runs input[type=checkbox]").nth(0).check()
    page.locator("#runs input[type=checkbox]").nth(1).check()
    with page.expect_navigation():
        page.click("#compare")
    assert page.locator("h1").inner_text() == "Compare" and "run=" in page.url
    page.close()


def test_the_compare_page_shows_report_compare_numbers(browser, served, filled):
    md = sb(filled, "report", "--compare", "rnn", "tcn", "--sweep", "s", "--by", "k",
            "-f", "markdown").stdout  # fmt: skip
    want = [
        [c.strip().strip("*") for c in line.strip("|").split("|")]
        for line in md.splitlines()[2:]
        if line.startswith("|")
    ]
    page = browser.new_page()
    page.goto(served.url + "compare?sweep=s&models=rnn,tcn&by=k")
    assert _cells(page, "report") == want
    # one line per model on the k axis, and the trivial baseline
    assert page.locator("#report-chart [id^=series-]").count() == 2
    assert page.locator("#report-chart #baseline").count() == 1
    page.close()


def test_curves_are_grouped_with_one_series_per_config(browser, served):
    page = browser.new_page()
    page.goto(served.url + "curves?sweep=s&group_by=model,k&band=std")
    groups = _cells(page, "groups")
    assert [g[1] for g in groups] == ["2"] * 4  # 4 configs, 2 seeds each
    assert page.locator(".chart [id^=series-]").count() == 4
    page.goto(served.url + "stress")
    assert len(_cells(page, "stress")) == 2
    assert page.locator("#stress-chart [id^=series-]").count() == 2  # grad and trunc panels
    page.goto(served.url + "checks")
    statuses = [r[7] for r in _cells(page, "check")]
    assert len(statuses) == 4 and set(statuses) == {"pass"}
    page.close()


def test_the_server_refuses_writes_and_bad_input_is_one_line(served, tmp_path):
    req = urllib.request.Request(served.url, data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 405
    out = subprocess.run([str(BIN / "seqbench"), "--db", str(tmp_path / "none.db"), "ui"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 1 and out.stderr.strip().count("\n") == 0
    assert "no seqbench database" in out.stderr
    port = re.search(r":(\d+)/", served.url).group(1)
    db = served.proc.args[2]
    out = subprocess.run([str(BIN / "seqbench"), "--db", db, "ui", "--port", port],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 1 and f"port {port} on 127.0.0.1 is in use" in out.stderr
    assert "give another with --port" in out.stderr  # the library's `port`, as the CLI names it
    # a page's error names the option as the CLI does (the library wrote `by`)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(served.url + "compare?sweep=s&models=rnn&by=lrr", timeout=30)
    assert "unknown --by field &#x27;lrr&#x27;" in e.value.read().decode()


def test_a_running_sweeps_page_updates_by_itself(browser, tmp_path):
    db = tmp_path / "live.db"
    sb(db, "train", "-m", "rnn", "-t", "adding", *SMALL)  # a store to serve from the start
    server = Server(db)
    sweep = subprocess.Popen(
        [str(BIN / "seqbench"), "--db", str(db), "sweep", "--models", "rnn", "--tasks",
         "adding", "--seeds", "0:5:+1", "--name", "live", "--workers", "1", "--set",
         "steps=300", "--set", "seq_len=40", "--set", "eval_size=32", "-q"],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    page = browser.new_page()
    try:
        page.wait_for_timeout(1500)
        # until the sweep row exists and a point is in flight: a sweep's status is read off
        # its points, and before its first worker has started a run (a busy machine takes
        # seconds) it has none running and reads "incomplete"
        first: dict = {}
        for _ in range(120):
            if page.goto(server.url + "sweep?name=live").status == 200:
                first = dict(_cells(page, "counts"))
                if first.get("status") == "running":
                    break
            page.wait_for_timeout(500)
        assert first.get("status") == "running", first
        # no navigation from here: the page refreshes itself as points finish
        page.wait_for_function(
            "n => { const t = document.querySelector('#counts');"
            " return t && [...t.querySelectorAll('tr')].some(r => r.innerText.startsWith("
            "'completed') && parseInt(r.children[1].innerText) > n); }",
            arg=int(first["completed"]),
            timeout=120_000,
        )
    finally:
        page.close()
        sweep.terminate()
        sweep.wait(timeout=30)
        server.stop()


@pytest.mark.postgres
def test_the_dashboard_serves_a_postgresql_store(browser, pg_url):
    """The same pages over a shared PostgreSQL store (read-only transactions)."""
    sb(pg_url, "sweep", "--models", "rnn,tcn", "--tasks", "adding", "--k", "4", "--seeds", "0,1",
       "--name", "pg", "--workers", "2", *SMALL)  # fmt: skip
    server = Server(pg_url)
    page = browser.new_page()
    try:
        for path in ("", "run/1", "compare?sweep=pg&models=rnn,tcn", "curves?sweep=pg",
                     "sweeps", "sweep?name=pg", "stress", "checks"):  # fmt: skip
            assert page.goto(server.url + path).status == 200, (path, page.content()[:1500])
        page.goto(server.url)
        assert len(_cells(page, "runs")) == 4
    finally:
        page.close()
        server.stop()
