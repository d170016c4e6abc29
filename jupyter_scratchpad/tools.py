"""What an agent sees: the tool definitions, and the dispatcher that runs them.

``Scratchpad.call_tool(name, arguments)`` never raises for a mistake a model can make: an unknown
tool, a missing or mistyped argument, an unknown handle, a bad path or bad SQL all come back as a
``ToolResult`` with ``ok=False`` and ``error = {"error": code, "message", "suggestions", ...}``.
Every successful result is counted in the model's tokens and charged to the budget in one locked
step; a result over the per-call cap or the remaining budget is refused as
``<tool>_too_large`` with concrete calls that would fit, charged only its own short text (the
model reads it).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import logging
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._bounded import bound_error, carried_whole, is_utf8_text, redact_paths, sendable, sendable_value, short_repr
from .errors import InvalidArgumentError, ScratchpadError
from .explore import _json, _notes, _schema, _sql, _text
from .explore._base import Output, TooLarge, ToolContext, ToolError, ToolTimeout, suggestion
from .explore._paths import LazyArray
from .store._bodies import removed_while_read
from .store._entry import MAX_KEY_CHARS
from .store._jsontext import loads_any_depth

if TYPE_CHECKING:
    from ._pad import Scratchpad

__all__ = [
    "FLAVORS",
    "SPEC_FLAVORS",
    "TOOL_NAMES",
    "UNCHARGED_LIMIT_TOKENS",
    "ToolResult",
    "dispatch",
    "input_schema",
    "tool_specs",
]

log = logging.getLogger("jupyter_scratchpad.tools")

# What an uncharged (person's) call may return: no model's cap, but still a number the tools can
# compare with (a person asking for a billion tokens of lines gets them, page by page).
UNCHARGED_LIMIT_TOKENS = 1 << 62


@dataclass
class ToolResult:
    """The result of one tool call.

    ``text`` is exactly what a model is shown; ``data`` the same result as plain Python data;
    ``error`` a dict when ``ok`` is False; ``tokens`` what was charged to the budget.
    """

    ok: bool
    text: str
    data: Any = None
    error: dict[str, Any] | None = None
    tokens: int = 0
    tool: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)  # paging facts: total_items, truncated, ...

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython shows what the model sees
        p.text(self.shown_text())

    def shown_text(self, max_chars: int | None = None) -> str:
        """``text`` as a notebook displays it: whole up to ``DISPLAY_MAX_CHARS``, else its head and
        tail with a note (a person's ``head -n 300000`` was 16 MB of HTML and text: a frozen tab).
        The value itself (``text``, ``data``) stays whole."""
        return display_cut(self.text, "the whole result is this cell's value: _.text, _.data", max_chars)

    def as_message(self) -> str:
        """The text to put in a tool-result message (errors as their JSON)."""
        return self.text


DISPLAY_MAX_CHARS = 1_000_000  # a result's text a notebook displays whole (a browser tab copes)


def display_cut(text: str, whole: str, max_chars: int | None = None) -> str:
    """``text`` whole up to ``max_chars`` (``DISPLAY_MAX_CHARS``), else its head and tail, whole
    lines where there are any, with a note of what was cut and where the whole is (``whole``)."""
    limit = DISPLAY_MAX_CHARS if max_chars is None else max_chars
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[len(text) - limit // 4 :]
    head = head[: head.rfind("\n") + 1] or head
    tail = tail[tail.find("\n") + 1 :] or tail
    hidden = len(text) - len(head) - len(tail)
    return f"{head}[… {hidden:,} of {len(text):,} characters not shown here; {whole}]\n{tail}"


_HANDLE = {"type": "string", "description": "A handle from a spill stub."}  # (in 11 tools: said short)
_INT = {"type": "integer"}
_KEY = {"type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS}
# "Any JSON value" with a type on every branch (strict transforms reject a schema without one).
_ANY_JSON: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "array"},
    {"type": "object"},
]
# OpenAI strict mode has no open objects: a note there is a string, number, boolean or flat list.
_STRICT_ANY_JSON: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "array", "items": {"type": ["string", "number", "boolean", "null"]}},
]
_STRICT_ANY_JSON_WORDS = (
    "A string, number, boolean or flat list (strict mode has no open objects: send an object or a "
    "nested list as its JSON text, a string; a string that is the JSON text of an object or array is "
    "stored as that object or array)."
)
_ANY_JSON_WORDS = (
    "Any JSON value (a string that is the JSON text of an object or array is stored as that object or array)."
)


def _p(**props: dict[str, Any]) -> dict[str, Any]:
    return props


@dataclass(frozen=True)
class _Tool:
    name: str
    description: str
    properties: dict[str, Any]
    required: tuple[str, ...]
    run: Callable[..., Output]
    suggest: Callable[[ToolContext, dict[str, Any], int, int], list[dict[str, Any]]]
    # required arguments whose absence the tool explains itself (with suggestions that run)
    explains_missing: tuple[str, ...] = ()
    # it changes the store: its short confirmation is never refused (the change is done)
    changes: bool = False


def _sugg_lines(ctx: ToolContext, args: dict[str, Any], est: int, limit: int) -> list[dict[str, Any]]:
    start = int(args.get("start") or 1)
    if "end" in args and isinstance(args.get("end"), int):
        lines = max(1, int(args["end"]) - start + 1)
    else:
        lines = int(args.get("lines") or 50)
    last = None
    if ctx.tool == "tail":  # a refused tail is offered the end of the body, not its start
        with contextlib.suppress(ToolError):
            last = ctx.entry(args.get("handle")).line_count
    handle = str(args.get("handle"))
    out = _text.line_suggestions(handle, start, lines, est, limit, last_line=last, tool=ctx.tool)
    if not _text.fewer_lines(handle, start, lines, est, limit, last_line=last, tool=ctx.tool):
        # one line is over the limit (a 3 MB line): its bytes, a window at a time (a text body is
        # the output's own bytes, so its line offsets are read_handle's)
        with contextlib.suppress(ToolError, OSError):
            reader = ctx.reader(ctx.entry(handle))
            if reader.body_path == reader.raw_path:
                at = reader.line_offset(last or start)
                out[:0] = _text.read_handle_suggestions({"handle": handle, "start": at}, est, limit)
    return out


def _sugg_read(ctx: ToolContext, args: dict[str, Any], est: int, limit: int) -> list[dict[str, Any]]:
    entry = ctx.store.get_entry(ctx.pad.scope, "handle", str(args.get("handle")))
    array_path = None
    if entry is not None and entry.format in ("json", "jsonl"):
        try:  # (a streamed spill's skeleton, with its array unread)
            value = _json._node_at(ctx, entry, "$", lazy=True)
        except ToolError:
            value = None
        if isinstance(value, (list, LazyArray)):
            array_path = "$"
        elif isinstance(value, dict):  # the first array of the document, e.g. $.items
            array_path = next(
                (f"$.{k}" for k, v in value.items() if isinstance(v, (list, LazyArray)) and k.isidentifier()), None
            )
    return _text.read_suggestions(entry, args, est, limit, array_path)


def _sugg_get_in(ctx: ToolContext, args: dict[str, Any], est: int, limit: int) -> list[dict[str, Any]]:
    try:
        entry = ctx.entry(args.get("handle"))
        value = _json._node_at(ctx, entry, args.get("path") or "$", lazy=True)
    except ToolError:
        entry, value = None, None
    return _json.get_in_suggestions(entry, value, args, est, limit)


def _sugg_window(tool: str) -> Callable[[ToolContext, dict[str, Any], int, int], list[dict[str, Any]]]:
    def suggest(ctx: ToolContext, args: dict[str, Any], est: int, limit: int) -> list[dict[str, Any]]:
        total = None
        with contextlib.suppress(Exception):  # (the refusal's echo counts them too)
            total = len(_json._items_at(ctx, ctx.entry(args.get("handle")), args.get("path") or "$"))
        return _json.window_suggestions(tool, args, est, limit, total)

    return suggest


def _sugg_schema(ctx: ToolContext, args: dict[str, Any], est: int, limit: int) -> list[dict[str, Any]]:
    depth = int(args.get("max_depth") or 4)
    extra = {"path": args["path"]} if args.get("path") else {}
    handle = args.get("handle")
    out = [suggestion("schema", "a shallower schema", handle=handle, max_depth=max(1, depth - 2), **extra)]
    entry = ctx.store.get_entry(ctx.pad.scope, "handle", str(handle)) if isinstance(handle, str) else None
    if entry is not None and not extra and entry.format == "markdown":  # its outline, a level at a time
        out.append(suggestion("grep", "the top-level headings, with their line numbers", handle=handle,
                              pattern="^# ", context=0, max_matches=50))  # fmt: skip
    elif entry is not None and not extra:  # the keys of its records: a short answer where a schema is long
        arrays = entry.meta.get("sql_arrays") or []
        path = "$" if entry.format == "jsonl" else "$." + ".".join(arrays[0][1]) if arrays else None
        if path is not None:
            out.append(suggestion("item_schema", "the keys of its records, and how many have each", handle=handle,
                                  path=path))  # fmt: skip
    return out


def _sugg_notes(ctx: ToolContext, args: dict[str, Any], est: int, limit: int) -> list[dict[str, Any]]:
    return [suggestion("scratch_list", "list keys only")]


_TOOLS: tuple[_Tool, ...] = (
    _Tool(
        "schema",
        "Step 1 for any handle: the structure of a spilled output without its content. JSON: one line per "
        "node ($-path, kind, line range in the pretty body); arrays are summarised over all their items. "
        "Markdown: the heading tree with line ranges. Text/JSONL: lines, bytes, longest line, a sample. "
        "Then use item_schema on an array path, then iterate_over or get_in. With `path`: one part of a JSON "
        "handle; a string there that holds JSON or markdown (an MCP text block) is described as that document.",
        _p(
            handle=_HANDLE,
            max_depth={
                **_INT,
                "description": "How deep to describe (default 4).",
                "minimum": 0,
                "maximum": _schema.MAX_DEPTH,
            },
            path={"type": "string", "description": 'Optional: describe only the part at this path ("$" is all).'},
        ),
        ("handle",),
        _schema.schema,
        _sugg_schema,
    ),
    _Tool(
        "item_schema",
        "Step 2: the union of keys across the items of the array at `path` (dotted for nested objects, "
        "e.g. metadata.score), their types joined with |, and how many items have each key (c/n). "
        "Use offset/limit to look at a window of items.",
        _p(
            handle=_HANDLE,
            path={"type": "string", "description": 'Path of an array: "items", "$.data.results"; "$" for the root.'},
            offset={**_INT, "minimum": 0, "description": "First item (default 0)."},
            limit={**_INT, "minimum": 1, "description": "Number of items (default all)."},
        ),
        ("handle",),
        _json.item_schema,
        _sugg_window("item_schema"),
    ),
    _Tool(
        "iterate_over",
        "Step 3: chosen fields of the items of the array at `path`: a `columns:` line (_index, then the "
        "fields), then one JSON array per item; missing fields are null, strings longer than 5 lines are cut "
        "(the get_in shown reads the rest). Page with offset/limit.",
        _p(
            handle=_HANDLE,
            path={"type": "string", "description": 'Path of an array ("$" for the root).'},
            fields={
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
                "description": 'Comma-separated fields or dot paths into each item: "metadata.name,status.phase".',
            },
            offset={**_INT, "minimum": 0, "description": "First item (default 0)."},
            limit={**_INT, "minimum": 1, "description": "Number of items (default 50)."},
        ),
        ("handle", "fields"),
        _json.iterate_over,
        _sugg_window("iterate_over"),
        explains_missing=("fields",),
    ),
    _Tool(
        "get_in",
        "The value at one path: dot form (results.0.title), $-form ($.results[0].title), bracket-quoted "
        'keys for keys with dots or digits (["a.b"]["200"]), negative indexes ([-1]); "$" is the root. '
        "Long strings are paged by lines with offset/limit (by characters with chars=true). A wrong path "
        "returns the keys that exist.",
        _p(
            handle=_HANDLE,
            path={"type": "string", "description": "The path to read."},
            offset={
                **_INT,
                "minimum": 0,
                "description": "For long strings: lines to skip (offset=5 starts at line 6, as numbered).",
            },
            limit={**_INT, "minimum": 1, "description": "For long strings: number of lines."},
            chars={
                "type": "boolean",
                "description": "offset/limit count characters, not lines (a string of very long lines).",
            },
        ),
        ("handle", "path"),
        _json.get_in,
        _sugg_get_in,
    ),
    _Tool(
        "grep",
        "Search a handle's lines with a regex (RE2 syntax; an invalid regex is searched literally). Matching "
        "lines are marked '>' with `context` lines around them; overlapping windows are merged. In a JSON "
        "handle each match names its path, for get_in: `>21 $.items[3].status.phase`.",
        _p(
            handle=_HANDLE,
            pattern={"type": "string", "minLength": 1, "description": "Regex (at most 1,024 bytes)."},
            context={**_INT, "minimum": 0, "maximum": 50, "description": "Lines around each match (default 3)."},
            ignore_case={"type": "boolean", "description": "Case-insensitive (default false)."},
            max_matches={**_INT, "minimum": 1, "maximum": 1000, "description": "Matching lines to show (default 100)."},
            path={
                "type": "string",
                "description": "Optional, JSON handles: search only the value at this path (a string's own lines).",
            },
        ),
        ("handle", "pattern"),
        _text.grep,
        lambda c, a, e, limit: _text.grep_suggestions(a, e, limit),
    ),
    _Tool(
        "head",
        "The first `lines` lines of a handle, numbered.",
        _p(handle=_HANDLE, lines={**_INT, "minimum": 1, "description": "How many (default 50)."}),
        ("handle",),
        _text.head,
        _sugg_lines,
    ),
    _Tool(
        "tail",
        "The last `lines` lines of a handle, numbered.",
        _p(handle=_HANDLE, lines={**_INT, "minimum": 1, "description": "How many (default 50)."}),
        ("handle",),
        _text.tail,
        _sugg_lines,
    ),
    _Tool(
        "slice",
        "Lines start..end of a handle (1-indexed, inclusive), numbered; an end past the last line is clamped.",
        _p(
            handle=_HANDLE,
            start={**_INT, "minimum": 1, "description": "First line (1-indexed)."},
            end={**_INT, "minimum": 1, "description": "Last line (inclusive)."},
        ),
        ("handle", "start", "end"),
        _text.slice_lines,
        _sugg_lines,
    ),
    _Tool(
        "read_handle",
        "Exact bytes of the original output: a byte range [start, end), or the windows of `window` bytes "
        "around each occurrence of the substring `match`.",
        _p(
            handle=_HANDLE,
            start={**_INT, "minimum": 0, "description": "First byte (default 0)."},
            end={**_INT, "minimum": 1, "description": "End byte, exclusive (default start + 4096)."},
            match={
                "type": "string",
                "minLength": 1,
                "description": "A substring to find instead of a range (at most 1,024 bytes).",
            },
            window={**_INT, "minimum": 0, "description": "Bytes around each match (default 200)."},
        ),
        ("handle",),
        _text.read_handle,
        lambda c, a, e, limit: _text.read_handle_suggestions(a, e, limit),
    ),
    _Tool(
        "read",
        "The whole original output. Only for small handles: prefer schema, grep, slice, get_in. A handle "
        "too large for the budget is refused with cheaper calls to make instead.",
        _p(handle=_HANDLE),
        ("handle",),
        _text.read,
        _sugg_read,
    ),
    _Tool(
        "sql",
        "DuckDB SQL over your spills: every JSON/JSONL handle is a relation named by its handle (an array of "
        "objects is one row per object; nested values are structs/lists: use UNNEST and dot access); a "
        "document's arrays of records are their own relations, named in its stub (h.items), a CSV's rows "
        "are h.rows, a text handle is (line_no, line), and scratch_notes holds your notes. Read-only sandbox.",
        _p(
            query={
                "type": "string",
                "minLength": 1,
                "maxLength": _sql.MAX_QUERY_CHARS,
                "description": f"One SQL statement (at most {_sql.MAX_QUERY_CHARS:,} characters), e.g. "
                "SELECT status, count(*) FROM h.items GROUP BY 1.",
            },
            max_rows={**_INT, "minimum": 1, "maximum": 10000, "description": "Rows to return (default 200)."},
        ),
        ("query",),
        _sql.sql,
        lambda c, a, e, limit: _sql.sql_suggestions(a, e, limit, c.result_rows, c.result_columns),
    ),
    _Tool(
        "scratch_write",
        "Save a note (any JSON value) under `key` for later steps of this run.",
        _p(
            key={**_KEY, "description": "Any non-empty string."},
            value={"anyOf": _ANY_JSON, "description": _ANY_JSON_WORDS},
            ttl_s={
                "type": "number",
                "minimum": _notes.MIN_NOTE_TTL_S,  # (sooner, the note was gone before the model read "saved")
                "maximum": 10 * 365 * 86400,
                "description": "Seconds to keep it, at least 1 (default: the store's TTL).",
            },
        ),
        ("key", "value"),
        _notes.scratch_write,
        _sugg_notes,
        changes=True,
    ),
    _Tool(
        "scratch_read",
        "Read the note saved under `key`.",
        _p(key={**_KEY, "description": "The note's key."}),
        ("key",),
        _notes.scratch_read,
        _sugg_notes,
    ),
    _Tool(
        "scratch_list",
        "List your live notes and handles (metadata only: sizes, tokens, tools, expiry), a page at a time.",
        _p(
            prefix={"type": "string", "description": "Only keys/handles starting with this."},
            kind={"type": "string", "enum": ["handle", "note"], "description": "Only handles, or only notes."},
            offset={**_INT, "minimum": 0, "description": "First entry (default 0)."},
            limit={**_INT, "minimum": 1, "maximum": 500, "description": "Entries per page (default 50)."},
        ),
        (),
        _notes.scratch_list,
        lambda c, a, e, limit: _notes.scratch_list_suggestions(a, e, limit),
    ),
    _Tool(
        "scratch_delete",
        "Delete a note by `key`, or a spilled output by `handle` (exactly one of the two).",
        _p(key={**_KEY, "description": "The note's key."}, handle=_HANDLE),
        (),
        _notes.scratch_delete,
        _sugg_notes,
        changes=True,
    ),
)

TOOLS: dict[str, _Tool] = {t.name: t for t in _TOOLS}
TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)
# Aura's argument names, accepted as aliases.
_ALIASES = {"file": "handle", "path_expr": "path", "n": "lines"}
_RUN_NAMES = {"slice": "slice_lines"}
# A boolean as models write it in a string ("yes" was refused and its suggestion dropped the flag:
# grep then matched case-sensitively and found nothing).
_BOOLEAN_WORDS = {"true": True, "false": False, "yes": True, "no": False, "on": True, "off": False,
                  "1": True, "0": False}  # fmt: skip
# Other tools' words for our arguments: not accepted (the schemas are strict), but a call given
# one is answered with the same call in our words (its suggestions were empty: probe Y).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "lines": ("count", "num_lines", "n_lines", "line_count", "num", "number"),
    "start": ("start_line", "from", "from_line", "first_line", "begin", "line_start"),
    "end": ("end_line", "to", "to_line", "last_line", "stop", "line_end"),
    "pattern": ("query", "regex", "regexp", "search", "term", "q"),
    "path": ("key", "json_path", "jsonpath", "selector", "pointer"),
    "max_depth": ("depth", "levels", "max_level"),
    "fields": ("keys", "columns", "select"),
    "ignore_case": ("case_insensitive", "insensitive", "icase", "nocase"),
    "context": ("context_lines", "around"),
    "max_matches": ("max_results", "max_count"),
    "query": ("sql", "statement"),
    "value": ("content", "data", "text"),
    "ttl_s": ("ttl", "ttl_seconds", "expires_in"),
}
_SYNONYM_OF = {word: ours for ours, words in _SYNONYMS.items() for word in words}


SPEC_FLAVORS = ("openai", "openai-responses", "anthropic", "mcp")
FLAVORS = SPEC_FLAVORS


def input_schema(name: str) -> dict[str, Any]:
    """The canonical JSON Schema of tool ``name``'s arguments: what the dispatcher validates against."""
    return copy.deepcopy(_canonical(TOOLS[name]))


def _canonical(tool: _Tool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": tool.properties,
        "required": list(tool.required),
        "additionalProperties": False,
    }


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null (strict clients send null for an optional argument; null means default)."""
    out = dict(schema)
    if "anyOf" in out:
        out["anyOf"] = [*out["anyOf"], {"type": "null"}]
    elif isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def _strict(tool: _Tool) -> dict[str, Any]:
    """OpenAI strict mode: every property required, the optional ones nullable, no open objects."""
    props: dict[str, Any] = {}
    for name, schema in tool.properties.items():
        if schema.get("anyOf") is _ANY_JSON:  # (said so: "Any JSON value" while objects are refused)
            schema = {**schema, "anyOf": _STRICT_ANY_JSON, "description": _STRICT_ANY_JSON_WORDS}
        if "minLength" in schema or "maxLength" in schema:  # not keywords strict mode accepts: said in words
            schema = {k: v for k, v in schema.items() if k not in ("minLength", "maxLength")}
            schema["description"] = _length_words(tool.properties[name])
        props[name] = schema if name in tool.required else _nullable(schema)
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _length_words(schema: dict[str, Any]) -> str:
    """``schema``'s description with its minLength and maxLength in words, as strict mode needs
    them (a 2,000-character key was valid against the strict spec and refused), each said once."""
    said = str(schema.get("description", "")).strip()
    lower = said.lower()
    words = []
    least, most = schema.get("minLength"), schema.get("maxLength")
    if isinstance(least, int) and least == 1 and "non-empty" not in lower:
        words.append("non-empty")
    elif isinstance(least, int) and least > 1 and f"at least {least:,} characters" not in lower:
        words.append(f"at least {least:,} characters")
    if isinstance(most, int) and f"at most {most:,} characters" not in lower:
        words.append(f"at most {most:,} characters")
    if not words:
        return said
    extra = ", ".join(words)
    return f"{said} {extra[0].upper()}{extra[1:]}.".strip()


def valid_prefix(prefix: object) -> bool:
    """Whether ``prefix`` may go before the tool names: empty, or a letter then letters, digits,
    ``_`` or ``-`` (32 at most; MCP clients refuse other tool names)."""
    return isinstance(prefix, str) and (not prefix or re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]{0,31}", prefix) is not None)


SERVER_NAME_RULE = "a server's name takes letters, digits, '_' and '-' (up to 32)"


def valid_server_name(name: object) -> bool:
    """Whether ``name`` may name an MCP upstream (the proxy's ``--name``, a config table): its tools
    may be listed as ``<server>__<tool>``, which model APIs must take."""
    return isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,32}", name) is not None


def tool_specs(flavor: str = "openai", *, prefix: str = "") -> list[dict[str, Any]]:
    """JSON-schema definitions of every tool, in one of ``FLAVORS``.

    ``openai``: Chat Completions ``{"type": "function", "function": {..., "strict": true}}``;
    ``openai-responses``: the flat Responses-API shape ``{"type": "function", "name", ..., "strict": true}``
    (both strict: every property required, optional ones nullable); ``anthropic``:
    ``{"name", "description", "input_schema"}``; ``mcp``: ``{"name", "description", "inputSchema"}``.
    ``prefix`` is put before every name (``"scratch_"``: ``scratch_sql``); call them with
    ``call_tool(name, args, prefix=prefix)``. Null for an optional argument means its default.
    """
    if flavor not in SPEC_FLAVORS:
        raise ValueError(f"flavor must be one of {', '.join(SPEC_FLAVORS)}, not {flavor!r}")
    if not valid_prefix(prefix):
        raise ValueError(f"prefix must be letters, digits, '_' or '-' (at most 32), not {prefix!r}")
    specs: list[dict[str, Any]] = []
    for tool in _TOOLS:
        name = prefix + tool.name
        if flavor in ("openai", "openai-responses"):
            params = copy.deepcopy(_strict(tool))
            if flavor == "openai":
                fn = {"name": name, "description": tool.description, "parameters": params, "strict": True}
                specs.append({"type": "function", "function": fn})
            else:
                specs.append(
                    {
                        "type": "function",
                        "name": name,
                        "description": tool.description,
                        "parameters": params,
                        "strict": True,
                    }
                )
        else:
            key = "input_schema" if flavor == "anthropic" else "inputSchema"
            spec = {"name": name, "description": tool.description, key: input_schema(tool.name)}
            if flavor == "mcp":  # (a client may skip asking its person before a read-only tool runs)
                spec["annotations"] = _annotations(tool.name)
            specs.append(spec)
    return specs


def _annotations(name: str) -> dict[str, bool]:
    """MCP's hints for a tool: every one reads the scratchpad alone (no world outside it) and
    only the notes' write and delete change it."""
    writes = name in ("scratch_write", "scratch_delete")
    return {
        "readOnlyHint": not writes,
        "destructiveHint": name == "scratch_delete" or name == "scratch_write",  # (a write replaces a note)
        "idempotentHint": True,
        "openWorldHint": False,
    }


_VALIDATORS: dict[str, Callable[[Any], Any]] = {}


def _validator(tool: _Tool) -> Callable[[Any], Any]:
    check = _VALIDATORS.get(tool.name)
    if check is None:
        import fastjsonschema

        check = _VALIDATORS[tool.name] = fastjsonschema.compile(_canonical(tool))
    return check


def _kind(schema: dict[str, Any]) -> str:
    """``integer >= 1``, ``string or array of strings``: what an argument must be, in words."""
    if "anyOf" in schema:
        return " or ".join(_kind(s) for s in schema["anyOf"])
    kind = str(schema.get("type", "any JSON value"))
    if kind == "array" and isinstance(schema.get("items"), dict):
        kind = f"array of {_kind(schema['items'])}s"
    if "enum" in schema:
        kind = f"one of {', '.join(map(repr, schema['enum']))}"
    bounds = [f"{op} {schema[key]}" for key, op in _BOUNDS if key in schema]
    return " ".join([kind, *bounds])


_BOUNDS = (
    ("minimum", ">="),
    ("exclusiveMinimum", ">"),
    ("maximum", "<="),
    ("minLength", "of length >="),
    ("maxLength", "of length <="),
)


def _validate(tool: _Tool, args: dict[str, Any]) -> None:
    """Check ``args`` against the published schema (one source of truth for spec and runtime)."""
    import fastjsonschema

    # a placeholder for what the tool itself explains when it is missing (see explains_missing)
    placeholders = {name: tool.properties[name].get("default", "") for name in tool.explains_missing}
    try:
        _validator(tool)({**placeholders, **args})
    except fastjsonschema.JsonSchemaValueException as exc:
        path = [str(p) for p in (exc.path or [])][1:]
        name = path[0] if path else None
        if name is None or name not in tool.properties:
            raise ToolError("invalid_argument", f"{tool.name}: arguments {exc.message.removeprefix('data ')}") from None
        got = args.get(name)
        raise ToolError(
            "invalid_argument",
            f"{tool.name}: '{name}' must be {_kind(tool.properties[name])}, got {type(got).__name__} {short_repr(got)}",
            _fixed_call(tool, args, name),
            argument=name,
        ) from None


def _fixed_call(tool: _Tool, args: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The same call with every bad argument fixed, not only ``name`` (the first the schema
    found): a number as the integer meant (``1.5`` or ``"1e3"``; an ``end`` rounded up, else
    down), a number out of range at its bound (``max_matches=2000`` as 1000), an optional argument
    that is no number at all left to its default; a negative start of a line range as the last
    lines (``tail``). ``head(lines=0)`` got no suggestion at all, ``offset="2e2"`` went back to
    item 0. (Checked to run, and shrunk until it fits, as every suggestion, before it is sent.)"""
    lines = _as_lines(tool, args)  # slice(start=-10, end=-1): the last 10 lines
    if lines:
        return lines
    fixed, whys = dict(args), []
    bad: str | None = name
    for _ in range(len(tool.properties)):
        if not bad:  # all fixed, or a fault no one argument holds
            break
        value, why = _fixed_value(tool, bad, fixed.get(bad))
        if why is None:  # a required argument with no value meant
            return []
        if value is _DEFAULT:
            fixed.pop(bad, None)
        else:
            fixed[bad] = value
        whys.append(why)
        bad = _first_invalid(tool, fixed)
    if bad is not None:
        return []
    return [suggestion(tool.name, "; ".join(whys), **fixed)]


_DEFAULT = object()  # (an argument left out: its default)


def _fixed_value(tool: _Tool, name: str, got: Any) -> tuple[Any, str | None]:
    """``got`` for ``name`` as the value meant and why, ``(_DEFAULT, why)`` to leave it out, or
    ``(None, None)`` when there is no value meant."""
    schema = tool.properties.get(name, {})
    optional = name not in tool.required
    if schema.get("type") == "integer":
        number: float | None
        if isinstance(got, bool):  # (true for a required number: 1, as JSON's habit has it)
            number = None if optional else float(got)
        elif isinstance(got, int):
            number = float(got) if abs(got) < 1e300 else math.copysign(1e300, got)
        else:
            number = _as_number(got)
        if number is not None:
            low, high = schema.get("minimum"), schema.get("maximum")
            if name == "lines" and number < 0:  # tail(lines=-3): the last 3 lines
                number = -number
            at = ""
            if isinstance(low, int) and number < low:
                number, at = float(low), "minimum"
            elif isinstance(high, int) and number > high:
                number, at = float(high), "maximum"
            if abs(number) < 1e15:
                value = math.ceil(number) if name == "end" else math.floor(number)
                return value, (f"'{name}' at its {at}" if at else f"'{name}' as an integer")
    if optional:
        return _DEFAULT, f"'{name}' at its default"
    return None, None


def _first_invalid(tool: _Tool, args: dict[str, Any]) -> str | None:
    """The argument the schema finds wrong first, None when all are right; ``""`` for a fault it
    cannot pin on one."""
    import fastjsonschema

    placeholders = {name: tool.properties[name].get("default", "") for name in tool.explains_missing}
    try:
        _validator(tool)({**placeholders, **args})
    except fastjsonschema.JsonSchemaValueException as exc:
        path = [str(p) for p in (exc.path or [])][1:]
        return path[0] if path and path[0] in tool.properties else ""
    return None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _as_number(value: Any) -> float | None:
    """A finite number from a float or a numeric string ("1e3", "2.5"), else None."""
    if isinstance(value, str):
        try:
            value = float(value.strip()) if len(value) <= 400 else None
        except ValueError:
            return None
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def _refuse_lone_surrogates(tool: _Tool, args: dict[str, Any]) -> None:
    """A lone surrogate (``"\\ud800"`` decoded from a call's JSON) is not text: no body, query or
    note can hold it, and each part refused it its own way (a UnicodeEncodeError, a DuckDB
    conversion failure). One clear refusal naming the argument instead."""
    for name, value in args.items():
        stack, seen = [value], 0
        while stack and seen < 10_000:
            item = stack.pop()
            seen += 1
            if isinstance(item, str):
                if not is_utf8_text(item):
                    raise ToolError(
                        "invalid_argument",
                        f"{tool.name}: '{name}' holds an unpaired surrogate ({sendable(item)[:60]}), which is not "
                        "text; send it as valid Unicode (a pair, or the character itself)",
                        argument=name,
                    )
            elif isinstance(item, dict):
                stack += [*item.keys(), *item.values()]
            elif isinstance(item, (list, tuple)):
                stack += list(item)


def _as_int(value: Any) -> Any:
    """ "50" and 50.0 as 50; anything else as it is."""
    if isinstance(value, str):
        digits = value.strip().removeprefix("-")
        if digits.isascii() and digits.isdigit() and len(digits) <= 18:
            return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _coerce(name: str, value: Any, schema: dict[str, Any]) -> Any:
    """Forgive what models commonly send: "50" for 50, "true" for true."""
    kind = schema.get("type")
    if kind == "integer":
        return _as_int(value)
    if kind == "boolean" and isinstance(value, str) and value.strip().lower() in _BOOLEAN_WORDS:
        return _BOOLEAN_WORDS[value.strip().lower()]
    if kind == "number" and isinstance(value, str):
        number = _as_number(value)  # (finite: "NaN" read as nan passed every bound and no suggestion came)
        return value if number is None else number
    if name == "path" and kind == "string" and _is_key_list(value):  # ["items", 0, "name"]: $.items[0].name
        from .explore._paths import Step, format_path

        return format_path([Step(k) if isinstance(k, int) else Step(k, True) for k in value])
    return value


MAX_LIST_PATH_KEYS = 256  # a path sent as a list of keys (a string path has no such bound)


def _is_key(k: Any) -> bool:
    return (isinstance(k, str) and bool(k)) or (isinstance(k, int) and not isinstance(k, bool))


def _is_key_list(value: Any) -> bool:
    return isinstance(value, list) and 0 < len(value) <= MAX_LIST_PATH_KEYS and all(map(_is_key, value))


def _list_path_error(tool: _Tool, args: dict[str, Any]) -> ToolError:
    """Why a ``path`` sent as a list is not read as one (a 1,000-key list was refused as "'path'
    must be string", while a list is accepted): too many keys, none, or an item that is no key."""
    from .explore._paths import Step, format_path

    value: list[Any] = args["path"]
    bad = next(((i, k) for i, k in enumerate(value) if not _is_key(k)), None)
    sugg: list[dict[str, Any]] = []
    if not value:
        message = f"{tool.name}: 'path' given as a list names no key; the root is \"$\""
        sugg.append(suggestion(tool.name, "the root", **{**args, "path": "$"}))
    elif bad is not None:
        message = (
            f"{tool.name}: 'path' given as a list holds keys (non-empty strings) and indexes (integers); "
            f"item {bad[0]:,} is {json.dumps(bad[1], ensure_ascii=False, default=str)[:60]}"
        )
    else:
        message = (
            f"{tool.name}: 'path' given as a list takes at most {MAX_LIST_PATH_KEYS} keys, and this one has "
            f'{len(value):,}; send it as one string ("$.items[0].name"), which takes any number'
        )
        path = format_path([Step(k) if isinstance(k, int) else Step(k, True) for k in value])
        sugg.append(suggestion(tool.name, "the same path, as a string", **{**args, "path": path}))
    return ToolError("invalid_argument", message, sugg, argument="path")


def _int_arg(value: Any) -> int | None:
    value = _as_int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _as_lines(tool: _Tool, args: dict[str, Any]) -> list[dict[str, Any]]:
    """The range a line tool (or read_handle, in bytes) was most likely asked for, as a call it
    takes: offset/limit (a page) as start/end, a start with no end as 50 lines from it, a negative
    start as the last lines."""
    handle = args.get("handle")
    counted = {"grep": "max_matches", "sql": "max_rows"}.get(tool.name)
    if counted is not None and "limit" in args and _int_arg(args.get("limit")) is not None:
        # (limit, the word iterate_over, item_schema and scratch_list use, had no suggestion)
        fixed = {k: v for k, v in args.items() if k != "limit" and k in tool.properties}
        if all(r in fixed for r in tool.required):
            n = max(1, _int_arg(args.get("limit")) or 1)
            return [suggestion(tool.name, f"{counted}={n:,}: its word for limit", **{**fixed, counted: n})]
        return []
    if not isinstance(handle, str) or tool.name not in ("slice", "read_handle", "head", "tail"):
        return []
    offset, limit, start = _int_arg(args.get("offset")), _int_arg(args.get("limit")), _int_arg(args.get("start"))
    if tool.name == "read_handle":  # bytes [start, end)
        if limit is None:  # (offset/length: the length asked for, not 4,096 bytes)
            limit = _int_arg(args.get("length"))
        if offset is None and limit is None:
            return []
        lo = max(0, offset or 0)
        hi = lo + max(1, limit or 4096)
        return [suggestion("read_handle", f"bytes {lo:,}-{hi:,}", handle=handle, start=lo, end=hi)]
    if start is not None and start < 0:
        return [suggestion("tail", f"the last {-start:,} lines", handle=handle, lines=-start)]
    if offset is not None or limit is not None:
        first = max(0, offset or 0) + 1
        count = max(1, limit or 50)
    elif start is not None and args.get("end") is None:
        first, count = max(1, start), 50
    else:
        return []
    if tool.name in ("head", "tail") and first == 1:
        return [suggestion(tool.name, f"the {'first' if tool.name == 'head' else 'last'} {count:,} lines",
                           handle=handle, lines=count)]  # fmt: skip
    return [suggestion("slice", f"lines {first:,}-{first + count - 1:,}", handle=handle, start=first,
                       end=first + count - 1)]  # fmt: skip


def _named(names: list[str], most: int = 8) -> str:
    """``'a', 'b'``, or the first ``most`` and how many more (40,000 names were all said)."""
    said = ", ".join(repr(n[:80]) for n in names[:most])
    return said if len(names) <= most else f"{said} and {len(names) - most:,} more"


def _in_our_words(tool: _Tool, args: dict[str, Any], unknown: list[str]) -> list[dict[str, Any]]:
    """The call with other tools' words for our arguments renamed (``start_line`` as ``start``),
    when that names every argument: one suggestion, else none."""
    if len(unknown) > len(tool.properties):  # (each must be a word for one of ours)
        return []
    left_out = set(unknown)
    renamed = {k: v for k, v in args.items() if k not in left_out}
    said = []
    for key in unknown:
        ours = _SYNONYM_OF.get(key.lower())
        if ours is None or ours not in tool.properties or ours in renamed:
            return []
        renamed[ours] = args[key]
        said.append(f"{key!r} is {ours!r}")
    if any(renamed.get(r) is None for r in tool.required):
        return []
    return [suggestion(tool.name, "in its words: " + ", ".join(said), **renamed)]


def _json_kind(value: Any) -> str:
    """What ``value`` is, in JSON's words (a model never reads ``NoneType`` or ``mappingproxy``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return "a value that is not JSON"


def _normalise_args(tool: _Tool, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = loads_any_depth(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolError("invalid_argument", f"arguments must be a JSON object (not valid JSON: {exc})") from None
        except ValueError:  # (a number too long for int(): Python's own words name a setting of Python's)
            raise ToolError(
                "invalid_argument",
                "arguments must be a JSON object whose numbers have at most 4,300 digits (longer ones cannot be read)",
            ) from None
    if arguments is None:  # Python's None or JSON's null: no arguments, as {} is
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise ToolError("invalid_argument", f"arguments must be a JSON object, got {_json_kind(arguments)}")
    args: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    for key, value in arguments.items():
        alias = _ALIASES.get(key)
        real = alias if alias is not None and alias in tool.properties else key
        if value is None and real not in tool.required:
            continue  # null for an optional argument means its default (what strict clients send)
        if real in args and args[real] != value:  # "handle" and its alias "file", saying different things
            raise ToolError(
                "invalid_argument",
                f"{tool.name} was given both {given_as[real]!r} and {key!r} (the same argument, "
                f"{real!r}) with different values; give one of them",
                argument=real,
            )
        given_as[real] = key
        args[real] = value
    unknown = sorted(set(args) - set(tool.properties))
    if unknown:
        raise ToolError(
            "invalid_argument",
            f"{tool.name} has no argument {_named(unknown)}; "
            f"it takes: {', '.join(tool.properties) or 'no arguments'}",
            _as_lines(tool, args) or _in_our_words(tool, args, unknown),
            argument=unknown[0],
            allowed=list(tool.properties),
        )
    for name in tool.required:
        if args.get(name) is None and name not in tool.explains_missing:
            raise ToolError(
                "invalid_argument",
                f"{tool.name} needs '{name}' ({tool.properties[name].get('description', '')})",
                _as_lines(tool, args),
                argument=name,
            )
    for name, value in list(args.items()):
        args[name] = _coerce(name, value, tool.properties[name])
    if isinstance(args.get("path"), list) and tool.properties["path"].get("type") == "string":
        raise _list_path_error(tool, args)  # (not "'path' must be string": a list of keys is read)
    _validate(tool, args)
    return args


def _error_result(
    name: str, args: dict[str, Any], err: dict[str, Any], pad: Scratchpad | None = None, prefix: str = ""
) -> ToolResult:
    """An error as the model sees it: bounded to ``ERROR_MAX_BYTES`` of JSON and charged.

    The model reads an error like any result, so its tokens count against the budget; the bound
    keeps that cost to a few hundred tokens at most. The charge is never refused (the error has to
    be shown), so ``used`` may pass ``usable`` by that much. ``prefix``: the tools were published
    with it, so the suggestions name them with it (``sp_head``, not ``head``: an unknown tool).
    """
    err, text = _error_text(_prefixed(err, prefix), pad)
    tokens = 0
    if pad is not None:
        tokens = pad.tokenizer.count(text)
        pad.budget.charge_unconditionally(tokens)
        pad._record_extraction(tokens)
    return ToolResult(False, text, None, err, tokens, name, _shown_args(args))


def _prefixed(err: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``err`` with its suggestions, and the tools its message names, as they were published
    (``sp_head``): "list live handles with scratch_list" sent a model to an unknown tool."""
    if not prefix:
        return err
    out = dict(err)
    if isinstance(err.get("message"), str):
        out["message"] = prefixed_prose(err["message"], prefix)
    if err.get("suggestions"):
        out["suggestions"] = [{**s, "tool": prefix + s["tool"], "call": prefix + s["call"]} for s in err["suggestions"]]
    return out


@functools.lru_cache(maxsize=1)
def _prose_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    names = sorted(TOOL_NAMES, key=len, reverse=True)
    every = "|".join(map(re.escape, names))
    # a name no English word is (scratch_list, get_in) anywhere but inside a word, a path or a
    # quote; one that is (head, read, schema, sql) where it can only be the tool: leading the
    # message ("schema needs 'handle'") or in a list of tools ("head, grep, get_in or sql")
    joined = "|".join(re.escape(n) for n in names if "_" in n)
    leading = rf"^(?:{every})(?=:| needs | has no | would | takes )"
    word = re.compile(rf"(?<![\w$.\-/'\"])(?:{joined})(?![\w\-'\"(])|{leading}")
    listed = re.compile(rf"(?<![\w$.\-/'\"])(?:{every})(?:(?:, | or |, or | and )(?:{every}))+(?![\w\-'\"(])")
    return word, listed, re.compile(rf"\b(?:{every})\b")


def prefixed_prose(text: str, prefix: str) -> str:
    """``text`` (our words, never a document's) with the tools it names as they were published."""
    if not prefix:
        return text
    word, listed, name = _prose_patterns()
    text = listed.sub(lambda m: name.sub(lambda n: prefix + n.group(), m.group()), text)
    return word.sub(lambda m: prefix + m.group(), text)


def _error_text(err: dict[str, Any], pad: Scratchpad | None) -> tuple[dict[str, Any], str]:
    """``err`` bounded, and the text the model reads of it."""
    if pad is not None:  # a model reads handles, never the machine's directories
        err = json.loads(redact_paths(json.dumps(err, ensure_ascii=False, default=str), _store_paths(pad)))
    err = bound_error(err)
    text = json.dumps(_for_the_model(err), ensure_ascii=False, default=str)
    if not is_utf8_text(text):  # (a key of the document's, echoed)
        err = sendable_value(err)
        text = json.dumps(_for_the_model(err), ensure_ascii=False, default=str)
    return err, text


# fields of an error that its message already says (or that echo what the model just sent): kept
# in ``ToolResult.error`` for programs and people, left out of the text a model reads (a
# key_path_not_found said its path three times over: 275 tokens where 93 said it all)
_SAID_IN_THE_MESSAGE = frozenset(
    {"argument", "allowed", "requested_path", "valid_prefix", "failed_segment", "estimated_tokens", "per_call_limit",
     "remaining_budget_tokens", "page_tokens",
     # the model's own call, which it has (probe AB: a third of an error's tokens were such echoes)
     "requested_lines", "pattern", "max_matches", "context", "offset", "limit", "window_size", "max_rows"}
)  # fmt: skip


def _said(key: str, value: Any, message: str) -> bool:
    """Whether an error's field only repeats its message (``"handle": "h"`` after "h is text,
    not JSON") or says nothing (``"close_matches": []``)."""
    if key in _SAID_IN_THE_MESSAGE or value is None or value == [] or value == {}:
        return True
    if isinstance(value, str) and len(value) >= 3:
        return value in message
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 100:
        return f"{value:,}" in message or str(value) in message
    return False


def _for_the_model(err: dict[str, Any]) -> dict[str, Any]:
    """The error as the model reads it: each suggestion as ``tool`` and ``arguments`` (its call
    as it is made), not also as the ``call`` string people read (a third of a refusal's tokens),
    and no field that repeats the message (``_SAID_IN_THE_MESSAGE``)."""
    message = str(err.get("message", ""))
    out = {k: v for k, v in err.items() if k in ("error", "message", "suggestions") or not _said(k, v, message)}
    if out.get("suggestions"):
        out["suggestions"] = [{k: v for k, v in s.items() if k != "call"} for s in out["suggestions"]]
    return out


def _store_paths(pad: Scratchpad) -> list[str]:
    store = pad.store
    return [str(p) for p in (getattr(store, "path", None), getattr(store, "bodies_path", None)) if p]


def _shown_args(args: dict[str, Any]) -> dict[str, Any]:
    """The arguments echoed back, with huge strings cut (a model may send a megabyte of query)."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if isinstance(value, str) and len(value) > 2000:
            value = value[:2000] + "…"
        out[key] = value
    return out


def _plain_error(code: str, message: str) -> dict[str, Any]:
    return {"error": code, "message": message, "suggestions": []}


def _timeout_error(tool: _Tool, args: dict[str, Any], exc: ToolTimeout) -> dict[str, Any]:
    handle = args.get("handle")
    sugg: list[dict[str, Any]] = []
    literal = _literal_part(args["pattern"]) if tool.name == "grep" and isinstance(args.get("pattern"), str) else None
    if literal is not None and literal != args["pattern"]:
        # (the call's own ignore_case and path kept: "(?i)…" became a case-sensitive search)
        ignore_case = bool(args.get("ignore_case")) or bool(re.match(r"\(\?[a-zA-Z]*i", args["pattern"]))
        sugg.append(
            suggestion(
                "grep",
                "a plain (literal) part of the pattern is searched at disk speed",
                handle=handle,
                pattern=re.escape(literal),
                **({"ignore_case": True} if ignore_case else {}),
                **({"path": args["path"]} if args.get("path") else {}),
                max_matches=20,
            )
        )
    if tool.name == "read_handle" and args.get("match"):
        sugg.append(
            suggestion(
                "grep",
                "find the matching lines instead",
                handle=handle,
                pattern=str(args["match"]),
                context=0,
                max_matches=20,
            )
        )
    if handle is not None and tool.name != "schema":
        sugg.append(suggestion("schema", "see the structure, then ask for a narrower part", handle=handle))
    less = "a narrower path, a window, a simpler pattern"
    if tool.name == "sql":
        less = "a WHERE filter, an aggregate, fewer joined rows, a LIMIT"
        query = args.get("query")
        if isinstance(query, str) and re.match(r"\s*(select|with|from|values)\b", query, re.IGNORECASE):
            # (not dry-run: that would take a whole time limit again. Said as it is instead: a
            # plan usually comes back at once, but DuckDB computes constant expressions while
            # planning, and EXPLAIN SELECT list(range(0, 10000000)) ran out of time too)
            sugg.append(
                suggestion(
                    "sql",
                    "its plan, without running it; planning may take long too (DuckDB computes constant "
                    "expressions, such as a list(range(…)), while planning)",
                    query=f"EXPLAIN {query}",
                )
            )
    return {
        "error": "timeout",
        "message": f"{tool.name} ran longer than its {exc.limit_s:.3g} s limit and was stopped; only this "
        f"short error was charged. Ask for less ({less}).",
        "time_limit_s": float(f"{exc.limit_s:.3g}"),
        "suggestions": sugg,
    }


def _args_for_log(args: dict[str, Any]) -> str:
    """The arguments for a log line: bounded, whatever their size or depth (``%r`` of a note
    nested 1,000 deep raised RecursionError out of the handler meant to catch errors)."""
    import reprlib

    shown = reprlib.Repr()
    shown.maxlevel, shown.maxstring, shown.maxother = 4, 200, 200
    try:
        return shown.repr(args)
    except Exception:  # (a value whose repr fails)
        return f"<{len(args)} arguments>"


_BRACES = re.compile(r"\{(\d*)(?:,\d*)?\}")  # a repeat count, {m,n}
_CLASS_ESCAPES = frozenset("AbBdDsSwWzZpPQEnrtfv0123456789xuC")


def _literal_runs(pattern: str) -> list[str]:
    """The runs of text every match of an RE2 ``pattern`` holds as they are: what lies between its
    syntax (a class, an escape such as ``\\b`` or ``\\d``, a group, ``.``, an alternation, anchors), a
    character made optional by ``?``, ``*`` or ``{0,n}`` left out, and a run ended by a repeat.
    (A bare character class read ``.{0,1000}INFO`` as ``0,1000``, and ``\\bTimeout`` as ``bTimeout``.)"""
    runs: list[str] = []
    run: list[str] = []
    groups: list[list[int]] = []  # per open group: [runs before it, whether it has an alternation]
    closed: int | None = None  # the runs before the group that just closed (a quantifier may follow)

    def end() -> None:
        if run:
            runs.append("".join(run))
            run.clear()

    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        after_group, closed = closed, None
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt in _CLASS_ESCAPES:
                end()
                i += 2
                if nxt in "pPx" and i < n and pattern[i] == "{":  # \p{Greek}, \x{263a}
                    i = pattern.find("}", i) + 1 or n
                continue
            run.append(nxt)  # an escaped punctuation character is itself
            i += 2
            continue
        if ch == "[":  # a class: skip to its closing bracket
            end()
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        quantifier = _BRACES.match(pattern, i) if ch == "{" else None
        if ch in "*?" or quantifier is not None:
            optional = ch in "*?" or (quantifier is not None and quantifier.group(1) in ("", "0"))
            if optional and after_group is not None:
                del runs[after_group:]  # (the group before it may be absent)
            elif optional and run:
                run.pop()  # (the character before it may be absent)
            end()
            i = quantifier.end() if quantifier is not None else i + 1
            if i < n and pattern[i] == "?":  # a lazy quantifier
                i += 1
            continue
        if ch == "+":
            end()  # (the character before it is there, but not its neighbour after)
            i += 1
            continue
        if ch == "(":
            end()
            flags = re.match(r"\(\?[A-Za-z-]*[:)]|\(\?P?<\w+>", pattern[i:])
            if flags is None or flags.group().endswith((":", ">")):  # (not "(?i)": no group)
                groups.append([len(runs), 0])
            i += flags.end() if flags is not None else 1
            continue
        if ch == ")":
            end()
            if groups:
                start, alternation = groups.pop()
                if alternation:  # (a part of one side is not in every match)
                    del runs[start:]
                closed = start
            i += 1
            continue
        if ch == "|":
            if not groups:
                return []  # (an alternation at the top: no text is in every match)
            groups[-1][1] = 1
        if ch in ".|^$":
            end()
            i += 1
            continue
        run.append(ch)
        i += 1
    end()
    return runs


def _literal_part(pattern: str) -> str | None:
    """The longest text every match of ``pattern`` holds (at least 3 characters, stripped), what a
    literal search can use; None when there is none."""
    best = max((r.strip() for r in _literal_runs(pattern)), key=len, default="")
    return best if len(best) >= 3 else None


def _too_large(
    pad: Scratchpad, tool: _Tool, ctx: ToolContext, args: dict[str, Any], estimated: int, reason: str, limit: int
) -> dict[str, Any]:
    # a charged call's suggestions fit what is left of the budget too, not only the per-call limit,
    # and what is left once this refusal is charged
    fit = limit if reason == "page" else min(limit, pad.budget.remaining)
    unchecked: list[dict[str, Any]] = []  # (suggestions the call's time left unchecked)
    sugg = _suggest_within(pad, tool, ctx, args, estimated, fit, unchecked)
    if sugg and reason != "page":
        # (what the model will read of them: a long key in a suggestion is left out by bound_error)
        said = bound_error({"error": "", "message": "", "suggestions": sugg})
        cost = pad.tokenizer.count(json.dumps(said, ensure_ascii=False, default=str)) + REFUSAL_TOKENS
        if fit > pad.budget.remaining - cost:
            fit = max(0, pad.budget.remaining - cost)
            unchecked.clear()
            sugg = _suggest_within(pad, tool, ctx, args, estimated, fit, unchecked)
    if reason != "page" and (fit < MIN_ANSWER_TOKENS or (not sugg and fit < limit)):
        budget = pad.budget
        return {
            "error": "budget_exhausted",
            "message": (
                f"the context budget is spent: {budget.remaining:,} of {budget.usable:,} tokens are left and "
                f"{tool.name} would return about {estimated:,}; no smaller call fits. Answer with what you "
                "have (a note saved with scratch_write is always confirmed); only this short refusal was charged"
                + (f". {pad.budget_exhausted_note}" if pad.budget_exhausted_note else "")
            ),
            "estimated_tokens": estimated,
            "remaining_budget_tokens": budget.remaining,
            **_echo(ctx, tool.name, args),
            "suggestions": [],
        }
    key, what = {
        "per_call_limit": ("per_call_limit", f"the per-call limit of {limit:,} tokens"),
        "page": ("page_tokens", f"the page of {limit:,} tokens this view shows; nothing was charged"),
    }.get(reason, ("remaining_budget_tokens", f"the {limit:,} tokens left in the context budget"))
    left = f" (about {fit:,} tokens are left in the context budget for the next call)" if fit < limit else ""
    charged = "" if reason == "page" else "; only this short refusal was charged"
    late = _unchecked_words(unchecked) if unchecked else ""
    return {
        "error": f"{tool.name}_too_large",
        "message": f"{tool.name} would return about {estimated:,} tokens, over {what}{left}{charged}{late}",
        "estimated_tokens": estimated,
        key: limit,
        **({"remaining_budget_tokens": fit} if fit < limit and key != "remaining_budget_tokens" else {}),
        **_echo(ctx, tool.name, args),
        "suggestions": sugg,
    }


def _suggest_within(
    pad: Scratchpad,
    tool: _Tool,
    ctx: ToolContext,
    args: dict[str, Any],
    estimated: int,
    fit: int,
    unchecked: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The tool's suggestions, each checked to run and to fit in ``fit`` tokens."""
    if fit < MIN_ANSWER_TOKENS:  # no answer fits: its footer alone is about that long
        return []
    try:
        sugg = tool.suggest(ctx, args, estimated, fit)
    except Exception:  # suggestions are a courtesy; never let them hide the refusal
        log.exception("building suggestions for %s failed", tool.name)
        sugg = []
    handle = args.get("handle")
    sugg = verified_suggestions(pad, ctx, sugg, fit, handle, unchecked=unchecked)
    if isinstance(handle, str) and tool.name != "read_handle" and not any(map(carried_whole, sugg)):
        # none a model can be sent whole (each names a path 500,000 characters long, say): the
        # output's bytes, a window at a time, can always be read
        window = _text.read_handle_suggestions({"handle": handle}, estimated, fit)
        sugg += verified_suggestions(pad, ctx, window, fit, handle, unchecked=unchecked)
    return sugg


def _echo(ctx: ToolContext, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """What was asked, as Aura's refusals echo it: lines, path, window; for arrays their length."""
    out: dict[str, Any] = {}
    if name in ("head", "tail"):
        out["requested_lines"] = int(args.get("lines") or 50)
    elif name == "slice":
        out["requested_lines"] = f"{args.get('start')}-{args.get('end')}"
    elif name == "read_handle":
        out.update({k: args[k] for k in ("start", "end", "match", "window") if args.get(k) is not None})
    elif name in ("get_in", "item_schema", "iterate_over"):
        out["requested_path"] = _json._show(str(args.get("path") or "$"))
        out["offset"] = int(args.get("offset") or 0)
        if args.get("limit") is not None:
            out["limit"] = int(args["limit"])
        if name != "get_in":
            out["window_size"] = (
                int(args["limit"]) if args.get("limit") is not None else (50 if name == "iterate_over" else None)
            )
            with contextlib.suppress(Exception):  # the echo is a courtesy
                out["array_length"] = len(_json._items_at(ctx, ctx.entry(args.get("handle")), args.get("path") or "$"))
    elif name == "grep":
        out.update(
            {
                "pattern": str(args.get("pattern"))[:200],
                "max_matches": int(args.get("max_matches") or 100),
                "context": 3 if args.get("context") is None else int(args["context"]),
            }
        )
    elif name == "sql":
        out["max_rows"] = int(args.get("max_rows") or 200)
    elif name == "schema":
        depth = args.get("max_depth")
        out["max_depth"] = 4 if depth is None else int(depth)
    return {k: v for k, v in out.items() if v is not None}


_SHRINKABLE = ("limit", "max_matches", "lines", "window", "max_rows", "max_depth", "context")
FOOTER_ALLOWANCE = 48  # tokens of the footer a charged call adds to the text the dry run shows
MIN_ANSWER_TOKENS = 2 * FOOTER_ALLOWANCE  # the least budget in which a suggestion may fit
REFUSAL_TOKENS = 120  # a refusal's text besides its suggestions (message, echo), about


DRY_RUN_MIN_S = 1.0  # a suggestion is dry-run only while the call has this much time left
DRY_RUN_RESERVE_S = 0.1  # of the call's time, kept to answer once a dry run is done


def _dry_run(pad: Scratchpad, call: dict[str, Any], limit: int, deadline: float | None = None) -> ToolResult:
    """``call`` run as a check (uncharged, sliding nothing), within the time left before
    ``deadline`` (a call's own), never a fresh ``tool_timeout_s``: a suggestion's dry run started
    with 1.1 s left ran 10 s more, and the call answered after 15 s with a 10 s limit."""
    tool = TOOLS.get(call["tool"])
    if tool is not None and tool.changes:
        return _checked_not_run(tool, call["arguments"])
    timeout_s = pad.tool_timeout_s
    if deadline is not None:
        timeout_s = max(0.01, min(timeout_s, deadline - time.monotonic() - DRY_RUN_RESERVE_S))
    return dispatch(
        pad, call["tool"], call["arguments"], charge=False, slide=False, limit_tokens=limit, timeout_s=timeout_s
    )


def _checked_not_run(tool: _Tool, arguments: Any) -> ToolResult:
    """A suggested call that changes the store, checked as its call would check its arguments and
    never run: a refused ``scratch_write`` (a bad ``ttl_s``) wrote its note, over the one kept
    under the key, when its suggestion (the same write, ``ttl_s`` at its default) was dry-run."""
    try:
        args = _normalise_args(tool, arguments)
        _refuse_lone_surrogates(tool, args)
    except ToolError as err:
        return ToolResult(False, "", None, err.as_dict(), 0, tool.name, {})
    return ToolResult(True, "", None, None, 0, tool.name, args)


def _fits(pad: Scratchpad, call: dict[str, Any], limit: int, deadline: float | None = None) -> bool:
    res = _dry_run(pad, call, limit, deadline)
    return res.ok and pad.tokenizer.count(res.text) + FOOTER_ALLOWANCE <= limit


_ABOUT_FIT = re.compile(r"about [\d,]+ (\w+) fit")


_DEFAULT_WORDS = re.compile(r"\(default (\d+)\)")


def _default_of(tool_name: str, key: str, args: dict[str, Any]) -> int | None:
    """The default of ``tool_name``'s integer ``key``, as its description says it ("(default
    100)"); None when it has none to shrink from (item_schema's limit is "all", a byte range has
    no window)."""
    tool = TOOLS.get(tool_name)
    schema = tool.properties.get(key) if tool is not None else None
    if not schema or schema.get("type") != "integer" or (key == "window" and args.get("match") is None):
        return None
    found = _DEFAULT_WORDS.search(str(schema.get("description", "")))
    return int(found.group(1)) if found else None


def _shrunk(call: dict[str, Any]) -> dict[str, Any] | None:
    """The same call asking for about half as much, or None when nothing can shrink; a "why" of
    "about N lines fit" says the new number. An argument left to its default shrinks from it
    (a grep fixed to context=50 had nothing to shrink but its 100 matches, which it left out)."""
    args = dict(call["arguments"])
    for key in _SHRINKABLE:
        value = args.get(key)
        if value is None:
            value = _default_of(call["tool"], key, args)
        if isinstance(value, int) and not isinstance(value, bool) and value > (0 if key == "context" else 1):
            args[key] = value // 2 if key != "context" else 0
            why = call["why"] if key == "context" else _why(call["why"], args[key], key)
            return suggestion(call["tool"], why, **args)
    start, end = args.get("start"), args.get("end")
    if isinstance(start, int) and isinstance(end, int) and end - start > 1:
        args["end"] = start + (end - start) // 2
        span = args["end"] - start + (1 if call["tool"] == "slice" else 0)  # (slice's end is inclusive)
        return suggestion(call["tool"], _why(call["why"], span), **args)
    return None


def _why(why: str, amount: int, key: str | None = None) -> str:
    """``why`` saying the shrunk ``amount``: "about N lines fit", or ``key``'s new value where the
    why named another (a "'max_rows' at its maximum" shrunk to 1,250 still said "at its maximum")."""
    if _ABOUT_FIT.search(why) or key is None:
        return _ABOUT_FIT.sub(lambda m: f"about {amount:,} {m.group(1)} fit", why)
    said, n = re.subn(rf"'{re.escape(key)}' (?:at its \w+|[\d,]+, to fit)", f"'{key}' {amount:,}, to fit", why)
    return said if n else f"{why}; '{key}' {amount:,}, to fit"


def verified_suggestions(
    pad: Scratchpad,
    ctx: ToolContext,
    sugg: list[dict[str, Any]],
    limit: int,
    handle: Any,
    max_checks: int = 16,
    unchecked: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Every suggestion, executed as given with the same limit, is ok and fits: each is dry-run
    (uncharged) and shrunk until it fits, or dropped. When none is left, the cheapest views of the
    handle that fit are offered instead (never an empty list while something would fit).

    Each dry run has what is left of the call's time (``ctx``), no more: a suggestion the call's
    time did not let run (none left, or its dry run timed out) is not offered, as one that fails
    is not (every suggestion sent runs); ``unchecked`` gets it, for the error to say so.
    """
    out: list[dict[str, Any]] = []
    checks = 0

    def in_time() -> bool:
        return ctx.time_left() > DRY_RUN_MIN_S

    for call in sugg:
        current: dict[str, Any] | None = call
        while current is not None and checks < max_checks:
            if not in_time():
                if unchecked is not None:
                    unchecked.append(call)
                break
            checks += 1
            try:
                res = _dry_run(pad, current, limit, ctx.deadline)
            except Exception:  # a suggestion that cannot be checked is not offered
                log.debug("checking suggestion %s failed", current.get("call"), exc_info=True)
                break
            if res.ok and pad.tokenizer.count(res.text) + FOOTER_ALLOWANCE <= limit:
                if current["call"] not in {c["call"] for c in out}:
                    out.append(current)
                break
            if (res.error or {}).get("error") == "timeout":  # the call's time ran out: asking less is no check
                if unchecked is not None:
                    unchecked.append(call)
                break
            current = _shrunk(current)
    if not out and isinstance(handle, str):
        for fallback in (
            suggestion("schema", "the structure, one level", handle=handle, max_depth=1),
            suggestion("head", "the first lines", handle=handle, lines=5),
        ):
            if checks >= max_checks + 2 or not in_time():
                break
            checks += 1
            try:
                if _fits(pad, fallback, limit, ctx.deadline):
                    out.append(fallback)
            except Exception:
                continue
    return out


def _unchecked_words(unchecked: list[dict[str, Any]]) -> str:
    """What the error says of suggestions its call had no time left to check (and left out)."""
    calls = list(dict.fromkeys(str(c.get("tool", "?")) for c in unchecked))
    n = len(unchecked)
    return (
        f" ({n} suggested call{'' if n == 1 else 's'} ({', '.join(calls[:3])}) left out: this call's time "
        "ran out before it could check that they run)"
    )


def _slide(pad: Any, ctx: ToolContext) -> None:
    """A handle a call read successfully lives on (sliding TTL); failing to extend is no error."""
    for entry in ctx.used:
        try:
            pad.store.slide(pad.scope, entry, ctx.opened_at)
        except Exception:
            log.warning("could not extend the life of %s", entry.key, exc_info=True)


def dispatch(
    pad: Scratchpad,
    name: str,
    arguments: Any = None,
    *,
    charge: bool = True,
    prefix: str = "",
    slide: bool = True,
    limit_tokens: int | None = None,
    timeout_s: float | None = None,
) -> ToolResult:
    """Run tool ``name`` with ``arguments`` for ``pad``; see the module docstring.

    ``charge=False`` runs it for a person instead of a model: no per-call cap, no budget check,
    nothing charged (``tokens`` is 0 and the footer says so). ``prefix``: the names were published
    with it (``tool_specs(prefix=...)``); a name without it is unknown. ``slide=False``: a dry run
    that does not extend the life of the handles it reads. ``limit_tokens`` (uncharged calls): the
    limit the tool's early refusals use: a person's view bounded to a page (refused with
    suggestions, nothing charged, when the result is far larger), or a dry run checking whether a
    suggestion fits, which then never renders a node it can tell is far too large (a bare
    ``too_large``). ``timeout_s``: the call's time limit, when not ``pad.tool_timeout_s`` (a dry
    run has what is left of the call that checks it).
    """
    started = time.monotonic()
    call_timeout_s = pad.tool_timeout_s if timeout_s is None else timeout_s
    billed = pad if charge else None  # a person's mistakes are not charged to the agent either
    raw_args = dict(arguments) if isinstance(arguments, Mapping) else {}
    tool = None
    if isinstance(name, str) and name.startswith(prefix):
        tool = TOOLS.get(name[len(prefix) :])
    budget = pad.budget
    cap, remaining = budget.max_extraction_tokens, budget.remaining
    limit = min(cap, remaining) if charge else limit_tokens or UNCHARGED_LIMIT_TOKENS
    if tool is None:
        import difflib

        names = [prefix + n for n in TOOL_NAMES]
        close = difflib.get_close_matches(str(name), names, n=3, cutoff=0.5)
        return _error_result(
            str(name)[:100],
            raw_args,
            {
                "error": "unknown_tool",
                "message": f"there is no tool {str(name)[:100]!r}; the tools are: {', '.join(names)}",
                "close_matches": close,
                "suggestions": _near_calls(
                    pad, [c[len(prefix) :] for c in close], raw_args, limit, started + call_timeout_s
                ),
            },
            billed,
            prefix,
        )
    # (opened_at: a read that outlasts its handle's expiry still slides it; with the budget about
    # spent, a tool may still build an answer as short as a refusal: _charge returns it if it
    # costs no more than the refusal would)
    room = min(cap, max(remaining, REFUSAL_TOKENS)) if charge else limit
    ctx = ToolContext(
        pad, tool.name, room, timeout_s=call_timeout_s, charged=charge, opened_at=pad.store.now(), started=started
    )
    args: dict[str, Any] = dict(raw_args)
    try:
        args = _normalise_args(tool, arguments)
        _refuse_lone_surrogates(tool, args)
        output = tool.run(ctx, **args)
        # (a document's "\ud800" shown as it wrote it; the pretty body already writes the escape,
        # and the data holds the character still)
        if not is_utf8_text(output.text) or _SURROGATE_ESCAPE.search(output.text):
            output = Output(sendable(output.text), sendable_value(output.data), output.footer, output.meta)
        if prefix:  # the calls our text suggests name our tools as they were published (sp_get_in)
            output = _prefixed_calls(output, prefix, args.get("handle"), tool.name)
        # a person's page (the CLI's --max-tokens): the tools refuse early what they can estimate;
        # what they could not (lines of unknown length, rows, a long string) is measured once
        # built, and refused alike rather than printed (count_upto is exact only when it fits)
        paged = not charge and slide and limit_tokens is not None
        if paged and not pad.tokenizer.count_upto(output.text, limit + 1)[1]:
            raise TooLarge(pad.tokenizer.count(output.text))
        result = _charge(pad, tool, ctx, args, output, prefix) if charge else _uncharged(tool, args, output)
        if result.ok and slide:  # a dry run (checking a suggestion) is nobody's read
            _slide(pad, ctx)
        return result
    except ToolError as err:
        error = err.as_dict()
        if error.get("error") == "invalid_path" and not error.get("suggestions"):
            # a wildcard where a path goes (copied from schema's $.items[*].metadata.name): the
            # same question as calls that take no wildcard
            error["suggestions"] = _json.wildcard_suggestions(tool.name, args)
        # (sql_busy's one suggestion is the same query, which never ran: checking it would wait again)
        if charge and error.get("suggestions") and error.get("error") != "sql_busy":
            # every suggestion of every error runs and fits
            # ... what is left once this error is charged (it was checked against what was left
            # before: near the end of the budget a suggestion of a key_path_not_found was refused)
            cost = pad.tokenizer.count(json.dumps(bound_error(error), ensure_ascii=False, default=str))
            fit = max(0, min(limit, pad.budget.remaining - cost))
            unchecked: list[dict[str, Any]] = []
            error["suggestions"] = verified_suggestions(
                pad, ctx, error["suggestions"], fit, args.get("handle"), unchecked=unchecked
            )
            if unchecked:
                error["message"] = str(error.get("message", "")) + _unchecked_words(unchecked)
        return _error_result(tool.name, args, error, billed, prefix)
    except TooLarge as big:  # a charged call, or an uncharged one given limit_tokens, has a limit
        if not charge and not slide:  # a dry run: the answer is only "does not fit"
            error = {"error": "too_large", "message": f"about {big.estimated_tokens:,} tokens", "suggestions": []}
            return _error_result(tool.name, args, error, None, prefix)
        if not charge:
            refusal = _too_large(pad, tool, ctx, args, big.estimated_tokens, "page", limit)
            return _error_result(tool.name, args, refusal, None, prefix)
        reason, limit = ("per_call_limit", cap) if big.estimated_tokens > cap else ("remaining_budget", remaining)
        refusal = _too_large(pad, tool, ctx, args, big.estimated_tokens, reason, limit)
        return _error_result(tool.name, args, refusal, billed, prefix)
    except ToolTimeout as exc:
        return _error_result(tool.name, args, _timeout_error(tool, args, exc), billed, prefix)
    except InvalidArgumentError as exc:
        return _error_result(tool.name, args, _plain_error("invalid_argument", exc.message), billed, prefix)
    except ScratchpadError as exc:
        error = _plain_error("store_error", exc.message)
        if exc.context.get("damaged") and isinstance(exc.context.get("handle"), str):  # (a body cut short)
            error["suggestions"] = [
                suggestion("scratch_delete", "remove the damaged handle", handle=exc.context["handle"])
            ]
        return _error_result(tool.name, args, error, billed, prefix)
    except FileNotFoundError:  # a body removed while it was read (by a sweep, a delete, another process)
        return _error_result(tool.name, args, _plain_error("store_error", removed_while_read().message), billed, prefix)
    except (ValueError, TypeError, OverflowError) as exc:  # an argument our checks let through
        log.warning("tool %s rejected %s: %s", tool.name, _args_for_log(args), exc)
        return _error_result(
            tool.name,
            args,
            {"error": "invalid_argument", "message": f"{tool.name}: {type(exc).__name__}: {exc}", "suggestions": []},
            billed,
            prefix,
        )
    except RecursionError as exc:
        log.exception("tool %s recursed too deeply on %s", tool.name, _args_for_log(args))
        return _error_result(
            tool.name,
            args,
            {"error": "internal_error", "message": f"{tool.name} failed: {exc}", "suggestions": []},
            billed,
            prefix,
        )
    except Exception as exc:  # a bug of ours must not crash an agent loop; it is logged loudly
        log.exception("tool %s failed on %s", tool.name, _args_for_log(args))
        return _error_result(
            tool.name,
            args,
            {
                "error": "internal_error",
                "message": f"{tool.name} failed: {type(exc).__name__}: {exc}",
                "suggestions": [],
            },
            billed,
            prefix,
        )


# tools whose text is the document itself (a log line that says grep(handle="h") is shown as stored)
_DOCUMENT_TEXT = frozenset({"read", "read_handle", "sql", "scratch_read"})
_NUMBERED_LINE = re.compile(r">?\d+\t")  # a document's line, as the line tools number it


def _prefixed_calls(output: Output, prefix: str, handle: Any, tool: str = "") -> Output:
    """``output`` with each call it suggests on ``handle`` (``get_in(handle="h", ...)``, in its
    ``next:`` line, a heading's or a cut cell's pointer) naming the tool with ``prefix``. Only our
    own words are rewritten: not a tool's text that is the document (``read``, ``sql``...), not a
    numbered line of it (head, grep...), and in the data only a cut value's pointer; a document's
    value written as JSON escapes its quotes, so the pattern never matches inside one."""
    if not isinstance(handle, str) or tool in _DOCUMENT_TEXT or f'(handle="{handle}"' not in output.text:
        return output
    names = "|".join(sorted(map(re.escape, TOOL_NAMES), key=len, reverse=True))
    call = re.compile(rf'(?<![\w$.\-])(?:{names})(?=\(handle="{re.escape(handle)}")')

    def ours(line: str) -> str:
        if "(handle=" not in line or _NUMBERED_LINE.match(line):
            return line
        return call.sub(lambda m: prefix + m.group(), line)

    def fix(value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            # (a cut value's pointer: "<its first characters>… [+N chars: get_in(…)]")
            return call.sub(lambda m: prefix + m.group(), value) if "… [" in value and "(handle=" in value else value
        if depth > 20 or not isinstance(value, (dict, list)):
            return value
        if isinstance(value, dict):
            return {k: fix(v, depth + 1) for k, v in value.items()}
        return [fix(v, depth + 1) for v in value]

    text = "\n".join(ours(line) for line in output.text.split("\n"))
    return Output(text, fix(output.data), output.footer, output.meta)


def _near_calls(
    pad: Scratchpad, names: list[str], args: dict[str, Any], limit: int, deadline: float | None = None
) -> list[dict[str, Any]]:
    """The call meant, for a misspelt tool name: the same arguments (those the tool takes), offered
    only when they are all it needs (``head()`` alone would fail: head needs 'handle') and the
    call, dry-run, succeeds within ``limit``. A tool that changes the store is never offered as
    a call (``close_matches`` names it): a suggestion is run as it is, and a misspelt read tool
    (``search_bytes`` with a handle) suggested ``scratch_delete`` of that handle."""
    out = []
    for n in names:
        tool = TOOLS[n]
        kept = {k: v for k, v in args.items() if k in tool.properties}
        if tool.changes or not all(r in kept for r in tool.required):
            continue
        call = suggestion(n, "a tool with a similar name, the same arguments", **kept)
        if deadline is not None and deadline - time.monotonic() <= DRY_RUN_RESERVE_S:
            break  # (the call's time: a dry run each had a fresh tool_timeout_s)
        try:
            if _fits(pad, call, limit, deadline):
                out.append(call)
        except Exception:
            log.debug("checking %s failed", call["call"], exc_info=True)
    return out


def _uncharged(tool: _Tool, args: dict[str, Any], output: Output) -> ToolResult:
    text = output.text
    if output.footer is not None:
        # The footer's slot for this call's tokens says what happened instead: nothing was charged.
        summary = getattr(output.footer, "summary", None) or output.footer(10**9, 0, 0).split(" · tokens:", 1)[0]
        text = f"{text}\n--- {summary} · read as you: not charged to the agent's budget ---"
    meta = {**output.meta, "charged": False}
    return ToolResult(True, text, output.data, None, 0, tool.name, args, meta)


def _charge(
    pad: Scratchpad, tool: _Tool, ctx: ToolContext, args: dict[str, Any], output: Output, prefix: str = ""
) -> ToolResult:
    tokenizer = pad.tokenizer
    budget = pad.budget
    text = output.text
    if output.footer is None:
        tokens = tokenizer.count(text)
    else:
        # The footer reports this call's own tokens: settle the number in a couple of rounds. A
        # footer starts with "-" after a newline, where tiktoken's pieces always break, so the
        # body is counted once and only the footer again (exact counts add up; Claude's scaled
        # estimate does not, so it recounts the whole).
        additive = not tokenizer.is_estimate
        head = f"{output.text}\n"
        head_tokens = tokenizer.count(head) if additive else 0
        guess = head_tokens
        full, counted = head, head_tokens
        for _ in range(4):
            footer = (
                output.footer(guess, budget.used + guess, max(0, budget.remaining - guess), estimate=True)
                if tokenizer.is_estimate and isinstance(output.footer, _text.BudgetFooter)
                else output.footer(guess, budget.used + guess, max(0, budget.remaining - guess))
            )
            full = head + footer
            counted = head_tokens + tokenizer.count(footer) if additive else tokenizer.count(full)
            if counted == guess:
                break
            guess = counted
        text, tokens = full, counted
    refusal = budget.try_charge(tokens)
    if refusal is not None and tool.changes:
        # the note is written or the entry deleted: a refusal would say it was not. The short
        # confirmation is charged whatever is left, as an error's short text is
        budget.charge_unconditionally(tokens)
        refusal = None
    if refusal is not None:
        err = _too_large(pad, tool, ctx, args, tokens, refusal.reason, refusal.limit)
        if refusal.reason == "remaining_budget":
            # an answer no longer than the refusal would be (a 4-token note, refused by 87 tokens
            # with the budget spent) is shown instead: it overdraws the budget no more than the
            # refusal, which charges its own text, would, and it is what the model asked for
            said = _error_text(_prefixed(err, prefix), pad)[1]
            if tokens <= tokenizer.count(said):
                budget.charge_unconditionally(tokens)
                refusal = None
        if refusal is not None:
            return _error_result(tool.name, args, err, pad, prefix)
    pad._record_extraction(tokens)
    return ToolResult(True, text, output.data, None, tokens, tool.name, args, output.meta)
