"""The stub that replaces a spilled output: a dict for programs, a text for models."""

from __future__ import annotations

import re
from typing import Any

from ..explore._paths import kind_of
from ..store import BodyReader, Entry

__all__ = ["build_stub", "handle_for", "render_stub_text", "schema_sketch"]

PREVIEW_LINE_CHARS = 160
PREVIEW_MAX_CHARS = 2_000
_SLUG = re.compile(r"[^a-z0-9]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def handle_for(tool: str | None, content_hash: str, hash_chars: int = 12) -> str:
    """``<slug of tool>_<hash>``: ``[a-z0-9_]``, at most 64 characters."""
    slug = _SLUG.sub("_", (tool or "").lower()).strip("_")[:40].strip("_") or "output"
    return f"{slug}_{content_hash[:hash_chars]}"


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return f"object({len(value)} keys)"
    if isinstance(value, list):
        return f"array({len(value):,} items)"
    return kind_of(value)


def schema_sketch(value: Any, max_keys: int = 12) -> list[str]:
    """A few lines on the top of a JSON value: its keys with kinds, array items' keys."""
    lines = [f"$: {_kind(value)}"]

    def items_line(path: str, items: list[Any]) -> None:
        keys: dict[str, int] = {}
        objects = 0
        for item in items[:2000]:
            if isinstance(item, dict):
                objects += 1
                for k in item:
                    keys[k] = keys.get(k, 0) + 1
        if objects:
            shown = ", ".join(list(keys)[:max_keys]) + (" …" if len(keys) > max_keys else "")
            lines.append(f"{path}[*]: object with keys {shown}")
        elif items:
            lines.append(f"{path}[*]: {_kind(items[0])}")

    if isinstance(value, dict):
        for i, (k, v) in enumerate(value.items()):
            if i >= max_keys:
                lines.append(f"… {len(value) - max_keys} more keys")
                break
            lines.append(f"$.{k}: {_kind(v)}")
            if isinstance(v, list):
                items_line(f"$.{k}", v)
    elif isinstance(value, list):
        items_line("$", value)
    return lines


def _clean(line: str) -> str:
    line = _CONTROL.sub("\ufffd", line)
    return line if len(line) <= PREVIEW_LINE_CHARS else line[: PREVIEW_LINE_CHARS - 1] + "…"


def catalog_preview(body: bytes, lines: int = 5, max_chars: int = 300) -> str:
    """The short preview the catalog keeps (``list_entries`` is metadata, not content)."""
    head = body[: lines * (PREVIEW_LINE_CHARS * 4 + 1)].decode("utf-8", errors="replace")
    text = "\n".join(_clean(line) for line in head.split("\n")[:lines])
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def build_stub(
    entry: Entry, reader: BodyReader, *, preview_lines: int, value: Any = None, model: str, tokens_estimate: bool
) -> dict[str, Any]:
    total = entry.line_count or 0
    raw_lines = reader.read_lines(1, min(preview_lines, total))
    lines = [_clean(line) for line in raw_lines]
    kept: list[str] = []
    chars = 0
    for line in lines:
        if chars + len(line) > PREVIEW_MAX_CHARS and kept:
            break
        kept.append(line)
        chars += len(line) + 1
    shown = len(kept)
    preview = "\n".join(kept)
    note = (
        f"preview: lines 1-{shown:,} of {total:,} of the {entry.format} body"
        + (", long lines cut" if any(len(line) > PREVIEW_LINE_CHARS for line in raw_lines[:shown]) else "")
        + ("" if shown >= total else f"; {total - shown:,} lines not shown")
    )
    if entry.format == "json":
        note += " (pretty-printed, 2-space indent)"
    stub: dict[str, Any] = {
        "handle": entry.key,
        "source_tool": entry.source_tool,
        "server": entry.server,
        "format": entry.format,
        "size": entry.size_bytes,
        "lines": total,
        "tokens": entry.tokens,
        "tokens_model": model,
        "tokens_estimate": tokens_estimate,
        "preview": preview,
        "preview_lines": shown,
        "note": note,
        "expires_at": entry.expires_at,
    }
    if entry.format == "json" and value is not None:
        stub["schema"] = schema_sketch(value)
    if entry.meta.get("utf8_errors"):
        stub["note"] += "; not valid UTF-8 (read_handle returns the exact bytes)"
    stub["next"] = next_calls(entry)
    return stub


def next_calls(entry: Entry) -> list[str]:
    h = entry.key
    if entry.format in ("json", "jsonl"):
        return [
            f'schema(handle="{h}")',
            f'item_schema(handle="{h}", path="…")',
            f'iterate_over(handle="{h}", path="…", fields="…", limit=20)',
            f'grep(handle="{h}", pattern="…")',
            f'sql(query="SELECT count(*) FROM {h}")',
        ]
    return [
        f'grep(handle="{h}", pattern="…")',
        f'head(handle="{h}", lines=50)',
        f'slice(handle="{h}", start=…, end=…)',
        f'schema(handle="{h}")',
    ]


def _size(n: int) -> str:
    from ..explore._base import fmt_bytes

    return fmt_bytes(n)


def render_stub_text(stub: dict[str, Any]) -> str:
    """The stub as a model reads it: what was spilled, a preview, and what to call next."""
    tokens = stub.get("tokens")
    est = " (estimate)" if stub.get("tokens_estimate") else ""
    tool = stub.get("source_tool") or "output"
    head = (
        f"[scratchpad] The output of {tool} was too large for the context and was stored as handle "
        f'"{stub["handle"]}": {stub["format"]}, {_size(stub["size"])}, {stub["lines"]:,} lines, '
        f"{tokens:,} tokens{est}."
    )
    parts = [head, f"{stub['note'][0].upper()}{stub['note'][1:]}:", stub["preview"]]
    if stub.get("schema"):
        parts += ["Schema sketch:", *("  " + s for s in stub["schema"])]
    parts.append("Explore it with: " + "; ".join(stub["next"]) + ". Avoid read() on large handles.")
    return "\n".join(parts)
