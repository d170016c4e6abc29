"""``jupyter-scratchpad mcp proxy``: an MCP server in front of other MCP servers that spills.

The proxy connects to each upstream (stdio command or streamable-HTTP URL) with the official
client, and serves one MCP server to its own client:

- ``tools/list``: every upstream tool (named ``<server>__<tool>`` when two servers offer the same
  name, without its output schema: a spilled result is a stub) plus the scratchpad's tools (under
  ``prefix``, default none); each upstream definition bounded as it is read (``_upstream.py``: its
  description cut to 8 KiB, an inputSchema that is not a valid JSON Schema object, or over 64 KiB,
  replaced by one any object matches, with a note in the description), and all of them together
  bounded too (``bounded_listing``: ``LISTING_MAX_BYTES``, the model reads the list every turn). An upstream's
  ``tools/list_changed`` is coalesced: one re-list in flight per upstream and one more pending,
  and the client told once per re-list that changed something;
- ``tools/call`` of an upstream tool: forwarded; an error result comes back unchanged; any other
  result goes through the spill policy with ``server=<name>`` (``Scratchpad.intercept``, which
  unwraps the ``CallToolResult`` envelope): small results pass unchanged, large ones are stored and
  the client gets the stub, which our tools in the same session explore. A failed spill fails
  closed (a short pointer, never the flood). A content block MCP does not define (``video``) is
  stored and named in a one-line note; the other blocks pass;
- ``resources/*`` and ``prompts/*``: forwarded to the upstream that owns the name; a resource's
  large text goes through the spill policy (``tool="resources/read"``) like a tool's result, and
  so does a prompt's (``tool="prompts/get"``); listed resources' and prompts' words are bounded.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server import Server

from .. import __version__
from .._bounded import clip_middle, positive_seconds
from .._pad import Scratchpad
from ..spill import bound_error_text
from ..store._jsontext import dumps_compact, loads
from ..tools import SERVER_NAME_RULE, TOOL_NAMES, valid_server_name
from ._lines import use_line_aligned_reader
from ._server import (
    INSTRUCTIONS,
    USAGE_TOOL,
    SessionPads,
    bad_uri,
    listing_page,
    our_tools,
    page_template,
    read_page,
    resources_of,
    run_tool,
    run_usage,
    unknown_tool,
)
from ._upstream import (
    ANY_ARGUMENTS,
    DESCRIPTION_MAX_BYTES,
    META_MAX_BYTES,
    argument_names,
    clipped,
    invalid_result_said,
    json_bytes,
    left_out,
    repairing_session,
)
from ._wire import UNREADABLE_REPLY, UnreadableLine, use_tolerant_parser

__all__ = [
    "Upstream",
    "UpstreamError",
    "build_proxy",
    "first_raised",
    "upstreams_from_client_config",
    "upstreams_from_toml",
]

log = logging.getLogger("jupyter_scratchpad.mcp")
SEPARATOR = "__"


DEFAULT_TIMEOUT_S = 300.0


def timeout_of(value: Any, what: str) -> float | None:
    """Seconds as given (None or 0: no limit), or a ValueError saying what a timeout takes."""
    if value is None or (not isinstance(value, bool) and value == 0):
        return None
    seconds = positive_seconds(value)
    if seconds is None:
        raise ValueError(f"{what} takes seconds, a number > 0 (0: no limit), not {value!r}")
    return seconds


@dataclass
class Upstream:
    """One upstream MCP server: a command (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    timeout_s: float | None = DEFAULT_TIMEOUT_S  # a call silent this long (no answer, no progress) is given up

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"upstream {self.name!r} needs exactly one of 'command' or 'url'")
        self.timeout_s = timeout_of(self.timeout_s, f"upstream {self.name!r} timeout_s")


class UpstreamError(Exception):
    """An upstream server that could not be started or reached; the message says which and why."""


def first_raised(exc: BaseException, kind: type[BaseException] = BaseException) -> BaseException | None:
    """``exc``, or inside its exception groups (3.11's, or anyio's backport) the first ``kind``
    raised: a task group's real cause rather than the group. None when there is none."""
    group = getattr(exc, "exceptions", None)
    if not isinstance(group, (list, tuple)):
        return exc if isinstance(exc, kind) else None
    return next((found for inner in group if (found := first_raised(inner, kind)) is not None), None)


def _why(exc: BaseException) -> str:
    """The first real cause inside task groups, in one short line (an upstream's result the SDK
    refused: where and what, never pydantic's dump of it and its link)."""
    exc = first_raised(exc, Exception) or first_raised(exc) or exc
    if isinstance(exc, InitializeRefused):
        return str(exc)
    invalid = invalid_result_said(exc)
    if invalid is not None:
        return f"its reply is not a valid MCP result ({invalid})"
    said = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def upstreams_from_toml(
    path: str | os.PathLike[str], default_timeout_s: float | None = DEFAULT_TIMEOUT_S
) -> list[Upstream]:
    """``[mcp.servers.<name>]`` tables with ``command``/``args``/``env``/``cwd`` or ``url``, and
    ``timeout_s`` (else ``default_timeout_s``)."""
    from ..spill._toml import _load

    data, _where = _load(Path(path))
    servers = (data.get("mcp") or {}).get("servers") or {}
    return _upstreams(servers, default_timeout_s, f"{path}: no [mcp.servers.<name>] table with a command or url")


def client_config(text: str) -> dict[str, Any] | None:
    """The servers of an MCP client's JSON configuration (``{"mcpServers": {...}}``, as Claude
    Desktop, Cursor and others write it; VS Code's ``{"servers": {...}}``), in the layout of
    ``[mcp.servers.<name>]``; None when ``text`` is not such JSON."""
    if not text.lstrip().startswith("{"):
        return None
    from ..store._jsontext import loads_any_depth

    try:
        data = loads_any_depth(text)  # (json.loads raised RecursionError, a traceback, on a deep one)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc}): a client's configuration is {{\"mcpServers\": {{...}}}}") from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(
            'a JSON configuration holds its servers in "mcpServers" (or VS Code\'s "servers"): '
            '{"mcpServers": {"git": {"command": "mcp-server-git", "args": ["--repository", "."]}}}'
        )
    # (a client's own keys: "type" is said by command or url here; "disabled" servers are left out)
    return {
        name: {k: v for k, v in table.items() if k not in ("type", "disabled")} if isinstance(table, dict) else table
        for name, table in servers.items()
        if not (isinstance(table, dict) and table.get("disabled") is True)
    }


def upstreams_from_client_config(
    path: str | os.PathLike[str], text: str, default_timeout_s: float | None = DEFAULT_TIMEOUT_S
) -> list[Upstream] | None:
    """The upstreams of an MCP client's JSON configuration file (see ``client_config``), or None
    when the file is not JSON (then it is read as TOML)."""
    servers = client_config(text)
    if servers is None:
        return None
    return _upstreams(servers, default_timeout_s, f'{path}: no server in its "mcpServers"')


def _upstreams(servers: dict[str, Any], default_timeout_s: float | None, empty: str) -> list[Upstream]:
    """``[mcp.servers.<name>]`` tables (from TOML, or a client's JSON) as upstreams, checked."""
    out = []
    for name, table in servers.items():
        if not isinstance(table, dict):
            raise ValueError(f"[mcp.servers.{name}] must be a table")
        if not valid_server_name(name):
            raise ValueError(
                f"[mcp.servers.{clip_middle(repr(name), 80)}]: {SERVER_NAME_RULE} "
                "(it goes in tool names as <server>__<tool>)"
            )
        for key, kind, example in (
            ("command", str, 'command = "npx"'),
            ("args", list, 'args = ["-y", "some-server"]'),
            ("env", dict, 'env = { TOKEN = "..." }'),
            ("cwd", str, 'cwd = "/path"'),
            ("url", str, 'url = "http://127.0.0.1:8000/mcp"'),
        ):
            if key in table and not isinstance(table[key], kind):  # (a string as args became one per letter)
                raise ValueError(
                    f"[mcp.servers.{name}] {key} must be a {kind.__name__}, not {type(table[key]).__name__}: "
                    f"e.g. {example}"
                )
        out.append(
            Upstream(
                name=name,
                command=table.get("command"),
                args=[str(a) for a in table.get("args") or []],
                env={str(k): str(v) for k, v in (table.get("env") or {}).items()} or None,
                cwd=table.get("cwd"),
                url=table.get("url"),
                timeout_s=timeout_of(table.get("timeout_s", default_timeout_s), f"[mcp.servers.{name}] timeout_s"),
            )
        )
    if not out:
        raise ValueError(empty)
    return out


# An upstream tool's own size hint: results up to this many characters stay inline (as Claude Code honours it).
SIZE_HINT_KEYS = ("anthropic/maxResultSizeChars",)


@dataclass
class _Route:
    server: str
    session: ClientSession
    upstream_name: str  # the tool's (or prompt's) own name upstream
    max_inline_chars: int | None = None  # from the tool's _meta size hint


def size_hint(tool: types.Tool) -> int | None:
    """The largest result (in characters) ``tool`` asks to receive whole, from its ``_meta``."""
    meta = tool.meta or {}
    hints = [v for k in SIZE_HINT_KEYS if isinstance(v := meta.get(k), int) and not isinstance(v, bool) and v > 0]
    return max(hints) if hints else None


@dataclass
class _State:
    tools: dict[str, _Route] = field(default_factory=dict)
    tool_defs: list[types.Tool] = field(default_factory=list)
    prompts: dict[str, _Route] = field(default_factory=dict)
    prompt_defs: list[types.Prompt] = field(default_factory=list)
    resources: dict[str, str] = field(default_factory=dict)  # uri -> the upstream that listed it
    # the upstreams' resource templates, most specific first: (pattern of its URIs, upstream);
    # None until listed (a read of a URI no listing named lists them)
    templates: list[tuple[re.Pattern[str], str]] | None = None
    resources_listed: bool = False
    # what resources/list pages through, per pad (each HTTP session lists its own handles)
    resource_listing: dict[int, list[types.Resource]] = field(default_factory=dict)
    sessions: dict[str, ClientSession] = field(default_factory=dict)


_EXPRESSION = re.compile(r"\{[^{}]*\}")


def template_pattern(template: str) -> re.Pattern[str]:
    """The URIs an RFC 6570 template expands to, loosely: its literal text as it is, each
    ``{expression}`` any text (``file:///{+path}``, ``db://{table}{?limit}``). Only for choosing
    which upstream a URI goes to: the upstream itself answers whether it names a resource."""
    parts = _EXPRESSION.split(template)
    return re.compile(".*".join(re.escape(part) for part in parts), re.DOTALL)


def _specific_first(found: list[tuple[str, str]]) -> list[tuple[re.Pattern[str], str]]:
    """``(template, upstream)`` as patterns, the one with most literal text first (of two upstreams
    whose templates both match a URI, the more specific one gets it)."""
    ranked = sorted(found, key=lambda t: -len(_EXPRESSION.sub("", t[0])))
    return [(template_pattern(template), server) for template, server in ranked]


# One message of an upstream (an SSE event of an HTTP upstream) the proxy reads: the SDK's own
# 1 MiB default failed every HTTP result over about 500 KB of text (JSON escapes double it), where
# the proxy exists for large results. Past this an HTTP call fails at once with a short tool error
# (``_upstream_failed``); a stdio upstream's lines are read whole, as before.
UPSTREAM_MESSAGE_MAX_BYTES = 64 << 20
_TOO_LARGE = "exceeded the"  # (the SDK's words for an SSE event over the bound: "... exceeded the N byte limit")


@dataclass
class _Down:
    """Why an upstream's connection ended (an HTTP upstream that went away), once it has."""

    why: dict[str, BaseException] = field(default_factory=dict)
    url: dict[str, str] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)  # initialized: its end is logged (before, the start's error says it)

    def said(self, server: str) -> str | None:
        """The short tool error for a call to ``server`` once its connection has ended, else None."""
        if server not in self.why:
            return None
        return (
            f"upstream server {server!r} is unreachable (url {clip_middle(self.url.get(server, '?'), 200)!r}; "
            f"{_why(self.why[server])}): the proxy's connection to it ended, so none of its tools, resources "
            "or prompts answer now; the scratchpad's tools and stored handles still work. Check that the server "
            "is running at that URL, then restart the proxy to connect to it again"
        )


@asynccontextmanager
async def _contained_http(up: Upstream, down: _Down) -> AsyncIterator[tuple[Any, Any]]:
    """The streams of a streamable-HTTP connection to ``up``, its failures kept in it.

    The SDK's ``streamable_http_client`` runs each request's POST in its own task group: a POST
    that cannot connect (the upstream went away) fails that group, which cancelled the task that
    entered it (the proxy's lifespan) and raised the ``ConnectError`` through it: the proxy died,
    and the call waited meanwhile. Here the client runs in a task of its own, relayed to the
    session through streams of ours: when it fails, the reason is kept in ``down`` (logged in one
    line) and the session's stream ends, as a stdio upstream's does when its process ends, so its
    calls fail at once and everything else goes on."""
    from mcp.client.streamable_http import streamable_http_client

    assert up.url is not None
    url = down.url[up.name] = up.url
    to_session, read = anyio.create_memory_object_stream[Any](0)
    write, from_session = anyio.create_memory_object_stream[Any](0)
    stop = anyio.Event()

    async def pump(source: Any, sink: Any) -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
            async for item in source:
                await sink.send(item)

    async def host(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        started = False
        try:
            async with streamable_http_client(url, max_sse_event_size=UPSTREAM_MESSAGE_MAX_BYTES) as (t_read, t_write):
                task_status.started()
                started = True
                async with anyio.create_task_group() as relay:
                    relay.start_soon(pump, t_read, to_session)
                    relay.start_soon(pump, from_session, t_write)
                    await stop.wait()
                    relay.cancel_scope.cancel()
        except Exception as exc:  # (anyio's ExceptionGroup of the transport's task group: its first cause)
            cause = first_raised(exc, Exception) or exc
            down.why[up.name] = cause
            if not stop.is_set() and up.name in down.ready:
                log.warning("upstream %r (url %r) is unreachable: %s", up.name, url, _why(cause))
        finally:
            if not stop.is_set() and up.name not in down.why:
                down.why[up.name] = ConnectionError("the connection ended")
            to_session.close()  # (the session reads the end of its stream: its calls fail at once)
            from_session.close()
            if not started:
                task_status.started()

    async with anyio.create_task_group() as tg, read, write:
        await tg.start(host)
        try:
            yield read, write
        finally:
            stop.set()
            # (the SDK ends its session with a DELETE: an upstream gone is not waited for)
            tg.cancel_scope.deadline = anyio.current_time() + 5


async def _connect(
    stack: AsyncExitStack,
    up: Upstream,
    on_message: Any = None,
    down: _Down | None = None,
    instructions: dict[str, str] | None = None,
) -> ClientSession:
    if up.command is not None:
        use_line_aligned_reader()  # (the SDK's own reader is quadratic in a message's size: _lines.py)
        use_tolerant_parser()  # (a reply it cannot parse fails its call at once, not at the timeout: _wire.py)
        env = {**os.environ, **(up.env or {})}
        # a byte that is not UTF-8 (a cp1252 file name) becomes U+FFFD: strict decoding killed the
        # reader of that upstream, and every later call waited out its timeout
        params = StdioServerParameters(
            command=up.command, args=up.args, env=env, cwd=up.cwd, encoding_error_handler="replace"
        )
        read, write = await stack.enter_async_context(stdio_client(params, errlog=_errlog()))
    else:
        down = down if down is not None else _Down()
        read, write = await stack.enter_async_context(_contained_http(up, down))
    # (the session's timeout bounds initialize and the listings; a tool call has its own, reset by progress)
    # (its replies bounded and repaired before the SDK reads them: _upstream.py)
    session: ClientSession = await stack.enter_async_context(
        repairing_session(read, write, read_timeout_seconds=up.timeout_s, message_handler=on_message)
    )
    from mcp.shared.exceptions import MCPError

    try:
        initialized = await session.initialize()
    except MCPError as exc:  # ("Method not found" alone, from a command that echoes its input back)
        if down is not None and up.name in down.why:  # (an HTTP upstream nobody answers at: why, not "closed")
            raise down.why[up.name] from None
        raise InitializeRefused(
            f"it answered initialize with an error ({' '.join(str(exc).split())[:200]}), where an MCP server "
            "answers with its capabilities: is the command an MCP server speaking JSON-RPC on its stdout? "
            "(one that echoes its input, as cat does, answers so)"
        ) from None
    if down is not None:
        down.ready.add(up.name)
    said = getattr(initialized, "instructions", None)
    if instructions is not None and isinstance(said, str) and said.strip():
        instructions[up.name] = said
    return session


# An upstream's instructions (its usage rules, auth hints) are passed on after ours, each under
# its server's name and bounded: they reach the model's context (a proxy dropped them: probe Y).
UPSTREAM_INSTRUCTIONS_MAX_CHARS = 4000


def joined_instructions(ours: str, theirs: dict[str, str]) -> str:
    """Our instructions, then each upstream's under its server's name, each cut to
    ``UPSTREAM_INSTRUCTIONS_MAX_CHARS`` with a note of what was cut."""
    parts = [ours]
    for server, text in theirs.items():
        text = text.strip()
        if len(text) > UPSTREAM_INSTRUCTIONS_MAX_CHARS:
            cut = len(text) - UPSTREAM_INSTRUCTIONS_MAX_CHARS
            text = f"{text[:UPSTREAM_INSTRUCTIONS_MAX_CHARS]} [… {cut:,} characters of its instructions cut]"
        parts.append(f"From the upstream server {server!r}: {text}")
    return "\n\n".join(parts)


class InitializeRefused(Exception):
    """An upstream answered ``initialize`` with a JSON-RPC error: the message says what it is."""


def _errlog() -> Any:
    import sys

    return sys.stderr


MAX_PAGES = 1000  # of one upstream listing: a server whose cursors never end is read this far


async def _pages(fetch: Any, attr: str) -> list[Any]:
    """Every page of a paginated listing (``fetch(params)``), following ``next_cursor`` until it
    ends, repeats, or MAX_PAGES pages were read."""
    out: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        page = await fetch(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        out += getattr(page, attr)
        cursor = page.next_cursor
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return out


# A tool name every model API takes (Anthropic's and OpenAI's rule): a request whose list holds one
# other name ("a b", "", 5,000 characters, "x\ny</tool>\nSYSTEM: …") is refused whole, and a name is
# read by the model as it is (descriptions are bounded; names were not).
NAME_MAX = 64
_VALID_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{NAME_MAX}}}")
_INVALID_RUN = re.compile(r"[^A-Za-z0-9_-]+")


def valid_name(name: str) -> bool:
    return _VALID_NAME.fullmatch(name) is not None




def _fitted(name: str) -> str:
    """``name`` as a valid one: itself when it is, else its valid characters (each run of others
    one ``_``) cut to fit with a short hash of the whole name after them, so that two names that
    differ only in what was replaced stay two names."""
    if valid_name(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    kept = _INVALID_RUN.sub("_", name).strip("_")[: NAME_MAX - len(digest) - 1]
    return f"{kept}_{digest}" if kept else f"tool_{digest}"


def _unique_names(listed: list[tuple[str, str]], reserved: set[str]) -> list[str]:
    """A valid name (``valid_name``) per ``(server, name)``: the name itself when it is valid and no
    other entry or ``reserved`` has it, else ``<server>__<name>``; a name still taken (an upstream
    tool literally called ``git__log`` beside a renamed ``log``) takes more of its server's prefix,
    so every entry is reachable. An invalid or too long name is fitted (``_fitted``)."""
    fitted = [_fitted(name) for _, name in listed]
    counts: dict[str, int] = {}
    for name in fitted:
        counts[name] = counts.get(name, 0) + 1
    taken = set(reserved)
    out = []
    for (server, _), name in zip(listed, fitted, strict=True):
        final = name if counts[name] == 1 and name not in reserved else _fitted(f"{server}{SEPARATOR}{name}")
        while final in taken:
            final = _fitted(f"{server}{SEPARATOR}{final}")
        taken.add(final)
        out.append(final)
    renamed = [(n, f) for (_, n), f in zip(listed, out, strict=True) if not valid_name(n)]
    if renamed:
        log.warning(
            "%s upstream name(s) that model APIs refuse (letters, digits, '_' and '-', up to %s) "
            "listed as valid ones: %s",
            len(renamed),
            NAME_MAX,
            ", ".join(f"{clip_middle(repr(n), 60)} as {f}" for n, f in renamed[:5]),
        )
    return out


async def _listing(session: ClientSession) -> tuple[list[types.Tool], list[types.Prompt]]:
    """An upstream's tools and prompts, every page."""
    init = getattr(session, "initialize_result", None)
    caps = init.capabilities if init is not None else None
    tools = await _pages(session.list_tools, "tools")
    prompts: list[types.Prompt] = []
    if caps is None or getattr(caps, "prompts", None) is not None:
        with suppress(Exception):  # (a server that lists no prompts after all)
            prompts = await _pages(session.list_prompts, "prompts")
    return tools, prompts


def _index(state: _State, listed: list[tuple[str, list[types.Tool], list[types.Prompt]]], prefix: str) -> None:
    """The tools and prompts of every upstream under unique names (collisions prefixed); ours last."""
    tools = [(server, t) for server, ts, _ in listed for t in ts]
    prompts = [(server, p) for server, _, ps in listed for p in ps]
    ours = {prefix + n for n in (*TOOL_NAMES, USAGE_TOOL)}
    for (server, t), name in zip(tools, _unique_names([(s, t.name) for s, t in tools], ours), strict=True):
        state.tools[name] = _Route(server, state.sessions[server], t.name, size_hint(t))
        # a spilled result is a stub, not the tool's declared structure: no output schema is promised
        state.tool_defs.append(t.model_copy(update={"name": name, "output_schema": None}))
    state.tool_defs = bounded_listing(state.tool_defs)
    for (server, p), name in zip(prompts, _unique_names([(s, p.name) for s, p in prompts], set()), strict=True):
        state.prompts[name] = _Route(server, state.sessions[server], p.name)
        state.prompt_defs.append(bounded_entry(p).model_copy(update={"name": name}))


# All the upstream tools' definitions together, as JSON: a model reads them every turn, and each
# one bounded (8 KiB of description, 64 KiB of schema) still let 300 tools list 2.7 MB.
LISTING_MAX_BYTES = 128 * 1024
DESCRIPTION_FLOOR_BYTES = 256  # a description is never cut shorter than this to fit the listing


def _tool_bytes(tool: types.Tool) -> int:
    return json_bytes(tool.model_dump(mode="json", by_alias=True, exclude_none=True)) or 0


def _desc_bytes(tool: types.Tool) -> int:
    return len((tool.description or "").encode("utf-8", "surrogatepass"))


def _descriptions_cut(tools: list[types.Tool], notes: dict[int, str]) -> tuple[list[types.Tool], int]:
    """``tools`` with their longest descriptions cut to one length so that all fit
    ``LISTING_MAX_BYTES`` if they can (never under ``DESCRIPTION_FLOOR_BYTES``), then each of
    ``notes`` put first in its tool's description, whole; and that length."""
    descs = [_desc_bytes(t) for t in tools]
    fixed = sum(_tool_bytes(t) for t in tools) - sum(descs) + sum(len(n.encode()) + 2 for n in notes.values())
    room = LISTING_MAX_BYTES - fixed - 96 * len(tools)  # (96: the words of a cut)
    low, high = DESCRIPTION_FLOOR_BYTES, max(descs, default=0)
    while low < high:  # the longest length every description may keep
        mid = (low + high + 1) // 2
        if sum(min(d, mid) for d in descs) <= room:
            low = mid
        else:
            high = mid - 1
    out = []
    for i, (tool, size) in enumerate(zip(tools, descs, strict=True)):
        text = clipped(tool.description, low, "description") if size > low else tool.description
        if i in notes:
            text = f"{notes[i]}\n\n{text}" if text else notes[i]
        out.append(tool.model_copy(update={"description": text}) if text is not tool.description else tool)
    return out, low


def _least_bytes(tool: types.Tool) -> int:
    """A tool's bytes in the listing once its description is cut as far as it may be."""
    return _tool_bytes(tool) - max(0, _desc_bytes(tool) - DESCRIPTION_FLOOR_BYTES)


def bounded_listing(tools: list[types.Tool]) -> list[types.Tool]:
    """The upstream tools as listed, within ``LISTING_MAX_BYTES`` together: first the longest
    descriptions cut to one length (never under ``DESCRIPTION_FLOOR_BYTES``); if that is not
    enough, the largest input schemas replaced by one any object matches (a note before the
    description names their arguments) and the descriptions cut again; last, the tools past the
    bound left out of the list (each still answers a call by its name). Logged."""
    total = sum(_tool_bytes(t) for t in tools)
    if total <= LISTING_MAX_BYTES:
        return tools
    out, length = _descriptions_cut(tools, {})
    notes: dict[int, str] = {}
    if sum(_tool_bytes(t) for t in out) > LISTING_MAX_BYTES:
        out = list(tools)
        least = [_least_bytes(t) for t in out]
        at_least = sum(least)  # (kept as schemas are replaced: summing every time was quadratic)
        for i in sorted(range(len(out)), key=lambda i: -len(dumps_compact(out[i].input_schema))):
            if at_least <= LISTING_MAX_BYTES or out[i].input_schema == ANY_ARGUMENTS:
                break
            names = argument_names(out[i].input_schema)
            notes[i] = (
                "[the proxy replaced this tool's input schema with one any object matches, to bound the list "
                "of tools; the upstream server checks the arguments"
                + (f". Its arguments were: {names}]" if names else "]")
            )
            out[i] = out[i].model_copy(update={"input_schema": dict(ANY_ARGUMENTS)})
            replaced = _least_bytes(out[i]) + len(notes[i].encode()) + 2
            at_least += replaced - least[i]
            least[i] = replaced
        out, length = _descriptions_cut(out, notes)
    kept: list[types.Tool] = []
    used = 0
    for tool in out:
        size = _tool_bytes(tool)
        if used + size > LISTING_MAX_BYTES:
            break
        kept.append(tool)
        used += size
    left = len(out) - len(kept)
    log.warning(
        "the upstream tools' definitions take %s bytes of JSON, over the proxy's %s: descriptions cut to %s bytes%s%s",
        f"{total:,}",
        f"{LISTING_MAX_BYTES:,}",
        f"{length:,}",
        f", {len(notes):,} input schemas replaced" if notes else "",
        f", and {left:,} tools left out of the list (each still answers a call by its name)" if left else "",
    )
    return kept


def bounded_entry(entry: Any) -> Any:
    """A listed resource or prompt (a model, changed only if need be) as the proxy lists it: its
    title and a resource's name and description at most ``LINK_TEXT_MAX_BYTES`` each (as a
    resource link's), a prompt's description ``DESCRIPTION_MAX_BYTES`` (as a tool's) and its
    arguments' words ``LINK_TEXT_MAX_BYTES``; its ``_meta`` and ``icons`` over ``META_MAX_BYTES``
    left out. Its name (what the client asks for) and uri are the upstream's. A resource listed
    with a 2 MB description passed whole."""
    update: dict[str, Any] = {}
    is_prompt = isinstance(entry, types.Prompt)
    for name, limit in (
        ("title", LINK_TEXT_MAX_BYTES),
        ("description", DESCRIPTION_MAX_BYTES if is_prompt else LINK_TEXT_MAX_BYTES),
        *(() if is_prompt else (("name", LINK_TEXT_MAX_BYTES),)),
    ):
        value = getattr(entry, name, None)
        if (cut := clipped(value, limit, name)) is not value:
            update[name] = cut
    for name in ("meta", "icons"):
        value = getattr(entry, name, None)
        if value is not None:
            dumped = value if name == "meta" else [i.model_dump(mode="json", by_alias=True) for i in value]
            size = json_bytes(dumped)
            if size is None or size > META_MAX_BYTES:
                update[name] = None
    if is_prompt and entry.arguments:
        args = [_bounded_argument(a) for a in entry.arguments]
        if any(a is not b for a, b in zip(args, entry.arguments, strict=True)):
            update["arguments"] = args
    return entry.model_copy(update=update) if update else entry


def _bounded_argument(argument: types.PromptArgument) -> types.PromptArgument:
    update = {}
    for name in ("title", "description"):
        value = getattr(argument, name)
        if (cut := clipped(value, LINK_TEXT_MAX_BYTES, name)) is not value:
            update[name] = cut
    return argument.model_copy(update=update) if update else argument


def _text_chars(result: types.CallToolResult) -> int:
    return sum(len(t) for b in result.content if (t := _text_of(b)) is not None)


def _text_of(block: Any) -> str | None:
    """The text a model reads in a block: a text block's, or an embedded resource's (a 3 MB file's
    contents embedded in a result passed through whole); None for any other block."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
        return block.resource.text
    return None


def restates(structured: Any, texts: list[types.TextContent]) -> bool:
    """Whether ``structured`` says no more than the text blocks (then only the text is stored).

    Servers often send the same payload twice: ``{"content": "<the text>"}`` (the filesystem server)
    or the text's own JSON. Storing it once keeps the spilled body the document itself.
    """
    if len(texts) != 1:
        return False
    text = texts[0].text
    if isinstance(structured, dict) and len(structured) == 1 and next(iter(structured.values())) == text:
        return True
    if text[:1] in ("{", "[") and len(text) < 64 << 20:
        try:
            return bool(loads(text) == structured)
        except ValueError:
            return False
    return False


def restates_blocks(structured: Any, blocks: list[Any]) -> bool:
    """Whether ``structured`` is only the non-text ``blocks`` again: their list, or an object whose
    one value is that list (``{"content": [...]}``), each block as its JSON without ``_meta``."""
    if not blocks:
        return False
    listed = next(iter(structured.values())) if isinstance(structured, dict) and len(structured) == 1 else structured
    if not isinstance(listed, list) or len(listed) != len(blocks):
        return False
    dumped = [b.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}) for b in blocks]
    same = [{k: v for k, v in item.items() if k != "_meta"} if isinstance(item, dict) else item for item in listed]
    return same == dumped


BLOCK_MAX_BYTES = 1 << 20  # an image, audio or blob block (its JSON) over this in a result is stored, not passed on
# ... and all of one result's (or resource's, or prompt's) images, audio, blobs and links together:
# 40 images just under the bound each, or 20,000 links, passed whole (40 MB, 62 MB)
BLOCKS_MAX_BYTES = 1 << 20


def _kinds(dumps: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for d in dumps:
        content = d.get("content")
        inner: dict[str, Any] = content if isinstance(content, dict) else {}  # (a prompt's message)
        kind = str(d.get("type") or inner.get("type") or ("blob" if "blob" in d else "item"))
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{n:,} {kind}" for kind, n in counts.items())


def over_the_bound(sizes: list[int]) -> list[int]:
    """The indexes of the items past ``BLOCKS_MAX_BYTES`` together, kept in their order while
    they fit (an item that fits after a larger one that did not is kept)."""
    used, out = 0, []
    for i, size in enumerate(sizes):
        if used + size > BLOCKS_MAX_BYTES:
            out.append(i)
        else:
            used += size
    return out


def rest_stored_note(pad: Scratchpad, server: str, tool: str, dumps: list[dict[str, Any]], prefix: str) -> str:
    """The line that stands in for the items past ``BLOCKS_MAX_BYTES`` of one result, stored
    together as one handle (``{"blocks": [...]}``), or left out when that fails."""
    size = sum(_json_bytes(d) for d in dumps)
    what = f"{len(dumps):,} more blocks ({_kinds(dumps)}; {size:,} bytes of JSON)"
    why = f" (past {BLOCKS_MAX_BYTES:,} bytes of blocks for one result)"
    out = pad.intercept({"blocks": dumps}, tool=tool, server=server, force=True)
    if out.spilled and out.handle:
        return (
            f"[{what} were kept out of the context by the proxy, stored as handle {out.handle}{why}; read them with "
            f'{prefix}iterate_over(handle="{out.handle}", path="blocks", fields=["type", "uri", "name", "mimeType"]) '
            f'or {prefix}item_schema(handle="{out.handle}", path="blocks")]'
        )
    return f"[{what} were left out by the proxy{why}; they could not be stored]"


def through_policy(
    pad: Scratchpad, route: _Route, result: types.CallToolResult, prefix: str = ""
) -> types.CallToolResult:
    """One upstream result as the client gets it (``_texts_through_policy``), each image, audio
    or blob block over ``BLOCK_MAX_BYTES`` stored as its own handle and replaced by a one-line
    note naming it (``_big_blocks_stored``): a 2.75 MB image passed through whole."""
    out = _texts_through_policy(pad, route, result, prefix)
    return out if out.is_error else _big_blocks_stored(pad, route, out, prefix)


def left_out_blocks_stored(
    pad: Scratchpad, route: _Route, result: types.CallToolResult, prefix: str = ""
) -> types.CallToolResult:
    """``result`` with each note standing for a block the SDK refused (``_upstream.repaired``: a
    type MCP does not define) saying where the block is: stored as its own handle (``force``), or
    left out when it could not be (or the result is an error, never stored). The other blocks
    are unchanged. (All of the result was dropped for one ``{"type": "video"}`` block.)"""
    content: list[Any] = []
    changed = False
    for block in result.content:
        found = left_out(block.meta) if isinstance(block, types.TextContent) else None
        if found is None:
            content.append(block)
            continue
        changed = True
        what, original = found
        meta = {k: v for k, v in (block.meta or {}).items() if left_out({k: v}) is None} or None
        out = None
        if not result.is_error and isinstance(original, dict):
            out = pad.intercept(original, tool=route.upstream_name, server=route.server, force=True)
        if out is not None and out.spilled and out.handle:
            text = _stored_note(what, out.handle, prefix)
        else:
            text = f"[{what} was left out by the proxy]"
        content.append(block.model_copy(update={"text": text, "meta": meta}))
    return result.model_copy(update={"content": content}) if changed else result


def _big_blocks_stored(
    pad: Scratchpad, route: _Route, result: types.CallToolResult, prefix: str = ""
) -> types.CallToolResult:
    content: list[Any] = []
    measured: dict[int, dict[str, Any]] = {}  # index in content -> a block's JSON, for the bound of them all
    changed = False
    for block in result.content:
        if _text_of(block) is not None:
            content.append(block)
            continue
        dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
        if isinstance(block, types.ResourceLink) or (size := _json_bytes(dumped)) <= BLOCK_MAX_BYTES:
            measured[len(content)] = dumped
            content.append(block)
            continue
        changed = True
        kind = getattr(block, "mime_type", None) or getattr(getattr(block, "resource", None), "mime_type", None)
        what = f"{block.type} block ({kind or 'no MIME type'}, {size:,} bytes of JSON)"
        out = pad.intercept(dumped, tool=route.upstream_name, server=route.server, force=True)
        if out.spilled and out.handle:
            note = _stored_note(f"a {what}", out.handle, prefix, f" (over {BLOCK_MAX_BYTES:,} bytes)")
        else:
            note = f"[a {what} was left out by the proxy (over {BLOCK_MAX_BYTES:,} bytes; it could not be stored)]"
        content.append(types.TextContent(type="text", text=note))
    content, rest = bounded_together(
        pad, route.server, route.upstream_name, content, measured, _note_block, prefix
    )
    return result.model_copy(update={"content": content}) if changed or rest else result


def _note_block(_block: Any, note: str) -> types.TextContent:
    return types.TextContent(type="text", text=note)


def bounded_together(
    pad: Scratchpad,
    server: str,
    tool: str,
    items: list[Any],
    measured: dict[int, dict[str, Any]],
    note_for: Callable[[Any, str], Any],
    prefix: str,
) -> tuple[list[Any], bool]:
    """``items`` with those ``measured`` (index -> JSON: a result's images, audio, blobs and links,
    a resource's blobs, a prompt's messages that are not text) past ``BLOCKS_MAX_BYTES`` together
    stored as one handle, ``note_for(the first of them, the note)`` in its place; and whether any was."""
    at = sorted(measured)
    past = over_the_bound([_json_bytes(measured[i]) for i in at])
    if not past:
        return items, False
    note = rest_stored_note(pad, server, tool, [measured[at[j]] for j in past], prefix)
    drop, first = {at[j] for j in past}, at[past[0]]
    out = [note_for(item, note) if i == first else item for i, item in enumerate(items) if i == first or i not in drop]
    return out, True


def _texts_through_policy(
    pad: Scratchpad, route: _Route, result: types.CallToolResult, prefix: str = ""
) -> types.CallToolResult:
    """One upstream result's text as the client gets it: unchanged, bounded (an error), or a stub.

    The text blocks, embedded resources' texts (the model reads them too) and ``structured_content``
    are measured as one output and spilled as one entry (one text block alone is unwrapped, JSON
    kept as JSON); image, audio, blob and linked resource blocks pass through untouched after the
    stub. An error result is bounded (``bounded_error``), never spilled. A failed spill fails
    closed: a short pointer, never the flood.
    """
    result = bounded_links(without_big_meta(result))
    if result.is_error:  # a small error is the upstream's own, unchanged
        bounded = bounded_error(result, pad.policy.error_max_bytes)
        return bounded if bounded is result else _error_stored(pad, route, result, bounded, prefix)
    read = [b for b in result.content if _text_of(b) is not None]  # (in their order)
    texts = [b for b in read if isinstance(b, types.TextContent)]
    others = [b for b in result.content if _text_of(b) is None]
    if result.structured_content is not None and not read and restates_blocks(result.structured_content, others):
        # the blocks again as structured content (the filesystem server's read_media_file: its
        # image once as a block, once as {"content": [the block]}): stored twice, and the stub of
        # the second pointed the model at an empty array. The blocks alone go on.
        result = result.model_copy(update={"structured_content": None})
    if not read and result.structured_content is None:
        return result  # images, audio, resources: never measured, never spilled
    if route.max_inline_chars is not None:
        structured = len(dumps_compact(result.structured_content)) if result.structured_content is not None else 0
        if _text_chars(result) + structured <= route.max_inline_chars:
            return result  # the tool asked for results this size whole
    # what a model reads: a block's _meta is the protocol's (clients do not show it), never measured or stored
    envelope: dict[str, Any] = {
        "content": [b.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"meta"}) for b in read]
    }
    if result.structured_content is not None and not restates(result.structured_content, texts):
        envelope["structuredContent"] = result.structured_content
    out = pad.intercept(envelope, tool=route.upstream_name, server=route.server)
    if not (out.spilled or out.failure is not None):
        return result
    stub = types.TextContent(type="text", text=stub_text(out, prefix))
    return result.model_copy(update={"content": [stub, *others], "structured_content": None})


def _error_stored(
    pad: Scratchpad, route: _Route, result: types.CallToolResult, bounded: types.CallToolResult, prefix: str
) -> types.CallToolResult:
    """A cut error (its head and tail shown) whose whole text is stored as a handle, named after
    the cut: the middle of a 750 KB stack trace, often the part that says why, could not be read.
    A store that fails leaves the cut error as it was (never more of it)."""
    joined = "\n".join(t for b in result.content if (t := _text_of(b)) is not None)
    if len(joined.encode("utf-8", "surrogatepass")) <= pad.policy.error_max_bytes:
        return bounded  # (only its other blocks or structured content were left out: nothing to read back)
    try:
        out = pad.intercept(joined, tool=route.upstream_name, server=route.server, force=True)
    except Exception:  # (fail closed: the bounded error alone)
        log.warning("storing a cut upstream error failed", exc_info=True)
        return bounded
    if not out.spilled or out.handle is None:
        return bounded
    x = prefix
    note = (
        f"[the whole error ({len(joined):,} characters) is stored as handle {out.handle}: "
        f'{x}grep handle="{out.handle}" pattern="Error|Exception|Caused by", or {x}slice it]'
    )
    # (the cut error and the note within the bound together)
    bounded = bounded_error(result, max(1024, pad.policy.error_max_bytes - len(note.encode()) - 1))
    first = bounded.content[0]
    text = first.text if isinstance(first, types.TextContent) else ""
    return bounded.model_copy(update={"content": [types.TextContent(type="text", text=f"{text}\n{note}"),
                                                  *bounded.content[1:]]})  # fmt: skip


def stub_text(out: Any, prefix: str = "") -> str:
    """The text the client gets for an intercepted result: its stub, whose closing "Next, with
    this handle: …" line names our tools as they were published (``--prefix sp_``: ``sp_schema``;
    the bare ``schema`` may be an upstream's own tool)."""
    text = str(out.content)
    if not prefix or out.stub is None:
        return text
    from ..spill._stub import _next_line

    line = _next_line(out.stub)
    return text[: -len(line)] + _next_line(out.stub, prefix) if text.endswith("\n" + line) else text


# META_MAX_BYTES (16 KiB, _upstream.py): an upstream's _meta (on the result or a block) larger than this is left out
META_NOTE_KEY = "jupyter-scratchpad/meta-left-out"


def without_big_meta(result: types.CallToolResult) -> types.CallToolResult:
    """``result`` without any ``_meta`` (its own, or a content block's) over ``META_MAX_BYTES``,
    said in one short note in the result's ``_meta`` (``META_NOTE_KEY``); else unchanged.

    ``_meta`` is the protocol's, not the model's: it is never measured for the spill policy (a
    2-byte "ok" with a 500 KB ``_meta`` on its block was spilled as a stub of "≥ 5,120 tokens"),
    and a huge one is not passed on either."""
    dropped: list[str] = []
    content: list[Any] = []
    for i, block in enumerate(result.content):
        size = _json_bytes(getattr(block, "meta", None))
        if size > META_MAX_BYTES:
            block = block.model_copy(update={"meta": None})
            dropped.append(f"content block {i + 1}'s, {size:,} bytes")
        content.append(block)
    meta = result.meta
    size = _json_bytes(meta)
    if size > META_MAX_BYTES:
        meta = None
        dropped.append(f"the result's, {size:,} bytes")
    if not dropped:
        return result
    shown = "; ".join(dropped[:5]) + (f"; and {len(dropped) - 5:,} more" if len(dropped) > 5 else "")
    note = f"the upstream's _meta over {META_MAX_BYTES:,} bytes was left out by the proxy ({shown})"
    log.info("%s", note)
    return result.model_copy(update={"content": content, "meta": {**(meta or {}), META_NOTE_KEY: note}})


def _json_bytes(value: Any) -> int:
    if not value:
        return 0
    try:
        return len(dumps_compact(value).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        return META_MAX_BYTES + 1  # (what cannot be written as JSON is not passed on)


LINK_TEXT_MAX_BYTES = 1024  # of a resource link's name, title and description, each


def bounded_links(result: types.CallToolResult) -> types.CallToolResult:
    """``result`` with each resource link's words (name, title, description: clients show them
    to the model) at most ``LINK_TEXT_MAX_BYTES``, head and tail kept and the cut said; its uri,
    what the link is, unchanged. A 500 KB description passed through whole."""
    content: list[Any] = []
    changed = False
    for block in result.content:
        if isinstance(block, types.ResourceLink):
            update = {
                name: clip_middle(value, LINK_TEXT_MAX_BYTES)
                for name in ("name", "title", "description")
                if isinstance(value := getattr(block, name, None), str)
                and len(value.encode("utf-8", "surrogatepass")) > LINK_TEXT_MAX_BYTES
            }
            if update:
                block = block.model_copy(update=update)
                changed = True
        content.append(block)
    return result.model_copy(update={"content": content}) if changed else result


# of an upstream's progress message (clients show it): a 2,000,000-character one reached the client whole
PROGRESS_MESSAGE_MAX_BYTES = 512
UNREADABLE_SAID = 5  # lines of an upstream that are not JSON-RPC logged one by one; the rest counted
PROGRESS_EVERY_S = 0.1  # an upstream's progress notifications of one call are forwarded at most this often
PROGRESS_FREE = 10  # ... but for the first ones and the last (done == total)

RESOURCE_TOOL = "resources/read"  # the name a resource read goes through the policy under


def _stored_note(what: str, handle: str, prefix: str, why: str = "") -> str:
    """The line that stands in for a block the proxy stored: the calls that read it, as published.
    (It named ``jupyter-scratchpad export H``, which cannot open the store the proxy holds nor find
    the proxy's run, and get_in without the tools' prefix.)"""
    return (
        f"[{what} was kept out of the context by the proxy, stored as handle {handle}{why}; its fields: "
        f'{prefix}schema(handle="{handle}"), one by {prefix}get_in(handle="{handle}", path="type")]'
    )


def resource_through_policy(
    pad: Scratchpad, server: str, result: types.ReadResourceResult, prefix: str = ""
) -> types.ReadResourceResult:
    """An upstream resource as the client gets it: each text content through the spill policy
    (``tool="resources/read"``, ``server=<name>``), a large one replaced by its stub (a 5 MB log
    read as a resource reached the client whole, and clients put resources in the model's
    context); small texts and blobs unchanged, but a blob over ``BLOCK_MAX_BYTES`` is stored as a
    tool result's image is (a 10 MB blob reached the client whole). A failed spill fails closed (a
    short pointer)."""
    contents: list[Any] = []
    changed = False
    for item in result.contents:
        if isinstance(item, types.BlobResourceContents) and len(item.blob) > BLOCK_MAX_BYTES:
            dumped = item.model_dump(mode="json", by_alias=True, exclude_none=True)
            what = f"a blob ({item.mime_type or 'no MIME type'}, {len(item.blob):,} bytes of base64)"
            out = pad.intercept(dumped, tool=RESOURCE_TOOL, server=server, force=True)
            note = (
                _stored_note(what, out.handle, prefix, f" (over {BLOCK_MAX_BYTES:,} bytes)")
                if out.spilled and out.handle
                else f"[{what} was left out by the proxy (over {BLOCK_MAX_BYTES:,} bytes; it could not be stored)]"
            )
            contents.append(types.TextResourceContents(uri=item.uri, mime_type="text/plain", text=note))
            changed = True
            continue
        if isinstance(item, types.TextResourceContents):
            out = pad.intercept(item.text, tool=RESOURCE_TOOL, server=server)
            if out.spilled or out.failure is not None:
                item = item.model_copy(update={"text": stub_text(out, prefix), "mime_type": "text/plain"})
                changed = True
        contents.append(item)
    blobs = {
        i: c.model_dump(mode="json", by_alias=True, exclude_none=True)
        for i, c in enumerate(contents)
        if isinstance(c, types.BlobResourceContents)
    }
    contents, rest = bounded_together(
        pad,
        server,
        RESOURCE_TOOL,
        contents,
        blobs,
        lambda c, note: types.TextResourceContents(uri=c.uri, mime_type="text/plain", text=note),
        prefix,
    )
    changed = changed or rest
    return result.model_copy(update={"contents": contents}) if changed else result


PROMPT_TOOL = "prompts/get"  # the name a prompt's messages go through the policy under


def prompt_through_policy(
    pad: Scratchpad, route: _Route, result: types.GetPromptResult, prefix: str = ""
) -> types.GetPromptResult:
    """An upstream prompt as the client gets it (clients put its messages in the model's context;
    a 3 MB message was passed whole): its description at most ``DESCRIPTION_MAX_BYTES``; each
    message's text (or embedded text resource) through the spill policy (``tool="prompts/get"``,
    ``server=<name>``) as a resource's is, a large one replaced by its stub (role kept); an image,
    audio or blob over ``BLOCK_MAX_BYTES`` stored as a tool result's is; a link's words bounded.
    When no message spilled alone but their texts together would (many small ones), those texts
    are stored as one entry and the prompt is one user message: its stub. A failed spill fails
    closed (a short pointer)."""
    update: dict[str, Any] = {}
    description = clipped(result.description, DESCRIPTION_MAX_BYTES, "description")
    if description is not result.description:
        update["description"] = description
    route = _Route(route.server, route.session, PROMPT_TOOL)
    messages: list[types.PromptMessage] = []
    spilled = False
    for message in result.messages:
        block = message.content
        text = _text_of(block)
        if text is not None:
            out = pad.intercept(text, tool=PROMPT_TOOL, server=route.server)
            if out.spilled or out.failure is not None:
                block = types.TextContent(type="text", text=stub_text(out, prefix))
                spilled = True
        else:
            one = types.CallToolResult(content=[block])
            block = _big_blocks_stored(pad, route, bounded_links(without_big_meta(one)), prefix).content[0]
        messages.append(message if block is message.content else message.model_copy(update={"content": block}))
    texts = [m for m in messages if _text_of(m.content) is not None]
    if not spilled and len(texts) > 1:
        envelope = {
            "messages": [
                m.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"content": {"meta"}})
                for m in texts
            ]
        }
        out = pad.intercept(envelope, tool=PROMPT_TOOL, server=route.server)
        if out.spilled or out.failure is not None:
            stub = types.PromptMessage(role="user", content=types.TextContent(type="text", text=stub_text(out, prefix)))
            messages = [stub, *(m for m in messages if _text_of(m.content) is None)]
            spilled = True
    others = {
        i: m.model_dump(mode="json", by_alias=True, exclude_none=True)
        for i, m in enumerate(messages)
        if _text_of(m.content) is None
    }
    messages, rest = bounded_together(
        pad,
        route.server,
        PROMPT_TOOL,
        messages,
        others,
        lambda _m, note: types.PromptMessage(role="user", content=types.TextContent(type="text", text=note)),
        prefix,
    )
    spilled = spilled or rest
    if spilled or any(a is not b for a, b in zip(messages, result.messages, strict=False)):
        update["messages"] = messages
    return result.model_copy(update=update) if update else result


def bounded_error(result: types.CallToolResult, limit: int) -> types.CallToolResult:
    """An upstream error result within about ``limit`` bytes of what a model reads, else unchanged.

    Its text blocks and embedded text resources are one text, bounded (head and tail); its
    structured content is left out past ``limit`` (with a note) or when the text was cut (it is
    usually the text again); its other blocks (images, audio, blobs, links) are kept while they fit
    in ``limit`` together, the rest left out with a note.
    """
    read = [t for b in result.content if (t := _text_of(b)) is not None]
    joined = "\n".join(read)
    bounded = bound_error_text(joined, limit)
    notes = []
    structured = result.structured_content
    extra = len(dumps_compact(structured).encode("utf-8", "surrogatepass")) if structured is not None else 0
    if extra > limit:  # a client may show the model either copy: the structured one is bounded too
        notes.append(f"the error's structured content ({extra:,} bytes, over {limit:,}) was left out")
    kept: list[Any] = []
    room = limit
    for block in result.content:
        if _text_of(block) is not None:
            continue
        size = len(block.model_dump_json(by_alias=True, exclude_none=True))
        if size <= room:
            kept.append(block)
            room -= size
        else:
            notes.append(f"the error's {block.type} block ({size:,} bytes) was left out")
    if bounded == joined and not notes:
        return result
    text = "\n".join([bounded, *(f"[{n}]" for n in notes[:20])])
    if len(notes) > 20:
        text += f"\n[and {len(notes) - 20:,} more blocks were left out]"
    content = [types.TextContent(type="text", text=text), *kept]
    return result.model_copy(update={"content": content, "structured_content": None})


def _upstream_failed(route: _Route, exc: BaseException) -> str:
    invalid = invalid_result_said(first_raised(exc, Exception) or exc)
    if invalid is not None:  # (pydantic's dump, with its link, was the whole message)
        return (
            f"upstream server {route.server!r} answered {route.upstream_name!r} with a result that is not "
            f"valid MCP ({invalid}), so the proxy cannot pass it on. Retry it or ask for less; "
            "the upstream's own output is not shown"
        )
    said = _why(exc)
    if UNREADABLE_REPLY in said:  # it did answer: with a line no JSON-RPC parser reads (_wire.py)
        why = said.split(UNREADABLE_REPLY, 1)[1].strip(" ()")
        return (
            f"upstream server {route.server!r} answered {route.upstream_name!r}, but its reply is not valid "
            f"JSON-RPC ({why}), so it could not be read. Retry it or ask for less; the proxy's log has the details"
        )
    if "SSE" in said and _TOO_LARGE in said:  # an HTTP upstream's reply over the bound: not read, nothing stored
        return (
            f"upstream server {route.server!r} answered {route.upstream_name!r} with a reply over the proxy's "
            f"bound for one upstream message ({UPSTREAM_MESSAGE_MAX_BYTES:,} bytes), so it was not read and "
            "nothing of it was stored. Ask for less (a narrower query, a page, a filter)"
        )
    if "closed" in said.lower():  # the SDK's word for a server whose process ended
        return (
            f"upstream server {route.server!r} is gone ({said}): its process ended or closed the connection, "
            f"so none of its tools answer now; the scratchpad's tools and stored handles still work. "
            "Restart the proxy to start it again (its last messages are in the proxy's log)"
        )
    return f"upstream server {route.server!r} answered {route.upstream_name!r} with an error: {said}"


def _upstream_silent(route: _Route, limit: float | None) -> str:
    return (
        f"upstream server {route.server!r} did not answer {route.upstream_name!r} within {limit:g} s "
        "(no result, no progress), so the call was cancelled upstream. Retry it, ask for less, or give the "
        "upstream more time (mcp proxy --upstream-timeout SECONDS, or timeout_s in its [mcp.servers.<name>])"
    )


def _tool_error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


class _Gone(Exception):
    """A request to an upstream whose connection ended: the message says which and what to do."""


def _gone(down: _Down, server: str, exc: Exception) -> Exception:
    """``exc``, or the short words for an upstream whose connection ended (not "Connection closed")."""
    said = down.said(server)
    return _Gone(said) if said is not None and not isinstance(exc, _Gone) else exc


def _bounded_protocol_error(exc: Exception, limit: int) -> Exception:
    """An upstream's protocol error passed on with its code and a bounded message (an upstream
    answered a resource read with a 100,000-character message); any other failure in one line."""
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        return MCPError(code=exc.code, message=bound_error_text(exc.message, limit))
    if isinstance(exc, _Gone):
        return MCPError(code=types.INTERNAL_ERROR, message=bound_error_text(str(exc), limit))
    return MCPError(code=types.INTERNAL_ERROR, message=f"the upstream server failed: {_why(exc)}")


START_TIMEOUT_S = 60.0  # an upstream not started and listed this long (or its own timeout, if shorter) stops the proxy


def start_limit(up: Upstream) -> float:
    """Seconds ``up`` has to answer initialize and list its tools: a server that hangs before
    initialize held the proxy (and its client) for the whole call timeout, 300 s."""
    return min(START_TIMEOUT_S, up.timeout_s or START_TIMEOUT_S)


async def _bound_start(starting: list[Upstream], started: anyio.Event, scope: anyio.CancelScope) -> None:
    """Cancels ``scope`` when the upstream in ``starting`` has been starting longer than its
    ``start_limit``; returns once every upstream has started."""
    current: Upstream | None = None
    deadline = 0.0
    while not started.is_set():
        up = starting[0] if starting else None
        if up is not current:
            current, deadline = up, anyio.current_time() + (start_limit(up) if up is not None else 0.0)
        elif up is not None and anyio.current_time() > deadline:
            scope.cancel()
            return
        await anyio.sleep(0.05)


CLIENTS_KEPT = 64  # client sessions (HTTP has one per client) told that the tool list changed

_NEVER = 1e9  # seconds: the SDK's own per-request clock stays out of a tool call (its scope is ours, reset by progress)


def build_proxy(
    pad: Scratchpad,
    upstreams: list[Upstream],
    *,
    prefix: str = "",
    new_pad: Callable[[], Scratchpad] | None = None,
) -> Server[Any]:
    """The proxy server: connects to ``upstreams`` when a client session starts. ``new_pad``: each
    MCP session after the first (over HTTP) spills into a pad of its own from it, its own budget
    and run; the upstreams are one set, shared by every session."""
    if not upstreams:
        raise ValueError("the proxy needs at least one upstream server")
    names = [u.name for u in upstreams]
    if len(set(names)) != len(names):
        raise ValueError(f"upstream names must be unique: {names}")
    holder: dict[str, _State] = {}
    timeouts = {u.name: u.timeout_s for u in upstreams}
    down = _Down()  # the HTTP upstreams whose connection ended, and why
    pads = SessionPads(pad, new_pad)

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        if "state" in holder:  # (entered already: the stdio CLI starts the upstreams before it reads stdin)
            yield {}
            return
        starting: list[Upstream] = []  # the upstream being started or listed, while one is
        try:
            async with anyio.create_task_group() as tg:
                started = anyio.Event()
                tg.start_soon(_bound_start, starting, started, tg.cancel_scope)
                async with AsyncExitStack() as stack:
                    state = _State()
                    listed: list[tuple[str, list[types.Tool], list[types.Prompt]]] = []
                    theirs: dict[str, str] = {}
                    for up in upstreams:
                        starting[:] = [up]
                        session = state.sessions[up.name] = await _connect(
                            stack, up, _on_message(up.name, tg), down, theirs
                        )
                        listed.append((up.name, *await _listing(session)))
                    starting.clear()
                    started.set()
                    _server.instructions = joined_instructions(INSTRUCTIONS, theirs)
                    _index(state, listed, prefix)
                    holder["state"] = state
                    listings.update((name, (tools, prompts)) for name, tools, prompts in listed)
                    try:
                        yield {}
                    finally:
                        holder.pop("state", None)
            if starting:  # (_bound_start cancelled the start: it took too long)
                limit = start_limit(starting[0])
                raise TimeoutError(f"it did not answer initialize and its listings within {limit:g} s")
        except BaseException as exc:  # (an HTTP upstream's task group raises its ConnectError as the stack unwinds)
            if not starting or first_raised(exc, UpstreamError) or not first_raised(exc, Exception):
                raise
            up = starting[0]
            where = f"command {up.command!r}" if up.command is not None else f"url {up.url!r}"
            raise UpstreamError(
                f"upstream {up.name!r} could not start ({where}): {_why(exc)}; check its command, "
                "args and cwd (or url), and its own messages above"
            ) from None

    listings: dict[str, tuple[list[types.Tool], list[types.Prompt]]] = {}  # each upstream's, as last listed
    clients: dict[int, Any] = {}  # our clients' sessions (the latest CLIENTS_KEPT), told when the tools change

    # per upstream re-listing its tools: "running", or "again" when it said so once more meanwhile
    relisting: dict[str, str] = {}

    unreadable: dict[str, int] = {}  # lines that are not JSON-RPC, per upstream

    def _on_message(server: str, tg: Any) -> Any:
        async def handle(message: Any) -> None:
            if isinstance(message, types.ToolListChangedNotification):  # (listed off the reader: no deadlock)
                # coalesced: one re-list in flight and one pending (2,000 notifications were 2,000
                # re-lists, and 2,000 notifications to the client)
                if server in relisting:
                    relisting[server] = "again"
                else:
                    relisting[server] = "running"
                    tg.start_soon(relist, server)
            elif isinstance(message, UnreadableLine):
                # the first few said, then one line per thousand (2,000 junk lines were 2,000
                # warnings in a client's server log)
                unreadable[server] = seen = unreadable.get(server, 0) + 1
                if seen <= UNREADABLE_SAID:
                    log.warning("upstream %r sent %s", server, message)
                    if seen == UNREADABLE_SAID:
                        log.warning("upstream %r: further lines that are not JSON-RPC are counted, not logged", server)
                elif seen % 1000 == 0:
                    log.warning("upstream %r has sent %s lines that are not JSON-RPC", server, f"{seen:,}")

        return handle

    async def relist(server: str) -> None:
        """An upstream's tools listed again (it said they changed) until it has not said so since
        the last listing began; each listing that changed them rebuilds the index and tells our
        clients: a tool it added later was unknown_tool, the proxy having listed once."""
        try:
            while True:
                relisting[server] = "running"
                await relist_once(server)
                if relisting.get(server) != "again":
                    return
        finally:
            relisting.pop(server, None)

    async def relist_once(server: str) -> None:
        st = holder.get("state")
        if st is None or server not in listings:
            return
        try:
            tools = await _pages(st.sessions[server].list_tools, "tools")
        except Exception as exc:
            log.warning("upstream %r said its tools changed, but listing them failed: %s", server, _why(exc))
            return
        if [t.model_dump(mode="json") for t in tools] == [t.model_dump(mode="json") for t in listings[server][0]]:
            return  # nothing changed: the client is not told
        listings[server] = (tools, listings[server][1])
        st.tools, st.tool_defs, st.prompts, st.prompt_defs = {}, [], {}, []
        _index(st, [(name, ts, ps) for name, (ts, ps) in listings.items()], prefix)
        for key, client in list(clients.items()):
            try:
                await client.send_tool_list_changed()
            except Exception:  # a client gone: not told again
                clients.pop(key, None)

    def state() -> _State:
        return holder["state"]

    def seen(ctx: Any) -> None:
        session = getattr(ctx, "session", None)
        # (a session object is made per request; its connection is the client's)
        key = id(getattr(session, "_connection", None) or session)
        if session is not None:
            clients.pop(key, None)
            clients[key] = session  # the latest, last
            while len(clients) > CLIENTS_KEPT:
                clients.pop(next(iter(clients)))

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        seen(ctx)
        return types.ListToolsResult(tools=[*state().tool_defs, *our_tools(prefix)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        seen(ctx)
        pad = pads(ctx)
        route = state().tools.get(params.name)
        if route is None:
            ours = params.name[len(prefix) :] if prefix and params.name.startswith(prefix) else params.name
            if ours == USAGE_TOOL and params.name == prefix + USAGE_TOOL:
                return await run_usage(pad, params.arguments, prefix)
            if ours in TOOL_NAMES and (not prefix or params.name.startswith(prefix)):
                return await run_tool(pad, ours, params.arguments, prefix)
            return unknown_tool(pad, params.name, [t.name for t in (await list_tools(ctx, None)).tools])
        if (gone := down.said(route.server)) is not None:  # (at once: its connection ended)
            return _tool_error(gone)
        token = (ctx.meta or {}).get("progress_token") if getattr(ctx, "meta", None) else None
        limit = timeouts[route.server]
        waiting = anyio.CancelScope(deadline=anyio.current_time() + limit if limit is not None else float("inf"))

        forwarded = [0, -float("inf")]  # how many were forwarded, and when the last was

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            now = anyio.current_time()
            if limit is not None:  # a sign of life: the upstream gets its time again
                waiting.deadline = now + limit
            last = total is not None and done >= total
            if token is not None and (
                forwarded[0] < PROGRESS_FREE or last or now - forwarded[1] >= PROGRESS_EVERY_S
            ):
                # forwarded to our client, under its token, its words bounded: the first
                # PROGRESS_FREE and the last as they come, the rest at most every PROGRESS_EVERY_S
                # (20,000 notifications of one call were 12 MB, and 12 s)
                forwarded[0] += 1
                forwarded[1] = now
                if isinstance(message, str) and len(message) > PROGRESS_MESSAGE_MAX_BYTES // 4:
                    message = clip_middle(message, PROGRESS_MESSAGE_MAX_BYTES)
                await ctx.session.send_progress_notification(
                    token, done, total, message, related_request_id=ctx.request_id
                )

        progress: Any = on_progress
        result = None
        try:
            with waiting:  # (the SDK tells the upstream the call is cancelled when this scope ends it)
                result = await route.session.call_tool(
                    route.upstream_name, params.arguments or {}, read_timeout_seconds=_NEVER, progress_callback=progress
                )
        except Exception as exc:  # it exited, or answered with a protocol error: a tool error, bounded
            return _tool_error(down.said(route.server) or _upstream_failed(route, exc))
        if result is None:
            return _tool_error(_upstream_silent(route, limit))
        out: types.CallToolResult = await anyio.to_thread.run_sync(
            lambda: through_policy(pad, route, left_out_blocks_stored(pad, route, result, prefix), prefix)
        )
        return out

    async def upstream_resources() -> list[types.Resource]:
        """Every upstream's resources (as listed, bounded), noting which upstream has each URI."""
        out: list[types.Resource] = []
        st = state()
        for server, session in st.sessions.items():
            try:
                listed = await _pages(session.list_resources, "resources")
            except Exception:  # a server without resources
                continue
            for r in listed:
                st.resources[str(r.uri)] = server
                out.append(bounded_entry(r))
        st.resources_listed = True
        return out

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        st = state()
        pad = pads(ctx)
        listing = st.resource_listing.get(id(pad))
        if getattr(params, "cursor", None) is None or listing is None:  # (a first page: listed again)
            listing = await upstream_resources()
            listing += await anyio.to_thread.run_sync(lambda: resources_of(pad))
            st.resource_listing.pop(id(pad), None)
            st.resource_listing[id(pad)] = listing
            while len(st.resource_listing) > SessionPads.MAX_SESSIONS:  # (the newest sessions')
                st.resource_listing.pop(next(iter(st.resource_listing)))
        page, after = listing_page(listing, params)
        return types.ListResourcesResult(resources=page, next_cursor=after)

    async def upstream_templates() -> tuple[list[types.ResourceTemplate], list[tuple[str, str]]]:
        """Every upstream's resource templates (as listed, bounded) and ``(uri_template, upstream)``."""
        out: list[types.ResourceTemplate] = []
        found: list[tuple[str, str]] = []
        for server, session in state().sessions.items():
            try:
                listed = await _pages(session.list_resource_templates, "resource_templates")
            except Exception:  # a server without templates
                continue
            for t in listed:
                found.append((t.uri_template, server))
                out.append(bounded_entry(t))
        return out, found

    async def list_resource_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        listed, found = await upstream_templates()
        state().templates = _specific_first(found)
        return types.ListResourceTemplatesResult(resource_templates=[*listed, page_template()])

    async def owner_of(uri: str) -> str | None:
        """The upstream a URI is read from: the one that lists it, else the one whose resource
        template it fits (clients read a URI they know without listing resources or templates)."""
        st = state()
        if uri not in st.resources and not st.resources_listed:
            await upstream_resources()
        if uri in st.resources:
            return st.resources[uri]
        if st.templates is None:
            st.templates = _specific_first((await upstream_templates())[1])
        for pattern, server in st.templates:
            if pattern.fullmatch(uri):
                return server
        return next(iter(st.sessions)) if len(st.sessions) == 1 else None

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        pad = pads(ctx)
        uri = str(params.uri)
        if uri.startswith("scratchpad://"):
            return await anyio.to_thread.run_sync(lambda: read_page(pad, uri))
        server = await owner_of(uri)
        if server is None:
            raise bad_uri(f"unknown resource {uri[:200]!r}: no upstream listed it or has a template it fits")
        try:
            if (gone := down.said(server)) is not None:
                raise _Gone(gone)
            result = await state().sessions[server].read_resource(uri)
        except Exception as exc:
            raise _bounded_protocol_error(_gone(down, server, exc), pad.policy.error_max_bytes) from None
        out: types.ReadResourceResult = await anyio.to_thread.run_sync(
            lambda: resource_through_policy(pad, server, result, prefix)
        )
        return out

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        page, after = listing_page(state().prompt_defs, params)
        return types.ListPromptsResult(prompts=page, next_cursor=after)

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        pad = pads(ctx)
        route = state().prompts.get(params.name)
        if route is None:
            known = ", ".join(sorted(state().prompts)[:20]) or "none"
            raise bad_uri(f"unknown prompt {params.name[:100]!r}; the prompts: {known}")
        try:
            if (gone := down.said(route.server)) is not None:
                raise _Gone(gone)
            result = await route.session.get_prompt(route.upstream_name, params.arguments)
        except Exception as exc:
            raise _bounded_protocol_error(_gone(down, route.server, exc), pad.policy.error_max_bytes) from None
        out: types.GetPromptResult = await anyio.to_thread.run_sync(
            lambda: prompt_through_policy(pad, route, result, prefix)
        )
        return out

    server: Server[Any] = Server(
        "jupyter-scratchpad-proxy",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_resource_templates=list_resource_templates,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    return server


def proxy_notification_options() -> Any:
    """What the proxy tells its client at initialize: its tool list can change (an upstream's did)."""
    from mcp.server.lowlevel.server import NotificationOptions

    return NotificationOptions(tools_changed=True)
