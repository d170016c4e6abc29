"""MCP: the scratchpad as an MCP server, and a spilling proxy in front of other MCP servers.

Needs the ``mcp`` extra (``pip install 'jupyter-scratchpad[mcp]'``); the core never imports it.
Run them with ``jupyter-scratchpad mcp serve`` and ``jupyter-scratchpad mcp proxy``.
"""

from __future__ import annotations

from ._proxy import Upstream, UpstreamError, build_proxy, upstreams_from_client_config, upstreams_from_toml
from ._server import PAGE_BYTES, build_server, call_result

__all__ = [
    "PAGE_BYTES",
    "Upstream",
    "UpstreamError",
    "build_proxy",
    "build_server",
    "call_result",
    "upstreams_from_client_config",
    "upstreams_from_toml",
]
