"""MCP ``CallToolResult`` envelopes: one text block around the real payload, unwrapped at spill.

An MCP server's tool result is ``{"content": [{"type": "text", "text": "<the real JSON>"}]}``. Stored
as it is, the payload would be one opaque string line; unwrapped, it is a JSON (or markdown, or
text) body that every tool can explore. Only the exact shape is unwrapped — one text block, no
error flag, a structured copy only if it repeats the text, nothing else — and the stub says it was.
"""

from __future__ import annotations

import re
from typing import Any

from ..store._jsontext import loads

__all__ = ["unwrap_call_tool_result"]

# resultType: MCP SDK 2.x marks a finished result "complete"; structuredContent repeats the payload
_ENVELOPE_KEYS = frozenset({"content", "isError", "_meta", "resultType", "structuredContent"})
_BLOCK_KEYS = frozenset({"type", "text", "annotations", "_meta"})
_LOOKS_LIKE = re.compile(rb'\A\s*\{\s*"(?:content|isError|_meta)"\s*:')


def unwrap_call_tool_result(result: Any) -> str | None:
    """The text of a ``CallToolResult`` with exactly one text block, else None.

    >>> unwrap_call_tool_result({"content": [{"type": "text", "text": "[1, 2]"}]})
    '[1, 2]'
    >>> unwrap_call_tool_result({"content": [{"type": "text", "text": "a"}], "isError": True}) is None
    True
    """
    value = result
    if isinstance(result, (str, bytes, bytearray)):
        head = result[:256].encode("utf-8", "surrogatepass") if isinstance(result, str) else bytes(result[:256])
        if not _LOOKS_LIKE.match(head):  # decided on the first bytes: no copy of a large output
            return None
        raw = result.encode("utf-8", "surrogatepass") if isinstance(result, str) else bytes(result)
        try:
            value = loads(raw)
        except ValueError:
            return None
    if not isinstance(value, dict) or "content" not in value or not set(value) <= _ENVELOPE_KEYS:
        return None
    if value.get("isError") or value.get("resultType", "complete") != "complete":
        return None
    blocks = value["content"]
    if not isinstance(blocks, list) or len(blocks) != 1:
        return None
    block = blocks[0]
    if not isinstance(block, dict) or block.get("type") != "text" or not set(block) <= _BLOCK_KEYS:
        return None
    text = block.get("text")
    if not isinstance(text, str):
        return None
    if "structuredContent" in value:  # unwrapped only when it repeats the text (else both are kept)
        try:
            if loads(text) != value["structuredContent"]:
                return None
        except ValueError:
            return None
    return text
