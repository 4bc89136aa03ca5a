"""Screenshots of every `seqbench ui` page for the docs (docs/ui/*.png), in Debian's Chromium
driven by Playwright, over a store filled through the CLI here (a small sweep, a stress run,
a baseline). About a minute on 2 cores.

    .venv/bin/python scripts/ui-screenshots.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "ui"
SB = str(Path(sys.executable).parent / "seqbench")
PAGES = [
    ("runs", ""),
    ("run", "run/1"),
    ("compare", "compare?sweep=quick&models=rnn,tcn&by=k"),
    ("curves", "curves?sweep=quick&group_by=model,k&band=ci"),
    ("sweeps", "sweeps"),
    ("sweep", "sweep?name=quick"),
    ("stress", "stress"),
    ("checks", "checks"),
]


def sb(db: str, *args: str) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([SB, "--db", db, *args], check=True, env=env, capture_output=True)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "ui.db")
        sb(db, "sweep", "--models", "rnn,tcn", "--tasks", "adding", "--k", "2,8,32",
           "--seeds", "0,1", "--name", "quick", "--workers", "2", "--set", "steps=300",
           "--set", "seq_len=50", "-q")  # fmt: skip
        sb(db, "stress", "--models", "rnn,tcn", "--seq-len", "300")
        sb(db, "baseline", "save", "nightly")
        proc = subprocess.Popen([SB, "--db", db, "ui", "--port", "0"], stderr=subprocess.PIPE,
                                text=True)  # fmt: skip
        url = re.search(r"(http://\S+/)", proc.stderr.readline()).group(1)
        try:
            with sync_playwright() as p:
                b = p.chromium.launch(
                    executable_path="/usr/bin/chromium",
                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
                )
                page = b.new_page(viewport={"width": 1200, "height": 800})
                for name, path in PAGES:
                    page.goto(url + path)
                    page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
                    print(f"docs/ui/{name}.png")
                b.close()
        finally:
            proc.terminate()


if __name__ == "__main__":
    main()
