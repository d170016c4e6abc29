"""A small MCP server (the official SDK's MCPServer) for the proxy's edge cases: a big text with an
image after it, a tool whose ``_meta`` asks for large results whole, a tool that reports progress,
a tool that fails with a huge error (in text, or in structured content), and one that ends
the process. Run as ``python mixed_server.py`` (stdio)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()
ROWS = [{"id": i, "status": "ok" if i % 3 else "failed", "detail": f"event number {i}"} for i in range(6000)]

server = MCPServer("mixed", instructions="MIXED-RULES: call report_with_chart at most once per task.")


@server.tool()
def report_with_chart() -> types.CallToolResult:
    """A large JSON report and a chart."""
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text=json.dumps({"rows": ROWS})),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        ]
    )


@server.tool(meta={"anthropic/maxResultSizeChars": 2_000_000})
def whole_document() -> str:
    """A large text the tool wants delivered whole (its _meta size hint)."""
    return "\n".join(f"paragraph {i}: " + "lorem ipsum " * 8 for i in range(8000))


@server.tool()
async def slow_count(ctx: Context, steps: int = 3, interval: float = 0.0) -> str:
    """Counts to `steps`, reporting progress, `interval` seconds apart."""
    import anyio

    for i in range(steps):
        await anyio.sleep(interval)
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"counted to {steps}"


@server.tool()
def explode() -> types.CallToolResult:
    """Fails with a very long error."""
    trace = "".join(f"  frame {i}: in handler_{i}\n" for i in range(20000))
    return types.CallToolResult(content=[types.TextContent(type="text", text="Traceback:\n" + trace)], is_error=True)


@server.tool()
async def wait_for_cancel(marker: str) -> str:
    """Waits a minute, writing to `marker` when it starts and when it is cancelled."""
    import anyio

    Path(marker).write_text("started")
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        Path(marker).write_text("cancelled")
        raise
    return "not cancelled"


@server.tool()
def big_listing(mb: int = 10) -> str:
    """About `mb` MB of a JSON pod listing (the same bytes every call)."""
    pods = [{"name": f"pod-{i}", "namespace": f"ns-{i % 40}", "phase": "Running" if i % 9 else "Pending",
             "labels": {"app": f"app-{i % 300}", "tier": "web"}, "restarts": i % 7} for i in range(mb * 7000)]
    return json.dumps({"items": pods})


@server.tool()
def explode_structured() -> types.CallToolResult:
    """Fails with a short text and a huge structured error."""
    trace = {"frames": [f"frame {i}: in handler_{i}" for i in range(50000)]}
    return types.CallToolResult(content=[types.TextContent(type="text", text="bad")], structured_content=trace,
                                is_error=True)  # fmt: skip


@server.tool()
def explode_with_attachments() -> types.CallToolResult:
    """Fails with a short text, a 1.7 MB log embedded as a resource, a 1 MB image and a small icon."""
    body = "\n".join(f"log line {i}: request failed" for i in range(60000))
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4096).decode()
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="the request failed; the log:"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="file:///var/log/app.log",
                                                                                        text=body)),
            types.ImageContent(type="image", data=big, mime_type="image/png"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        ],
        is_error=True,
    )  # fmt: skip


@server.tool()
def big_image() -> types.CallToolResult:
    """A 2 MB image (2.8 MB of base64) and a small icon, with no text."""
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8192).decode()
    return types.CallToolResult(
        content=[
            types.ImageContent(type="image", data=big, mime_type="image/png"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        ]
    )


@server.tool()
def embedded_file() -> types.CallToolResult:
    """A short note and a large text file embedded as a resource (as a file-reading tool might)."""
    body = "\n".join(f"log line {i}: request served" for i in range(60000))
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="the file you asked for:"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="file:///var/log/app.log",
                                                                                        text=body)),
        ]
    )  # fmt: skip


@server.tool()
def exit_now() -> str:
    """The server's process ends (as a crash would)."""
    import os

    os._exit(3)


@server.tool()
def small() -> str:
    """A small answer."""
    return "just this"


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "--http":  # python mixed_server.py --http PORT
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
