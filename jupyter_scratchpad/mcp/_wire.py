"""JSON-RPC lines the SDK's stdio parser refuses: read anyway, or answered at once.

The SDK parses each stdio line with pydantic, which refuses a lone-surrogate escape (``"\\ud83d"``,
what JavaScript's ``JSON.stringify`` writes for an emoji cut in two) and JSON nested deeper than its
limit. It then drops the line (with a traceback in the log), and the message it carried is lost: an
upstream's reply left the proxy's call waiting for its whole timeout, then told the model the
upstream "did not answer"; a client's request to ``mcp serve`` was never answered at all.

- ``parse_line``: the SDK's parse; a line it refuses for lone surrogates is read with each one
  written as its escape text, ``\\ud83d`` (what ``_bounded.sendable`` makes of one).
- ``use_tolerant_parser``: the proxy's stdio upstreams are read so; a reply that still cannot be
  read fails the call it answers at once (a JSON-RPC error under its id, ``UNREADABLE_REPLY``).
- ``tolerant_stdio_server``: ``stdio_server`` whose requests are read so; one that still cannot be
  read is answered at once with a JSON-RPC error (under its id when it can be found).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from .._bounded import sendable

__all__ = [
    "UNREADABLE_REPLY",
    "lone_surrogates_escaped",
    "parse_line",
    "top_level_fields",
    "tolerant_stdio_server",
    "use_tolerant_parser",
]

log = logging.getLogger("jupyter_scratchpad.mcp")

UNREADABLE_REPLY = "upstream sent a reply that is not valid JSON-RPC"

# one escape of a JSON string: a surrogate pair (kept), a lone surrogate (groups 3), any other
_ESCAPE = re.compile(
    r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([dD][89a-fA-F][0-9a-fA-F]{2})|\\.", re.S
)
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogates_escaped(line: str) -> str:
    """``line`` (JSON) with each lone-surrogate escape ``\\ud83d`` written as the text ``\\ud83d``
    (``\\\\ud83d``), as ``sendable`` writes one; surrogate pairs and every other escape unchanged."""

    def one(m: re.Match[str]) -> str:
        lone = m.group(3)
        return m.group() if lone is None else "\\\\u" + lone.lower()

    return _ESCAPE.sub(one, line)


def parse_line(line: str) -> SessionMessage | ValueError:
    """One JSON-RPC line as the SDK parses it; refused for lone surrogates only, read with them
    escaped; else the parser's error."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        failed = exc
    if _SURROGATE.search(line):
        try:
            escaped = lone_surrogates_escaped(line)
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(escaped, by_name=False))
        except ValueError as exc:
            failed = exc
    return failed


_SCALAR = re.compile(
    r'\s*:\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|"[^"\\]*(?:\\.[^"\\]*)*"|null|true|false)(?=\s*[,}])', re.S
)
NOT_SCALAR = object()  # a member whose value is an object or an array


_STRUCTURE = re.compile(r'["{}\[\],]')
_REST_OF_STRING = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def top_level_fields(line: str) -> dict[str, Any]:
    """The members of the JSON object ``line`` at its top level, found by a scan that never
    recurses (a line too deep to parse still has them): a scalar by its value, anything else as
    ``NOT_SCALAR``. Empty for what is not an object. One pass, linear in the line: a string never
    closed ends the scan (a regex over every quote rescanned the rest of the line from each one:
    a 100 KB broken line held the event loop 17 s)."""
    fields: dict[str, Any] = {}
    depth, key_next = 0, False
    at = 0
    while (m := _STRUCTURE.search(line, at)) is not None:
        first, at = m.group(), m.end()
        if first == '"':
            rest = _REST_OF_STRING.match(line, at)
            if rest is None:
                break  # (a string never closed: nothing after it can be read)
            token, at = line[m.start() : rest.end()], rest.end()
            if key_next:
                key_next = False
                value = _SCALAR.match(line, at)
                with suppress(ValueError):
                    fields[json.loads(token)] = json.loads(value.group(1)) if value else NOT_SCALAR
        elif first in "{[":
            depth += 1
            key_next = depth == 1 and first == "{"
        elif first in "}]":
            depth -= 1
        else:  # ","
            key_next = depth == 1
    return fields


def _request_id(fields: dict[str, Any]) -> int | str | None:
    """The line's id, as a reply can carry it: an id holding a lone surrogate as its escape text
    (the reply's writer cannot encode the character: one such id ended the server)."""
    rid = fields.get("id")
    if isinstance(rid, str):
        return sendable(rid)
    return rid if isinstance(rid, int) and not isinstance(rid, bool) else None


def _why(exc: ValueError) -> str:
    """What the parser said, in one short line."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with suppress(Exception):
            first = errors(include_url=False, include_input=False)[0]
            if first.get("type") == "json_invalid":
                return str(first.get("msg"))[:200]
            return "valid JSON, but not a JSON-RPC request, notification or response"
    return " ".join(str(exc).split())[:200]


class UnreadableLine(ValueError):
    """A line from an upstream that no JSON-RPC parser reads and no call waits for: handed to the
    upstream's session (whose message handler says which upstream sent it)."""


def _unreadable_reply(line: str, exc: ValueError) -> SessionMessage | ValueError:
    """A reply from an upstream that cannot be read: a JSON-RPC error under its id, which fails
    the call waiting for it at once; anything else (a request, no id) is dropped as before."""
    fields = top_level_fields(line) if line.strip() else {}
    rid = _request_id(fields)
    why = _why(exc)
    if rid is None or "method" in fields:  # (the proxy logs it with the upstream's name: its session gets it)
        return UnreadableLine(f"a line that is not valid JSON-RPC ({why}); it was dropped")
    log.warning("an upstream's reply to request %r is not valid JSON-RPC (%s); the call fails", rid, why)
    error = types.ErrorData(code=types.PARSE_ERROR, message=f"{UNREADABLE_REPLY} ({why})")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=error))


def _parse_upstream_line(line: str) -> SessionMessage | Exception:
    parsed = parse_line(line)
    return parsed if isinstance(parsed, SessionMessage) else _unreadable_reply(line, parsed)


def use_tolerant_parser() -> bool:
    """Read the stdout of every stdio MCP server this process connects to with ``parse_line``
    (and fail a call whose reply cannot be read). False when the SDK no longer parses its lines
    through ``mcp.client.stdio._parse_line`` (nothing is changed)."""
    import mcp.client.stdio as stdio

    current = getattr(stdio, "_parse_line", None)
    if current is _parse_upstream_line:
        return True
    if not callable(current):
        return False
    stdio._parse_line = _parse_upstream_line
    return True


def _unreadable_request(exc: Exception) -> tuple[SessionMessage | None, SessionMessage | list[SessionMessage] | None]:
    """A client's line the SDK refused: ``(message, None)`` when it reads with its lone surrogates
    escaped, ``(None, answer)`` for a request (or a line not even JSON) answered with a JSON-RPC
    error, ``(None, None)`` to drop (a notification: nobody waits for it)."""
    errors = getattr(exc, "errors", None)
    line = None
    if callable(errors):  # (pydantic gives the whole line as the input of an invalid-JSON error)
        with suppress(Exception):
            found = errors(include_url=False)[0]
            if found.get("type") == "json_invalid" and isinstance(found.get("input"), str):
                line = found["input"]
            elif isinstance(found.get("input"), list):  # a JSON-RPC batch, which MCP does not take
                return None, _batch_refused(found["input"])
    if line is None or not line.strip():
        log.warning("a client sent a message that is not valid JSON-RPC (%s); it was dropped", _describe(exc))
        return None, None
    parsed = parse_line(line)
    if isinstance(parsed, SessionMessage):
        return parsed, None
    fields = top_level_fields(line)
    rid = _request_id(fields)
    if rid is None and "method" in fields:  # a notification
        log.warning("a client sent a notification that is not valid JSON-RPC (%s); it was dropped", _why(parsed))
        return None, None
    why = _why(parsed)
    message = f"the request could not be read: {why}"
    if "recursion limit" in why:
        message += " (nested deeper than the JSON-RPC parser reads)"
    error = types.ErrorData(code=types.PARSE_ERROR, message=message)
    return None, SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=error))


BATCH_REFUSED = (
    "a JSON-RPC batch is not read here (MCP sends one message a line since its 2025-06-18 revision): "
    "send each request on its own line"
)


def _batch_refused(batch: list[Any]) -> list[SessionMessage]:
    """An error answer to each request in a batch (its caller waited for ever: the batch was
    dropped in silence), or one with a null id when none has an id."""
    ids = [_request_id(m) for m in batch[:1000] if isinstance(m, dict) and "method" in m]
    log.warning("a client sent a JSON-RPC batch of %d messages; each request in it is answered with an error",
                len(batch))
    error = types.ErrorData(code=types.INVALID_REQUEST, message=BATCH_REFUSED)
    answered: list[int | str | None] = [rid for rid in dict.fromkeys(ids) if rid is not None]
    return [SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=error)) for rid in answered or [None]]


def _describe(exc: Exception) -> str:
    return _why(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"[:200]


@asynccontextmanager
async def tolerant_stdio_server() -> AsyncIterator[tuple[Any, Any]]:
    """``mcp.server.stdio.stdio_server``, whose read stream carries a request the SDK refused for
    lone surrogates (read with them escaped), and answers at once one it cannot read at all (too
    deep, not JSON) with a JSON-RPC error, where it was dropped and its caller waited forever."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # (the server stopped reading)
                await _relay(read, write, send)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            try:
                yield receive, write
            finally:
                tg.cancel_scope.cancel()


async def _relay(read: Any, write: Any, send: Any) -> None:
    async with send:
        async for item in read:
            if isinstance(item, Exception):
                message, answer = _unreadable_request(item)
                for each in answer if isinstance(answer, list) else [answer] if answer is not None else []:
                    await write.send(each)
                if message is None:
                    continue
                item = message
            await send.send(item)
