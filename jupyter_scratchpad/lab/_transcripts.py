"""Tool results out of conversation logs: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages.

Each reader takes the parsed JSON of one conversation and returns its tool results as
``TraceCall`` s, in order, with the tool name taken from the matching tool call:

* Chat Completions: ``{"messages": [...]}`` or the list of messages; ``assistant.tool_calls[]``
  (``id``, ``function.name``) answered by ``{"role": "tool", "tool_call_id", "content"}``; the
  legacy ``{"role": "function", "name", "content"}`` too.
* Responses: a response (``output``), a request (``input``), both, or the list of items;
  ``function_call`` / ``custom_tool_call`` (and any ``*_call``) answered by the ``*_call_output``
  with the same ``call_id``; ``mcp_call`` items carry their own ``output`` / ``error`` and
  ``server_label``.
* Anthropic: ``{"messages": [...]}`` or the list of messages; ``tool_use`` (and
  ``server_tool_use``, ``mcp_tool_use`` with ``server_name``) answered by ``tool_result`` (any
  ``*_tool_result``) with the same ``tool_use_id``; ``is_error`` is kept.

* Claude Code session logs (``~/.claude/projects/…/<session>.jsonl``): one event a line, the
  Anthropic message under ``"message"`` (``{"type": "user", "uuid", …, "message": {"role",
  "content"}}``); read as Anthropic Messages, the events without a message skipped.
* MCP JSON-RPC logs (``mcp-jsonrpc``): the messages of a session, one a line; each ``tools/call``
  request (``params.name``) answered by the response with the same ``id``. The result is measured
  as the proxy measures it: the envelope of its text blocks (and ``structuredContent`` when it says
  more than the text); an ``isError`` result or a JSON-RPC error is an error.

A name ``mcp__<server>__<tool>`` (the MCP naming of Claude Code and others) is split into server
and tool. Content given as a list of parts is the text of its text parts, joined by newlines;
parts that are not text (images, files) are not counted, and the row says so in ``problem``.
A result with no matching call keeps its row, with tool ``"unknown"`` and a ``problem``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..store._format import dumps_compact
from ..store._jsontext import loads
from ._trace import TraceCall, TraceFormatError

__all__ = [
    "TRANSCRIPT_FORMATS",
    "detect_transcript_format",
    "read_anthropic",
    "read_mcp_jsonrpc",
    "read_openai_chat",
    "read_openai_responses",
    "split_mcp_name",
]

_TEXT_PARTS = ("text", "input_text", "output_text")


def split_mcp_name(name: str, server: str | None = None) -> tuple[str | None, str]:
    """``("k8s", "list_pods")`` for ``"mcp__k8s__list_pods"``; other names are left alone."""
    if server is None and name.startswith("mcp__"):
        rest = name[len("mcp__") :]
        srv, sep, tool = rest.partition("__")
        if sep and srv and tool:
            return srv, tool
    return server, name


def _content(content: Any) -> tuple[Any, str | None]:
    """``(result, problem)`` for a message content: a string, a list of parts, or JSON."""
    if content is None:
        return "", None
    if isinstance(content, str):
        return content, None
    if isinstance(content, list):
        texts: list[str] = []
        skipped: dict[str, int] = {}
        structured: list[Any] = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind in ("image", "input_image", "file", "input_file", "document", "image_url", "input_audio"):
                skipped[kind] = skipped.get(kind, 0) + 1
            else:
                structured.append(part)  # e.g. web_search_result blocks: counted as their JSON
        if structured:
            texts.append(dumps_compact(structured))
        problem = None
        if skipped:
            shown = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
            problem = f"not counted: {shown} part(s) of the content"
        return "\n".join(texts), problem
    return content, None  # a JSON value: counted as its compact JSON, as a tool returning it


def _call(name: str | None, result: Any, problem: str | None, **kw: Any) -> TraceCall:
    if name is None:
        missing = f"no tool call with id {kw.get('call_id')!r} before this result"
        problem = missing if problem is None else f"{missing}; {problem}"
        name = "unknown"
    server, tool = split_mcp_name(name, kw.pop("server", None))
    return TraceCall(tool=tool, server=server, result=result, problem=problem, **kw)


def _unwrap_event(item: Any) -> Any:
    """The message of a Claude Code session event (``{"type": "user", "message": {...}}``), else ``item``."""
    if isinstance(item, dict) and "role" not in item:
        message = item.get("message")
        if isinstance(message, dict) and ("role" in message or "content" in message):
            return message
    return item


def _messages(doc: Any, what: str) -> list[Any]:
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        return [_unwrap_event(m) for m in doc["messages"]]
    if isinstance(doc, list):
        return [_unwrap_event(m) for m in doc]
    raise TraceFormatError(f"a {what} transcript is a list of messages or an object with 'messages'")


def read_openai_chat(doc: Any, *, name: str = "<chat>") -> list[TraceCall]:
    """Tool results of an OpenAI Chat Completions conversation (``{"messages": [...]}``)."""
    names: dict[str, str] = {}
    calls: list[TraceCall] = []
    for index, message in enumerate(_messages(doc, "Chat Completions")):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        for tool_call in message.get("tool_calls") or []:
            function = tool_call.get("function") if isinstance(tool_call, dict) else None
            if isinstance(function, dict) and tool_call.get("id") and function.get("name"):
                names[str(tool_call["id"])] = str(function["name"])
        if role not in ("tool", "function"):
            continue
        call_id = message.get("tool_call_id")
        tool = names.get(str(call_id)) if call_id is not None else None
        tool = tool or message.get("name")
        result, problem = _content(message.get("content"))
        source = f"{name}#messages[{index}]"
        calls.append(_call(tool, result, problem, call_id=call_id, source=source))
    return calls


def _response_items(doc: Any) -> list[Any]:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        items: list[Any] = []
        if isinstance(doc.get("input"), list):
            items += doc["input"]
        if isinstance(doc.get("output"), list):
            items += doc["output"]
        if items or "input" in doc or "output" in doc:
            return items
    raise TraceFormatError("a Responses transcript is a list of items, or an object with 'input' and/or 'output'")


def read_openai_responses(doc: Any, *, name: str = "<responses>") -> list[TraceCall]:
    """Tool results of an OpenAI Responses conversation (``input`` and ``output`` items)."""
    names: dict[str, str] = {}
    calls: list[TraceCall] = []
    for index, item in enumerate(_response_items(doc)):
        if not isinstance(item, dict):
            continue
        kind = str(item.get("type") or "")
        source = f"{name}#items[{index}]"
        if kind == "mcp_call":
            error = item.get("error")
            output = item.get("output")
            result, problem = _content(output if output is not None or error is None else error)
            calls.append(
                _call(
                    str(item.get("name") or "unknown"),
                    result,
                    problem,
                    server=item.get("server_label"),
                    is_error=error is not None,
                    call_id=item.get("id"),
                    source=source,
                )
            )
        elif kind.endswith("_call_output"):
            call_id = item.get("call_id")
            tool = names.get(str(call_id))
            result, problem = _content(item.get("output"))
            calls.append(_call(tool, result, problem, call_id=call_id, source=source))
        elif kind.endswith("_call") and item.get("call_id") is not None:
            # function_call and custom_tool_call have a name; built-in calls are named by their type
            names[str(item["call_id"])] = str(item.get("name") or kind[: -len("_call")])
    return calls


def read_anthropic(doc: Any, *, name: str = "<anthropic>") -> list[TraceCall]:
    """Tool results of an Anthropic Messages conversation (``tool_use`` / ``tool_result`` blocks)."""
    uses: dict[str, tuple[str, str | None]] = {}
    calls: list[TraceCall] = []
    for index, message in enumerate(_messages(doc, "Anthropic Messages")):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for block_index, block in enumerate(content):
            kind = str(block.get("type") or "") if isinstance(block, dict) else ""
            if kind.endswith("tool_use") and block.get("id") is not None:
                uses[str(block["id"])] = (str(block.get("name") or kind), block.get("server_name"))
            elif kind.endswith("tool_result"):
                call_id = block.get("tool_use_id")
                tool, server = uses.get(str(call_id), (None, None))
                result, problem = _content(block.get("content"))
                calls.append(
                    _call(
                        tool,
                        result,
                        problem,
                        server=server,
                        is_error=bool(block.get("is_error", False)),
                        call_id=call_id,
                        source=f"{name}#messages[{index}].content[{block_index}]",
                    )
                )
    return calls


def _mcp_result(result: Any) -> tuple[Any, str | None, bool]:
    """``(result, problem, is_error)`` of a ``CallToolResult`` as the proxy measures it: its text
    blocks (and embedded resources' texts) as one envelope, ``structuredContent`` when it says
    more than the text; image, audio and blob blocks are not measured."""
    if not isinstance(result, dict):
        return result, None, False
    blocks = result.get("content")
    blocks = blocks if isinstance(blocks, list) else []
    read: list[Any] = []
    texts: list[str] = []
    skipped: dict[str, int] = {}
    for block in blocks:
        if not isinstance(block, dict):
            continue
        resource = block.get("resource")
        has_text = isinstance(resource, dict) and isinstance(resource.get("text"), str)
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif not (block.get("type") == "resource" and has_text):
            kind = str(block.get("type") or "unknown")
            skipped[kind] = skipped.get(kind, 0) + 1
            continue
        read.append({k: v for k, v in block.items() if k != "_meta"})  # (the protocol's, never measured)
    envelope: dict[str, Any] = {"content": read}
    structured = result.get("structuredContent")
    if structured is not None and not _restates(structured, texts if len(read) == len(texts) else []):
        envelope["structuredContent"] = structured
    problem = None
    if skipped:
        shown = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
        problem = f"not counted: {shown} block(s) of the result (the proxy passes them through)"
    return envelope, problem, bool(result.get("isError"))


def _restates(structured: Any, texts: list[str]) -> bool:
    """Whether ``structuredContent`` says no more than the one text block (the proxy's ``restates``)."""
    if len(texts) != 1:
        return False
    text = texts[0]
    if isinstance(structured, dict) and len(structured) == 1 and next(iter(structured.values())) == text:
        return True
    if text[:1] in ("{", "["):
        try:
            return bool(loads(text) == structured)
        except ValueError:
            return False
    return False


def read_mcp_jsonrpc(doc: Any, *, name: str = "<mcp>") -> list[TraceCall]:
    """Tool results of an MCP JSON-RPC log: ``tools/call`` requests paired with their responses by ``id``."""
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        doc = doc["messages"]
    if not isinstance(doc, list):
        raise TraceFormatError("an MCP JSON-RPC log is a list of JSON-RPC messages (one a line)")
    requests: dict[str, tuple[str, str | None]] = {}
    calls: list[TraceCall] = []
    for index, message in enumerate(doc):
        if not isinstance(message, dict) or "id" not in message:
            continue  # notifications
        key = dumps_compact(message["id"])
        if message.get("method") == "tools/call":
            params = message.get("params")
            tool = params.get("name") if isinstance(params, dict) else None
            requests[key] = (str(tool) if tool else "unknown", None)
            continue
        if "method" in message or key not in requests:
            continue  # another request, or the response to one (initialize, tools/list)
        tool, server = requests.pop(key)
        source = f"{name}#messages[{index}]"
        if "error" in message:  # a protocol error: its message is what the client sees
            calls.append(_call(tool, message["error"], None, server=server, is_error=True, call_id=key, source=source))
            continue
        result, problem, is_error = _mcp_result(message.get("result"))
        calls.append(_call(tool, result, problem, server=server, is_error=is_error, call_id=key, source=source))
    return calls


TRANSCRIPT_FORMATS: dict[str, Callable[..., list[TraceCall]]] = {
    "openai-chat": read_openai_chat,
    "openai-responses": read_openai_responses,
    "anthropic": read_anthropic,
    "mcp-jsonrpc": read_mcp_jsonrpc,
}


def _message_kind(message: Any) -> str | None:
    if not isinstance(message, dict):
        return None
    if message.get("jsonrpc") is not None and ("method" in message or "result" in message or "error" in message):
        return "mcp-jsonrpc"
    message = _unwrap_event(message)
    if message.get("role") in ("tool", "function") or message.get("tool_calls"):
        return "openai-chat"
    kind = str(message.get("type") or "")
    if kind.endswith("_call") or kind.endswith("_call_output") or kind in ("reasoning",):
        return "openai-responses"
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            block_kind = str(block.get("type") or "") if isinstance(block, dict) else ""
            if block_kind.endswith("tool_use") or block_kind.endswith("tool_result"):
                return "anthropic"
    return None


def detect_transcript_format(doc: Any) -> str:
    """Which of ``TRANSCRIPT_FORMATS`` a parsed conversation log is in; raises when none fits."""
    if isinstance(doc, dict):
        if doc.get("object") == "response" or isinstance(doc.get("output"), list):
            return "openai-responses"
        if isinstance(doc.get("input"), list) and not isinstance(doc.get("messages"), list):
            return "openai-responses"
        items = doc.get("messages")
    else:
        items = doc
    if isinstance(items, list):
        for message in items:
            kind = _message_kind(message)
            if kind is not None:
                return kind
        if all(isinstance(_unwrap_event(m), dict) and "role" in _unwrap_event(m) for m in items):
            return "openai-chat"  # a conversation without tool calls: nothing to replay, not an error
    raise TraceFormatError(
        "not a conversation log this lab reads: expected OpenAI Chat Completions or Anthropic "
        "Messages ({'messages': [...]}, or a Claude Code session's JSONL), OpenAI Responses "
        "({'input': [...]}, {'output': [...]}), an MCP JSON-RPC log (tools/call requests and their "
        "responses, one a line) or a JSONL trace (one {\"tool\": ..., \"result\": ...} a line)"
    )
