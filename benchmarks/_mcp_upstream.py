"""The upstream MCP server of ``bench_mcp`` (the official SDK's MCPServer, stdio).

Two tools: ``small`` (a 9-byte answer) and ``big_listing`` (about ``mb`` MB of a JSON pod
listing). Unlike the test suite's ``mixed_server.py``, whose listing is the same bytes every
call, each ``big_listing`` call of a process returns different bytes (a call counter in the
first field, the same size every call): a real tool's results differ from call to call, so a
proxy in front of this server spills every result instead of finding the last one's entry.

Run as ``python benchmarks/_mcp_upstream.py``.
"""

from __future__ import annotations

import json

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-upstream")
_calls = [0]


@server.tool()
def small() -> str:
    """A small answer."""
    return "just this"


@server.tool()
def big_listing(mb: int = 10) -> str:
    """About `mb` MB of a JSON pod listing; each call's bytes differ (its number comes first)."""
    _calls[0] += 1
    pods = [{"name": f"pod-{i}", "namespace": f"ns-{i % 40}", "phase": "Running" if i % 9 else "Pending",
             "labels": {"app": f"app-{i % 300}", "tier": "web"}, "restarts": i % 7} for i in range(mb * 7000)]  # fmt: skip
    return json.dumps({"call": f"{_calls[0]:06d}", "items": pods})


if __name__ == "__main__":
    server.run()
