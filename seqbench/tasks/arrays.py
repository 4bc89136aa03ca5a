"""A user's arrays, read and checked with NumPy alone (no torch): a data file's bytes hashed
(its content is the experiment), its named arrays opened (an .npz read into memory, a
directory of .npy files memory-mapped), and the checks each array passes before a dataset is
built from it (tasks/filedata.py): the archive's sizes against memory, finite values,
integer ranges, the dtypes a kind allows. Each failure is one FileDataError line naming the
file."""

from __future__ import annotations

import hashlib
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from seqbench.errors import SeqbenchError

SCAN_ROWS = 4096  # rows per chunk when checking a (memory-mapped) array for NaN / range


class FileDataError(SeqbenchError):
    """A data file that cannot be used: one line naming the file and what is wrong."""


def data_error(path: str, why: str) -> FileDataError:
    return FileDataError(f"data file {path!r}: {why}")


def content_hash(path: str | Path) -> str:
    """sha256 of the dataset's bytes: the file, or a directory's .npy files and meta.json in
    name order (each name hashed with its bytes)."""
    p = Path(path)
    h = hashlib.sha256()
    if not p.is_dir():
        _regular(str(path), p)
    files = (
        [p]
        if p.is_file()
        else sorted(f for f in p.iterdir() if f.suffix == ".npy" or f.name == "meta.json")
    )
    for f in files:
        if p.is_dir():
            h.update(f.name.encode() + b"\0")
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


class Arrays:
    """The named arrays of a data file, opened lazily (memory-mapped from a directory)."""

    def __init__(self, path: str):
        self.path = path
        p = Path(path)
        if not p.exists():
            raise data_error(path, "no such file or directory")
        self.meta: dict[str, Any] = {}
        self._npz = None
        if p.is_dir():
            self._files = {f.stem: f for f in p.iterdir() if f.suffix == ".npy"}
            if not self._files:
                raise data_error(path, "the directory has no .npy files")
            for f in self._files.values():
                _regular(path, f)
            meta = p / "meta.json"
            if meta.exists():
                self.meta = self._parse_meta(meta.read_text(encoding="utf-8", errors="replace"))
        elif p.suffix == ".npz":
            _regular(path, p)
            check_npz_sizes(path)
            try:
                self._npz = np.load(p, allow_pickle=False)
            except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
                raise data_error(path, f"not a readable .npz ({_short(e)}); truncated?") from None
            self._files = {n: None for n in self._npz.files}
            if "meta" in self._files:
                self._files.pop("meta")
                self.meta = self._parse_meta(str(self._load_npz("meta")))
        else:
            raise data_error(
                path,
                "expected an .npz file or a directory of .npy files (or a table: .csv, .parquet)",
            )
        unknown = set(self.meta) - {"target", "n_classes", "vocab"}
        if unknown:
            raise data_error(path, f"unknown metadata key(s) {', '.join(sorted(unknown))}")

    def _parse_meta(self, text: str) -> dict:
        try:
            meta = json.loads(text)
        except json.JSONDecodeError as e:
            raise data_error(self.path, f"its metadata is not JSON ({e.msg})") from None
        if not isinstance(meta, dict):
            raise data_error(self.path, "its metadata must be a JSON object")
        return meta

    def _load_npz(self, name: str) -> np.ndarray:
        try:
            return self._npz[name]
        except ValueError as e:  # object arrays (ragged lists) need pickle
            if "allow_pickle" in str(e):
                raise data_error(
                    self.path, f"{name} is an object array (ragged sequences?)"
                ) from None
            raise data_error(self.path, f"{name} cannot be read ({_short(e)})") from None
        except (zipfile.BadZipFile, EOFError, OSError) as e:
            raise data_error(
                self.path, f"{name} cannot be read ({_short(e)}); truncated?"
            ) from None

    def names(self) -> set[str]:
        return set(self._files)

    def get(self, name: str) -> np.ndarray:
        if self._npz is not None:
            return self._load_npz(name)
        try:
            return np.load(self._files[name], mmap_mode="r", allow_pickle=False)
        except ValueError as e:
            if "allow_pickle" in str(e) or "Object arrays" in str(e):
                raise data_error(
                    self.path, f"{name} is an object array (ragged sequences?)"
                ) from None
            raise data_error(
                self.path, f"{name}.npy cannot be read ({_short(e)}); truncated?"
            ) from None
        except (EOFError, OSError) as e:
            raise data_error(
                self.path, f"{name}.npy cannot be read ({_short(e)}); truncated?"
            ) from None


def _regular(path: str, p: Path) -> None:
    """Refuse what is not a regular file, whatever its name: a FIFO named x.npz made every
    command that read it wait for ever."""
    import stat

    if not stat.S_ISREG(p.stat().st_mode):
        raise data_error(path, f"{p.name} is not a regular file (a FIFO, a socket or a device)")


def check_npz_sizes(path: str) -> None:
    """Read each member's declared size and its .npy header (shape, dtype) before anything is
    decompressed, and refuse a file whose arrays cannot be held here (environment.
    available_ram: free memory, RLIMIT_AS and the cgroup's limit) or whose header claims more
    than its member holds: a 7.8 MB file that expanded to 8 GB raised MemoryError in a
    118-line traceback, and one whose header claimed 364 TiB a traceback of its own."""
    from seqbench.environment import available_ram

    total = 0
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                name = info.filename[:-4]
                with zf.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read = {(1, 0): np.lib.format.read_array_header_1_0}.get(
                        version, np.lib.format.read_array_header_2_0
                    )
                    shape, _, dtype = read(f)
                    header = f.tell()
                if dtype.hasobject:
                    continue  # refused as an object array when it is read
                nbytes = math.prod(int(d) for d in shape) * dtype.itemsize
                if nbytes > info.file_size - header:
                    raise data_error(
                        path,
                        f"{name}: its header claims {_gib(nbytes)} ({'×'.join(map(str, shape))} "
                        f"{dtype}) but the file holds {_gib(info.file_size)}; truncated or forged?",
                    )
                total += nbytes
    except FileDataError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as e:
        raise data_error(path, f"not a readable .npz ({_short(e)}); truncated?") from None
    have = available_ram()
    if total > 0.5 * have:  # the arrays, and the copies the task makes of them
        raise data_error(
            path,
            f"its arrays take {_gib(total)} once decompressed and about twice that to load, "
            f"but {_gib(have)} is available here; save them uncompressed as a directory of "
            ".npy files (memory-mapped) or use a machine with more memory",
        )


def _gib(n: int) -> str:
    if n < 2**20:
        return f"{n:,} bytes"
    return f"{n / 2**30:.1f} GiB" if n >= 2**27 else f"{n / 2**20:.1f} MiB"


def _short(e: BaseException) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:120]


def _chunks(a: np.ndarray):
    for i in range(0, a.shape[0], SCAN_ROWS):
        yield np.asarray(a[i : i + SCAN_ROWS])


def check_finite(path: str, name: str, a: np.ndarray) -> None:
    if not np.issubdtype(a.dtype, np.floating):
        return
    for chunk in _chunks(a):
        if not np.isfinite(chunk).all():
            raise data_error(path, f"{name} has NaN or infinite values")


def int_range(a: np.ndarray) -> tuple[int, int]:
    lo, hi = None, None
    for chunk in _chunks(a):
        if chunk.size:
            lo = int(chunk.min()) if lo is None else min(lo, int(chunk.min()))
            hi = int(chunk.max()) if hi is None else max(hi, int(chunk.max()))
    return (0, -1) if lo is None else (lo, hi)


def dtype_kind(path: str, name: str, a: np.ndarray) -> str:
    if a.dtype == object:
        raise data_error(path, f"{name} is an object array (ragged sequences?)")
    if np.issubdtype(a.dtype, np.floating):
        return "float"
    if np.issubdtype(a.dtype, np.integer):
        return "int"
    raise data_error(path, f"{name} has dtype {a.dtype}; expected floats or integers")
