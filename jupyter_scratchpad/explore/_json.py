"""Structure tools: item_schema, get_in, iterate_over (``schema`` lives in _schema.py)."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from .._bounded import clip_middle
from ..store import Entry
from ..store._jsontext import render_json
from ._base import Output, TooLarge, ToolContext, ToolError, call_repr, suggestion
from ._paths import LazyArray, PathError, PathMiss, Step, format_path, kind_of, parse_path, resolve
from ._segments import holds_lazy
from ._shape import MAX_ITEM_KEYS, Check, ItemKeyCounts, field_name, item_key_counts, telling_fields
from ._text import _positive_int, budget_footer, numbered

__all__ = ["get_in", "item_schema", "iterate_over"]

STRING_LINES = 5
STRING_CHARS = 600
PATH_SHOWN_BYTES = 160  # a path echoed in a header or footer (a 10,000-deep path is 30 KB)


def _a(kind: str) -> str:
    """``kind`` with its article: "an object", "a string"."""
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _show(path: str) -> str:
    return clip_middle(path, PATH_SHOWN_BYTES, unit="chars of the path")


# -- item_schema ------------------------------------------------------------------------------


def _steps_or_error(path: object) -> list[Step]:
    try:
        return parse_path(path)
    except PathError as exc:
        raise ToolError("invalid_path", str(exc), argument="path") from None


def _resolve_or_error(entry: Entry, value: Any, path: str) -> Any:
    steps = _steps_or_error(path)
    try:
        return resolve(value, steps, path)
    except PathMiss as miss:
        raise _path_not_found(entry, miss) from None


def _path_not_found(entry: Entry, miss: PathMiss) -> ToolError:
    prefix = format_path(miss.valid_prefix)
    fields: dict[str, Any] = {
        "requested_path": miss.requested,
        "valid_prefix": prefix,
        "failed_segment": miss.failed.value,
    }
    suggestions = []
    descent = _DESCENT.search(str(miss.requested))
    if descent:  # $..name (JSONPath's recursive descent): every line that holds the key
        key = descent.group(1)
        suggestions.append(suggestion("grep", f"every {key!r} at any depth", handle=entry.key,
                                      pattern=re.escape(json.dumps(key) + ":"), max_matches=20))  # fmt: skip
    node = miss.node
    if isinstance(node, dict):
        keys = list(node)
        fields["available_keys"] = keys[:100]
        if len(keys) > 100:
            fields["available_keys_total"] = len(keys)
        for close in difflib.get_close_matches(str(miss.failed.value), [str(k) for k in keys], n=3, cutoff=0.5):
            suggestions.append(
                suggestion(
                    "get_in",
                    "a key with a similar name",
                    handle=entry.key,
                    path=format_path([*miss.valid_prefix, Step(close, True)]),
                )
            )
    elif isinstance(node, (list, LazyArray)):
        fields["array_length"] = len(node)
        suggestions += _jsonpath_suggestions(entry, miss, prefix, node)
        if node:
            suggestions.append(
                suggestion(
                    "get_in", "the first item", handle=entry.key, path=format_path([*miss.valid_prefix, Step(0)])
                )
            )
            suggestions.append(suggestion("item_schema", "the keys of the items", handle=entry.key, path=prefix))
    else:
        fields["value_type"] = kind_of(node)
        suggestions.append(suggestion("get_in", "the value that is there", handle=entry.key, path=prefix))
    embedded = entry.meta.get("embedded") or []
    if embedded:  # the path may run through a string that holds a document
        fields["embedded_documents"] = [f"{e['path']} ({e['format']})" for e in embedded[:5]]
        inside = next((e for e in embedded if prefix.startswith(e["path"])), embedded[0])  # the one the path ran into
        suggestions.append(suggestion("schema", "a document inside a string", handle=entry.key, path=inside["path"]))
    suggestions.append(suggestion("schema", "see the structure", handle=entry.key))
    return ToolError(
        "key_path_not_found", f"path {miss.requested!r} not found: at {prefix}, {miss.reason}", suggestions, **fields
    )


_KEY = r"[A-Za-z_][A-Za-z0-9_-]*"  # a key a dotted path can name
_DESCENT = re.compile(rf"\.\.({_KEY})")
_SLICE = re.compile(r"(-?\d*)\s*:\s*(-?\d*)")
_FILTER = re.compile(  # (its keys go into SQL unquoted: no "-" in them)
    r"\?\s*\(?\s*@((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*(==|!=|<=|>=|<|>)\s*"
    r"(?:'([^'\\]*)'|\"([^\"\\]*)\"|(-?\d+(?:\.\d+)?))\s*\)?"
)


def _jsonpath_suggestions(entry: Entry, miss: PathMiss, prefix: str, node: Sequence[Any]) -> list[dict[str, Any]]:
    """JSONPath a model may write where an index goes, asked without it: a slice (``[10:12]``) as a
    window of the array, a filter (``[?(@.status.phase=='Failed')]``) as SQL over the array's rows
    (the path's rest as the column, ``.metadata.name``; else a few fields that say what an item
    is) and their count, and for ``==`` a grep for the member (never for ``!=``: a grep finds
    the lines that have the value, the very items the filter leaves out)."""
    failed = miss.failed.value
    if not isinstance(failed, str) or not node:
        return []
    out: list[dict[str, Any]] = []
    window = _SLICE.fullmatch(failed.strip())
    if window:
        a, b = (int(x) if x else None for x in window.groups())
        lo, hi, _ = slice(a, b).indices(len(node))
        if hi > lo:
            keys = _first_keys(node)
            if keys:
                out.append(suggestion("iterate_over", f"items {lo:,}-{hi - 1:,} of {prefix}", handle=entry.key,
                                      path=prefix, fields=",".join(keys), offset=lo, limit=hi - lo))  # fmt: skip
            out.append(suggestion("get_in", f"item {lo:,}", handle=entry.key, path=f"{prefix}[{lo}]"))
        return out
    found = _FILTER.fullmatch(failed.strip())
    if not found:
        return []
    field, op, quoted, dquoted, number = found.groups()
    field = field[1:]
    value = quoted if quoted is not None else dquoted
    relation = entry.key if prefix == "$" else None
    for name, keys in entry.meta.get("sql_arrays") or []:
        if prefix == "$." + ".".join(keys):
            relation = f"{entry.key}.{name}"
    if relation is not None:
        literal = number if value is None else "'" + value.replace("'", "''") + "'"
        sql_op = {"==": "=", "!=": "<>"}.get(op, op)
        where = f"FROM {relation} WHERE {field} {sql_op} {literal}"
        # what the path asked of each item (its tail: .metadata.name), else the fields that say
        # what an item is, the filter's own among them (SELECT * was 5 clipped struct columns a row)
        columns = _sql_tail(miss)
        if not columns:
            columns = [f for f in _first_keys(node, 3) if _SQL_FIELD.fullmatch(f)]
            columns += [] if field in columns else [field]
        shown = f"{field} {op} {value if value is not None else number}"
        out.append(suggestion("sql", f"the items of {prefix} where {shown}",
                              query=f"SELECT {', '.join(columns)} {where} LIMIT 20"))  # fmt: skip
        out.append(suggestion("sql", f"how many items of {prefix} have {shown}", query=f"SELECT count(*) {where}"))
    if op == "==":  # (never for !=: a grep finds the lines that have the value, not those without)
        shown_value = json.dumps(value, ensure_ascii=False) if value is not None else number
        member = f"{json.dumps(field.rsplit('.', 1)[-1])}: {shown_value}"  # as the body writes it
        pattern = re.sub(r"([.^$*+?{}\[\]\\|()])", r"\\\1", member) + ",?$"  # (re.escape escapes spaces too)
        out.append(suggestion("grep", f"the lines with {member} in {prefix}, each with its item's path",
                              handle=entry.key, path=prefix, pattern=pattern, context=0, max_matches=20))  # fmt: skip
    return out


_SQL_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _sql_tail(miss: PathMiss) -> list[str]:
    """The rest of a path after its filter (``.metadata.name`` of ``$.items[?(…)].metadata.name``)
    as one SQL column (``metadata.name``; an index as DuckDB's, from 1); none when there is no
    rest, or it is not one SQL can name as written."""
    try:
        steps = parse_path(miss.requested)
    except PathError:
        return []
    rest = steps[len(miss.valid_prefix) + 1 :]
    parts: list[str] = []
    for step in rest:
        if isinstance(step.value, int) and not step.quoted:
            if not parts:
                return []
            parts[-1] += f"[{step.value + 1 if step.value >= 0 else step.value}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(step.value)):
            parts.append(str(step.value))
        else:
            return []
    return [".".join(parts)] if parts else []


def _as_items(entry: Entry, node: Any, path: str) -> Sequence[Any]:
    if isinstance(node, (list, LazyArray)):
        return node
    sugg = []
    if isinstance(node, dict):
        base = _steps_or_error(path)
        for key, v in node.items():
            if isinstance(v, (list, LazyArray)):
                sugg.append(
                    suggestion(
                        "item_schema",
                        f"{key!r} is an array of {len(v):,}",
                        handle=entry.key,
                        path=format_path([*base, Step(str(key), True)]),
                    )
                )
            if len(sugg) >= 3:
                break
    sugg.append(suggestion("schema", "see the structure", handle=entry.key))
    raise ToolError(
        "not_an_array", f"{path or '$'} is {_a(kind_of(node))}, not an array", sugg, path=path, value_type=kind_of(node)
    )


def _canonical(path: str) -> str:
    if isinstance(path, str) and path.rstrip().endswith("{*}"):
        return format_path(_steps_or_error(path.rstrip()[:-3] or "$")) + "{*}"
    return format_path(_steps_or_error(path))


_WILDCARD = re.compile(r"\[\s*\*?\s*\]")
_DESCENT = re.compile(r"\.\.+\s*(?:\[\s*[\"']([^\"']*)[\"']\s*\]|([^.\[\s]*))")
_DOTTED = re.compile(rf"(?:\.{_KEY})+")


def _array_path(path: Any) -> Any:
    """The path of an array as tools that take one read it: ``$.items[*]`` (every item, as
    ``schema`` writes it) is the array ``$.items``. Any other path as given."""
    if isinstance(path, str):
        text = path.rstrip()
        last = list(_WILDCARD.finditer(text))
        if last and last[-1].end() == len(text):
            return text[: last[-1].start()].rstrip() or "$"
    return path


def wildcard_suggestions(tool: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """What a path with a wildcard (``$.items[*].metadata.name``, copied from ``schema``) asked for,
    as calls that take no wildcard: the array's items with the rest as a field, or the first item."""
    path, handle = args.get("path"), args.get("handle")
    if not isinstance(path, str) or not isinstance(handle, str):
        return []
    descent = _DESCENT.search(path)
    if descent is not None:  # $..name: where the key is, each match with its path
        key = descent.group(1) if descent.group(1) is not None else descent.group(2)
        pattern = re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:"
        where = [suggestion("grep", f"where {key!r} is, each match with its path", handle=handle,
                            pattern=pattern, max_matches=20)] if key not in ("", "*") else []  # fmt: skip
        return [*where, suggestion("schema", "every path of the document", handle=handle)]
    found = _WILDCARD.search(path)
    if found is None:
        return _trailing_dots(tool, args, path)
    array = path[: found.start()].rstrip() or "$"
    rest = path[found.end() :].strip()
    dotted = _DOTTED.match(rest)
    field = dotted.group(0)[1:] if dotted else ""  # up to the next bracket: a field of each item
    first = _WILDCARD.sub("[0]", path)
    try:
        parse_path(array)
        parse_path(first)
    except PathError:
        return []
    out: list[dict[str, Any]] = []
    if tool == "get_in":
        if field:
            out.append(suggestion("iterate_over", f"{field} of every item of {array}", handle=handle, path=array,
                                  fields=field, limit=50))  # fmt: skip
        out.append(suggestion("get_in", "the same path in the first item", handle=handle, path=first))
    elif tool == "iterate_over":
        try:
            given = _fields(args.get("fields")) if args.get("fields") is not None else []
        except ToolError:
            given = []
        names = [f"{field}.{g}" for g in given] if field and given else [field] if field else given
        window = {k: args[k] for k in ("offset", "limit") if args.get(k) is not None}
        if names and (field or not rest):
            out.append(suggestion("iterate_over", f"every item of {array}", handle=handle, path=array,
                                  fields=",".join(names), **window))  # fmt: skip
    elif tool == "item_schema":
        out.append(suggestion("item_schema", f"the keys of every item of {array} (dotted, {field or 'all'} among them)",
                              handle=handle, path=array))  # fmt: skip
    elif tool == "schema":
        out.append(suggestion("schema", "the same path in the first item", handle=handle, path=first))
        out.append(suggestion("item_schema", f"the keys of every item of {array}", handle=handle, path=array))
    elif tool == "grep" and isinstance(args.get("pattern"), str):
        same = {k: v for k, v in args.items() if k not in ("handle", "path") and v is not None}
        out.append(suggestion("grep", f"search every item of {array}", handle=handle, path=array, **same))
    return out


def _trailing_dots(tool: str, args: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """A path that ends in dots (``$..``, ``..``, ``$.items.``): the same call without them."""
    if not path.rstrip().endswith("."):
        return []
    fixed = path.rstrip().rstrip(".").rstrip() or "$"
    try:
        parse_path(fixed)
    except PathError:
        return []
    same = {k: v for k, v in args.items() if v is not None}
    return [suggestion(tool, f"the path without its trailing dots: {_show(fixed)}", **{**same, "path": fixed})]


def _items_at(ctx: ToolContext, entry: Entry, path: str) -> Sequence[Any]:
    """The items at ``path``: an array's items, or with a final ``{*}`` the values of an object
    keyed by ids (what ``schema`` shows as a ``{*}`` row)."""
    if isinstance(path, str) and path.rstrip().endswith("{*}"):
        base = path.rstrip()[:-3] or "$"
        # a streamed spill: from its skeleton or one segment; an object that holds the streamed
        # array (the root of a PodList) has it as a lazy value, an "array" to every item count
        node = _node_at(ctx, entry, base, lazy=True)
        if not isinstance(node, dict):
            raise ToolError(
                "not_an_object",
                f"{base} is {_a(kind_of(node))}: {{*}} takes the values of an object",
                [suggestion("schema", "see the structure", handle=entry.key)],
                path=path,
            )
        return list(node.values())
    return _as_items(entry, _node_at(ctx, entry, path, whole_array=True, lazy=True), path)


def _node_at(ctx: ToolContext, entry: Entry, path: str, whole_array: bool = False, lazy: bool = False) -> Any:
    """The node at ``path``. When the spill streamed a big array: from its skeleton or the one
    segment that holds it (never the whole document parsed); the array itself as ``SegmentedItems``
    with ``whole_array``, and with ``lazy`` also a node that holds it. Else from the whole value."""
    from ._segments import MISSING, streamed_node

    _steps_or_error(path)  # a path that is not one is refused first, not after a parse of the whole body
    try:
        node = streamed_node(ctx, entry, path, whole_array, lazy)
    except PathMiss as miss:
        raise _path_not_found(entry, miss) from None
    return node if node is not MISSING else _resolve_or_error(entry, ctx.json_value(entry), path)


def _window(offset: Any, limit: Any, total: int, default_limit: int | None) -> tuple[int, int]:
    offset = _positive_int(offset, "offset", 0)
    if limit is None:
        limit = default_limit if default_limit is not None else max(total - offset, 0)
    else:
        limit = _positive_int(limit, "limit")
    return offset, min(total, offset + limit)


def _past_the_end(
    ctx: ToolContext, entry: Entry, path: str, offset: int, total: int, unit: str, page: int, **extra: Any
) -> None:
    """``offset_out_of_range`` (Aura's code) for an offset at or past the end; never a negative window."""
    if offset == 0 or offset < total:
        return
    last = max(0, total - page)
    sugg = (
        [
            suggestion(
                ctx.tool,
                f"the last {min(page, total):,} {unit}",
                handle=entry.key,
                path=path,
                **extra,
                offset=last,
                limit=max(1, min(page, total)),
            )
        ]
        if total
        else []
    )
    raise ToolError(
        "offset_out_of_range",
        f"offset {offset:,} is past the end: {path} has {total:,} {unit}",
        sugg,
        offset=offset,
        **({"total_lines": total} if unit == "lines" else {"total_items": total, "array_length": total}),
    )


def item_schema(ctx: ToolContext, handle: str, path: str = "$", offset: int = 0, limit: int | None = None) -> Output:
    entry = ctx.entry(handle)
    path = _array_path(path)
    saved = _saved_item_counts(ctx, entry, path) if not offset and limit is None else None
    if saved is not None:  # the whole array, counted after the spill: no parse, no pass
        total, counts, enums = saved
        lo, hi = 0, total
    else:
        items = _items_at(ctx, entry, path)
        total = len(items)
        lo, hi = _window(offset, limit, total, None)
        _past_the_end(ctx, entry, _canonical(path), lo, total, "items", max(1, hi - lo) if limit else 50)
        counts, enums = _item_counts(entry, _canonical(path), lo, hi, items, ctx.check_time)
    n = hi - lo
    rows: list[dict[str, Any]] = [
        {"key": k, "types": "|".join(t for t, _ in c.most_common()), "present": sum(c.values()), "of": n}
        for k, c in sorted(counts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    ]
    for row in rows:
        if row["key"] in enums:
            row["values"] = [[v, n] for v, n in enums[row["key"]]]
    canonical = _canonical(path)
    rows = _fold_same_shape(rows, canonical)
    if hi - lo < total or lo:
        size = max(1, hi - lo)
        window = f"items {lo:,}-{hi - 1:,} of {total:,} (window {lo // size + 1:,} of {-(-total // size):,})"
    else:
        window = f"all {total:,} items"
    width = min(60, max([3, *(len(r["key"]) for r in rows)]))  # (at least the header's "key")
    twidth = min(48, max([4, *(len(r["types"]) for r in rows)]))
    lines = [
        f"item_schema of {_show(canonical)} in {entry.key}: {window}",
        f"{'key':<{width}}  {'type':<{twidth}}  present",
    ]
    lines += [
        f"{r['key']:<{width}}  {r['types']:<{twidth}}  {_present(r)}"
        + ("  values: " + ", ".join(f"{_value_text(v)} ×{n}" for v, n in r["values"]) if r.get("values") else "")
        for r in rows
    ]
    if len(counts) >= MAX_ITEM_KEYS:
        lines.append(f"… more than {MAX_ITEM_KEYS} distinct keys; narrow the window or the path")
    if any(r["key"].endswith("{*}") for r in rows):  # (many keys, each in few objects: counted as one)
        lines.append(
            "{*}: the values of many distinct keys, each held by under 1% of the objects there, counted "
            "together (schema names some of them)"
        )
    data = {"handle": entry.key, "path": canonical, "offset": lo, "limit": hi - lo, "total_items": total, "keys": rows}
    return Output("\n".join(lines), data, budget_footer(window))


def _present(row: dict[str, Any]) -> str:
    """In how many of the items a key is: ``all`` (a column of ``2000/2000`` was a sixth of the
    table), else ``828/2000``."""
    return "all" if row["present"] == row["of"] else f"{row['present']}/{row['of']}"


def _value_text(value: str) -> str:
    """A field value in item_schema's values list: bare when unambiguous, else JSON-quoted."""
    plain = value and value == value.strip() and not any(c in value for c in ',×"\n')
    return value if plain else json.dumps(value, ensure_ascii=False)


_ITEM_COUNTS: dict[tuple[Any, ...], Any] = {}
_ITEM_COUNTS_MAX = 64
# v2: a key that holds a dot is named in brackets (v1 joined it with dots: not a field iterate_over reads)
_ITEMS_FILE = "items-v2-{digest}.json"


def _items_file(body_dir: Path, canonical: str) -> Path:
    return body_dir / _ITEMS_FILE.format(digest=hashlib.sha1(canonical.encode()).hexdigest()[:16])


def precompute_item_counts(
    body_dir: Path,
    body_id: str,
    value: Any,
    streamed: tuple[list[str], ItemKeyCounts] | None = None,
    check: Check = None,
) -> None:
    """item_schema of every array of records a spill found (the root array, ``$.items``,
    ``$.data.rows`` …), over all its items, from the value the spill parsed: kept in memory and
    saved beside the body, so a cold item_schema of the whole array is a file read.

    ``streamed``: the keys of an array the spill read a segment at a time and its counts, merged
    over the segments (``value`` then holds only its first items)."""
    from ._relations import array_relations
    from ._schema import save_beside_body

    targets: list[tuple[str, list[str]]] = []
    if isinstance(value, list):
        targets.append(("$", []))
    for _name, keys in array_relations(value):
        targets.append((_canonical("$." + ".".join(keys)), keys))
    for canonical, keys in targets:
        if streamed is not None and keys == streamed[0]:
            total, counts, enums = streamed[1].total, streamed[1].counts, streamed[1].enums()
        else:
            items = value
            for k in keys:
                items = items[k]
            enums = {}
            counts = item_key_counts(items, enums, check=check)
            total = len(items)
        _remember_whole(body_id, canonical, total, counts, enums)
        path = _items_file(body_dir, canonical)
        counted = {k: dict(c) for k, c in counts.items()}
        save_beside_body(path, {"path": canonical, "total": total, "counts": counted, "enums": enums})


def _remember_counts(key: tuple[Any, ...], value: Any) -> None:
    _ITEM_COUNTS[key] = value
    while len(_ITEM_COUNTS) > _ITEM_COUNTS_MAX:
        _ITEM_COUNTS.pop(next(iter(_ITEM_COUNTS)), None)


def _remember_whole(body_id: str, canonical: str, total: int, counts: Any, enums: Any) -> None:
    """The counts of a whole array: as its first window, and as the whole (with its length)."""
    _remember_counts((body_id, canonical, 0, total), (counts, enums))
    _remember_counts((body_id, canonical, "all"), (total, counts, enums))


def _saved_item_counts(ctx: ToolContext, entry: Entry, path: str) -> tuple[int, Any, Any] | None:
    """``(total, counts, enums)`` of the whole array at ``path`` if the spill counted it, else None."""
    if entry.format != "json" or entry.body_id is None or not isinstance(path, str) or path.rstrip().endswith("{*}"):
        return None
    try:
        canonical = _canonical(path)
    except ToolError:
        return None  # the normal path explains a bad path
    from ._schema import PENDING_RESERVE_S, wait_for_schema

    # the spill's worker may still be on it; past this, the call counts the items itself
    wait_for_schema(entry.body_id, ctx.time_left() - PENDING_RESERVE_S)
    whole = _ITEM_COUNTS.get((entry.body_id, canonical, "all"))
    if whole is not None:
        return whole  # type: ignore[no-any-return]
    try:
        saved = orjson.loads(_items_file(ctx.reader(entry).directory, canonical).read_bytes())
        if saved["path"] != canonical:
            return None
        counts = {k: Counter(v) for k, v in saved["counts"].items()}
        enums = {k: [(v, n) for v, n in pairs] for k, pairs in saved["enums"].items()}
        total = int(saved["total"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _remember_whole(entry.body_id, canonical, total, counts, enums)
    return total, counts, enums


def _item_counts(entry: Entry, canonical: str, lo: int, hi: int, items: Sequence[Any], check: Check = None) -> Any:
    """``item_key_counts`` of a window, computed once per body, path and window: bodies never
    change, so a repeated item_schema (or a suggestion's dry run) costs a lookup, not a pass."""
    key = (entry.body_id, canonical, lo, hi)
    if entry.body_id is not None:
        hit = _ITEM_COUNTS.get(key)
        if hit is not None:
            return hit
    enums: dict[str, list[tuple[str, int]]] = {}
    window = items[lo:hi]  # (a list, also from SegmentedItems)
    counts = item_key_counts(window if isinstance(window, list) else list(window), enums, check=check)
    if entry.body_id is not None:
        _remember_counts(key, (counts, enums))
    return counts, enums


_PARENT = re.compile(r"([A-Za-z_][A-Za-z0-9_\-]*)\.")  # (a key a dot would split is in brackets)


def _fold_same_shape(rows: list[dict[str, Any]], canonical: str) -> list[dict[str, Any]]:
    """A nested object with the item's own shape (a tweet's ``retweeted_status``) is one row:
    ``retweeted_status  object: same shape as $[*] (69 keys)`` instead of its 69 keys again."""
    keys = [r["key"] for r in rows]
    prefixes = sorted({m.group(1) for k in keys if (m := _PARENT.match(k))})
    for p in prefixes:
        dotted = p + "."
        inner = {k[len(dotted) :] for k in keys if k.startswith(dotted)}
        outer = {k for k in keys if not k.startswith(dotted) and k != p}
        same = len(inner & outer)
        if len(inner) < 5 or same < 0.8 * max(len(inner), len(outer)):
            continue
        present = max((r["present"] for r in rows if r["key"].startswith(dotted)), default=0)
        label = f"object: same shape as {canonical}[*] ({len(inner)} keys)"
        kept = [r for r in rows if not r["key"].startswith(dotted)]
        own = next((r for r in kept if r["key"] == p), None)
        if own is not None:  # its own row counts the objects already: the label replaces "object"
            others = [t for t in own["types"].split("|") if t != "object"]
            own["types"] = "|".join([label, *others])
            own["present"] = max(own["present"], present)
        else:
            kept.append({"key": p, "types": label, "present": present, "of": rows[0]["of"] if rows else 0})
        kept.sort(key=lambda r: (-r["present"], r["key"]))
        rows, keys = kept, [r["key"] for r in kept]
    return rows


# -- get_in -----------------------------------------------------------------------------------


STRING_PAGE_CHARS = 4_000  # a page of a string by characters (chars=true without a limit)
LEAN_LINE = 100  # characters: a container whose compact JSON is at most this long is one line
LEAN_PAIR = 60  # ... and an array of arrays each at most this long (time series' [ts, v] pairs)
LEAN_DEPTH = 2  # levels laid out one member a line; a container deeper is one compact line


def lean_json(value: Any) -> str:
    """JSON as ``get_in`` shows it: the first ``LEAN_DEPTH`` levels one member or item a line,
    indented by two spaces a level, and compact below (``{"cpu":"100m","memory":"128Mi"}``, a
    container's whole text on one line); a short container (``LEAN_LINE``), an array of scalars
    and an array of short arrays (``[[1714521600,"2937"],…]``) are one line at any level.
    Indented at every level it was 30-44 % layout: a 240-point series took 1,200 lines of ``[``,
    ``1714521600,``, ``"2937"``, ``],``. Exact numbers, any depth (``render_json`` writes every
    compact part); never raises."""
    out: list[str] = []
    _lean(value, 0, out)
    return "".join(out)


def _short(value: Any, most: int) -> str | None:
    """The compact JSON of ``value`` when it is at most ``most`` characters, else None; a
    container far over that is told without rendering it whole (it stops counting past ``most``)."""
    size, todo = 0, [value]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            size += 1 + len(node)  # (braces, colons and commas, roughly)
            for key, child in node.items():
                size += len(str(key)) + 2
                todo.append(child)
        elif isinstance(node, list):
            size += 1 + len(node)
            todo.extend(node)
        else:
            size += len(node) if isinstance(node, str) else 1
        if size > most:
            return None
    text = render_json(value)
    return text if len(text) <= most else None


def _lean(value: Any, depth: int, out: list[str]) -> None:
    if not isinstance(value, (dict, list)) or not value or depth >= LEAN_DEPTH:
        out.append(render_json(value))
        return
    if isinstance(value, list) and all(
        not isinstance(v, (dict, list))
        or (isinstance(v, list) and not any(isinstance(x, (dict, list)) for x in v) and _short(v, LEAN_PAIR))
        for v in value
    ):
        out.append(render_json(value))  # scalars, or short arrays of scalars: one line
        return
    short = _short(value, LEAN_LINE)
    if short is not None:
        out.append(short)
        return
    pad = "\n" + "  " * (depth + 1)
    out.append("{" if isinstance(value, dict) else "[")
    for i, (key, child) in enumerate(value.items() if isinstance(value, dict) else enumerate(value)):
        out.append(("," if i else "") + pad)
        if isinstance(value, dict):
            out.append(render_json(str(key)) + ": ")
        _lean(child, depth + 1, out)
    out.append("\n" + "  " * depth + ("}" if isinstance(value, dict) else "]"))


def get_in(
    ctx: ToolContext, handle: str, path: str = "$", offset: int = 0, limit: int | None = None, chars: bool = False
) -> Output:
    entry = ctx.entry(handle)
    node = _node_at(ctx, entry, path, lazy=True)
    canonical = format_path(_steps_or_error(path))
    if isinstance(node, str) and chars:  # a window of characters: a line of 2 MB is read this way
        lo, hi = _window(offset, limit, len(node), STRING_PAGE_CHARS if limit is None else None)
        page = STRING_PAGE_CHARS if limit is None else int(limit)
        _past_the_end(ctx, entry, canonical, lo, len(node), "characters", page, chars=True)
        shown_text = node[lo:hi]
        more = f" · next: offset={hi}" if hi < len(node) else ""
        summary = f"characters {lo:,}-{hi:,} of {len(node):,} of the string at {_show(canonical)}{more}"
        data = {"handle": entry.key, "path": canonical, "kind": "string", "offset": lo, "total_chars": len(node),
                "text": shown_text}  # fmt: skip
        ctx.guard_bytes(len(shown_text.encode("utf-8", "surrogatepass")), lambda n: shown_text[:n])
        return Output(shown_text, data, budget_footer(summary, f"chars {lo:,}-{hi:,} of {len(node):,}"))
    if chars and not isinstance(node, str):
        raise ToolError(
            "invalid_argument",
            f"chars=true pages a string; the value at {_show(canonical)} is {kind_of(node)}",
            [suggestion("get_in", "the value itself", handle=entry.key, path=canonical)],
            argument="chars",
        )
    if isinstance(node, str) and ("\n" in node or offset or limit is not None):
        all_lines = node.split("\n")
        # offset without limit pages 100 lines (Aura's default page)
        lo, hi = _window(offset, limit, len(all_lines), 100 if offset and limit is None else None)
        _past_the_end(ctx, entry, canonical, lo, len(all_lines), "lines", 100 if limit is None else int(limit))
        shown = all_lines[lo:hi]
        text = numbered(lo + 1, shown)
        summary = f"lines {lo + 1:,}-{lo + len(shown):,} of {len(all_lines):,} of the string at {_show(canonical)}"
        data = {
            "handle": entry.key,
            "path": canonical,
            "kind": "string",
            "offset": lo,
            "total_lines": len(all_lines),
            "lines": shown,
        }
        ctx.guard_bytes(sum(len(s) for s in shown), lambda n: text[:n])
        return Output(text, data, budget_footer(summary))
    _refuse_huge_early(ctx, node)
    if holds_lazy(node):  # it holds a streamed array and may fit after all: the whole value renders it
        node = _resolve_or_error(entry, ctx.json_value(entry), path)
    rendered = lean_json(node)  # any depth, exact numbers
    ctx.guard_bytes(len(rendered), lambda n: rendered[:n])
    summary = f"{_show(canonical)} · {kind_of(node)}"
    short = kind_of(node)
    if isinstance(node, (dict, list)):
        summary += f" of {len(node):,} {'keys' if isinstance(node, dict) else 'items'}"
        short += f" of {len(node)} {'keys' if isinstance(node, dict) else 'items'}"
    return Output(rendered, node, budget_footer(summary, short))


SAMPLED_ITEMS = 64


def _refuse_huge_early(ctx: ToolContext, node: Any) -> None:
    """A container far over the limit is refused from a sample of its items (an evenly spaced 64,
    rendered and counted, scaled to the whole), without serialising all of it: O(sample), where
    a 100 MB node took 0.4 s to render only to be refused. An object of a few keys is judged by
    the big containers in it, two levels down (a PodList by its ``items``), so ``get_in("$")``
    of a 1 GB document is refused from 64 items too. Only when the estimate is over 3× the
    limit: nearer the limit the whole is rendered and counted exactly."""
    found = _estimate(ctx, node)
    if found is not None and found[0] > 3 * ctx.limit_tokens:
        raise TooLarge(found[0], f"about {found[0]:,} tokens ({found[1]})")


BIG_STRING_CHARS = 20_000  # a string this long is estimated from a sample, as a big container


def _is_big(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) > BIG_STRING_CHARS
    return isinstance(value, (dict, list, LazyArray)) and len(value) > 4 * SAMPLED_ITEMS


def _estimate(ctx: ToolContext, node: Any) -> tuple[int, str] | None:
    """``(tokens, how)`` estimated from samples, or None when ``node`` is small enough to count.

    An array of many items: 64 of them. A container of few entries: the big containers in it, two
    levels down, each from 64 items. An object of many keys: those, plus 64 of its other values.
    """
    if not isinstance(node, (dict, list, LazyArray)):
        return None
    if not isinstance(node, dict) and len(node) > 4 * SAMPLED_ITEMS:
        return _sampled_tokens(ctx, node)
    # (a long string in it counts too: an item of a 360 KB string was estimated below that string)
    entries = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
    big: list[Any] = []
    holders: set[Any] = set()  # the entries that are, or hold, a big container
    for key, child in entries:
        if _is_big(child):
            big.append(child)
            holders.add(key)
        elif isinstance(child, (dict, list)):
            inner = [g for g in (child.values() if isinstance(child, dict) else child) if _is_big(g)]
            big += inner
            if inner:
                holders.add(key)
    parts = [_sampled_tokens(ctx, b) for b in big]
    if isinstance(node, dict) and len(node) > 4 * SAMPLED_ITEMS:
        rest = {k: v for k, v in node.items() if k not in holders}
        if rest:
            parts.append(_sampled_tokens(ctx, rest))
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return sum(tokens for tokens, _ in parts), f"{len(parts)} large parts, each from a sample"


def _sampled_tokens(ctx: ToolContext, node: str | dict[str, Any] | list[Any] | LazyArray) -> tuple[int, str]:
    """Tokens of ``node`` estimated from an evenly spaced 64 of its items (or values); of a long
    string, from 8 spans of 1,000 characters."""
    if isinstance(node, str):
        step = len(node) // 8
        spans = [node[i * step : i * step + 1000] for i in range(8)]
        tokens = sum(ctx.pad.tokenizer.count(json.dumps(span, ensure_ascii=False)) for span in spans)
        return math.ceil(tokens * len(node) / max(1, sum(map(len, spans)))), "a long string, from samples"
    values = list(node.values()) if isinstance(node, dict) else node
    step = max(1, len(values) // SAMPLED_ITEMS)
    indices = list(range(0, len(values), step))[:SAMPLED_ITEMS]
    picked = values.pick(indices) if isinstance(values, LazyArray) else [values[i] for i in indices]
    if isinstance(node, dict):
        keys = list(node)[::step][:SAMPLED_ITEMS]
        sample: Any = dict(zip(keys, picked, strict=True))
    else:
        sample = picked
    tokens = ctx.pad.tokenizer.count(lean_json(sample))  # (as get_in shows it)
    return math.ceil(tokens * len(values) / len(picked)), f"from {len(picked)} of {len(values):,} items"


def _char_window(handle: Any, path: str, value: str, lo: int, limit: int) -> list[dict[str, Any]]:
    """A window of a string's characters from ``lo`` that its measured density says fits, then
    the stored bytes around it."""
    window = suggestion(
        "get_in",
        "a window of the string's characters",
        handle=handle,
        path=path,
        chars=True,
        offset=lo,
        limit=_chars_that_fit(value, lo, limit),
    )
    return [window, *_stored_bytes(handle, value, limit)]


def get_in_suggestions(
    entry: Entry | None, value: Any, args: dict[str, Any], estimated: int, limit: int
) -> list[dict[str, Any]]:
    handle = args.get("handle")
    path = args.get("path") or "$"
    out = [suggestion("schema", "see the structure under it first", handle=handle)]
    if isinstance(value, (list, LazyArray)):
        out.append(suggestion("item_schema", "the keys of its items", handle=handle, path=path))
        fields = _first_keys(value)
        if fields:
            out.append(
                suggestion(
                    "iterate_over",
                    "a few fields of the first items",
                    handle=handle,
                    path=path,
                    fields=",".join(fields),
                    limit=20,
                )
            )
        out.append(
            suggestion("get_in", "just the first item", handle=handle, path=f"{path}[0]" if path != "$" else "$[0]")
        )
    elif isinstance(value, dict):
        for key in list(value)[:3]:
            out.append(
                suggestion(
                    "get_in",
                    f"only {key!r}",
                    handle=handle,
                    path=format_path([*parse_path(path), Step(str(key), True)]),
                )
            )
    elif isinstance(value, str) and (args.get("chars") or "\n" not in value):
        # by characters: a window the measured density says fits, with room to spare
        lo = int(args.get("offset") or 0) if args.get("chars") else 0
        lo = lo if 0 <= lo < len(value) else 0
        out += _char_window(handle, path, value, lo, limit)
    elif isinstance(value, str):
        per_line = max(1.0, estimated / max(1, value.count("\n") + 1))
        out.append(
            suggestion(
                "get_in",
                "page the string by lines",
                handle=handle,
                path=path,
                offset=0,
                limit=max(1, int(limit * 0.8 / per_line)),
            )
        )
        if per_line > limit * 0.8:  # a line longer than the limit: a window of characters
            out += _char_window(handle, path, value, 0, limit)
    return out


def _stored_bytes(handle: Any, value: str, limit: int) -> list[dict[str, Any]]:
    """The string's first bytes as stored (read_handle by its opening text), when that text is
    distinctive enough to find (a repeated word matches everywhere: the check before sending
    drops a call that does not fit)."""
    probe = json.dumps(value[:48], ensure_ascii=False)[1:-1].rsplit("\\", 1)[0]
    if len(probe) < 8:
        return []
    window = max(200, min(8000, int(limit * 2)))
    return [suggestion("read_handle", "the string's first bytes, as stored", handle=handle, match=probe, window=window)]


def _chars_that_fit(value: str, offset: int, limit: int) -> int:
    """Characters of ``value`` from ``offset`` that fit half of ``limit`` tokens, measured on them
    (digits, CJK or emoji are far denser than prose): the density of the first 8,000 counted."""
    from ..tokens import count_tokens

    probe = value[offset : offset + 8_000]
    if not probe:
        return 1
    density = max(1, count_tokens(probe)) / len(probe)  # tokens a character
    return max(1, min(len(value) - offset, int(limit * 0.5 / density)))


def _first_keys(items: Sequence[Any], most: int = 4) -> list[str]:
    """The fields a next call names for ``items``: those that say what each item is
    (``telling_fields``: names, titles, states; no constant, id or URL), else the first scalar
    keys of the first object."""
    chosen = telling_fields(items, most=most)
    if chosen:
        return chosen
    for item in items[:50]:
        if isinstance(item, dict):
            return [str(k) for k, v in item.items() if not isinstance(v, (dict, list))][:most] or [
                str(k) for k in item
            ][:3]
    return []


# -- iterate_over -----------------------------------------------------------------------------


# bytes of output surely within a limit of N tokens: N * SURE_BYTES_PER_TOKEN (digits run ~1.5)
SURE_BYTES_PER_TOKEN = 1.0


def _cut(value: Any, handle: str, where: str, limit: int) -> Any:
    """A cell of iterate_over's row, cut to a few lines; the rest is one runnable call away, and
    a call that fits ``limit`` tokens: the value whole when it surely fits, else a window of the
    string's lines or characters, or the container's ``schema``."""
    at = {"handle": handle, "path": where}
    sure = limit * SURE_BYTES_PER_TOKEN
    if isinstance(value, str):
        lines = value.split("\n")
        if len(lines) > STRING_LINES:
            page = "\n".join(lines[STRING_LINES : STRING_LINES + 100])
            if len(page.encode("utf-8", "surrogatepass")) <= sure:
                rest = call_repr("get_in", {**at, "offset": STRING_LINES})
            else:
                offset = len("\n".join(lines[:STRING_LINES])) + 1
                rest = call_repr("get_in", {**at, "chars": True, "offset": offset,
                                            "limit": _chars_that_fit(value, offset, limit)})  # fmt: skip
            return "\n".join(lines[:STRING_LINES]) + f"\n… [+{len(lines) - STRING_LINES:,} more lines: {rest}]"
        if len(value) > STRING_CHARS:
            if len(value.encode("utf-8", "surrogatepass")) <= sure:
                rest = call_repr("get_in", at)
            else:
                rest = call_repr("get_in", {**at, "chars": True, "offset": STRING_CHARS,
                                            "limit": _chars_that_fit(value, STRING_CHARS, limit)})  # fmt: skip
            return f"{value[:STRING_CHARS]}… [+{len(value) - STRING_CHARS:,} chars: {rest}]"
    elif isinstance(value, (dict, list)):
        text = render_json(value)
        if len(text) > STRING_CHARS:
            # get_in shows it laid out (lean_json; the compact form measured first: most are far over)
            fits = len(text) <= sure and len(lean_json(value)) <= sure
            rest = call_repr("get_in", at) if fits else call_repr("schema", at)
            return f"{kind_of(value)} of {len(value):,}: {text[:200]}… [{rest}]"
    return value


MAX_FIELDS = 50  # the fields one iterate_over call shows
# one comma-separated field name: a comma inside a bracketed key (["a,b"] or ['a,b']) is the key's
_FIELD = re.compile(r"""(?:\[\s*"(?:\\.|[^"\\])*"?|\[\s*'(?:\\.|[^'\\])*'?|[^,\[]|\[)+""")


def _fields(fields: Any) -> list[str]:
    if isinstance(fields, str) and fields.lstrip().startswith("["):  # '["a", "b"]': a list sent as text
        try:
            decoded = json.loads(fields)
        except ValueError:
            decoded = None
        except RecursionError:  # '["a", ["a", [... 10,000 deep': not a list of names
            raise ToolError(
                "invalid_argument", "'fields' must be a list of field names, not nested lists", argument="fields"
            ) from None
        if isinstance(decoded, list):
            fields = decoded
    if isinstance(fields, str):
        names = [f.strip() for f in _FIELD.findall(fields)]
    elif isinstance(fields, list) and all(isinstance(f, str) for f in fields):
        names = [f.strip() for f in fields]
    else:
        raise ToolError(
            "invalid_argument",
            "'fields' must be a comma-separated string or a list of strings, e.g. \"metadata.name,status\"",
            argument="fields",
        )
    names = [n for n in names if n]
    if not names:
        raise ToolError("invalid_argument", "'fields' names no field", argument="fields")
    return list(dict.fromkeys(names))  # (a field named twice is one column)


def iterate_over(
    ctx: ToolContext,
    handle: str,
    path: str = "$",
    fields: Any = None,
    offset: int = 0,
    limit: int | None = None,
) -> Output:
    entry = ctx.entry(handle)
    path = _array_path(path)
    if fields is None:
        try:
            items = _items_at(ctx, entry, path)
        except ToolError as exc:  # both wrong: the missing argument first, with the path's hints
            raise ToolError(
                "invalid_argument",
                f"iterate_over needs 'fields': the keys (or dot paths) to show; and {exc.message}",
                exc.suggestions,
                argument="fields",
                **{k: v for k, v in exc.fields.items() if k != "argument"},
            ) from None
        keys = _first_keys(items)
        first = [  # (items with no scalar keys: no fields to name, item_schema says what they hold)
            suggestion(
                "iterate_over", "fields that say what each item is", handle=entry.key, path=path, fields=",".join(keys),
                limit=20,
            )
        ]
        raise ToolError(
            "invalid_argument",
            "iterate_over needs 'fields': the keys (or dot paths) to show",
            [*(first if keys else []), suggestion("item_schema", "see every key first", handle=entry.key, path=path)],
            argument="fields",
        )
    items = _items_at(ctx, entry, path)
    names = _fields(fields)
    if len(names) > MAX_FIELDS:  # (the rest were dropped without a word)
        halves = [names[:MAX_FIELDS], names[MAX_FIELDS : 2 * MAX_FIELDS]]
        at = _canonical(path)
        calls = []
        for i, part in enumerate(halves):
            which = f"fields {i * MAX_FIELDS + 1}-{i * MAX_FIELDS + len(part)}"
            calls.append(suggestion("iterate_over", which, handle=entry.key, path=at, fields=",".join(part),
                                    limit=limit or 20))  # fmt: skip
        raise ToolError(
            "invalid_argument",
            f"iterate_over shows at most {MAX_FIELDS} fields a call and {len(names)} were named; "
            f"ask for them {MAX_FIELDS} at a time",
            calls,
            argument="fields",
        )
    parsed = {}
    for name in names:
        # metadata.labels.* / spec.containers[*]: the object or array itself (it read as a key "*",
        # null in every row)
        whole = name.rstrip()
        if whole == "*":  # the item itself (it read as a key "*": null for every item, without a word)
            whole = "$"
        whole = whole[:-2] if whole.endswith(".*") else str(_array_path(whole))
        try:
            parsed[name] = parse_path(whole)
        except PathError as exc:
            found = _WILDCARD.search(name)
            sugg = []
            if found is not None and found.start() > 0:  # spec.containers[*].image: the containers
                head = name[: found.start()].rstrip()
                rest = [f for f in names if f != name]
                fields_then = ",".join([*rest, head])
                sugg.append(suggestion("iterate_over", f"{head} of each item, whole", handle=entry.key,
                                       path=_canonical(path), fields=fields_then, limit=limit or 20))  # fmt: skip
            raise ToolError("invalid_path", f"field {name!r}: {exc}", sugg, argument="fields") from None
    total = len(items)
    lo, hi = _window(offset, limit, total, 50)
    base = _canonical(path)
    _past_the_end(ctx, entry, base, lo, total, "items", int(limit) if limit else 50, fields=",".join(names))
    rows = []
    base_steps = parse_path(base)
    missed = dict.fromkeys(parsed, 0)  # items without the field (null in the row)
    for i in range(lo, hi):
        item = items[i]
        row: dict[str, Any] = {"_index": i}
        for name, steps in parsed.items():
            try:
                value = resolve(item, steps)
            except PathMiss:
                value = None
                missed[name] += 1
            row[name] = _cut(value, entry.key, format_path([*base_steps, Step(i), *steps]), ctx.limit_tokens)
        rows.append(row)
    if rows and all(n == len(rows) for n in missed.values()):
        _no_item_has(entry, base, names, items[lo:hi], lo, hi, limit, ctx.check_time)
    # the field names once, then a JSON array per item: a row that repeated each name was ~40 %
    # names (the data keeps {"_index": i, field: value})
    columns = ["_index", *parsed]
    text = f"columns: {render_json(columns)}\n" + "\n".join(render_json([r[c] for c in columns]) for r in rows)
    nxt = f" · next: offset={hi}" if hi < total else ""
    # a misspelt field was null in every row without a word
    absent = [name for name, n in missed.items() if rows and n == len(rows)]
    none_has = _none_has(absent, items[lo:hi], ctx.check_time) if absent else ""
    summary = (
        f"items {lo:,}-{hi - 1:,} of {total:,} of {_show(base)}{nxt}{none_has}"
        if rows
        else f"no items at offset {lo:,} of {total:,}"
    )
    meta = {"total_items": total, "offset": lo, "limit": hi - lo, "next_offset": hi if hi < total else None}
    return Output(text if rows else "(no items in that window)", rows, budget_footer(summary), meta)


def _none_has(absent: list[str], window: Sequence[Any], check: Check = None) -> str:
    """The footer's word on fields no item of the window has: each with the field most likely
    meant (``status.restartCount``: ``status.containerStatuses[0].restartCount``)."""
    window = window if isinstance(window, list) else list(window)
    known = [k for k in item_key_counts(window, check=check) if k != "(item)" and not k.endswith("{*}")]
    said = []
    for name in absent[:5]:
        meant = _field_meant(name, known, window)
        said.append(f"{name!r} (closest: {meant})" if meant else repr(name))
    hint = "" if any("closest" in s for s in said) else " (item_schema lists the keys)"
    return f" · no item here has {', '.join(said)}{hint}"


def _nested_field(name: str, items: list[Any], most_nodes: int = 5_000) -> str | None:
    """The field of the first items that ends in ``name``'s last key (any case), looked for at
    any depth and through arrays (their first item): ``status.containerStatuses[0].restartCount``
    for ``status.restartCount``. None when no item has that key."""
    try:
        steps = parse_path(name)
    except PathError:
        return None
    if not steps or not isinstance(steps[-1].value, str):
        return None
    wanted = steps[-1].value.lower()
    todo: list[tuple[Any, str | None]] = [(item, None) for item in items[:5]]
    seen = 0
    while todo and seen < most_nodes:  # breadth first: the shallowest such key
        node, at = todo.pop(0)
        seen += 1
        if isinstance(node, dict):
            for key, value in node.items():
                child = field_name(at, key)
                if str(key).lower() == wanted and child != name:
                    return child
                todo.append((value, child))
        elif isinstance(node, list) and node and at is not None:
            todo.append((node[0], f"{at}[0]"))
    return None


def _literal_field(name: str, known: list[str]) -> str | None:
    """``name`` as a key written as it is ("a.b", which a dot path splits, is ``$["a.b"]``;
    quoted or not) when the items have that key, else None."""
    for literal in (name, name.strip("\"'")):
        if literal and field_name(None, literal) in known:
            return field_name(None, literal)
    return None


def _field_meant(name: str, known: list[str], items: Sequence[Any] = ()) -> str | None:
    """The field of ``known`` most likely meant by ``name``: the key written as it is, else the
    same last key deeper in ``items`` (``_nested_field``), else the closest spelling."""
    literal = _literal_field(name, known)
    if literal is not None:
        return literal
    nested = _nested_field(name, list(items)) if items else None
    if nested is not None:
        return nested
    close = difflib.get_close_matches(name, known, 1, 0.6)
    return close[0] if close else None


def _no_item_has(
    entry: Entry,
    base: str,
    names: list[str],
    window: Sequence[Any],
    lo: int,
    hi: int,
    limit: int | None,
    check: Check = None,
) -> None:
    """Refuse a window in which no item has any field named (rows of nulls, charged, said nothing):
    the keys the items have, and the fields most likely meant."""
    # (not the "{*}" of keys held by few items: no field a call reads)
    known = [k for k in item_key_counts(list(window), check=check) if k != "(item)" and not k.endswith("{*}")]
    whole = _literal_field(",".join(names), known)  # a key that holds a comma, split into fields: "a,b"
    meant = [whole] if whole else [m for name in names if (m := _field_meant(name, known, window)) is not None]
    sugg = []
    if meant:
        fields = ",".join(dict.fromkeys(meant))
        again = {"handle": entry.key, "path": base, "fields": fields, "offset": lo, "limit": limit or 20}
        sugg.append(suggestion("iterate_over", "the fields most likely meant", **again))
    sugg.append(suggestion("item_schema", "every key of the items, how many have each", handle=entry.key, path=base))
    shown = ", ".join(map(repr, names[:5])) + (" …" if len(names) > 5 else "")
    raise ToolError(
        "field_not_found",
        f"no item in items {lo:,}-{hi - 1:,} of {_show(base)} has {shown}",
        sugg,
        argument="fields",
        available_keys=known[:20],
    )


def window_suggestions(
    tool: str, args: dict[str, Any], estimated: int, limit: int, total: int | None
) -> list[dict[str, Any]]:
    handle = args.get("handle")
    offset = int(args.get("offset") or 0)
    asked = args.get("limit")
    asked = int(asked) if isinstance(asked, int) else (50 if tool == "iterate_over" else (total or 1000))
    if total is not None:  # the estimate is of the items there are (limit=1e9 over 5,000 items: 5,000)
        asked = max(1, min(asked, total - offset))
    fit = max(1, int(asked * limit * 0.8 / max(estimated, 1)))
    base = {k: v for k, v in args.items() if k not in ("offset", "limit", "file")}
    base["handle"] = handle
    out = [suggestion(tool, f"about {fit} items fit", **{**base, "offset": offset, "limit": fit})]
    if tool == "iterate_over" and isinstance(args.get("fields"), str) and len(names := _fields(args["fields"])) > 1:
        out.append(suggestion(tool, "fewer fields", **{**base, "fields": names[0], "offset": offset, "limit": fit}))
    return out
