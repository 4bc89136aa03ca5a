import json

from seqbench.store.opening import open_store


def test_bench_kernels_prints_and_stores_each_backend(cli, tmp_path):
    r = cli(
        "bench",
        "kernels",
        "--seq-len",
        "50",
        "--batch",
        "2",
        "--hidden",
        "8",
        "--repeat",
        "1",
        "--format",
        "json",
    )
    assert r.exit_code == 0, r.output
    rows = {row["name"]: row for row in json.loads(r.stdout)}
    assert {"indrnn[torch]", "indrnn[cpu]", "indrnn[numba]"} <= set(rows)
    assert rows["indrnn[numba]"]["x torch"] > 0
    assert rows["indrnn[torch]"]["x torch"] == 1.0 and rows["indrnn[cpu]"]["ms"] > 0
    store = open_store(tmp_path / "seqbench.db")
    runs = store.list_runs(kind="bench")
    assert {r.model for r in runs} >= {"indrnn[torch]", "indrnn[cpu]"}
    s = store.summaries(runs[0].id)
    assert s["ms"] > 0 and s["copy_gbps"] > 0
    # for people: three significant digits, the copy fraction in %, the speed-up with its ×
    md = cli("bench", "kernels", "--seq-len", "50", "--batch", "2", "--hidden", "8",
             "--repeat", "1", "--format", "markdown").stdout  # fmt: skip
    (torch_row,) = [line for line in md.splitlines() if line.startswith("| indrnn[torch]")]
    _, ms, _, share, speedup = (c.strip() for c in torch_row.strip("|").split("|"))
    assert speedup == "1×" and share.endswith("%")
    assert len(ms.replace(".", "").lstrip("0")) <= 3, ms  # 3 significant digits


def test_bench_bad_input(cli):
    assert cli("bench", "kernels", "--seq-len", "0").exit_code == 2
    r = cli(
        "bench", "kernels", "--backend", "triton", "--seq-len", "4", "--batch", "1", "--hidden", "2"
    )
    assert r.exit_code == 2 and "backend 'triton' is unavailable" in r.stderr
