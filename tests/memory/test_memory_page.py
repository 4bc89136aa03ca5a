"""The dashboard's Memory page in Chromium, against a store that `seqbench memory` filled:
the answer's sentence, its cells and its chart (one series per family and reference), the
name escaped, an unknown answer a 404, and nothing written."""

import hashlib
import urllib.error
import urllib.request

import numpy as np
import pytest

from tests.test_ui import Server, _cells, browser, pytestmark, sb  # noqa: F401  (fixtures)

NAME = "<b>lag</b> two"


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("memory-ui")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 4, 1)).astype("float32")
    np.savez(tmp / "lag.npz", x=x, y=x[:, 2, 0].copy())  # needs the last 2 inputs
    db = tmp / "m.db"
    sb(db, "memory", "--task", "file", "--path", tmp / "lag.npz", "--set", "steps=300",
       "--families", "tcn", "--references", "gru", "--params", "3000", "--workers", "2",
       "--name", NAME, "-q")  # fmt: skip
    return db


def test_the_memory_page_shows_the_answer(browser, answered):  # noqa: F811
    before = hashlib.sha256(answered.read_bytes()).hexdigest()
    server = Server(answered)
    try:
        page = browser.new_page()
        resp = page.goto(server.url + "memory")
        assert resp.status == 200
        assert "<b>lag</b>" not in page.content()  # escaped, shown as text
        (row,) = _cells(page, "answers")
        assert row[0] == NAME and row[2] == "matches" and row[3] == "2"
        assert row[1].startswith("file-regression (lag.npz·")  # named by its file
        assert page.locator("main h1").inner_text() == NAME  # not "memory <name>"
        assert "k* = 2" in page.locator("#sentence").inner_text()
        # the reference's rate, searched by default, and what validation chose
        assert (
            page.locator("#lr-chosen")
            .inner_text()
            .startswith("note: learning rate chosen on validation, per seed: gru ")
        )
        cells = _cells(page, "cells")
        # k = 3 too: [2, 4) is searched whenever 4 is within, also where k* = 2 (gap_share)
        assert [c[1] for c in cells] == ["1", "2", "3", "4", "full"]
        assert [c[6] for c in cells] == ["outside", "within", "within", "within", ""]
        series = page.locator("#memory-chart [id^=series-]").count()
        assert series >= 2  # tcn's curve and gru's line (and the marks)
        page.close()
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(server.url + "memory?name=nope", timeout=30)
        assert e.value.code == 404
    finally:
        server.stop()
    assert hashlib.sha256(answered.read_bytes()).hexdigest() == before


def test_a_profiles_page_shows_k_star_by_tolerance_and_the_growth_law(browser, tmp_path):  # noqa: F811
    """A profile (two tolerances) on the lag data: each tolerance's answer is listed under
    NAME@ε, and its page carries the k*(ε) table, the growth law's line and the chart."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1000, 4, 1)).astype("float32")
    np.savez(tmp_path / "lag.npz", x=x, y=x[:, 2, 0].copy())
    db = tmp_path / "p.db"
    sb(db, "memory", "--task", "file", "--path", tmp_path / "lag.npz", "--set", "steps=300",
       "--families", "tcn", "--references", "none", "--params", "3000", "--workers", "2",
       "--name", "lag", "--epsilon", "0.2,0.05", "-q")  # fmt: skip
    server = Server(db)
    try:
        page = browser.new_page()
        assert page.goto(server.url + "memory").status == 200
        assert sorted(r[0] for r in _cells(page, "answers")) == ["lag@0.05", "lag@0.2"]
        assert page.goto(server.url + "memory?name=lag%400.05").status == 200
        rows = _cells(page, "profile")
        assert [(r[0], r[1], r[2]) for r in rows] == [
            ("0.2", "matches", "2"),
            ("0.05", "matches", "2"),
        ]
        assert "cannot tell how k* grows" in page.locator("#growth").inner_text()
        assert page.locator("#profile-chart svg").count() == 1
        page.close()
    finally:
        server.stop()
