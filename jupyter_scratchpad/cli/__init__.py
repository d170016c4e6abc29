"""The ``jupyter-scratchpad`` command: MCP server and proxy, and a person's reads over a store."""

from __future__ import annotations

from ._main import main

__all__ = ["main"]
