"""Text for the explorer: clipped cells, sizes, ages and entry labels (pure functions).

>>> clip("short")
'short'
>>> fmt_duration(3900)
'1 h 5 min'
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..explore._base import fmt_bytes

__all__ = ["MAX_CELL_CHARS", "cell_text", "clip", "entry_info", "entry_label", "esc", "fmt_age", "fmt_duration"]

MAX_CELL_CHARS = 700  # iterate_over cuts strings near 600 characters; keep its hint visible


def esc(value: Any) -> str:
    """HTML-escape ``value`` (any object, shown as its ``str``)."""
    return html.escape(str(value), quote=True)


def clip(text: str, max_chars: int = MAX_CELL_CHARS) -> str:
    """``text`` cut to about ``max_chars``: its head, a marker of what was cut, and its tail.

    The tail is kept because the tools end a cut value with the call that reads all of it
    (``… [+12 more lines: get_in(path="$.items[3].log")]``).
    """
    if len(text) <= max_chars:
        return text
    tail = min(160, max_chars // 4)
    head = max_chars - tail
    return f"{text[:head]}… [{len(text) - head - tail:,} chars not shown] …{text[-tail:]}"


def cell_text(value: Any) -> str:
    """How one table cell reads: strings as they are, other values as JSON, None as NULL."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def fmt_duration(seconds: float) -> str:
    """``"42 s"``, ``"3 min"``, ``"2 h 5 min"``, ``"3 d"``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86_400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    return f"{s // 86_400} d"


def fmt_age(created_at: float, now: float) -> str:
    """How long ago ``created_at`` was: ``"just now"``, ``"3 min ago"``."""
    age = now - created_at
    return "just now" if age < 5 else f"{fmt_duration(age)} ago"


def _timestamp(value: Any) -> float:
    return float(value.timestamp()) if hasattr(value, "timestamp") else float(value)


def entry_label(entry: dict[str, Any], now: float) -> str:
    """The picker's line for one entry: handle · tool · size · tokens · age."""
    tokens = entry.get("tokens")
    parts = [
        str(entry.get("handle")),
        str(entry.get("source_tool") or "?"),
        fmt_bytes(entry.get("size")),
        f"{tokens:,} tokens" if isinstance(tokens, int) else "? tokens",
        fmt_age(_timestamp(entry["created_at"]), now),
    ]
    return " · ".join(parts)


def entry_info(entry: dict[str, Any], now: float) -> str:
    """A line about the selected entry: format, size, lines, tokens, source, time left."""
    lines = entry.get("lines")
    tokens = entry.get("tokens")
    left = _timestamp(entry["expires_at"]) - now
    parts = [
        str(entry.get("format") or "?"),
        fmt_bytes(entry.get("size")),
        f"{lines:,} lines" if isinstance(lines, int) else "? lines",
        f"{tokens:,} tokens" if isinstance(tokens, int) else "? tokens",
        f"from {entry.get('source_tool') or '?'}" + (f" on {entry['server']}" if entry.get("server") else ""),
        f"expires in {fmt_duration(left)}",
    ]
    return " · ".join(parts)
