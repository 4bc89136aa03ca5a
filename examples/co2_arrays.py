"""Write the Mauna Loa CO2 record as seqbench arrays: a directory of .npy files.

The weekly CO2 concentrations 1958-2001 that statsmodels ships (statsmodels/datasets/co2,
the Scripps record) are averaged by month. Each sequence is T = 48 months of monthly changes
(ppm, standardised); its target is the change over the following 6 months (standardised).
The seasonal cycle makes the target predictable from about a year of context: the question
seqbench then answers is how much of that history a model needs.

Splits are chronological (a random split of overlapping windows would leak): targets up to
1989 train, 1990-1994 validate, 1995-2001 test.

    python examples/co2_arrays.py co2        # writes co2/x_train.npy, y_train.npy, ...
    python examples/co2_arrays.py co2.npz    # the same arrays in one .npz file
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

T, AHEAD = 48, 6


def monthly() -> pd.Series:
    src = resources.files("statsmodels.datasets.co2").joinpath("co2.csv")
    df = pd.read_csv(src.open(), dtype={"date": str})
    df["date"] = pd.to_datetime(df["date"], format="%Y%m%d")
    series = df.set_index("date")["co2"].interpolate().resample("MS").mean()
    return series.dropna()


def windows(series: pd.Series):
    v = series.to_numpy()
    change = np.diff(v)  # change[i] = v[i + 1] - v[i]
    xs, ys, years = [], [], []
    for end in range(T, len(change) - AHEAD + 1):  # inputs change[end-T:end], up to v[end]
        xs.append(change[end - T : end])
        ys.append(v[end + AHEAD] - v[end])
        years.append(series.index[end + AHEAD].year)
    return np.array(xs), np.array(ys), np.array(years)


def main(out: str) -> None:
    x, y, years = windows(monthly())
    train = years <= 1989
    sx, sy = x[train].std(), y[train].std()
    mx, my = x[train].mean(), y[train].mean()
    x = ((x - mx) / sx).astype(np.float32)[:, :, None]  # (N, T, 1)
    y = ((y - my) / sy).astype(np.float32)
    parts = {"train": train, "valid": (years > 1989) & (years <= 1994), "test": years > 1994}
    arrays = {}
    for split, mask in parts.items():
        arrays[f"x_{split}"], arrays[f"y_{split}"] = x[mask], y[mask]
    if out.endswith(".npz"):
        np.savez(out, **arrays)
        print(out + ": " + ", ".join(f"{k} {a.shape}" for k, a in arrays.items()))
        return
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", a)
    for split in parts:
        print(
            f"{d}/x_{split}.npy {arrays['x_' + split].shape}, "
            f"y_{split}.npy {arrays['y_' + split].shape}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "co2")
