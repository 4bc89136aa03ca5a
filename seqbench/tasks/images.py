"""Pixel-by-pixel image classification: scikit-learn's bundled digits (8×8 -> 64 steps) and
Fashion-MNIST from Debian's dataset-fashion-mnist (28×28 -> 784 steps), plain or with one fixed
seeded permutation of the pixels."""

from __future__ import annotations

import gzip
import struct
from functools import cached_property
from pathlib import Path

import numpy as np
import torch

from seqbench.errors import MissingDependencyError, SeqbenchError
from seqbench.tasks.base import TensorTask, generator, seeded_split

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
PERMUTATION_SEED = 1234  # one fixed permutation for every run, independent of the run's seed


def read_idx(path: Path) -> np.ndarray:
    """Read an IDX file (optionally gzipped): magic (0, 0, dtype, ndim), big-endian dims, data."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        zero, dtype_code, ndim = struct.unpack(">HBB", f.read(4))
        if zero != 0 or dtype_code != 0x08:
            raise SeqbenchError(f"{path} is not an unsigned-byte IDX file")
        dims = struct.unpack(f">{ndim}I", f.read(4 * ndim))
        data = np.frombuffer(f.read(), dtype=np.uint8)
    if data.size != int(np.prod(dims)):
        raise SeqbenchError(f"{path}: expected {int(np.prod(dims))} values, found {data.size}")
    return data.reshape(dims).copy()  # frombuffer is read-only; torch wants writable


class PixelTask(TensorTask):
    """x: (N, T, 1) pixel intensities in [0, 1]; y: (N,) class ids; the last step classifies."""

    in_dim, out_dim = 1, 10
    permuted = False
    scale = 1.0  # raw pixel value of full intensity

    def load(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        raise NotImplementedError

    @cached_property
    def _splits(self):
        data = self.load()
        perm = None
        if self.permuted:
            perm = torch.randperm(self.default_seq_len, generator=generator(PERMUTATION_SEED))
        out = {}
        for split, (images, labels) in data.items():
            n = images.shape[0] if self.args.subset is None else min(self.args.subset, len(images))
            x = torch.as_tensor(images[:n], dtype=torch.float32).reshape(n, -1, 1) / self.scale
            if perm is not None:
                x = x[:, perm]
            out[split] = (x, torch.as_tensor(labels[:n], dtype=torch.long))
        return out

    def split_tensors(self, split):
        return self._splits[split]


class Digits(PixelTask):
    name = "digits"
    scale = 16.0

    def load(self):
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            raise MissingDependencyError("scikit-learn", "the digits tasks") from None
        d = load_digits()
        images = d.images.reshape(len(d.images), -1)  # (1797, 64) in 0..16
        idx = seeded_split(len(images), self.args.seed)
        return {s: (images[i.numpy()], d.target[i.numpy()]) for s, i in idx.items()}


class PermutedDigits(Digits):
    name = "pdigits"
    permuted = True


class Fashion(PixelTask):
    name = "fashion"
    valid_size = 5000  # held out from the 60000 training images (seeded)
    scale = 255.0

    def load(self):
        files = {
            "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
            "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
        }
        if not all((FASHION_DIR / f).exists() for pair in files.values() for f in pair):
            raise SeqbenchError(
                f"Fashion-MNIST not found under {FASHION_DIR}: "
                "apt-get install dataset-fashion-mnist"
            )
        raw = {
            s: (read_idx(FASHION_DIR / i).reshape(-1, 784), read_idx(FASHION_DIR / lab))
            for s, (i, lab) in files.items()
        }
        images, labels = raw["train"]
        perm = torch.randperm(len(images), generator=generator(self.args.seed, 98)).numpy()
        va, tr = perm[: self.valid_size], perm[self.valid_size :]
        return {
            "train": (images[tr], labels[tr]),
            "valid": (images[va], labels[va]),
            "test": raw["test"],
        }


class PermutedFashion(Fashion):
    name = "pfashion"
    permuted = True
