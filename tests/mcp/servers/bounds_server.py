"""A stdio MCP server written by hand (raw JSON-RPC lines) whose listings, prompts and results
are what the proxy must bound or repair. Run as ``python bounds_server.py [--untyped]``.

Tools (``tools/list``):

- ``small``: a 2,000,000-byte description; answers "just this";
- ``bad_schema``: an inputSchema that is not valid JSON Schema (``"type": "nonsense"`` inside);
- ``huge_schema``: a valid inputSchema of about 300 KB;
- ``fine``: a small description and a valid schema (passed as they are);
- ``untyped`` (with ``--untyped`` only): an inputSchema without ``"type": "object"``, which the
  SDK refuses (the whole list with it);
- ``blocks``: "before", a 3 MB ``{"type": "video"}`` block, an image block without its data and
  MIME type, "after";
- ``bad_content``: a result whose ``content`` is a string;
- ``spam``: 2,000 ``notifications/tools/list_changed`` (nothing changed), then "spammed";
- ``spam_and_add``: adds the tool ``added``, then 2,000 of them, then "spammed";
- ``list_count``: how many ``tools/list`` requests this server has answered;
- with ``--many-big``, 120 tools ``big_<i>`` of 5 KB of description and 40 arguments each; with
  ``--many-small``, 3,000 small tools ``small_<i>`` (listings of 1 MB and 250 KB).

- ``many_images``: 30 images of 100,000 characters of base64 each (3 MB together, none over the
  bound of one block); ``many_links``: 5,000 resource links (about 1.3 MB together).

The other tools answer ``args: <their arguments as JSON>``.

Resources: ``mem://big`` listed with a 2,000,000-byte description, ``mem://ok`` with a short one.
With ``--bad-entries``, a resource without its ``uri`` and prompts without a name or with
``arguments`` that are not a list are listed too (the SDK refuses them).
``mem://blobs`` reads as 30 blobs of 100,000 characters. With ``--many-listed``, 3,000 more
resources (``mem://r<i>``) and 600 more prompts (``p<i>``), each with 1,000 bytes of description.
Prompts: ``big_prompt`` (a 2 MB description; a 3.3 MB user message of 300,000 lines, then "ok"),
``odd_prompt`` (a ``video`` block, then "hi"), ``many_small`` (3,000 messages of 200 characters),
``many_images`` (30 image messages of 100,000 characters).
"""

from __future__ import annotations

import json
import sys

UNTYPED = "--untyped" in sys.argv[1:]
BAD_ENTRIES = "--bad-entries" in sys.argv[1:]  # a listed resource and prompts the SDK refuses
MANY_BIG = "--many-big" in sys.argv[1:]  # 120 more tools, each with 5 KB of description and 40 arguments
MANY_SMALL = "--many-small" in sys.argv[1:]  # 3,000 more tools, each small
MANY_LISTED = "--many-listed" in sys.argv[1:]  # 3,000 more resources and 600 more prompts
IMAGE = {"type": "image", "mimeType": "image/png", "data": "QUJD" * 25_000}
FINE_SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
HUGE_SCHEMA = {
    "type": "object",
    "properties": {f"p{i}": {"type": "string", "description": "x" * 140} for i in range(2000)},
}
state: dict[str, list[str] | int] = {"extra": [], "lists": 0}


def out(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def reply(mid: object, result: dict[str, object]) -> None:
    out({"jsonrpc": "2.0", "id": mid, "result": result})


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def tools() -> list[dict[str, object]]:
    any_object = {"type": "object"}
    listed = [
        {"name": "small", "description": "d" * 2_000_000, "inputSchema": any_object},
        {"name": "bad_schema", "description": "takes a", "inputSchema": {"type": "object", "properties": {"a": {"type": "nonsense"}}}},
        {"name": "huge_schema", "description": "takes 2,000 strings", "inputSchema": HUGE_SCHEMA},
        {"name": "fine", "description": "a fine tool", "inputSchema": FINE_SCHEMA},
        *({"name": n, "inputSchema": any_object}
          for n in ("blocks", "bad_content", "spam", "spam_and_add", "list_count", "many_images", "many_links")),
        *({"name": n, "inputSchema": any_object} for n in state["extra"]),  # type: ignore[union-attr]
    ]  # fmt: skip
    if UNTYPED:
        listed.append({"name": "untyped", "inputSchema": {"properties": {"q": {"type": "string"}}, "required": ["q"]}})
    if MANY_BIG:
        props = {f"arg{j}": {"type": "string", "description": "an argument " * 4} for j in range(40)}
        listed += [
            {"name": f"big_{i}", "description": f"tool {i} " + "b" * 5000, "inputSchema": {"type": "object", "properties": props}}
            for i in range(120)
        ]  # fmt: skip
    if MANY_SMALL:
        listed += [{"name": f"small_{i}", "description": f"small tool {i}", "inputSchema": any_object} for i in range(3000)]
    return listed


def spam(mid: object) -> None:
    for _ in range(2000):
        out({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    reply(mid, {"content": [text("spammed")]})


def call(mid: object, name: str, args: object) -> None:
    if name == "small":
        reply(mid, {"content": [text("just this")]})
    elif name == "blocks":
        video = {"type": "video", "mimeType": "video/mp4", "data": "V" * 3_000_000}
        reply(mid, {"content": [text("before"), video, {"type": "image"}, text("after")]})
    elif name == "bad_content":
        reply(mid, {"content": "not a list " * 30_000})
    elif name == "spam":
        spam(mid)
    elif name == "spam_and_add":
        state["extra"] = ["added"]
        spam(mid)
    elif name == "list_count":
        reply(mid, {"content": [text(str(state["lists"]))]})
    elif name == "many_images":
        reply(mid, {"content": [text("thirty pictures"), *([IMAGE] * 30)]})
    elif name == "many_links":
        links = [{"type": "resource_link", "uri": f"file:///data/{i}.csv", "name": f"part {i} " + "n" * 200}
                 for i in range(5000)]  # fmt: skip
        reply(mid, {"content": [text("five thousand files"), *links]})
    elif name == "added":
        reply(mid, {"content": [text("added later")]})
    else:
        reply(mid, {"content": [text("args: " + json.dumps(args, sort_keys=True))]})


def prompt(name: str) -> dict[str, object]:
    if name == "big_prompt":
        big = "".join(f"line {i}\n" for i in range(300_000))
        return {"messages": [{"role": "user", "content": text(big)}, {"role": "assistant", "content": text("ok")}]}
    if name == "odd_prompt":
        return {"messages": [{"role": "user", "content": {"type": "video", "data": "V" * 1000}},
                             {"role": "user", "content": text("hi")}]}  # fmt: skip
    if name == "many_images":
        return {"messages": [{"role": "user", "content": IMAGE} for _ in range(30)]}
    return {"messages": [{"role": "user", "content": text(f"{i:04d} " + "m" * 195)} for i in range(3000)]}


for line in sys.stdin:
    msg = json.loads(line)
    mid, method = msg.get("id"), msg.get("method")
    params = msg.get("params") or {}
    if method == "initialize":
        reply(mid, {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "bounds", "version": "1"},
        })  # fmt: skip
    elif method == "tools/list":
        state["lists"] = int(state["lists"]) + 1  # type: ignore[call-overload]
        reply(mid, {"tools": tools()})
    elif method == "tools/call":
        call(mid, params["name"], params.get("arguments"))
    elif method == "resources/list":
        reply(mid, {"resources": [
            {"name": "big", "uri": "mem://big", "description": "D" * 2_000_000},
            {"name": "ok", "uri": "mem://ok", "description": "a small resource"},
            {"name": "blob", "uri": "mem://blob", "mimeType": "image/png"},
            *([{"name": "no_uri", "description": "listed without its uri"}] if BAD_ENTRIES else []),
            *({"name": f"r{i}", "uri": f"mem://r{i}", "description": "r" * 1000} for i in range(3000 if MANY_LISTED else 0)),
        ]})  # fmt: skip
    elif method == "resources/read":
        if params["uri"] == "mem://blobs":
            reply(mid, {"contents": [{"uri": f"mem://blobs#{i}", "mimeType": "image/png", "blob": "QUJD" * 25_000}
                                     for i in range(30)]})  # fmt: skip
        elif params["uri"] == "mem://blob":  # 3 MB of base64, and a small blob beside it
            blobs = [{"uri": "mem://blob", "mimeType": "image/png", "blob": "QUJD" * 750_000},
                     {"uri": "mem://blob#icon", "mimeType": "image/png", "blob": "QUJD" * 10}]  # fmt: skip
            reply(mid, {"contents": blobs})
        else:
            reply(mid, {"contents": [{"uri": params["uri"], "text": "resource text"}]})
    elif method == "prompts/list":
        bad = [{"description": "a prompt without a name"}, {"name": "bad_args", "arguments": "q"}] if BAD_ENTRIES else []
        many = [{"name": f"p{i}", "description": "p" * 1000} for i in range(600 if MANY_LISTED else 0)]
        reply(mid, {"prompts": [{"name": "big_prompt", "description": "p" * 2_000_000}, {"name": "odd_prompt"},
                                *bad, {"name": "many_small"}, {"name": "many_images"}, *many]})  # fmt: skip
    elif method == "prompts/get":
        reply(mid, prompt(params["name"]))
    elif mid is not None:
        reply(mid, {})
