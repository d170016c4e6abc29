"""A stdio MCP server (raw JSON-RPC lines, no SDK) slow to stop, as one behind npx, uvx or docker
can be: it ignores SIGTERM, SIGHUP and SIGINT, and stays 60 s after its stdin closes. Run as
``python stubborn_server.py`` (stdio).

- ``pid``: its process id, as text;
- ``sleep``: ``{"s": SECONDS}``, answered "slept" after that long (stdin is still read meanwhile).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

LINGER_S = 60.0
LOCK = threading.Lock()
TOOLS = [
    {"name": "pid", "description": "this server's process id", "inputSchema": {"type": "object"}},
    {"name": "sleep", "description": "answers after s seconds", "inputSchema": {"type": "object"}},
]


def out(message: dict[str, object]) -> None:
    with LOCK:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def text(mid: object, value: str) -> None:
    out({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": value}]}})


def sleep_then_answer(mid: object, seconds: float) -> None:
    time.sleep(seconds)
    text(mid, "slept")


def main() -> None:
    for name in ("SIGTERM", "SIGHUP", "SIGINT"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        mid, method, params = msg.get("id"), msg.get("method"), msg.get("params") or {}
        if mid is None:  # a notification
            continue
        if method == "initialize":
            out({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "stubborn", "version": "1"}}})  # fmt: skip
        elif method == "tools/list":
            out({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call" and params.get("name") == "pid":
            text(mid, str(os.getpid()))
        elif method == "tools/call" and params.get("name") == "sleep":
            seconds = float((params.get("arguments") or {}).get("s", 30))
            threading.Thread(target=sleep_then_answer, args=(mid, seconds), daemon=True).start()
        elif method in ("resources/list", "prompts/list", "resources/templates/list"):
            key = {"resources/list": "resources", "prompts/list": "prompts"}.get(method, "resourceTemplates")
            out({"jsonrpc": "2.0", "id": mid, "result": {key: []}})
        else:
            out({"jsonrpc": "2.0", "id": mid, "result": {}})
    time.sleep(LINGER_S)  # stdin closed: slow to go


if __name__ == "__main__":
    main()
