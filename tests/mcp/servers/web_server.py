"""A streamable-HTTP MCP server (the official SDK's MCPServer) for the proxy's HTTP upstream
tests: ``big(mb)`` answers about ``mb`` MB of a JSON log in one text block, ``small`` a short
text; a resource ``web://note`` and a prompt ``greet``. Run as ``python web_server.py PORT``."""

from __future__ import annotations

import json
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("web")


@server.tool()
def big(mb: float = 3) -> str:
    """About ``mb`` MB of JSON log lines (the same bytes every call)."""
    rows = [{"id": i, "level": "error" if i % 50 == 0 else "info", "msg": f"request {i} served"}
            for i in range(int(mb * 17_000))]  # fmt: skip
    return json.dumps({"rows": rows})


@server.tool()
def small() -> str:
    """A small answer."""
    return "just this"


@server.resource("web://note")
def note() -> str:
    """A short note."""
    return "a note"


@server.prompt()
def greet() -> str:
    """A greeting."""
    return "hello"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
