"""Opening a store to read it: open_reads for a command that only reads (one read-only
connection to a SQLite store at head, without SQLAlchemy; open_store for anything else), and
`reading`, which lets a reader take a store or a path alike."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from seqbench.store.query import Reader
from seqbench.store.results import ReadStore


def open_reads(db: str | os.PathLike | None, *, reap: bool = False) -> ReadStore:
    """The store at `db` for a command that only reads, checked before it is read: a SQLite
    store at head is opened read-only once, without SQLAlchemy, and read over that one
    connection; anything else is opened by store.open_store (read-only; with `reap`, runs
    whose process died are marked crashed, the one write a read command makes) and returned
    as that Store. Raises StoreError for a store that cannot be read as it is; close it when
    done."""
    from seqbench.store.common import open_readable_sqlite

    opened = open_readable_sqlite(db)
    if opened is not None:
        path, connection = opened
        return ReadStore(str(path), Reader(str(path), (path, connection), checked=True))
    from seqbench.store.store import open_store

    return open_store(db, readonly=True, reap=reap)


@contextlib.contextmanager
def reading(db: Any) -> Iterator[ReadStore]:
    """`db` itself when it is already a store (a ReadStore or a Store); else the store at that
    path or URL (None: the default), opened for reading and closed afterwards."""
    if isinstance(db, ReadStore):
        yield db
        return
    store = open_reads(db)
    try:
        yield store
    finally:
        store.dispose()
