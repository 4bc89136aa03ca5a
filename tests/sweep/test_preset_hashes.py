"""Every point of every reproduction preset, at every scale, keeps the config hash it had: a
store that ran a preset finds its points done after any change to resolution (the reads
check of 2026-12-05 among them). data/preset_hashes.txt was written by the seqbench of commit
8363a88, before that change; a preset whose grid is changed on purpose is written again with
`python -m tests.sweep.test_preset_hashes > tests/sweep/data/preset_hashes.txt`."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

FROZEN = Path(__file__).parent / "data" / "preset_hashes.txt"


def preset_points() -> list[str]:
    """One line per point: preset, scale, model, task, config hash (sorted)."""
    import seqbench.sweep.presets as presets
    from seqbench.configure import config_hash
    from seqbench.sweep.spec import expand

    out = []
    for m in pkgutil.iter_modules(presets.__path__):
        mod = importlib.import_module(f"seqbench.sweep.presets.{m.name}")
        if not hasattr(mod, "grids"):
            continue
        for scale in ("tiny", "small", "paper"):
            for cfg in expand(mod.grids(scale)):
                out.append(f"{m.name} {scale} {cfg.model} {cfg.task} {config_hash(cfg)}")
    return sorted(out)


def test_every_preset_point_keeps_its_hash():
    frozen = FROZEN.read_text().splitlines()
    now = preset_points()
    gone = sorted(set(frozen) - set(now))
    assert len(frozen) > 900 and gone == [], gone[:10]
    assert len(now) == len(frozen), "a preset gained points: write the file again (docstring)"


if __name__ == "__main__":
    print("\n".join(preset_points()))
