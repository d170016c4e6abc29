"""The exceptions of jupyter-scratchpad: one tree, rooted at ``ScratchpadError``.

::

    ScratchpadError
    ├── StoreError                  the store itself cannot do what was asked
    │   ├── StoreClosedError        the store was closed
    │   ├── StoreLockedError        another process holds the store directory
    │   ├── StoreUnavailableError   the shared store's PostgreSQL cannot be reached (retry later)
    │   └── StoreFormatError        the directory is not a store, or a newer layout
    ├── ScopeError                  a run belongs to another agent
    ├── NotFoundError               no live entry with that handle or key (expired, deleted, never there)
    ├── InvalidArgumentError        a bad argument: handle, key, TTL, path, policy, ... (also a ValueError)
    └── TokenizerDataError          no verified offline tokenizer data

Every exception carries its context as attributes (``handle``, ``path``, ``lock_path`` ...) and a
message that says what to do next. Errors of DuckDB are wrapped once, at the store boundary, as
``StoreError`` with the original chained as ``__cause__``.

Mistakes a *model* can make through :meth:`Scratchpad.call_tool` are never raised: they come back
as a ``ToolResult`` with ``ok=False`` and a structured ``error`` dict.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "InvalidArgumentError",
    "NotFoundError",
    "ScopeError",
    "ScratchpadError",
    "StoreClosedError",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreUnavailableError",
    "TokenizerDataError",
]


class ScratchpadError(Exception):
    """Base of every error raised by jupyter-scratchpad."""

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(message)
        self.message = message
        self.context = context
        for name, value in context.items():
            setattr(self, name, value)


class StoreError(ScratchpadError):
    """The store could not carry out an operation (I/O, DuckDB, disk full...)."""


class StoreClosedError(StoreError):
    """The store was closed; open a new ``ScratchStore``."""


class StoreLockedError(StoreError):
    """Another process holds the store directory's lock."""


class StoreUnavailableError(StoreError):
    """The shared store's PostgreSQL is down or unreachable; nothing was changed. Calls succeed
    again once it is back: the connection pool reconnects without a restart."""


class StoreFormatError(StoreError):
    """The directory is not a scratch store, or was written by an incompatible version."""


class ScopeError(ScratchpadError):
    """A run is owned by a different agent than the one asking."""


class NotFoundError(ScratchpadError, KeyError):
    """No live entry has that handle or key in this (run, agent) scope."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class InvalidArgumentError(ScratchpadError, ValueError):
    """An argument is malformed: a handle, key, TTL, JSON path, policy file..."""


class TokenizerDataError(ScratchpadError):
    """No verified tokenizer data could be found offline."""
