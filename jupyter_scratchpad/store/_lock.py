"""The one-process lock of a store directory.

POSIX: ``fcntl.flock``; Windows: ``msvcrt.locking`` on the file's first byte. Both are released
by the OS when the process dies, so a crash never leaves a store locked. The file holds the
holder's pid for the error message (on Windows the pid is written past the locked byte, where a
second process can still read it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import IO

from ..errors import StoreError, StoreLockedError

__all__ = ["StoreLock"]

if sys.platform == "win32":  # pragma: no cover - CI runs on Linux; see the README's Windows notes
    import msvcrt

    _PID_AT = 1  # byte 0 is the lock; the pid follows

    def _try_lock(fh: IO[str]) -> bool:
        fh.seek(0)
        try:
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fh: IO[str]) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    _PID_AT = 0

    def _try_lock(fh: IO[str]) -> bool:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fh: IO[str]) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


class StoreLock:
    """An exclusive, non-blocking lock on ``<dir>/LOCK`` naming the holder's pid."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._fh = open(path, "a+")  # noqa: SIM115 - held for the store's lifetime
        except OSError as exc:  # a read-only filesystem, another user's directory
            raise StoreError(
                f"cannot open the scratch store at {path.parent} for writing ({exc.strerror or exc}): "
                "an embedded store needs to write its directory (its lock, catalog and bodies); fix its "
                "permissions, or open a store in a directory you can write (ScratchStore(path), --store DIR)",
                path=str(path.parent),
            ) from None
        if not _try_lock(self._fh):
            holder = self._read_holder()
            self._fh.close()
            raise StoreLockedError(
                f"the scratch store at {path.parent} is open in process {holder} (lock file "
                f"{path}). Close it there (store.close(), or shut that kernel down), open "
                "a different directory, or share one store between processes with a PostgreSQL "
                "catalog (SCRATCHPAD_STORE_URL); DuckDB allows one writing process per store.",
                path=str(path.parent),
                lock_path=str(path),
                holder=holder,
            ) from None
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(" " * _PID_AT + str(os.getpid()))
        self._fh.flush()

    def _read_holder(self) -> str:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                return fh.read().strip() or "another process"
        except OSError:
            return "another process"

    def release(self) -> None:
        if not self._fh.closed:
            _unlock(self._fh)
            self._fh.close()
