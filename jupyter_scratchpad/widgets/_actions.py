"""What the explorer's buttons do: one pad call each, its result as a bounded page for the browser.

Every action reads through the pad: as the person (``call_tool(..., charge=False)``,
``sql_df``) by default, or exactly as the model would (``call_tool`` charged, the tool's own
text shown) when the explorer's "as the model would see it" switch is on. What goes back to the
browser is a *view*: plain data, every string clipped and the whole page bounded, never an entry.

Views (``kind``): ``lines`` (numbered lines), ``windows`` (grep's match windows), ``table``
(columns and rows of strings), ``text`` (a preformatted block).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._pad import Scratchpad
from ..errors import ScratchpadError
from ..tools import ToolResult
from ._render import cell_text, clip

__all__ = ["ACTIONS", "GREP_CONTEXT", "GREP_PAGE", "MAX_PAGE_CHARS", "ActionError", "run_action"]

try:
    from pandas import NA as _NA
except ImportError:  # pragma: no cover - pandas comes with the jupyter extra
    _NA = object()

MAX_PAGE_CHARS = 200_000  # one reply, whatever the page size asked for
PAGE_TOKENS = MAX_PAGE_CHARS // 4  # a value estimated far over this is refused, not built
MAX_LINE_CHARS = 2_000
MAX_PAGE_LINES = 2_000
MAX_PAGE_ROWS = 500
GREP_CONTEXT = 1  # what a person reading matches wants: the line around each one
GREP_PAGE = 20  # matches per "More"
GREP_MAX = 1_000  # the grep tool's own ceiling


class ActionError(Exception):
    """A refused or failed action: ``error`` is the structured error shown with its suggestions."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", ""))
        self.error = error


def _int(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ActionError({"error": "invalid_argument", "message": f"{name} must be a number, not {value!r}"}) from None
    return max(low, min(high, number))


def _call(
    pad: Scratchpad, as_agent: bool, tool: str, arguments: dict[str, Any], page_tokens: int | None = None
) -> ToolResult:
    """One read; ``page_tokens`` (a person's read): a result far over that is refused, not built."""
    result = pad.call_tool(
        tool,
        {k: v for k, v in arguments.items() if v is not None},
        charge=as_agent,
        page_tokens=None if as_agent else page_tokens,
    )
    if not result.ok:
        raise ActionError(result.error or {"error": "failed", "message": result.text})
    return result


def _bounded(items: list[Any], size: Callable[[Any], int]) -> tuple[list[Any], int]:
    """The leading items that fit ``MAX_PAGE_CHARS``, and how many were left out."""
    total = 0
    for i, item in enumerate(items):
        total += size(item)
        if total > MAX_PAGE_CHARS:
            return items[:i], len(items) - i
    return items, 0


def _fit_windows(windows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The grep windows that fit ``MAX_PAGE_CHARS``, the last one cut to the room left (with wide
    context every match merged into one window larger than a page, dropped whole: the page showed
    nothing while its summary said 1,000 matches were shown); and how many lines were left out."""
    room = MAX_PAGE_CHARS
    kept: list[dict[str, Any]] = []
    for i, window in enumerate(windows):
        lines: list[str] = []
        for line in window["lines"]:
            if len(line) > room:
                break
            room -= len(line)
            lines.append(line)
        if lines:
            kept.append({**window, "lines": lines})
        if len(lines) < len(window["lines"]):
            left = len(window["lines"]) - len(lines) + sum(len(w["lines"]) for w in windows[i + 1 :])
            return kept, left
    return kept, 0


def _agent_view(result: ToolResult, **extra: Any) -> dict[str, Any]:
    """As the model would see it: the tool's text exactly (cut only past one page, and said so)."""
    text = result.text
    cut = len(text) > MAX_PAGE_CHARS
    shown = text[:MAX_PAGE_CHARS] + (f"\n… {len(text) - MAX_PAGE_CHARS:,} more characters" if cut else "")
    return {
        "kind": "text",
        "text": shown,
        "summary": f"as the model sees it · {result.tokens:,} tokens charged",
        "tokens": result.tokens,
        **extra,
    }


def _lines_view(result: ToolResult, note: str = "") -> dict[str, Any]:
    data = result.data
    lines, left = _bounded([clip(line, MAX_LINE_CHARS) for line in data["lines"]], len)
    total = int(data.get("total_lines") or 0)
    end = data["start"] + len(lines) - 1
    summary = f"lines {data['start']:,}-{end:,} of {total:,}" if lines else f"no lines ({total:,} in the entry)"
    if left:  # (of the lines asked for: "59 more lines" read as all that was left of 4,000)
        summary += f" ({left:,} more of the lines asked for did not fit one page)"
    summary += note
    return {
        "kind": "lines",
        "first": data["start"],
        "lines": lines,
        "marked": [],
        "start": data["start"],
        "end": end,
        "total": total,
        "summary": summary,
    }


def preview(pad: Scratchpad, handle: str, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    """``head``, ``tail`` or ``slice`` (``args["tool"]``), ``lines`` lines a page."""
    tool = args.get("tool", "head")
    lines = _int(args, "lines", 50, 1, MAX_PAGE_LINES)
    asked = args.get("lines", 50)
    # a number out of range is shown as what was read, and said (0 or -5 read one line, silently)
    note = "" if int(asked) == lines else f" (lines is 1-{MAX_PAGE_LINES:,} a page: {lines:,} read)"
    if tool == "slice":
        start = _int(args, "start", 1, 1, 10**12)
        arguments: dict[str, Any] = {"handle": handle, "start": start, "end": start + lines - 1}
    elif tool in ("head", "tail"):
        arguments = {"handle": handle, "lines": lines}
    else:
        raise ActionError({"error": "invalid_argument", "message": f"unknown preview {tool!r}"})
    result = _call(pad, as_agent, tool, arguments)
    view = _lines_view(result, note)
    return {**_agent_view(result), **{k: view[k] for k in ("start", "end", "total")}} if as_agent else view


def grep(pad: Scratchpad, handle: str, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    """Match windows with ``context`` lines (default 1), ``max_matches`` of them (default 20)."""
    pattern = str(args.get("pattern") or "")
    if not pattern:
        raise ActionError({"error": "invalid_argument", "message": "type a pattern to search for"})
    max_matches = _int(args, "max_matches", GREP_PAGE, 1, GREP_MAX)
    arguments = {
        "handle": handle,
        "pattern": pattern,
        "context": _int(args, "context", GREP_CONTEXT, 0, 50),
        "ignore_case": bool(args.get("ignore_case")),
        "max_matches": max_matches,
    }
    result = _call(pad, as_agent, "grep", arguments)
    data = result.data
    shown = len(data["matches"])
    more = data["total_matches"] > shown and max_matches < GREP_MAX
    if as_agent:
        return _agent_view(result, more=more, max_matches=max_matches)
    by_line = {row["line"]: row["text"] for row in data.get("lines", [])}
    windows = [
        {"first": lo, "lines": [clip(by_line.get(n, ""), MAX_LINE_CHARS) for n in range(lo, hi + 1)]}
        for lo, hi in data.get("windows", [])
    ]
    windows, left = _fit_windows(windows)
    marked = [m["line"] for m in data["matches"]]
    on_page = sum(1 for n in marked if any(w["first"] <= n < w["first"] + len(w["lines"]) for w in windows))
    total = f"{data['total_matches']:,}{'' if data.get('total_complete', True) else '+'}"
    summary = f"{on_page:,} of {total} matching lines shown · {data['total_lines']:,} lines"
    if left:
        summary += (
            f" (one page is full: {left:,} more lines, with {shown - on_page:,} more matches, did not fit;"
            " fewer context lines show more matches)"
        )
    if data.get("literal_fallback"):
        summary = "not a valid RE2 regex: searched for the literal text · " + summary
    return {
        "kind": "windows",
        "windows": windows,
        "marked": marked,
        "summary": summary,
        "more": more,
        "max_matches": max_matches,
    }


def _table(columns: list[str], rows: list[list[Any]], summary: str) -> dict[str, Any]:
    cells = [[clip(cell_text(v)) for v in row] for row in rows[:MAX_PAGE_ROWS]]
    cells, left = _bounded(cells, lambda row: sum(len(c) for c in row))
    left += max(0, len(rows) - MAX_PAGE_ROWS)
    if left:
        summary += f" ({left:,} more rows did not fit one page)"
    return {"kind": "table", "columns": [str(c) for c in columns], "rows": cells, "summary": summary}


def schema(pad: Scratchpad, handle: str, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    """The structure; the arrays it found come back as ``paths`` for the path boxes."""
    result = _call(pad, as_agent, "schema", {"handle": handle, "max_depth": _int(args, "max_depth", 4, 0, 32)})
    nodes = result.data.get("nodes") or [] if isinstance(result.data, dict) else []
    paths = [n["path"] for n in nodes if str(n.get("kind", "")).startswith("array") and "[*]" not in n["path"]]
    if as_agent:
        return _agent_view(result, paths=paths)
    body = result.text.rsplit("\n--- ", 1)[0]
    return {"kind": "text", "text": clip(body, MAX_PAGE_CHARS), "summary": "schema", "paths": paths}


def item_schema(pad: Scratchpad, handle: str, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    arguments = {"handle": handle, "path": str(args.get("path") or "$")}
    result = _call(pad, as_agent, "item_schema", arguments)
    if as_agent:
        return _agent_view(result)
    data = result.data
    rows = [[k["key"], k["types"], f"{k['present']:,}/{k['of']:,}"] for k in data["keys"]]
    return _table(["key", "type", "present"], rows, f"keys of the {data['total_items']:,} items at {data['path']}")


def get_in(pad: Scratchpad, handle: str, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    # a value far over a page is refused (with the model's suggestions), not built and clipped
    arguments = {"handle": handle, "path": str(args.get("path") or "$")}
    result = _call(pad, as_agent, "get_in", arguments, page_tokens=PAGE_TOKENS)
    if as_agent:
        return _agent_view(result)
    body = result.text.rsplit("\n--- ", 1)[0]
    return {"kind": "text", "text": clip(body, MAX_PAGE_CHARS), "summary": f"the value at {args.get('path') or '$'}"}


def iterate(pad: Scratchpad, handle: str, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    fields = str(args.get("fields") or "").strip()
    if not fields:
        raise ActionError(
            {
                "error": "invalid_argument",
                "message": "name the fields to show (comma-separated dot "
                "paths, e.g. metadata.name,status); Schema → Item schema lists the keys",
            }
        )
    offset = _int(args, "offset", 0, 0, 10**12)
    limit = _int(args, "limit", 20, 1, MAX_PAGE_ROWS)
    result = _call(
        pad,
        as_agent,
        "iterate_over",
        {"handle": handle, "path": str(args.get("path") or "$"), "fields": fields, "offset": offset, "limit": limit},
    )
    rows = list(result.data or [])
    if as_agent:
        return _agent_view(result, offset=offset, count=len(rows))
    columns = ["_index", *[f.strip() for f in fields.split(",") if f.strip()]]
    summary = f"items {offset:,}-{offset + len(rows) - 1:,}" if rows else f"no items at offset {offset:,}"
    view = _table(columns, [[r.get(c) for c in columns] for r in rows], summary)
    return {**view, "offset": offset, "count": len(rows)}


def _plain(value: Any) -> Any:
    """A DataFrame cell as plain data: arrays as lists, numpy scalars as Python, missing as None."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    try:
        if value != value or value is _NA:  # NaN, pandas.NA
            return None
    except (TypeError, ValueError):  # NA compared raises in some versions
        return None
    return value


def _wrap(query: str) -> str:
    inner = query.strip()
    while inner.endswith(";"):
        inner = inner[:-1].rstrip()
    return f"(\n{inner}\n) AS _scratch_q"  # on lines of its own: a trailing -- comment cannot eat the ")"


def sql(pad: Scratchpad, handle: str | None, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    """One page of a query (``page_size`` rows from ``offset``), and the total when it can be counted."""
    query = str(args.get("query") or "")
    if not query.strip():
        raise ActionError({"error": "invalid_argument", "message": "type a query; each live handle is a relation"})
    size = _int(args, "page_size", 20, 1, MAX_PAGE_ROWS)
    offset = _int(args, "offset", 0, 0, 10**12)
    if as_agent:
        result = _call(pad, True, "sql", {"query": query, "max_rows": size})
        return _agent_view(result, offset=0, total=None, page_size=size)
    try:
        total = int(pad.sql_df(f"SELECT count(*) AS n FROM {_wrap(query)}")["n"][0])
        frame = pad.sql_df(f"SELECT * FROM {_wrap(query)} LIMIT {size} OFFSET {offset}")
    except ScratchpadError:
        # Not wrappable (SHOW, PIVOT …), or simply wrong: run it as typed, so its own error (or rows) show.
        try:
            frame = pad.sql_df(query, size)
        except ScratchpadError as exc:
            raise ActionError(_sql_error(exc)) from None
        total, offset = None, 0
    rows = [[_plain(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    if total is None:
        summary = f"{len(rows):,} rows (not paged: the statement cannot be wrapped)"
    elif rows:
        summary = f"rows {offset + 1:,}-{offset + len(rows):,} of {total:,}"
    else:
        summary = f"0 rows of {total:,}"
    view = _table([str(c) for c in frame.columns], rows, summary)
    return {**view, "offset": offset, "total": total, "page_size": size}


def _sql_error(exc: ScratchpadError) -> dict[str, Any]:
    """A failed query's error for the page: the relations named once (the core's message may
    list them already), each suggestion once (the query over the relation meant and "list the
    columns" were the same DESCRIBE)."""
    relations = getattr(exc, "relations", None) or []
    message = exc.message
    if relations and "(relations: " not in message:
        message += f" (relations: {', '.join(relations)})"
    suggestions: list[Any] = []
    for s in getattr(exc, "suggestions", None) or []:
        same = [t for t in suggestions if isinstance(t, dict) and isinstance(s, dict)]
        if not any(t.get("tool") == s.get("tool") and t.get("arguments") == s.get("arguments") for t in same):
            suggestions.append(s)
    return {"error": getattr(exc, "code", "sql_error"), "message": message, "suggestions": suggestions}


def _relation_sql(name: str) -> str:
    """A relation as the explorer lists it (``h``, ``h.items``) in SQL: each dotted part quoted
    (``"h"."items"``; quoted whole, ``"h.items"`` named no relation)."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def describe(pad: Scratchpad, handle: str | None, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    name = str(args.get("relation") or "")
    query = f"DESCRIBE {_relation_sql(name)}"
    return {**sql(pad, handle, {"query": query, "page_size": MAX_PAGE_ROWS}, as_agent), "relation": name}


Action = Callable[[Scratchpad, Any, dict[str, Any], bool], dict[str, Any]]

# name -> (function, needs a selected handle)
ACTIONS: dict[str, tuple[Action, bool]] = {
    "preview": (preview, True),
    "grep": (grep, True),
    "schema": (schema, True),
    "item_schema": (item_schema, True),
    "get_in": (get_in, True),
    "iterate": (iterate, True),
    "sql": (sql, False),
    "describe": (describe, False),
}


def run_action(pad: Scratchpad, name: str, handle: str | None, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    """The view for one action; ``ActionError`` when it is refused or wrong."""
    found = ACTIONS.get(name)
    if found is None:
        raise ActionError({"error": "unknown_action", "message": f"unknown action {name!r}"})
    action, needs_handle = found
    if needs_handle and not handle:
        raise ActionError({"error": "no_entry", "message": "pick an entry first (nothing is spilled yet?)"})
    return action(pad, handle, args, as_agent)
