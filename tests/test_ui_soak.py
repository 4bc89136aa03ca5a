"""The dashboard beside writers, for three minutes: `seqbench ui` answers concurrent GETs over
every page while a two-worker sweep, a `memory` command and a loop of short `train` processes
(writers that come and go: the last connection to close deletes the -wal and -shm files when it
holds the only lock) write to the same SQLite store. Every answer must be a page: no 5xx, no
"malformed". Before store files were checked through SQLite (store/sqlite_file._is_sqlite), the
dashboard read each new reader's header with Python's open(), whose close dropped the process's
SQLite locks, and this run answered thousands of requests with "database disk image is
malformed"."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tests.test_ui import sb

BIN = Path(sys.executable).parent
SOAK_S = float(os.environ.get("SEQBENCH_SOAK_S", 180))
PAGES = ["/", "/run/1", "/sweeps", "/sweep?name=w", "/memory", "/compare?sweep=w&by=k",
         "/curves?sweep=w", "/stress", "/checks"]  # fmt: skip


def _until(deadline: float, cmd: list[str], env: dict) -> None:
    """Run `cmd` again and again until `deadline` (a writer that keeps writing), then stop
    the one running (SIGTERM: it records its runs as interrupted)."""
    while time.monotonic() < deadline:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=60)


def test_the_dashboard_answers_every_request_while_others_write(tmp_path):
    db = tmp_path / "soak.db"
    sb(db, "train", "-m", "rnn", "-t", "adding", "--seq-len", "8", "--steps", "5", "-q")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((600, 8, 1)).astype("float32")
    np.savez(tmp_path / "lag.npz", x=x, y=x[:, 5, 0].copy())
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    log = open(os.environ.get("SEQBENCH_SOAK_LOG", tmp_path / "ui.log"), "w+")  # noqa: SIM115
    ui = subprocess.Popen(
        [str(BIN / "seqbench"), "--db", str(db), "ui", "--port", "0"], stderr=log, text=True
    )
    try:
        url = None
        for _ in range(200):
            log.seek(0)
            found = re.search(r"serving (http://127\.0\.0\.1:\d+/)", log.read())
            if found:
                url = found.group(1).rstrip("/")
                break
            time.sleep(0.1)
        assert url, "the dashboard did not start"
        deadline = time.monotonic() + SOAK_S
        seqbench = [str(BIN / "seqbench"), "--db", str(db)]
        sweep = [*seqbench, "sweep", "--models", "rnn,gru", "--tasks", "adding", "--k", "1:6:+1",
                 "--seeds", "0:200:+1", "--set", "steps=20", "--set", "seq_len=8", "--set",
                 "eval_size=32", "--workers", "2", "--quiet", "--name", "w"]  # fmt: skip
        memory = [*seqbench, "memory", "--task", "file", "--path", str(tmp_path / "lag.npz"),
                  "--set", "steps=60", "--families", "tcn", "--references", "gru", "--params",
                  "2000", "--workers", "1", "--quiet", "--lr-search", "none"]  # fmt: skip
        train = [*seqbench, "train", "-m", "rnn", "-t", "adding", "--seq-len", "8", "--steps",
                 "3", "--set", "eval_size=16", "-q"]  # fmt: skip
        writers = [
            threading.Thread(target=_until, args=(deadline, cmd, env), daemon=True)
            for cmd in (sweep, memory, train)
        ]
        for w in writers:
            w.start()
        answered, errors = [0], []

        def hammer(i: int) -> None:
            while time.monotonic() < deadline:
                page = PAGES[i % len(PAGES)]
                i += 1
                try:
                    with urllib.request.urlopen(url + page, timeout=120) as r:
                        body = r.read().decode()
                    if "malformed" in body:
                        errors.append((page, 200, "malformed"))
                    answered[0] += 1
                except urllib.error.HTTPError as e:
                    body = e.read().decode()
                    if e.code >= 500 or "malformed" in body:
                        said = re.search(r"<main>(.*)</main>", body, re.S)
                        errors.append((page, e.code, (said.group(1) if said else body)[:300]))
                    else:
                        answered[0] += 1  # a sweep not planned yet: a 404 that says so
                except OSError as e:
                    errors.append((page, type(e).__name__, str(e)[:200]))

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(hammer, range(4)))
        for w in writers:
            w.join(timeout=120)
    finally:
        ui.terminate()
        ui.wait(timeout=20)
    log.seek(0)
    said = log.read()
    assert errors == [], (errors[:5], said[-2000:])
    assert "malformed" not in said and "Traceback" not in said, said[-2000:]
    assert answered[0] >= 100  # it answered all along, not just once
