"""Is a run still alive: the heartbeat its process sends, the stale limit past which a row that
says `running` is not, and the process checks (same host, same pid, same start time) that tell
a live run from a dead one's leftover row. Standard library only."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

# A run's process sends a heartbeat every HEARTBEAT_S seconds (SEQBENCH_HEARTBEAT_S) from a
# thread of its own; a run whose last one is older than its stale limit (kept in its environment
# as stale_after, STALE_BEATS heartbeats) is stale. DEFAULT_STALE_S covers rows that say none.
HEARTBEAT_S = 10.0
STALE_BEATS = 6
DEFAULT_STALE_S = 120.0


def heartbeat_interval() -> float:
    raw = os.environ.get("SEQBENCH_HEARTBEAT_S", "")
    try:
        value = float(raw) if raw else HEARTBEAT_S
    except ValueError:
        return HEARTBEAT_S
    return value if 0 < value < 86_400 else HEARTBEAT_S


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (the state first, the start time
    at index 19); None when there is no such file (no such process, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()


def process_start(pid: int) -> str | None:
    """The start time of process `pid` (clock ticks since boot), which tells it from a later
    process given the same pid; None off Linux or for no such process."""
    fields = _proc_stat(pid)
    return fields[19] if fields else None


def process_alive(host: str | None, pid: Any, born: str | None = None) -> bool | None:
    """Whether the process `pid` on `host` is alive: None when it cannot be told from here
    (another host, no pid). On Linux a zombie (killed, its parent not yet reaping it) is dead,
    which os.kill(pid, 0) does not tell; with `born` (process_start's), so is another process
    given the same pid."""
    import socket

    if not host or host != socket.gethostname() or pid is None:
        return None
    try:
        pid = int(pid)
    except (ValueError, TypeError):
        return None
    if 0 < pid < 2**31 and os.path.isdir("/proc"):
        fields = _proc_stat(pid)
        if fields is None:
            return False
        return fields[0] not in ("Z", "X") and (born is None or fields[19] == born)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return None
    return True


def stale_reason(env: Mapping[str, Any] | None, beat, now) -> str | None:
    """Why a running run with environment `env` and last heartbeat `beat` is stale, or None."""
    env = env or {}
    host = env.get("driver_host") or env.get("host")
    pid = env.get("driver_pid", env.get("pid"))
    if process_alive(host, pid) is False:
        return f"stale: its process ({pid} on {host}) is gone (killed, or out of memory)"
    try:
        limit = float(env.get("stale_after") or DEFAULT_STALE_S)
    except (TypeError, ValueError):
        limit = DEFAULT_STALE_S
    if beat is None or (now - beat).total_seconds() > limit:
        return f"stale: no heartbeat for more than {limit:g} s (its process died or hung)"
    return None
