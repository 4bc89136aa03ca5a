"""The memory-functions preset at CI size and `seqbench memory kernels`: every cell read
against its kernel's closed form. The oracle: no model with context k beats the optimal
predictor of context k (beyond its test set's sampling error), whatever it learned; an
impulse at delay d is out of reach below k = d + 1 and within reach at or above it."""

import json

import pytest

from seqbench.configure import make_config
from seqbench.memory.kernels import equivalent_k
from seqbench.tasks import memory_functions as mf
from tests.conftest import seqbench_cmd


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    import subprocess

    db = tmp_path_factory.mktemp("kernels") / "k.db"
    subprocess.run(
        seqbench_cmd(db, "sweep --preset memory-functions --scale tiny --workers 2 --quiet"),
        check=True,
        capture_output=True,
        timeout=900,
    )
    return db


def test_every_cell_reads_against_its_closed_form(cli, swept):
    r = cli("--db", str(swept), "memory", "kernels", "--format", "json")
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    kernels = [row["kernel"].split(" ")[0] for row in rows]
    assert list(dict.fromkeys(kernels)) == list(mf.KERNELS)  # in the kernels' order
    families = {row["family"] for row in rows}
    assert families == {"tcn", "transformer", "lru", "lru stable λ=0.9", "s4d", "gru"}
    T = 16
    for row in rows:
        kernel = row["kernel"].split(" ")[0]
        sets = {"seq_len": T, "kernel": kernel}
        sets |= {"delay": T // 3} if kernel == "impulse" else {}
        sets |= {"omega": 0.5} if kernel == "osc" else {}
        sets |= {"alpha": 1.0} if kernel == "power" else {}
        e = mf.optimal_truncated_error(make_config("tcn", "memory-function", sets), T)
        if row["context"] == "full":
            assert float(row["e*(context)"]) == 0.0  # no noise: the whole input is enough
            continue
        k = int(row["context"])
        assert float(row["e*(context)"]) == pytest.approx(e[k], rel=1e-3)
        # the oracle: a context-k model does no better than the best context-k predictor
        assert int(row["equivalent k"]) <= k, row
    impulse = {(r["family"], r["context"]): r for r in rows if r["kernel"].startswith("impulse")}
    assert impulse[("tcn", "2")]["equivalent k"] == "0"  # lag 5 is out of its reach
    assert impulse[("tcn", "8")]["equivalent k"] == str(T // 3 + 1)  # within it: learned


def test_the_equivalent_context_allows_for_the_test_sets_sampling_error():
    e = [1.0, 0.5, 0.25, 0.0]
    assert equivalent_k(e, 0.49, n=8000) == "1"  # 2% below e*(1) on 8000 predictions: noise
    assert equivalent_k(e, 0.40, n=8000) == "2"
    assert equivalent_k(e, 1.2, n=8000) == "0"
    assert equivalent_k(e, float("nan"), n=8000) == ""


def test_a_sweep_without_the_task_is_one_line(cli, tmp_path, swept):
    r = cli("--db", str(swept), "memory", "kernels", "nope")
    assert r.exit_code != 0 and len(r.output.strip().splitlines()) == 1
    assert "nope" in r.output
