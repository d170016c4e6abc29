"""What the explorer's buttons do: one pad call each, its result as a bounded page for the browser.

Every action reads through the pad: as the person (``call_tool(..., charge=False)``,
``sql_df``) by default, or exactly as the model would (``call_tool`` charged, the tool's own
text shown) when the explorer's "as the model would see it" switch is on. What goes back to the
browser is a *view*: plain data, every string clipped and the whole page bounded, never an entry.

Views (``kind``): ``lines`` (numbered lines), ``windows`` (grep's match windows), ``table``
(columns and rows of strings), ``text`` (a preformatted block).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from .._pad import Scratchpad
from ..errors import ScratchpadError
from ..explore._sql import without_trailing_comment
from ..explore._text import shown_path
from ..tools import ToolResult
from ._render import cell_text, clip

__all__ = ["ACTIONS", "GREP_CONTEXT", "GREP_PAGE", "MAX_PAGE_CHARS", "ActionError", "run_action"]

try:
    from pandas import NA as _NA
except ImportError:  # pragma: no cover - pandas comes with the jupyter extra
    _NA = object()

MAX_PAGE_CHARS = 200_000  # one reply as sent (its JSON), whatever the page size asked for
# What a reply holds beside a page's content (its type, id and action; the view's kind, counts
# and summary): the content gets the rest. Large parts beside it (the columns of a table, grep's
# marked lines, the paths schema offers) are measured, not reserved.
RESERVE_CHARS = 2_000
MAX_PATHS_CHARS = 20_000  # the array paths schema offers for the path boxes
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


def _json_len(value: Any) -> int:
    """The characters ``value`` takes in a reply: its JSON with non-ASCII escaped, the longest
    form (longer than the UTF-8 bytes of the unescaped form too). A page measured by its content
    came out at up to twice the bound once its quotes, newlines and backslashes were escaped."""
    return len(json.dumps(value, default=str))


def _room(*beside: Any) -> int:
    """The characters left in one reply for a page's content, ``beside`` its other large parts."""
    return MAX_PAGE_CHARS - RESERVE_CHARS - sum(_json_len(part) for part in beside)


def _bounded(items: list[Any], room: int) -> tuple[list[Any], int]:
    """The leading items whose JSON fits ``room``, and how many were left out."""
    total = 0
    for i, item in enumerate(items):
        total += _json_len(item) + 2  # (and the ", " after it)
        if total > room:
            return items[:i], len(items) - i
    return items, 0


def _clip_json(text: str, room: int, cut: Callable[[str, int], str] = clip) -> str:
    """``text`` as it is when its JSON fits ``room``, else cut by ``cut(text, n)`` (which says
    so) with the largest ``n`` whose JSON fits."""
    if _json_len(text) <= room:
        return text
    low, high = 640, min(len(text), room)  # (JSON is never shorter than the text)
    best = cut(text, low)
    while low <= high:
        mid = (low + high) // 2
        shown = cut(text, mid)
        if _json_len(shown) <= room:
            best, low = shown, mid + 1
        else:
            high = mid - 1
    return best


def _fit_windows(windows: list[dict[str, Any]], room: int) -> tuple[list[dict[str, Any]], int]:
    """The grep windows whose JSON fits ``room``, the last one cut to the room left (with wide
    context every match merged into one window larger than a page, dropped whole: the page showed
    nothing while its summary said 1,000 matches were shown); and how many lines were left out."""
    kept: list[dict[str, Any]] = []
    for i, window in enumerate(windows):
        room -= _json_len({"first": window["first"], "lines": []}) + 2
        lines: list[str] = []
        for line in window["lines"]:
            size = _json_len(line) + 2
            if size > room:
                break
            room -= size
            lines.append(line)
        if lines:
            kept.append({**window, "lines": lines})
        if len(lines) < len(window["lines"]):
            left = len(window["lines"]) - len(lines) + sum(len(w["lines"]) for w in windows[i + 1 :])
            return kept, left
    return kept, 0


def _cut_tail(text: str, keep: int) -> str:
    return text if keep >= len(text) else f"{text[:keep]}\n… {len(text) - keep:,} more characters"


def _agent_view(result: ToolResult, **extra: Any) -> dict[str, Any]:
    """As the model would see it: the tool's text exactly (cut only past one page, and said so)."""
    return {
        "kind": "text",
        "text": _clip_json(result.text, _room(extra), _cut_tail),
        "summary": f"as the model sees it · {result.tokens:,} tokens charged",
        "tokens": result.tokens,
        **extra,
    }


def _lines_view(result: ToolResult, note: str = "") -> dict[str, Any]:
    data = result.data
    lines, left = _bounded([clip(line, MAX_LINE_CHARS) for line in data["lines"]], _room(note))
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
    marked = [m["line"] for m in data["matches"]]
    # where in the document each match is (as the tool's text shows it: an item's path when the
    # whole one is long); the page links it to get_in
    paths = {str(m["line"]): at for m in data["matches"] if (at := shown_path(m.get("path") or ""))}
    windows, left = _fit_windows(windows, _room(marked, paths))
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
        "paths": paths,
        "summary": summary,
        "more": more,
        "max_matches": max_matches,
    }


def _fit_rows(columns: list[Any], rows: list[list[Any]], *beside: Any) -> tuple[list[str], list[list[str]], int]:
    """The column names and the leading rows (as cells of text) that fit one reply ``beside`` the
    rest of the view, and how many rows were left out. A first row too wide for a page alone is
    shown with its cells cut shorter, so a page always moves on."""
    names = [clip(str(c)) for c in columns]
    cells = [[clip(cell_text(v)) for v in row] for row in rows[:MAX_PAGE_ROWS]]
    room = _room(names, *beside)
    fitted, left = _bounded(cells, room)
    if cells and not fitted:
        width = max(20, room // (12 * max(1, len(names)) + 1))  # (12: the longest escape of a character)
        fitted, left = [[clip(c, width) for c in cells[0]]], len(cells) - 1
    return names, fitted, left + max(0, len(rows) - MAX_PAGE_ROWS)


def _table(columns: list[Any], rows: list[list[Any]], summary: str) -> dict[str, Any]:
    names, cells, left = _fit_rows(columns, rows, summary)
    if left:
        summary += f" ({left:,} more rows did not fit one page)"
    return {"kind": "table", "columns": names, "rows": cells, "summary": summary}


def _not_all_fit(left: int, asked: int) -> str:
    """What a page's summary says when only part of the rows asked for fit: that Next goes on from
    the last row shown (it went on from the last row asked for, and the others were never seen)."""
    return f" (the other {left:,} of the {asked:,} rows asked for did not fit one page: Next starts with them)"


def schema(pad: Scratchpad, handle: str, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    """The structure; the arrays it found come back as ``paths`` for the path boxes."""
    result = _call(pad, as_agent, "schema", {"handle": handle, "max_depth": _int(args, "max_depth", 4, 0, 32)})
    nodes = result.data.get("nodes") or [] if isinstance(result.data, dict) else []
    paths = [n["path"] for n in nodes if str(n.get("kind", "")).startswith("array") and "[*]" not in n["path"]]
    paths, _ = _bounded(paths, MAX_PATHS_CHARS)
    if as_agent:
        return _agent_view(result, paths=paths)
    body = result.text.rsplit("\n--- ", 1)[0]
    return {"kind": "text", "text": _clip_json(body, _room(paths)), "summary": "schema", "paths": paths}


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
    summary = f"the value at {args.get('path') or '$'}"
    return {"kind": "text", "text": _clip_json(body, _room(summary)), "summary": summary}


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
    meta = result.meta if isinstance(result.meta, dict) else {}
    total = meta.get("total_items")
    if as_agent:  # (the model gets every row it was charged for: the next page starts after them)
        return _agent_view(result, offset=offset, count=len(rows), total=total, next_offset=meta.get("next_offset"))
    columns = ["_index", *[f.strip() for f in fields.split(",") if f.strip()]]
    names, cells, left = _fit_rows(columns, [[r.get(c) for c in columns] for r in rows])
    shown = len(cells)
    # the range of the rows sent (it named the rows asked for: "items 0-499" of 293 rows sent)
    summary = f"items {offset:,}-{offset + shown - 1:,}" if cells else f"no items at offset {offset:,}"
    if left:
        summary += _not_all_fit(left, len(rows))
    end = offset + shown
    next_offset = end if cells and (total is None or end < int(total)) else None
    view = {"kind": "table", "columns": names, "rows": cells, "summary": summary}
    return {**view, "offset": offset, "count": shown, "total": total, "next_offset": next_offset}


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
    # without what ends it, as the sql tool's own suggestions wrap it: ";" then a comment
    # ("SELECT 1; -- note") left the ";" inside the parentheses, and the query was not paged
    inner = without_trailing_comment(query.strip())
    return f"(\n{inner}\n) AS _scratch_q"  # on lines of its own: a comment inside cannot eat the ")"


def _rows(n: int) -> str:
    return f"{n:,} row{'' if n == 1 else 's'}"


# A person's query from the explorer runs in the kernel's comm handler, where the kernel's
# Interrupt never arrives: it is stopped after this long (a cross join held the kernel, its cells,
# the sidebar and every other tab for six minutes: probe Z). A cell's %scratch sql has no limit.
EXPLORER_SQL_LIMIT_S = 30.0


def _person_sql(pad: Scratchpad, query: str, limit: int | None = None) -> Any:
    """``pad.sql_df`` within the explorer's time limit; a query stopped there says where to run it."""
    from .._person import QueryTimeout

    try:
        return pad.sql_df(query, limit, time_limit_s=EXPLORER_SQL_LIMIT_S)
    except QueryTimeout:
        raise ActionError(
            {
                "error": "timeout",
                "message": f"the query ran longer than {EXPLORER_SQL_LIMIT_S:g} s and was stopped (the kernel "
                "waits on the explorer meanwhile); run it in a cell, where it has no limit and the kernel's "
                "Interrupt stops it: %%scratch sql",
                "suggestions": [],
            }
        ) from None


def _count(pad: Scratchpad, query: str) -> int | None:
    """The rows of ``query`` (read as the person, not charged); None when it cannot be wrapped
    (SHOW, PIVOT …), is wrong, or takes longer than the explorer waits."""
    try:
        return int(_person_sql(pad, f"SELECT count(*) AS n FROM {_wrap(query)}")["n"][0])
    except (ScratchpadError, ActionError):
        return None


def _agent_sql(pad: Scratchpad, query: str, size: int, offset: int) -> dict[str, Any]:
    """A page of a query as the model would get it: the query as typed for the first page, and for
    the others the query the model pages with (the tool's footer says "add LIMIT/OFFSET"), each
    charged once. (Next sent the query as typed again: page 1 shown and charged again.) The total,
    for Prev / Next, is counted as the person, not charged; a query that cannot be wrapped is run as
    typed, one page, and says it cannot be paged."""
    total = _count(pad, query)
    if total is None:
        result = _call(pad, True, "sql", {"query": query, "max_rows": size})
        view = _agent_view(result, offset=0, total=None, page_size=size, next_offset=None)
        view["summary"] += " · not paged: the statement cannot be wrapped in LIMIT/OFFSET"
        return view
    sent = query if offset == 0 else f"SELECT * FROM {_wrap(query)}\nLIMIT {size} OFFSET {offset}"
    result = _call(pad, True, "sql", {"query": sent, "max_rows": size})
    meta = result.meta if isinstance(result.meta, dict) else {}
    shown = int(meta.get("rows") or 0)
    end = offset + shown
    view = _agent_view(
        result, offset=offset, total=total, page_size=size, next_offset=end if shown and end < total else None
    )
    where = f"rows {offset + 1:,}-{end:,} of {total:,}" if shown else f"0 rows of {total:,}"
    paged = f" (paged as the model would: LIMIT {size} OFFSET {offset})" if offset else ""
    view["summary"] = f"as the model sees it · {where}{paged} · {result.tokens:,} tokens charged"
    return view


def sql(pad: Scratchpad, handle: str | None, args: dict[str, Any], as_agent: bool) -> dict[str, Any]:
    """One page of a query (``page_size`` rows from ``offset``), and the total when it can be counted."""
    query = str(args.get("query") or "")
    if not query.strip():
        raise ActionError({"error": "invalid_argument", "message": "type a query; each live handle is a relation"})
    size = _int(args, "page_size", 20, 1, MAX_PAGE_ROWS)
    offset = _int(args, "offset", 0, 0, 10**12)
    if as_agent:
        return _agent_sql(pad, query, size, offset)
    # the page first, then the total only when the page does not tell it (a query ran twice,
    # its count first: a slow one took twice its time before a row was shown)
    frame, total = None, None
    unpaged = "the statement cannot be wrapped"
    with contextlib.suppress(ScratchpadError):
        frame = _person_sql(pad, f"SELECT * FROM {_wrap(query)} LIMIT {size} OFFSET {offset}")
    if frame is not None:
        total = offset + len(frame) if 0 < len(frame) < size or (offset == 0 and len(frame) == 0) else None
        total = _count(pad, query) if total is None else total
        if total is None:  # (the page is shown; its rows could not be counted in time)
            unpaged = f"counting its rows took longer than {EXPLORER_SQL_LIMIT_S:g} s"
    if frame is None:
        # Not wrappable (SHOW, PIVOT …), or simply wrong: run it as typed, so its own error (or rows) show.
        try:
            frame = _person_sql(pad, query, size)
        except ScratchpadError as exc:
            raise ActionError(_sql_error(exc)) from None
        total, offset = None, 0
    rows = [[_plain(v) for v in row] for row in frame.itertuples(index=False, name=None)]
    names, cells, left = _fit_rows(list(frame.columns), rows)
    shown = len(cells)
    end = offset + shown
    # the range of the rows sent ("rows 1-500 of 600" named 226 rows that were not sent), and the
    # page after them: Next went on at offset + page size, and those rows were never seen
    if total is None:
        summary = f"{_rows(shown)} (not paged: {unpaged})"
        if left:
            summary += f" ({left:,} more rows did not fit one page)"
    elif cells:
        summary = f"rows {offset + 1:,}-{end:,} of {total:,}" + (_not_all_fit(left, len(rows)) if left else "")
    else:
        summary = f"0 rows of {total:,}"
    next_offset = end if total is not None and cells and end < total else None
    view = {"kind": "table", "columns": names, "rows": cells, "summary": summary}
    return {**view, "offset": offset, "total": total, "page_size": size, "next_offset": next_offset}


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
    view = action(pad, handle, args, as_agent)
    size = _json_len(view)
    if size > MAX_PAGE_CHARS - RESERVE_CHARS // 2:  # (never, with the pages above: the bound is kept, not hoped for)
        raise ActionError(
            {
                "error": "page_too_large",
                "message": f"this page came to {size:,} characters, over the {MAX_PAGE_CHARS:,} one reply "
                "may hold: ask for fewer lines, rows or columns",
            }
        )
    return view
