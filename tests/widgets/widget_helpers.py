"""Helpers for the explorer tests (a module of its own: every test folder has a conftest)."""

from __future__ import annotations

from typing import Any

from jupyter_scratchpad.widgets import Explorer


def ask(explorer: Explorer, action: str, **args: Any) -> dict[str, Any]:
    """What the page gets back for one request."""
    return explorer.handle_request({"type": "request", "id": 1, "action": action, "args": args})
