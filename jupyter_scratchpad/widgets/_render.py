"""Plain HTML and text rendering for the explorer: pure functions, no widgets.

Everything here bounds its output: a page of lines or rows is rendered with each cell clipped
and the whole page cut at ``MAX_PAGE_CHARS``, so what crosses the wire to the browser is one
page, never an entry.

>>> table_html(["a"], [[1], [2]])[:6]
'<table'
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..explore._base import fmt_bytes

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_PAGE_CHARS",
    "clip",
    "entry_info",
    "entry_label",
    "esc",
    "fmt_age",
    "fmt_duration",
    "message_html",
    "numbered_html",
    "page_count",
    "pre_html",
    "strip_footer",
    "table_html",
    "windows_html",
]

MAX_CELL_CHARS = 700  # iterate_over cuts strings near 600 characters; keep its hint visible
MAX_PAGE_CHARS = 200_000  # one page of HTML, whatever the page size the user typed

_PRE_STYLE = ("margin:0;padding:4px 6px;max-height:32em;overflow:auto;font-family:var(--jp-code-font-family,"
              "monospace);font-size:var(--jp-code-font-size,12px);line-height:1.35;white-space:pre")
_MATCH_STYLE = "background:var(--jp-warn-color3,#fff3cd);font-weight:bold"
_TABLE_STYLE = ("border-collapse:collapse;font-family:var(--jp-code-font-family,monospace);"
                "font-size:var(--jp-code-font-size,12px)")
_CELL_STYLE = ("border:1px solid var(--jp-border-color2,#ddd);padding:1px 6px;text-align:left;vertical-align:top;"
               "white-space:pre-wrap;max-width:40em")


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


def page_count(total: int, page_size: int) -> int:
    """How many pages ``total`` items fill (at least one, so a slider always has a page)."""
    return max(1, math.ceil(max(0, total) / max(1, page_size)))


def _bounded(parts: Iterable[str], close: str) -> str:
    """Join ``parts`` until ``MAX_PAGE_CHARS``; the rest is replaced by a note, never sent."""
    out: list[str] = []
    size = 0
    parts = list(parts)
    for i, part in enumerate(parts):
        if size + len(part) > MAX_PAGE_CHARS:
            out.append(f"<i>… {len(parts) - i:,} more lines or rows not shown: this page is over "
                       f"{MAX_PAGE_CHARS:,} characters; choose a smaller page</i>")
            break
        out.append(part)
        size += len(part)
    return "".join(out) + close


def strip_footer(text: str) -> str:
    """A tool's text without its last ``--- … tokens … ---`` line (the meter shows those numbers)."""
    body, sep, last = text.rpartition("\n")
    if sep and last.startswith("--- ") and last.endswith(" ---") and "tokens:" in last:
        return body
    return text


def pre_html(text: str) -> str:
    """``text`` in a scrollable monospace block, bounded to one page."""
    lines = text.split("\n")
    return _bounded((f"<pre style='{_PRE_STYLE}'>", *(esc(line) + "\n" for line in lines)), "</pre>")


def numbered_html(lines: Sequence[str], first: int = 1, marked: Iterable[int] = ()) -> str:
    """Lines numbered from ``first`` like the tools do (``{n:>6}``); ``marked`` lines highlighted."""
    return windows_html([(first, lines)], marked)


def windows_html(windows: Sequence[tuple[int, Sequence[str]]], marked: Iterable[int] = ()) -> str:
    """Several numbered line windows (``(first_line, lines)``) in one block, ``--`` between them."""
    marks = set(marked)
    rows: list[str] = []
    for i, (first, lines) in enumerate(windows):
        if i:
            rows.append("--\n")
        for n, line in enumerate(lines, start=first):
            body = f"{'>' if n in marks else ' '}{n:>6}  {esc(clip(line, 2000))}"
            rows.append(f"<span style='{_MATCH_STYLE}'>{body}</span>\n" if n in marks else body + "\n")
    return _bounded((f"<pre style='{_PRE_STYLE}'>", *rows), "</pre>")


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


def table_html(columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str = "") -> str:
    """One page of rows as an HTML table, each cell clipped to ``MAX_CELL_CHARS``."""
    head = "".join(f"<th style='{_CELL_STYLE}'>{esc(c)}</th>" for c in columns)
    body = (
        "<tr>" + "".join(f"<td style='{_CELL_STYLE}'>{esc(clip(cell_text(v)))}</td>" for v in row) + "</tr>"
        for row in rows
    )
    cap = f"<caption style='text-align:left;caption-side:bottom'>{esc(caption)}</caption>" if caption else ""
    return _bounded((f"<div style='max-height:32em;overflow:auto'><table style='{_TABLE_STYLE}'>{cap}"
                     f"<thead><tr>{head}</tr></thead><tbody>", *body), "</tbody></table></div>")


def message_html(text: str, kind: str = "info") -> str:
    """A one-paragraph message: ``info``, ``ok``, ``warn`` or ``error``."""
    colour = {"error": "var(--jp-error-color1,#c62828)", "warn": "var(--jp-warn-color1,#b26a00)",
              "ok": "var(--jp-success-color1,#2e7d32)"}.get(kind, "var(--jp-ui-font-color1,#333)")
    return f"<div style='color:{colour};white-space:pre-wrap'>{esc(text)}</div>"


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
    parts = [str(entry.get("handle")), str(entry.get("source_tool") or "?"), fmt_bytes(entry.get("size")),
             f"{tokens:,} tokens" if isinstance(tokens, int) else "? tokens",
             fmt_age(_timestamp(entry["created_at"]), now)]
    return " · ".join(parts)


def entry_info(entry: dict[str, Any], now: float) -> str:
    """A line about the selected entry: format, size, lines, tokens, source, time left."""
    lines = entry.get("lines")
    tokens = entry.get("tokens")
    left = _timestamp(entry["expires_at"]) - now
    parts = [str(entry.get("format") or "?"), fmt_bytes(entry.get("size")),
             f"{lines:,} lines" if isinstance(lines, int) else "? lines",
             f"{tokens:,} tokens" if isinstance(tokens, int) else "? tokens",
             f"from {entry.get('source_tool') or '?'}" + (f" on {entry['server']}" if entry.get("server") else ""),
             f"expires in {fmt_duration(left)}"]
    return " · ".join(parts)
