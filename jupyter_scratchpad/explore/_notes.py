"""The note tools: scratch_write, scratch_read, scratch_list, scratch_delete."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from ..errors import InvalidArgumentError
from ._base import Output, ToolContext, ToolError, fmt_bytes, suggestion
from ._text import budget_footer

__all__ = ["scratch_delete", "scratch_list", "scratch_read", "scratch_write"]


def _iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, tz=_dt.timezone.utc).isoformat(timespec="seconds")


def scratch_write(ctx: ToolContext, key: str, value: Any, ttl_s: float | None = None) -> Output:
    try:
        entry = ctx.store.put_note(ctx.pad.scope, key, value, ttl_s)
    except InvalidArgumentError as exc:
        raise ToolError("invalid_argument", exc.message) from None
    return Output(
        f"saved note {key!r} ({fmt_bytes(entry.size_bytes)}), expires {_iso(entry.expires_at)}",
        {"key": key, "expires_at": _iso(entry.expires_at)},
    )


def scratch_read(ctx: ToolContext, key: str) -> Output:
    entry = ctx.store.get_entry(ctx.pad.scope, "note", key)
    if entry is None:
        keys = [e.key for e in ctx.store.entries(ctx.pad.scope, "note")]
        raise ToolError(
            "unknown_key",
            f"no live note {key!r}",
            [suggestion("scratch_list", "see the live notes")],
            key=key,
            available_keys=keys[:100],
        )
    value = entry.value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    ctx.guard_bytes(len(text.encode("utf-8", "surrogatepass")), lambda n: text[:n])
    return Output(text, value)


def scratch_list(ctx: ToolContext) -> Output:
    entries = ctx.store.entries(ctx.pad.scope)
    rows = []
    lines = []
    for e in entries:
        row = {
            "kind": e.kind,
            "key": e.key,
            "source_tool": e.source_tool,
            "format": e.format,
            "size": e.size_bytes,
            "tokens": e.tokens,
            "lines": e.line_count,
            "expires_at": _iso(e.expires_at),
        }
        rows.append(row)
        if e.kind == "handle":
            lines.append(
                f"handle {e.key}  {e.format}  {fmt_bytes(e.size_bytes)}  {e.tokens or 0:,} tokens  "
                f"from {e.source_tool or '?'}  expires {row['expires_at']}"
            )
        else:
            lines.append(
                f"note   {json.dumps(e.key, ensure_ascii=False)}  {fmt_bytes(e.size_bytes)}  "
                f"expires {row['expires_at']}"
            )
    text = "\n".join(lines) if lines else "(the scratchpad of this run is empty)"
    return Output(text, rows, budget_footer(f"{len(rows)} entries"))


def scratch_delete(ctx: ToolContext, key: str | None = None, handle: str | None = None) -> Output:
    if (key is None) == (handle is None):
        raise ToolError("invalid_argument", "give exactly one of 'key' (a note) or 'handle' (a spilled output)")
    if handle is not None:
        ctx.entry(handle)  # validates it and gives close matches when unknown
        ctx.store.delete_entry(ctx.pad.scope, "handle", handle)
        return Output(f"deleted handle {handle}", {"deleted": handle, "kind": "handle"})
    assert key is not None
    if not ctx.store.delete_entry(ctx.pad.scope, "note", key):
        raise ToolError(
            "unknown_key", f"no live note {key!r}", [suggestion("scratch_list", "see the live notes")], key=key
        )
    return Output(f"deleted note {key!r}", {"deleted": key, "kind": "note"})
