"""The note tools: scratch_write, scratch_read, scratch_list, scratch_delete."""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from .._bounded import is_utf8_text
from ..errors import InvalidArgumentError
from ..store._jsontext import loads_any_depth, render_json
from ._base import Output, ToolContext, ToolError, fmt_bytes, suggestion
from ._text import budget_footer

__all__ = ["scratch_delete", "scratch_list", "scratch_read", "scratch_write"]


def _iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, tz=_dt.timezone.utc).isoformat(timespec="seconds")


READ_MARGIN = 200  # tokens of a read's footer and framing, beside the note itself


def _note_text(value: Any) -> str:
    """A note as ``scratch_read`` shows it."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except RecursionError:  # nested past json's limit (its deepest levels on one line)
        return render_json(value, indent=True)


def _json_text_value(value: Any) -> Any:
    """The object or array a string holds as JSON text, else None.

    One rule for every flavor: OpenAI's strict mode has no open objects, so its spec asks for an
    object as its JSON text; stored as that string, ``value.Running`` over ``scratch_notes`` was
    NULL where the same note from an Anthropic agent (an object) gave 10."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) < 2 or (text[0], text[-1]) not in (("{", "}"), ("[", "]")):
        return None
    try:
        parsed = loads_any_depth(text)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _all_text(value: Any) -> bool:
    """Whether every string and key of a parsed value is text (no lone surrogate), at any depth
    (json.dumps of JSON text nested 1,000 deep raised RecursionError: an internal_error for what
    the model sent as a plain string)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not is_utf8_text(node):
                return False
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


MIN_NOTE_TTL_S = 1.0  # a note that expires sooner was confirmed "saved", then read as gone


def scratch_write(ctx: ToolContext, key: str, value: Any, ttl_s: float | None = None) -> Output:
    if isinstance(ttl_s, (int, float)) and not isinstance(ttl_s, bool) and 0 < ttl_s < MIN_NOTE_TTL_S:
        raise ToolError(
            "invalid_argument",
            f"'ttl_s' is at least {MIN_NOTE_TTL_S:g} second (got {ttl_s!r}: the note would be gone before it is read); "
            "leave it out for the store's default",
            argument="ttl_s",
        )
    parsed = _json_text_value(value)
    if parsed is not None:
        if not _all_text(parsed):
            raise ToolError(
                "invalid_argument",
                "'value' is JSON text holding an unpaired surrogate (a \\ud800 escape alone), which is not "
                "text; send it as valid Unicode (a pair, or the character itself)",
                argument="value",
            )
        value = parsed
    # a model reads a note whole: one that no scratch_read of its could return was accepted, then
    # refused at every read with no way to page it. Refused here, before anything is stored (a
    # note already under `key` stays as it was). A person's note (read as a value) is not.
    cap = ctx.pad.budget.max_extraction_tokens - READ_MARGIN
    tokens, fits = ctx.pad.tokenizer.count_upto(_note_text(value), cap + 1) if ctx.charged else (0, True)
    if not fits or tokens > cap:
        raise ToolError(
            "note_too_large",
            f"this note would be more than {cap:,} tokens, which no scratch_read could return (a note is read "
            "whole, within the per-call limit); save a summary, the keys or counts you need, and leave the data "
            "in its handle (a spilled output is read with head, grep, get_in or sql)",
            argument="value",
        )
    try:
        entry = ctx.store.put_note(ctx.pad.scope, key, value, ttl_s)
    except InvalidArgumentError as exc:
        raise ToolError("invalid_argument", exc.message) from None
    held = "" if parsed is None else f"; its JSON text is stored as the {_kind(parsed)} it holds"
    return Output(
        f"saved note {key!r} ({fmt_bytes(entry.size_bytes)}), expires {_iso(entry.expires_at)}{held}",
        {"key": key, "expires_at": _iso(entry.expires_at)},
    )


def _kind(value: Any) -> str:
    return "object" if isinstance(value, dict) else "array"


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
    text = _note_text(value)
    ctx.guard_bytes(len(text.encode("utf-8", "surrogatepass")), lambda n: text[:n])
    return Output(text, value)


def scratch_list(
    ctx: ToolContext, prefix: str | None = None, kind: str | None = None, offset: int = 0, limit: int = 50
) -> Output:
    if kind not in (None, "handle", "note"):
        raise ToolError("invalid_argument", "'kind' is 'handle' or 'note'", argument="kind")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ToolError("invalid_argument", f"'offset' must be an integer >= 0, got {offset!r}", argument="offset")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 500:
        raise ToolError("invalid_argument", f"'limit' must be an integer in 1..500, got {limit!r}", argument="limit")
    entries = [e for e in ctx.store.entries(ctx.pad.scope, kind) if prefix is None or e.key.startswith(prefix)]
    total = len(entries)
    page = entries[offset : offset + limit]
    rows = []
    lines = []
    for e in page:
        row = {
            "kind": e.kind,
            "key": e.key,
            "source_tool": e.source_tool,
            "format": e.format,
            "size": e.size_bytes,
            "tokens": e.tokens,
            "tokens_exact": e.tokens_exact,
            "lines": e.line_count,
            "expires_at": _iso(e.expires_at),
        }
        rows.append(row)
        if e.kind == "handle":
            lines.append(
                f"handle {e.key}  {e.format}  {fmt_bytes(e.size_bytes)}  "
                f"{'' if row['tokens_exact'] else '≥ '}{e.tokens or 0:,} tokens  "
                f"from {e.source_tool or '?'}  expires {row['expires_at']}"
            )
        else:
            key = json.dumps(e.key, ensure_ascii=False)
            lines.append(
                f"note   {key if len(key) <= 80 else key[:79] + '…'}  {fmt_bytes(e.size_bytes)}  "
                f"expires {row['expires_at']}"
            )
    if lines:
        text = "\n".join(lines)
    elif total:
        text = f"(no entries at offset {offset:,}; there are {total:,})"
    else:
        text = "(the scratchpad of this run is empty)" if prefix is None and kind is None else "(no entries match)"
    nxt = offset + len(page) if offset + len(page) < total else None
    summary = f"{len(page)} of {total:,} entries" + (f" · next: offset={nxt}" if nxt is not None else "")
    meta = {"total": total, "offset": offset, "limit": limit, "next_offset": nxt}
    return Output(text, rows, budget_footer(summary), meta)


def scratch_list_suggestions(args: dict[str, Any], estimated: int, limit: int) -> list[dict[str, Any]]:
    """A smaller page of the listing: never the refused call again."""
    given = args.get("limit")
    asked = given if isinstance(given, int) else 50
    fit = max(1, int(asked * limit * 0.8 / max(estimated, 1)))
    base = {k: v for k, v in args.items() if k in ("prefix", "kind") and v is not None}
    return [
        suggestion(
            "scratch_list",
            f"about {fit} entries fit",
            **base,
            offset=int(args.get("offset") or 0),
            limit=min(fit, asked - 1) if asked > 1 else 1,
        )
    ]


def scratch_delete(ctx: ToolContext, key: str | None = None, handle: str | None = None) -> Output:
    if (key is None) == (handle is None):
        both = []  # (given both: each alone, as the call it is)
        if key is not None and handle is not None:
            both = [suggestion("scratch_delete", "the note alone", key=key),
                    suggestion("scratch_delete", "the spilled output alone", handle=handle)]  # fmt: skip
        else:
            both = [suggestion("scratch_list", "see the live notes and handles")]
        raise ToolError("invalid_argument", "give exactly one of 'key' (a note) or 'handle' (a spilled output)", both)
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
