"""The one-process lock of a store directory."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import StoreLockedError

__all__ = ["StoreLock"]


class StoreLock:
    """An exclusive, non-blocking flock on ``<dir>/LOCK`` naming the holder's pid."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open(path, "a+")  # noqa: SIM115 - held for the store's lifetime
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._fh.seek(0)
            holder = self._fh.read().strip() or "another process"
            self._fh.close()
            raise StoreLockedError(
                f"the scratch store at {path.parent} is open in process {holder} (lock file "
                f"{path}). Close it there (store.close(), or shut that kernel down), or open "
                "a different directory; DuckDB allows one writing process per store.",
                path=str(path.parent),
                lock_path=str(path),
                holder=holder,
            ) from None
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(str(os.getpid()))
        self._fh.flush()

    def release(self) -> None:
        if not self._fh.closed:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
