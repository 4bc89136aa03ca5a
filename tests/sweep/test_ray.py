"""The Ray executor against real Ray clusters. Ray replaces 127.0.0.1 with the machine's
routable address, so each test runs in a private network namespace whose only interface is
loopback (`unshare --net`, root): every Ray process and the sweep driver then talk over
127.0.0.1 and nothing else."""

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap

import pytest

from tests.conftest import held_alone

pytest.importorskip("ray")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"),
        reason="needs root, unshare and ip for a loopback-only network namespace",
    ),
]

BIN = os.path.dirname(sys.executable)
SWEEP = (
    "sweep --models rnn,tcn --tasks adding --k 2,4 --set steps=15 --set hidden=8 "
    "--set seq_len=20 --set eval_size=32 --quiet --executor ray"
)


@pytest.fixture(autouse=True)
def _ray_alone():
    """One Ray test at a time on the machine, whatever worker runs it: `ray stop --force`
    (each test's exit) stops every Ray process, in any network namespace."""
    with held_alone("ray"):
        yield


def _in_namespace(script: str, tmp_path) -> subprocess.CompletedProcess:
    ray_tmp = tempfile.mkdtemp(prefix="sbray", dir="/tmp")  # AF_UNIX paths must stay short
    body = textwrap.dedent(f"""
        set -e
        ip link set lo up
        export RAY_AUTH_MODE=disabled OMP_NUM_THREADS=1 RAY_TMPDIR={ray_tmp}
        trap '{BIN}/ray stop --force >/dev/null 2>&1 || true' EXIT
    """) + textwrap.dedent(script)
    try:
        return subprocess.run(
            ["unshare", "--net", "--", "sh", "-c", body],
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _completed(db):
    con = sqlite3.connect(db)
    n = con.execute("SELECT COUNT(*) FROM runs WHERE status = 'completed'").fetchone()[0]
    con.close()
    return n


def test_ray_local_instance(tmp_path):
    db = tmp_path / "r.db"
    out = _in_namespace(f"{BIN}/seqbench --db {db} {SWEEP} --address local --workers 2\n", tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ran 4: 4 completed" in out.stdout and _completed(db) == 4


def test_ray_cluster_head_and_worker_on_loopback(tmp_path):
    db = tmp_path / "c.db"
    out = _in_namespace(
        f"""
        {BIN}/ray start --head --port=6380 --num-cpus=1 --include-dashboard=false \\
            --disable-usage-stats --temp-dir=$RAY_TMPDIR >/dev/null
        {BIN}/ray start --address=127.0.0.1:6380 --num-cpus=1 --disable-usage-stats >/dev/null
        {BIN}/seqbench --db {db} {SWEEP} --address 127.0.0.1:6380
        {BIN}/ray status | grep -c node_ | tee {tmp_path}/nodes
    """,
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ran 4: 4 completed" in out.stdout and _completed(db) == 4
    assert (tmp_path / "nodes").read_text().strip() == "2"  # a head and a worker node


def test_ray_workers_import_a_plugin_model_and_task(tmp_path):
    """The example plugin (installed by setup.sh) is found by each Ray worker from its entry
    points, as the driver found it; its version is in every run."""
    db = tmp_path / "p.db"
    sweep = (
        "sweep --models diag,tcn --tasks sunspots --k 8 --set steps=20 --quiet "
        "--executor ray --address local --workers 2"
    )
    out = _in_namespace(f"{BIN}/seqbench --db {db} {sweep}\n", tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ran 2: 2 completed" in out.stdout and _completed(db) == 2
    con = sqlite3.connect(db)
    plugins = con.execute("SELECT DISTINCT json_extract(config, '$.plugin') FROM runs").fetchall()
    con.close()
    example = "seqbench-example-plugin 0.1.0"
    assert sorted(plugins) == [(f"model: {example}; task: {example}",), (f"task: {example}",)]
