"""Structure tools: schema, item_schema, get_in, iterate_over."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from itertools import chain
from operator import itemgetter
from typing import Any

import orjson

from ..store import Entry
from ._base import Output, ToolContext, ToolError, fmt_bytes, suggestion
from ._paths import PathError, PathMiss, Step, format_path, kind_of, parse_path, resolve
from ._text import _positive_int, budget_footer

__all__ = ["get_in", "item_schema", "iterate_over", "schema"]

MAX_SCHEMA_NODES = 400
MAX_KEYS_SHOWN = 60
MAX_ITEM_KEYS = 500
STRING_LINES = 5
STRING_CHARS = 600


# -- shapes -----------------------------------------------------------------------------------


_KINDS: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "bool",
    type(None): "null",
}


def _columns(dicts: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The values of each key across ``dicts``, in first-seen key order (C-level loops)."""
    out: dict[str, list[Any]] = {}
    for key in dict.fromkeys(chain.from_iterable(dicts)):
        try:
            out[key] = list(map(itemgetter(key), dicts))  # every dict has it: the common case
        except KeyError:
            out[key] = [d[key] for d in dicts if key in d]
    return out


class Shape:
    """The union of every value seen at one path (arrays: over all their items).

    Built level by level over all the values at a path at once (``Shape.of``): the values of each
    key are gathered into one list and summarised together, which costs one dict step per node
    instead of one method call per node.
    """

    __slots__ = ("count", "items", "keys", "keys_hi", "keys_lo", "kinds", "len_hi", "len_lo", "objects")

    def __init__(self) -> None:
        self.count = 0
        self.kinds: Counter[str] = Counter()
        self.keys: dict[str, Shape] = {}
        self.keys_lo = self.keys_hi = 0  # fewest / most keys of an object seen
        self.objects = 0
        self.items: Shape | None = None
        self.len_lo = self.len_hi = 0  # shortest / longest array seen

    @classmethod
    def of(cls, values: list[Any], depth_left: int) -> Shape:
        shape = cls()
        shape.count = len(values)
        types = _type_counts(values)
        if all(t in _KINDS for t in types):
            for t, n in types.items():
                shape.kinds[_KINDS[t]] += n
            dicts = ([v for v in values if type(v) is dict] if len(types) > 1 else values) if dict in types else []
            lists = ([v for v in values if type(v) is list] if len(types) > 1 else values) if list in types else []
        else:  # subclasses of dict/list, or other objects: the slow, general way
            shape.kinds.update(kind_of(v) for v in values)
            dicts = [v for v in values if isinstance(v, dict)]
            lists = [v for v in values if isinstance(v, list)]
        if dicts:
            sizes = list(map(len, dicts))
            shape.objects, shape.keys_lo, shape.keys_hi = len(dicts), min(sizes), max(sizes)
            if depth_left > 0:
                shape.keys = {k: cls.of(column, depth_left - 1) for k, column in _columns(dicts).items()}
        if lists:
            lengths = list(map(len, lists))
            shape.len_lo, shape.len_hi = min(lengths), max(lengths)
            if depth_left > 0:
                shape.items = cls.of(list(chain.from_iterable(lists)), depth_left - 1)
        return shape

    def describe(self) -> str:
        parts = []
        for kind, _ in self.kinds.most_common():
            if kind == "object":
                lo, hi = self.keys_lo, self.keys_hi
                n = f"{lo}" if lo == hi else f"{lo}-{hi}"
                distinct = f", {len(self.keys)} distinct" if self.keys and len(self.keys) != hi else ""
                parts.append(f"object({n} keys{distinct})")
            elif kind == "array":
                lo, hi = self.len_lo, self.len_hi
                n = f"{lo}" if lo == hi else f"{lo}-{hi}"
                parts.append(f"array({n} items)")
            else:
                parts.append(kind)
        return "|".join(parts)


def _pretty_lines(value: Any) -> int:
    if isinstance(value, (dict, list)) and value:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).count(b"\n") + 1
    return 1


class _SchemaWriter:
    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.rows: list[dict[str, Any]] = []
        self.truncated = 0

    def _row(self, path: str, kind: str, where: str) -> None:
        if len(self.rows) >= MAX_SCHEMA_NODES:
            self.truncated += 1
            return
        self.rows.append({"path": path, "kind": kind, "where": where})

    def concrete(self, value: Any, path: str, depth: int, first_line: int, known_lines: int | None = None) -> int:
        """Rows for a value that sits at one place in the body; returns its line count.

        ``known_lines``: the value's line count when it is already known (the root: the body's).
        """
        kind = Shape.of([value], 0)
        index = len(self.rows)
        self._row(path, kind.describe(), "")
        if depth >= self.max_depth or not isinstance(value, (dict, list)) or not value:
            lines = _pretty_lines(value) if depth >= self.max_depth else 1
        elif isinstance(value, dict):
            lines, line = 2, first_line + 1
            for i, (key, child) in enumerate(value.items()):
                if i >= MAX_KEYS_SHOWN:
                    rest = sum(_pretty_lines(v) for v in list(value.values())[i:])
                    self._row(f"{path}.…", f"{len(value) - i} more keys", f"lines {line}-{line + rest - 1}")
                    lines += rest
                    break
                child_lines = self.concrete(child, _child_path(path, key), depth + 1, line)
                line += child_lines
                lines += child_lines
        else:
            lines = known_lines or _pretty_lines(value)  # at most one serialisation of the array
            item_lines = lines - 2
            shape = Shape.of(value, self.max_depth - depth - 1)
            self.repeated(
                shape,
                f"{path}[*]",
                depth + 1,
                len(value),
                f"{len(value)} items, lines {first_line + 1}-{first_line + item_lines}",
            )
        if index < len(self.rows):
            self.rows[index]["where"] = (
                f"line {first_line}" if lines == 1 else f"lines {first_line}-{first_line + lines - 1}"
            )
        return lines

    def repeated(self, shape: Shape, path: str, depth: int, parent_count: int, where: str) -> None:
        """Rows for the union of many values (array items)."""
        self._row(path, shape.describe(), where)
        if depth >= self.max_depth:
            return
        ordered = sorted(shape.keys.items(), key=lambda kv: -kv[1].count)
        for i, (key, child) in enumerate(ordered):
            if i >= MAX_KEYS_SHOWN:
                self._row(f"{path}.…", f"{len(ordered) - i:,} more keys", "")
                break
            self.repeated(child, _child_path(path, key), depth + 1, shape.objects, f"{child.count}/{shape.objects}")
        if shape.items is not None:
            self.repeated(
                shape.items,
                f"{path}[*]",
                depth + 1,
                shape.count,
                f"{shape.items.count} items in {shape.kinds['array']} arrays",
            )


_SCHEMAS: dict[tuple[str, int], _SchemaWriter] = {}


def _child_path(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", key):
        return f"{path}.{key}"
    return f"{path}[{orjson.dumps(key).decode()}]"


def _render_rows(rows: list[dict[str, Any]]) -> str:
    width = min(60, max(len(r["path"]) for r in rows)) if rows else 0
    kwidth = min(40, max(len(r["kind"]) for r in rows)) if rows else 0
    return "\n".join(f"{r['path']:<{width}}  {r['kind']:<{kwidth}}  {r['where']}".rstrip() for r in rows)


def schema(ctx: ToolContext, handle: str, max_depth: int = 4) -> Output:
    entry = ctx.entry(handle)
    max_depth = _positive_int(max_depth, "max_depth", 0)
    if max_depth > 32:
        raise ToolError("invalid_argument", "'max_depth' must be at most 32", argument="max_depth")
    title = f"schema of {entry.key} ({entry.format}, {fmt_bytes(entry.size_bytes)}, {entry.line_count or 0:,} lines)"
    if entry.format == "json":
        assert entry.body_id is not None
        writer = _SCHEMAS.get((entry.body_id, max_depth))
        if writer is None:  # bodies never change: a schema is computed once per body and depth
            writer = _SchemaWriter(max_depth)
            writer.concrete(ctx.json_value(entry), "$", 0, 1, entry.line_count or None)
            _SCHEMAS[(entry.body_id, max_depth)] = writer
            while len(_SCHEMAS) > 64:
                _SCHEMAS.pop(next(iter(_SCHEMAS)), None)
        rows = writer.rows
        text = _render_rows(rows)
        if writer.truncated:
            text += f"\n… {writer.truncated:,} more nodes: lower max_depth, or item_schema / get_in a path"
        next_steps = _json_next_steps(entry, rows)
        data = {
            "handle": entry.key,
            "format": "json",
            "max_depth": max_depth,
            "nodes": rows,
            "truncated_nodes": writer.truncated,
        }
    elif entry.format == "markdown":
        text, data = _markdown_outline(ctx, entry)
        next_steps = [f'slice(handle="{entry.key}", start=…, end=…) to read a section']
    else:
        text, data = _text_summary(ctx, entry)
        next_steps = [f'grep(handle="{entry.key}", pattern="…")', f'head(handle="{entry.key}", lines=50)']
        if entry.format == "jsonl":
            next_steps.insert(0, f'item_schema(handle="{entry.key}", path="$")')
    body = f"{title}\n{text}\nnext: " + "; ".join(next_steps)
    return Output(body, data, budget_footer(f"schema · {entry.line_count or 0:,} lines"))


def _json_next_steps(entry: Entry, rows: list[dict[str, Any]]) -> list[str]:
    arrays = [r["path"] for r in rows if r["kind"].startswith("array") and "[*]" not in r["path"]]
    if arrays:
        p = arrays[0] if arrays[0] != "$" else "$"
        return [
            f'item_schema(handle="{entry.key}", path="{p}")',
            f'iterate_over(handle="{entry.key}", path="{p}", fields="…", limit=20)',
        ]
    return [f'get_in(handle="{entry.key}", path="…")']


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


def _markdown_outline(ctx: ToolContext, entry: Entry) -> tuple[str, dict[str, Any]]:
    reader = ctx.reader(entry)
    heads: list[dict[str, Any]] = []
    fence: str | None = None
    for n, line in enumerate(reader.iter_lines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        if fence is None:
            m = _HEADING.match(line)
            if m:
                heads.append({"level": len(m.group(1)), "title": m.group(2), "start": n})
    total = entry.line_count or 0
    for i, h in enumerate(heads):
        end = total
        for later in heads[i + 1 :]:
            if later["level"] <= h["level"]:
                end = later["start"] - 1
                break
        h["end"] = end
    shown = heads[:MAX_SCHEMA_NODES]
    lines = [
        f"{'  ' * (h['level'] - 1)}{'#' * h['level']} {h['title'][:120]}  lines {h['start']}-{h['end']}"
        for h in shown
    ]
    if not heads:
        lines = ["(no headings)"]
    if len(heads) > len(shown):
        lines.append(f"… {len(heads) - len(shown):,} more headings")
    return "\n".join(lines), {"handle": entry.key, "format": "markdown", "headings": heads}


def _text_summary(ctx: ToolContext, entry: Entry) -> tuple[str, dict[str, Any]]:
    reader = ctx.reader(entry)
    sample = [ln[:200] for ln in reader.read_lines(1, 3)]
    info: dict[str, Any] = {
        "handle": entry.key,
        "format": entry.format,
        "lines": entry.line_count or 0,
        "bytes": entry.size_bytes,
        "longest_line": entry.meta.get("longest_line"),
        "sample": sample,
    }
    out = [
        f"lines: {info['lines']:,}",
        f"bytes: {entry.size_bytes:,}",
        f"longest line: {info['longest_line'] or 0:,} bytes",
    ]
    if entry.meta.get("utf8_errors"):
        out.append("encoding: not valid UTF-8 (shown with U+FFFD; read_handle has the exact bytes)")
    if entry.format == "jsonl":
        records = ctx.json_value(entry)
        shape = Shape.of(records, 1)
        keys = sorted(shape.keys.items(), key=lambda kv: -kv[1].count)[:MAX_KEYS_SHOWN]
        info["records"] = len(records)
        info["keys"] = {k: {"kind": s.describe(), "present": s.count} for k, s in keys}
        out.append(f"records: {len(records):,} ({shape.describe()})")
        out += [f"  {k}: {s.describe()}  {s.count}/{shape.objects}" for k, s in keys]
    out.append("sample:")
    out += [f"{n:>6}\t{line}" for n, line in enumerate(sample, start=1)]
    return "\n".join(out), info


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
    fields: dict[str, Any] = {"requested_path": miss.requested, "valid_prefix": prefix}
    suggestions = []
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
    elif isinstance(node, list):
        fields["array_length"] = len(node)
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
    suggestions.append(suggestion("schema", "see the structure", handle=entry.key))
    return ToolError(
        "key_path_not_found", f"path {miss.requested!r} not found: at {prefix}, {miss.reason}", suggestions, **fields
    )


def _as_items(entry: Entry, node: Any, path: str) -> list[Any]:
    if isinstance(node, list):
        return node
    sugg = []
    if isinstance(node, dict):
        base = _steps_or_error(path)
        for key, v in node.items():
            if isinstance(v, list):
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
        "not_an_array", f"{path or '$'} is a {kind_of(node)}, not an array", sugg, path=path, value_type=kind_of(node)
    )


def _window(offset: Any, limit: Any, total: int, default_limit: int | None) -> tuple[int, int]:
    offset = _positive_int(offset, "offset", 0)
    if limit is None:
        limit = default_limit if default_limit is not None else max(total - offset, 0)
    else:
        limit = _positive_int(limit, "limit")
    return offset, min(total, offset + limit)


def _type_counts(values: list[Any]) -> dict[type, int]:
    distinct = set(map(type, values))
    return {distinct.pop(): len(values)} if len(distinct) == 1 else Counter(map(type, values))


def _objects_to_descend(values: list[Any]) -> list[dict[str, Any]]:
    """The non-empty objects among ``values`` (C-level in the common all-objects case)."""
    types = set(map(type, values))
    if types == {dict}:
        return values if all(values) else [v for v in values if v]
    if not any(issubclass(t, dict) for t in types):
        return []
    return [v for v in values if isinstance(v, dict) and v]


def _count_kinds(values: list[Any], counter: Counter[str]) -> None:
    for t, n in _type_counts(values).items():
        kind = _KINDS.get(t)
        counter[kind if kind is not None else kind_of(next(v for v in values if type(v) is t))] += n


def _flat_counts(values: list[Any], name: str, counts: dict[str, Counter[str]], depth: int) -> None:
    """Kinds per dotted key (``metadata.score``) over every value at ``name``, column by column."""
    nested = _objects_to_descend(values) if depth < 8 else []
    if len(nested) < len(values):  # the values that are not objects to descend into count here
        counter = counts.get(name)
        if counter is None and len(counts) < MAX_ITEM_KEYS:
            counter = counts[name] = Counter()
        if counter is not None:
            rest = [v for v in values if not (isinstance(v, dict) and v)] if nested else values
            _count_kinds(rest, counter)
    for key, column in _columns(nested).items():
        _flat_counts(column, f"{name}.{key}", counts, depth + 1)


def _item_key_counts(items: list[Any]) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {}
    objects = [v for v in items if isinstance(v, dict)]
    if len(objects) < len(items):
        counts["(item)"] = Counter()
        _count_kinds([v for v in items if not isinstance(v, dict)], counts["(item)"])
    for key, column in _columns(objects).items():
        _flat_counts(column, key, counts, 1)
    return counts


def item_schema(ctx: ToolContext, handle: str, path: str = "$", offset: int = 0, limit: int | None = None) -> Output:
    entry = ctx.entry(handle)
    items = _as_items(entry, _resolve_or_error(entry, ctx.json_value(entry), path), path)
    total = len(items)
    lo, hi = _window(offset, limit, total, None)
    counts = _item_key_counts(items[lo:hi])
    n = hi - lo
    rows: list[dict[str, Any]] = [
        {"key": k, "types": "|".join(t for t, _ in c.most_common()), "present": sum(c.values()), "of": n}
        for k, c in sorted(counts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
    ]
    canonical = format_path(_steps_or_error(path))
    if hi - lo < total or lo:
        size = max(1, hi - lo)
        window = f"items {lo:,}-{hi - 1:,} of {total:,} (window {lo // size + 1:,} of {-(-total // size):,})"
    else:
        window = f"all {total:,} items"
    width = min(60, max((len(r["key"]) for r in rows), default=3))
    twidth = min(30, max((len(r["types"]) for r in rows), default=4))
    lines = [f"item_schema of {canonical} in {entry.key}: {window}", f"{'key':<{width}}  {'type':<{twidth}}  present"]
    lines += [f"{r['key']:<{width}}  {r['types']:<{twidth}}  {r['present']}/{r['of']}" for r in rows]
    if len(counts) >= MAX_ITEM_KEYS:
        lines.append(f"… more than {MAX_ITEM_KEYS} distinct keys; narrow the window or the path")
    data = {"handle": entry.key, "path": canonical, "offset": lo, "limit": hi - lo, "total_items": total, "keys": rows}
    return Output("\n".join(lines), data, budget_footer(window))


# -- get_in -----------------------------------------------------------------------------------


def get_in(ctx: ToolContext, handle: str, path: str = "$", offset: int = 0, limit: int | None = None) -> Output:
    entry = ctx.entry(handle)
    node = _resolve_or_error(entry, ctx.json_value(entry), path)
    canonical = format_path(_steps_or_error(path))
    if isinstance(node, str) and ("\n" in node or offset or limit is not None):
        all_lines = node.split("\n")
        lo, hi = _window(offset, limit, len(all_lines), None)
        shown = all_lines[lo:hi]
        text = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(shown, start=lo + 1))
        summary = f"lines {lo + 1:,}-{lo + len(shown):,} of {len(all_lines):,} of the string at {canonical}"
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
    rendered = orjson.dumps(node, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    ctx.guard_bytes(len(rendered), lambda n: rendered[:n])
    summary = f"{canonical} · {kind_of(node)}"
    if isinstance(node, (dict, list)):
        summary += f" of {len(node):,} {'keys' if isinstance(node, dict) else 'items'}"
    return Output(rendered, node, budget_footer(summary))


def get_in_suggestions(
    entry: Entry | None, value: Any, args: dict[str, Any], estimated: int, limit: int
) -> list[dict[str, Any]]:
    handle = args.get("handle")
    path = args.get("path") or "$"
    out = [suggestion("schema", "see the structure under it first", handle=handle)]
    if isinstance(value, list):
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
    return out


def _first_keys(items: list[Any]) -> list[str]:
    for item in items[:50]:
        if isinstance(item, dict):
            return [str(k) for k, v in item.items() if not isinstance(v, (dict, list))][:4] or [str(k) for k in item][
                :3
            ]
    return []


# -- iterate_over -----------------------------------------------------------------------------


def _cut_string(value: str, where: str) -> str:
    lines = value.split("\n")
    if len(lines) > STRING_LINES:
        kept = "\n".join(lines[:STRING_LINES])
        return f'{kept}\n… [+{len(lines) - STRING_LINES:,} more lines: get_in(path="{where}")]'
    if len(value) > STRING_CHARS:
        return f'{value[:STRING_CHARS]}… [+{len(value) - STRING_CHARS:,} chars: get_in(path="{where}")]'
    return value


def _cut(value: Any, where: str) -> Any:
    if isinstance(value, str):
        return _cut_string(value, where)
    if isinstance(value, (dict, list)):
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        if len(text) > STRING_CHARS:
            return f'{kind_of(value)} of {len(value):,}: {text[:200]}… [get_in(path="{where}")]'
    return value


def _fields(fields: Any) -> list[str]:
    if isinstance(fields, str):
        names = [f.strip() for f in fields.split(",")]
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
    return names[:50]


def iterate_over(
    ctx: ToolContext,
    handle: str,
    path: str = "$",
    fields: Any = None,
    offset: int = 0,
    limit: int | None = None,
) -> Output:
    entry = ctx.entry(handle)
    items = _as_items(entry, _resolve_or_error(entry, ctx.json_value(entry), path), path)
    if fields is None:
        keys = _first_keys(items)
        raise ToolError(
            "invalid_argument",
            "iterate_over needs 'fields': the keys (or dot paths) to show",
            [
                suggestion(
                    "iterate_over",
                    "the first scalar keys",
                    handle=entry.key,
                    path=path,
                    fields=",".join(keys) or "…",
                    limit=20,
                ),
                suggestion("item_schema", "see every key first", handle=entry.key, path=path),
            ],
            argument="fields",
        )
    names = _fields(fields)
    parsed = {}
    for name in names:
        try:
            parsed[name] = parse_path(name)
        except PathError as exc:
            raise ToolError("invalid_path", f"field {name!r}: {exc}", argument="fields") from None
    total = len(items)
    lo, hi = _window(offset, limit, total, 50)
    base = format_path(_steps_or_error(path))
    rows = []
    for i in range(lo, hi):
        item = items[i]
        row: dict[str, Any] = {"_index": i}
        for name, steps in parsed.items():
            try:
                value = resolve(item, steps)
            except PathMiss:
                value = None
            row[name] = _cut(value, f"{base}[{i}].{name}" if base != "$" else f"$[{i}].{name}")
        rows.append(row)
    text = "\n".join(orjson.dumps(r, option=orjson.OPT_NON_STR_KEYS).decode() for r in rows)
    nxt = f" · next: offset={hi}" if hi < total else ""
    summary = (
        f"items {lo:,}-{hi - 1:,} of {total:,} of {base}{nxt}" if rows else f"no items at offset {lo:,} of {total:,}"
    )
    meta = {"total_items": total, "offset": lo, "limit": hi - lo, "next_offset": hi if hi < total else None}
    return Output(text or "(no items in that window)", rows, budget_footer(summary), meta)


def window_suggestions(
    tool: str, args: dict[str, Any], estimated: int, limit: int, total: int | None
) -> list[dict[str, Any]]:
    handle = args.get("handle")
    offset = int(args.get("offset") or 0)
    asked = args.get("limit")
    asked = int(asked) if isinstance(asked, int) else (50 if tool == "iterate_over" else (total or 1000))
    fit = max(1, int(asked * limit * 0.8 / max(estimated, 1)))
    base = {k: v for k, v in args.items() if k not in ("offset", "limit", "file")}
    base["handle"] = handle
    out = [suggestion(tool, f"about {fit} items fit", **{**base, "offset": offset, "limit": fit})]
    if tool == "iterate_over" and isinstance(args.get("fields"), str) and "," in args["fields"]:
        out.append(
            suggestion(
                tool, "fewer fields", **{**base, "fields": args["fields"].split(",")[0], "offset": offset, "limit": fit}
            )
        )
    return out
