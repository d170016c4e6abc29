"""jupyter-scratchpad: large outputs out of the way, one query away.

>>> from jupyter_scratchpad import ScratchStore
>>> store = ScratchStore()
>>> pad = store.scratchpad(run_id="run-1", agent_id="main", model="gpt-4o")
>>> r = pad.intercept({"items": [{"id": i} for i in range(5000)]}, tool="list_items")
>>> r.spilled, r.stub["format"]
(True, 'json')
>>> pad.call_tool("item_schema", {"handle": r.handle, "path": "items"}).ok
True
>>> store.close()

In IPython / Jupyter: ``%load_ext jupyter_scratchpad``.
"""

from __future__ import annotations

from typing import Any

from ._pad import InterceptResult, Scratchpad
from ._version import __version__
from .budget import CONTEXT_WINDOWS, ContextBudget, context_window_for
from .errors import (
    InvalidArgumentError,
    NotFoundError,
    ScopeError,
    ScratchpadError,
    StoreClosedError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreUnavailableError,
    TokenizerDataError,
)
from .spill import SpillDecision, SpillPolicy
from .store import ScratchStore
from .tokens import count_tokens
from .tools import TOOL_NAMES, ToolResult, tool_specs

__all__ = [
    "CONTEXT_WINDOWS",
    "ContextBudget",
    "InterceptResult",
    "InvalidArgumentError",
    "NotFoundError",
    "ScopeError",
    "ScratchStore",
    "Scratchpad",
    "ScratchpadError",
    "SpillDecision",
    "SpillPolicy",
    "StoreClosedError",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreUnavailableError",
    "TOOL_NAMES",
    "TokenizerDataError",
    "ToolResult",
    "__version__",
    "context_window_for",
    "count_tokens",
    "load_ipython_extension",
    "tool_specs",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_scratchpad`` (IPython is imported only here)."""
    from .ipython import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jupyter_scratchpad``: remove every hook the extension added."""
    from .ipython import unload_ipython_extension as _unload

    _unload(ipython)
