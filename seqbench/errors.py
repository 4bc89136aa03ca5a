"""Errors a user can cause. The CLI prints them as one line on stderr and exits with `exit_code`."""

from __future__ import annotations

import difflib


def first_line(e: BaseException) -> str:
    """An exception's message as one line (its first), or its type's name when it has none."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


class SeqbenchError(Exception):
    """Base class: a mistake in input or environment, never a bug."""

    exit_code = 1


class UsageError(SeqbenchError):
    """A bad option value or combination (exit code 2, like a parse error)."""

    exit_code = 2


class NotFoundError(SeqbenchError):
    """What a command named is not in the store (a sweep): the dashboard answers it with 404."""


class StoreError(SeqbenchError):
    """The results store cannot be opened, is the wrong version, or refused a statement."""


class StoreUnwritableError(StoreError):
    """The store's files can no longer be written (made immutable or read-only while a command
    ran). Closing SQLite's connections would write to its -shm file, a SIGBUS: the CLI ends the
    process without closing them (SQLite treats that as a crash, which loses no transaction)."""


class ReadOnlyError(StoreError):
    """A statement given to `seqbench query` would write."""


class UnknownNameError(UsageError):
    """A name that is not in a registry; lists the valid names and the closest match."""

    def __init__(self, what: str, name: str, valid: list[str]):
        close = difflib.get_close_matches(name, valid, n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        super().__init__(f"unknown {what} {name!r}; valid: {', '.join(sorted(valid))}.{hint}")
        self.name = name
        self.valid = valid


class MissingDependencyError(SeqbenchError):
    """An optional package (extra) is not installed."""

    def __init__(self, package: str, purpose: str, extra: str = "datasets"):
        super().__init__(
            f"{purpose} needs the '{package}' package: pip install 'seqbench[{extra}]'"
        )


class RunFailedError(SeqbenchError):
    """A run raised; the traceback is stored in the run's `error` column."""
