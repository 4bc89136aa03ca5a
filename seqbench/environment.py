"""What a run ran on: versions, device and host, stored with every run."""

from __future__ import annotations

import functools
import platform
import socket
import subprocess
import sys
from importlib import metadata

from seqbench._version import __version__


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def source_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the seqbench that is running: the git checkout its package lives in
    (an editable install, a clone on PYTHONPATH), found from the package's own location, not
    the working directory; (None, None) for an installed wheel. Dirty: tracked files of the
    checkout differ from the commit."""
    from pathlib import Path

    here = Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(here), *args],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if not top or not (Path(top) / "seqbench" / "__init__.py").is_file():
        return None, None  # not seqbench's own checkout (a wheel inside someone's repository)
    sha = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return sha, (None if status is None else bool(status))


def git_sha() -> str | None:
    return source_state()[0]


@functools.lru_cache(maxsize=1)
def packages() -> tuple[int, str]:
    """(how many distributions are installed, sha256 of their sorted 'name==version' lines):
    two runs with the same hash ran on the same packages (`seqbench diff` shows a change)."""
    import hashlib

    lines = sorted(
        {f"{(d.metadata['Name'] or '').lower()}=={d.version}" for d in metadata.distributions()}
    )
    return len(lines), hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def _flag(v: bool | None) -> str | None:
    return None if v is None else ("true" if v else "false")


def available_ram() -> int:
    """Bytes of memory a new allocation here may take: the least of the machine's available
    memory (MemAvailable on Linux), what the process's address-space limit (RLIMIT_AS, as
    `ulimit -v` sets it) leaves above its current size, and what its cgroup's memory limit
    (memory.max, or v1's limit_in_bytes) leaves above its usage."""
    import os

    have = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    have = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if have is None:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    return min([have, *_limits_left()])


def _limits_left() -> list[int]:
    """What RLIMIT_AS and the cgroup's memory limit leave, each where it is set."""
    import resource

    left = []
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        left.append(max(0, soft - _status_bytes("VmSize")))
    cgroup = _cgroup_left()
    if cgroup is not None:
        left.append(cgroup)
    return left


def _status_bytes(field: str) -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _cgroup_left() -> int | None:
    """memory.max − memory.current of the process's cgroup (v2), or limit_in_bytes −
    usage_in_bytes (v1); None where no limit is set or none can be read."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, where = line.split(":", 2)
        if controllers == "":  # v2's unified hierarchy
            root, files = "/sys/fs/cgroup", ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            root, files = (
                "/sys/fs/cgroup/memory",
                ("memory.limit_in_bytes", "memory.usage_in_bytes"),
            )
        else:
            continue
        # its path as the host names it, or the namespace's root (a container's own cgroup)
        for base in dict.fromkeys((root + where.rstrip("/"), root)):
            limit, used = (_read_int(f"{base}/{name}") for name in files)
            if limit is not None and limit < 1 << 60:  # v1 writes "no limit" as a huge number
                return max(0, limit - (used or 0))
    return None


def require_ram(need: int, what: str, lower: str, detail: str = "") -> None:
    """The one memory check before a command allocates: a UsageError when `need` bytes exceed
    80% of what is available, "WHAT needs about X GiB (DETAIL) but Y GiB is available: lower
    LOWER"."""
    from seqbench.errors import UsageError

    have = available_ram()
    if need > 0.8 * have:
        detail = f" ({detail})" if detail else ""
        raise UsageError(
            f"{what} needs about {need / 2**30:.1f} GiB{detail} but {have / 2**30:.1f} GiB "
            f"is available: lower {lower}"
        )


def capture(
    device: str, threads_from: str | None = None, heap: str | None = None
) -> dict[str, str | None]:
    """What a run ran on; `threads_from` says where its torch thread count came from (flag,
    SEQBENCH_THREADS, OMP_NUM_THREADS, auto, or a sweep's share); `heap` whether freed
    memory is kept between steps (training/heap.py, which the caller asked)."""
    import torch

    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(torch.device(device))
    else:
        name = platform.processor() or platform.machine()
    return {
        "seqbench": __version__,
        "git_sha": git_sha(),
        "git_dirty": _flag(source_state()[1]),
        "packages": str(packages()[0]),
        "packages_sha256": packages()[1],
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "triton": _version("triton"),
        "numba": _version("numba"),
        "device": device,
        "device_name": name,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "threads": str(torch.get_num_threads()),
        "threads_from": threads_from,
        "heap": heap,
    }
