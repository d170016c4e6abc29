"""``jupyter-scratchpad mcp serve``: the scratchpad's tools as an MCP server (official SDK).

A tool call is ``pad.call_tool``: the text content is exactly ``ToolResult.text``, the structured
content is ``ToolResult.data`` (an object; a list is given as ``{"rows": [...]}``) when it is no
larger, in the model's tokens, than the text that was charged, ``is_error`` is ``not ok``. (A
client may give a model either copy; grep's data, every line as a match and as text, was up to
4x its charged text.) Spilled entries are resources ``scratchpad://<handle>``, read in pages of
``PAGE_BYTES`` (``scratchpad://<handle>?page=2``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server

from .. import __version__
from .._pad import Scratchpad
from ..tools import TOOL_NAMES, ToolResult, tool_specs

__all__ = [
    "PAGE_BYTES",
    "USAGE_TOOL",
    "build_server",
    "call_result",
    "listing_page",
    "our_tools",
    "page_template",
    "unknown_tool",
    "usage_of",
]

PAGE_BYTES = 16 * 1024  # (64 KiB of JSON was ~18,500 tokens, past the per-call cap; 16 KiB is ~5,000)
_URI = re.compile(r"scratchpad://([a-z0-9_]{1,64})(?:\?page=([-+]?[0-9]{1,40}))?\Z")

INSTRUCTIONS = (
    "Large tool outputs are kept out of the context as handles. Explore a handle with schema, then "
    "item_schema / iterate_over / get_in for JSON, grep / head / tail / slice for text, or sql (DuckDB, "
    "each handle is a relation). Every result is bounded; a refusal suggests calls that fit."
)


USAGE_TOOL = "scratchpad_usage"


def our_tools(prefix: str = "") -> list[types.Tool]:
    tools = [
        types.Tool(
            name=s["name"],
            description=s["description"],
            input_schema=s["inputSchema"],
            annotations=types.ToolAnnotations.model_validate(s["annotations"]),
        )
        for s in tool_specs("mcp", prefix=prefix)
    ]
    usage = types.Tool(
        name=prefix + USAGE_TOOL,
        description="What the scratchpad did in this session: tokens_intercepted (kept out of your context by "
        "spilling), tokens_extracted (read back through the tools), spills, and the context budget.",
        input_schema={"type": "object", "properties": {}, "required": [], "additionalProperties": False},
        annotations=types.ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    return [*tools, usage]


def usage_of(pad: Scratchpad) -> dict[str, Any]:
    """``pad.usage()`` with the spill count and the budget: what ``scratchpad_usage`` answers."""
    budget = pad.budget
    return {
        **pad.usage(),
        "run_id": pad.run_id,
        "spills": pad.spill_count,
        "budget": {"used": budget.used, "usable": budget.usable, "remaining": budget.remaining},
    }


async def run_usage(
    pad: Scratchpad, arguments: dict[str, Any] | None = None, prefix: str = ""
) -> types.CallToolResult:
    if arguments:  # its schema says no properties: an argument is a mistake worth saying
        said = f"{prefix}{USAGE_TOOL} takes no arguments (got {', '.join(repr(k)[:60] for k in list(arguments)[:5])})"
        return types.CallToolResult(content=[types.TextContent(type="text", text=said)], is_error=True)
    data = await anyio.to_thread.run_sync(lambda: usage_of(pad))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data))], structured_content=data
    )


def unknown_tool(pad: Scratchpad, name: str, known: list[str]) -> types.CallToolResult:
    """A call of a tool nobody offers, answered as the dispatcher answers it (close matches,
    charged like any error), where it was the bare text "unknown tool 'x'"."""
    import difflib

    asked = str(name)[:100]
    close = difflib.get_close_matches(asked, known, n=3, cutoff=0.5)
    listed = ", ".join(known[:40]) + (" …" if len(known) > 40 else "")
    err = {
        "error": "unknown_tool",
        "message": f"there is no tool {asked!r}; "
        + (f"did you mean {' or '.join(close)}?" if close else f"the tools are: {listed}"),
        "close_matches": close,
        "suggestions": [],
    }
    text = json.dumps(err, ensure_ascii=False)
    pad.budget.charge_unconditionally(pad.tokenizer.count(text))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=err, is_error=True
    )


def call_result(res: ToolResult, count: Callable[[str], int] | None = None) -> types.CallToolResult:
    """The MCP result of a tool call. With ``count`` (the model's token counter), the structured
    content is sent only when it is no larger than the text charged for the call: a client may
    give a model either copy, and what a model may read is never more than was charged."""
    data = res.data
    structured = data if isinstance(data, dict) else {"rows": data} if isinstance(data, list) else None
    if not res.ok:
        structured = res.error if isinstance(res.error, dict) else None
    if structured is not None and count is not None and res.tokens > 0:
        try:
            text = json.dumps(structured, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            structured = None
        else:
            if count(text) > res.tokens:
                structured = None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=res.text)],
        structured_content=structured,
        is_error=not res.ok,
    )


async def run_tool(
    pad: Scratchpad, name: str, arguments: dict[str, Any] | None, prefix: str = ""
) -> types.CallToolResult:
    """``pad.call_tool`` off the event loop (it may read files or wait for the SQL worker);
    ``name`` without the ``prefix`` the tools were published with (its suggestions carry it).

    A call the client cancels is given up at once, and its SQL query (if it is running one) is
    stopped: the thread would otherwise run it to its time limit while the client's next query
    waited behind it."""
    from ..explore._sqlworker import interrupt

    ran_on: list[int] = []

    def call() -> Any:
        ran_on.append(threading.get_ident())
        return pad.call_tool(prefix + name, arguments or {}, prefix=prefix)

    try:
        res = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        if ran_on:
            interrupt(ran_on[0])
        raise
    return call_result(res, pad.tokenizer.count)


def resources_of(pad: Scratchpad) -> list[types.Resource]:
    out = []
    for e in pad.store.entries(pad.scope, "handle"):
        out.append(
            types.Resource(
                name=e.key,
                uri=f"scratchpad://{e.key}",
                description=f"{e.format} output of {e.source_tool or '?'} ({e.size_bytes:,} bytes); "
                f"pages of {PAGE_BYTES // 1024} KiB: ?page=N",
                mime_type="application/json" if e.format == "json" else "text/plain",
                size=e.size_bytes,
            )
        )
    return out


def page_template() -> types.ResourceTemplate:
    """How any page of any handle is read (RFC 6570): a client that knows a handle from a stub
    reads it without listing every entry."""
    return types.ResourceTemplate(
        name="scratchpad page",
        uri_template="scratchpad://{handle}{?page}",
        description=f"page N (from 1) of a spilled output, {PAGE_BYTES // 1024} KiB a page: scratchpad://<handle>?page=N",
        mime_type="text/plain",
    )


LISTING_PAGE_BYTES = 128 * 1024  # of a resources/list or prompts/list answer: the rest on the next pages


def listing_page(entries: list[Any], params: Any) -> tuple[list[Any], str | None]:
    """The page of ``entries`` a listing request asks for (its ``cursor``: where the page starts)
    within ``LISTING_PAGE_BYTES`` of JSON (at least one entry), and the cursor of the next page.
    (20,000 resources were one 41 MB answer.)"""
    cursor = getattr(params, "cursor", None) if params is not None else None
    start = 0
    if cursor is not None:
        if not (cursor.isdigit() and len(cursor) <= 12):
            raise bad_uri(f"not a cursor this server gave: {cursor[:40]!r} (list from the start, without one)")
        start = int(cursor)
    used = 0
    out: list[Any] = []
    for i in range(start, len(entries)):
        size = len(entries[i].model_dump_json(by_alias=True, exclude_none=True).encode("utf-8", "surrogatepass"))
        if out and used + size > LISTING_PAGE_BYTES:
            return out, str(i)
        out.append(entries[i])
        used += size
    return out, None


def bad_uri(message: str) -> Exception:
    """A resource read the client got wrong: an invalid-params answer, which the SDK sends without
    logging a traceback (a ValueError wrote one to the server's stderr for every bad URI)."""
    from mcp.shared.exceptions import MCPError

    return MCPError(code=types.INVALID_PARAMS, message=message)


def _char_start(reader: Any, offset: int, size: int) -> int:
    """``offset`` moved back to the first byte of the UTF-8 character it falls in: pages split
    at fixed byte offsets cut characters in two (each half read as U+FFFD)."""
    if offset <= 0 or offset >= size:
        return max(0, min(offset, size))
    near = reader.read_raw(offset - 3, offset + 1)  # a character is at most 4 bytes
    back = 0
    while back < 3 and near[-1 - back] & 0xC0 == 0x80:  # a continuation byte
        back += 1
    return offset - back


def read_page(pad: Scratchpad, uri: str) -> types.ReadResourceResult:
    m = _URI.match(uri)
    if m is None:
        raise bad_uri(f"not a scratchpad resource: {uri[:100]!r} (use scratchpad://<handle>?page=N)")
    handle, page = m.group(1), int(m.group(2) or 1)
    if page < 1:
        raise bad_uri(f"page must be ≥ 1, not {page} (pages are numbered from 1: scratchpad://{handle}?page=1)")
    entry = pad.store.get_entry(pad.scope, "handle", handle)
    if entry is None:
        raise bad_uri(f"no live handle {handle!r} (expired, deleted, or never spilled here)")
    reader = pad.store.reader(entry)
    size = reader.raw_size
    pages = max(1, -(-size // PAGE_BYTES))
    if page > pages:
        raise bad_uri(
            f"page {page} is past the end ({pages} page{'s' if pages != 1 else ''} of {PAGE_BYTES // 1024} KiB "
            f"in {handle}: scratchpad://{handle}?page={pages} is the last)"
        )
    start, end = _char_start(reader, (page - 1) * PAGE_BYTES, size), _char_start(reader, page * PAGE_BYTES, size)
    raw = reader.read_raw(start, end)
    text = raw.decode("utf-8", errors="replace")
    note = ""
    if page < pages:
        note = f"\n[page {page} of {pages} of {handle}; next: scratchpad://{handle}?page={page + 1}]"
    count, cap = pad.tokenizer.count, pad.budget.max_extraction_tokens
    tokens = count(text + note)
    if tokens > cap:  # (64 KiB of CJK text was 41,870 tokens: a page is bounded like a tool's result)
        kept = _fitting_bytes(raw, cap - 100, count)
        text = raw[:kept].decode("utf-8", errors="replace")
        more = min(end, start + 2 * kept)  # (about as much again fits)
        note = (
            f"\n[page {page} of {pages} of {handle} cut at {cap:,} tokens, after its bytes {start:,}-{start + kept:,}; "
            f'the next part: read_handle(handle="{handle}", start={start + kept}, end={more})'
            + (f"; next page: scratchpad://{handle}?page={page + 1}]" if page < pages else "]")
        )
        tokens = count(text + note)
    # what a client puts in the context is charged, as a tool's result is (never refused: it was asked for)
    pad.budget.charge_unconditionally(tokens)
    pad._record_extraction(tokens)
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text + note)]
    )


def _fitting_bytes(raw: bytes, tokens: int, count: Callable[[str], int]) -> int:
    """How many of ``raw``'s first bytes (at a character's start) hold at most ``tokens``."""
    lo, hi = 0, len(raw)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(raw[:mid].decode("utf-8", errors="ignore")) <= tokens:
            lo = mid
        else:
            hi = mid - 1
    while 0 < lo < len(raw) and raw[lo] & 0xC0 == 0x80:  # (not inside a character)
        lo -= 1
    return lo


class SessionPads:
    """The pad of each MCP session over HTTP (its ``mcp-session-id``): the first session's is
    ``pad``, each later one's ``new_pad()``, a budget of its own (and, as the caller makes it, a
    run). One HTTP server serves many clients: they shared one run, its notes and one budget
    (probe Y). Without ``new_pad``, or without a session id (stdio: one client), it is ``pad``.
    The newest ``MAX_SESSIONS`` sessions are remembered."""

    MAX_SESSIONS = 256

    def __init__(self, pad: Scratchpad, new_pad: Callable[[], Scratchpad] | None = None) -> None:
        from collections import OrderedDict

        self.pad = pad
        self.new_pad = new_pad
        self._pads: OrderedDict[str, Scratchpad] = OrderedDict()
        self._lock = threading.Lock()
        self._first_given = False

    def __call__(self, ctx: Any) -> Scratchpad:
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None)
        session = headers.get("mcp-session-id") if headers is not None else None
        if self.new_pad is None or not isinstance(session, str):
            return self.pad
        with self._lock:
            found = self._pads.get(session)
            if found is None:
                found = self.new_pad() if self._first_given else self.pad
                self._first_given = True
                self._pads[session] = found
                while len(self._pads) > self.MAX_SESSIONS:
                    self._pads.popitem(last=False)
            self._pads.move_to_end(session)
            return found


def build_server(
    pad: Scratchpad, *, prefix: str = "", new_pad: Callable[[], Scratchpad] | None = None
) -> Server[Any]:
    """An MCP server over ``pad``: our tools (names prefixed by ``prefix``) and the handles as
    resources. ``new_pad``: each MCP session after the first gets a pad of its own from it."""
    pads = SessionPads(pad, new_pad)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=our_tools(prefix))

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        mine = pads(ctx)
        name = params.name[len(prefix) :] if prefix and params.name.startswith(prefix) else params.name
        if name == USAGE_TOOL and params.name == prefix + USAGE_TOOL:
            return await run_usage(mine, params.arguments, prefix)
        if name not in TOOL_NAMES or not params.name.startswith(prefix):
            return unknown_tool(mine, params.name, [t.name for t in our_tools(prefix)])
        return await run_tool(mine, name, params.arguments, prefix)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        mine = pads(ctx)
        page, after = listing_page(await anyio.to_thread.run_sync(lambda: resources_of(mine)), params)
        return types.ListResourcesResult(resources=page, next_cursor=after)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        mine = pads(ctx)
        return await anyio.to_thread.run_sync(lambda: read_page(mine, str(params.uri)))

    async def list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[page_template()])

    return Server(
        "jupyter-scratchpad",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_resource_templates=list_resource_templates,
    )
