"""A stdio MCP server written by hand (no SDK), whose replies are raw JSON-RPC lines: what other
servers really send and the SDK's parser refuses. Run as ``python raw_server.py`` (stdio).

- ``lone_surrogate``: a text ending in ``"\\ud83d"`` (JavaScript's JSON.stringify of a cut emoji);
- ``deep_reply``: a reply whose structured content is nested 100,000 deep (no parser reads it),
  with its ``id`` last, as the TypeScript SDK writes it;
- ``small``: "just this";
- ``tiny_big_meta``: "ok", whose text block carries a 500 KB ``_meta``;
- ``big_json``: 6,000 items of JSON text (spilled by the proxy);
- ``big_link``: "see the file" and a resource link whose description is 500 KB;
- ``big_progress_msg``: a progress notification whose message is 2,000,000 characters, then "done";
- ``add_tool``: adds the tool ``added_later`` ("added later"), says so with
  ``notifications/tools/list_changed``, then answers "added";
- ``stray_line``: a line that is not JSON-RPC ("DEBUG: handling call"), then "just this";
- ``bad_utf8``: a reply whose text holds the byte 0xff (a cp1252 file name), not UTF-8;
- ``progress_flood``: 5,000 progress notifications at once, then "flooded".
"""

from __future__ import annotations

import json
import sys

BIG = json.dumps({"items": [{"id": i, "name": f"n{i}", "phase": "ok" if i % 5 else "bad"} for i in range(6000)]})
TOOLS = ["lone_surrogate", "deep_reply", "small", "tiny_big_meta", "big_json", "big_link", "big_progress_msg", "add_tool",
         "stray_line", "bad_utf8", "progress_flood"]


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def text_result(mid: object, text_json: str, block_extra: str = "") -> str:
    block = '{"type":"text","text":' + text_json + block_extra + "}"
    return '{"jsonrpc":"2.0","id":' + json.dumps(mid) + ',"result":{"content":[' + block + "]}}"


def answer(mid: object, name: str) -> str:
    if name == "lone_surrogate":
        return text_result(mid, '"emoji cut: \\ud83d"')
    if name == "deep_reply":
        deep = "[" * 100_000 + "]" * 100_000
        return (
            '{"result":{"content":[],"structuredContent":{"v":'
            + deep
            + '}},"jsonrpc":"2.0","id":'
            + json.dumps(mid)
            + "}"
        )
    if name == "tiny_big_meta":
        return text_result(mid, '"ok"', ',"_meta":' + json.dumps({"debug": "m" * 500_000}))
    if name == "big_json":
        return text_result(mid, json.dumps(BIG))
    if name == "big_link":
        link = {"type": "resource_link", "uri": "file:///data/x.log", "name": "x.log", "description": "d" * 500_000}
        return text_result(mid, '"see the file"').replace("}]}}", "}," + json.dumps(link) + "]}}")
    if name == "added_later" and name in TOOLS:
        return text_result(mid, '"added later"')
    return text_result(mid, '"just this"')


for line in sys.stdin:
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    if method == "initialize":
        init = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
        out(json.dumps({"jsonrpc": "2.0", "id": mid, "result": init}))
    elif method == "tools/list":
        tools = [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]
        out(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}}))
    elif method == "tools/call":
        name = msg["params"]["name"]
        token = (msg["params"].get("_meta") or {}).get("progressToken")
        if name == "big_progress_msg" and token is not None:
            progress = {"progressToken": token, "progress": 1, "total": 2, "message": "M" * 2_000_000}
            out(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}))
        if name == "progress_flood" and token is not None:
            for i in range(5000):
                progress = {"progressToken": token, "progress": i, "total": 5000, "message": f"step {i}"}
                out(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}))
        if name == "stray_line":
            out("DEBUG: handling call")
        if name == "add_tool" and "added_later" not in TOOLS:
            TOOLS.append("added_later")
            out(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        if name == "bad_utf8":
            sys.stdout.flush()
            sys.stdout.buffer.write(text_result(mid, '"caf\xff.txt"').encode("latin-1") + b"\n")
            sys.stdout.buffer.flush()
            continue
        said = {"big_progress_msg": '"done"', "add_tool": '"added"', "progress_flood": '"flooded"'}.get(name)
        out(text_result(mid, said) if said else answer(mid, name))
    elif mid is not None:
        out(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {}}))
