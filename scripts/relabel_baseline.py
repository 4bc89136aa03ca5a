"""Relabel a baseline file written before store revision 0006 the way that migration relabels
a store's baseline points: each feedforward point's k becomes the context its network had.

The file is imported into a scratch store, the store is taken back to revision 0005 and
upgraded again (migrations/versions/0006 does the relabelling, nothing here does), and the
baseline is exported over the file. Values and configs are untouched; a point that moves
keeps the k it was given in its variant (`{"k": null}` for one given none), so that points
that were one network stay apart. For a preset whose networks did not change (no
feedforward model given a k), the points equal a re-run's in k and value
(tests/store/test_relabel_baseline.py), and a re-run checks against the file as passing.

    python scripts/relabel_baseline.py baselines/bai-tcn-small.json
"""

import sys
import tempfile
from pathlib import Path

from seqbench import api
from seqbench.store import migrate


def relabel(path: Path) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        store = api.open_store(Path(tmp) / "relabel.db")
        name, _ = api.import_baseline(store, path)
        engine = store.engine
        migrate.downgrade(engine, "0005")
        migrate.upgrade(engine, "head")  # 0006 relabels; later revisions touch no baseline
        store.dispose()
        store = api.open_store(Path(tmp) / "relabel.db")
        n = api.export_baseline(store, name, path)
        store.dispose()
    return n


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {relabel(Path(arg))} points relabelled by revision 0006 and written back")
