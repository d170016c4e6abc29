"""The ``schema`` tool: JSON paths with kinds and line ranges, markdown outlines, text summaries."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._bounded import sendable
from ..store import Entry
from ..store._jsonstream import StreamedJson, streamed_segments
from ..store._jsontext import dumps_pretty
from ._base import Output, ToolContext, ToolError, call_repr, fmt_bytes, grep_errors, suggestion
from ._embedded import MAX_EMBEDDED
from ._paths import key_step
from ._shape import Check, ItemKeyCounts, Shape, telling_fields
from ._text import CLIP_CHARS, _positive_int, budget_footer

__all__ = ["precompute_schema", "precompute_streamed_schema", "schema", "wait_for_schema"]

log = logging.getLogger("jupyter_scratchpad")

MAX_SCHEMA_NODES = 400
MAX_KEYS_SHOWN = 60
MAX_SECTION_KEYS = 50  # top-level "- key:" items kept per markdown section
SECTION_KEYS_SHOWN = 8


def _pretty_lines(value: Any, depth: int = 0) -> int:
    """The lines ``value`` takes in the body, where it sits ``depth`` levels down (the body is cut
    to one line per container past 64 levels from its root, not from the value)."""
    if isinstance(value, (dict, list)) and value:
        return dumps_pretty(value, base_depth=depth).count(b"\n")  # the body's own format
    return 1


MAP_MIN_KEYS = 20
_ID_LIKE = re.compile(r"[0-9]+|[0-9a-fA-F]{8,}|[0-9a-fA-F-]{36}|[A-Za-z]*[-_:.]?[0-9][0-9A-Za-z_:.-]*")


def _is_map(value: dict[Any, Any]) -> bool:
    """An object keyed by ids (``{"138586341": {...}, ...}``): many keys, all values objects of
    one shape, keys that look generated. Its schema is one ``{*}`` row, not a row per key."""
    if len(value) < MAP_MIN_KEYS:
        return False
    values = list(value.values())
    keys = list(value)
    id_like = sum(1 for k in keys[:200] if isinstance(k, str) and _ID_LIKE.fullmatch(k)) / min(len(keys), 200)
    if id_like >= 0.8 and len({type(v) for v in values}) == 1:
        return True  # ids to values of one type (objects, or names: {"12": "Area 12"})
    if not all(type(v) is dict for v in values):
        return False
    sample = values[:200]
    union = set().union(*(v.keys() for v in sample))
    average = sum(len(v) for v in sample) / len(sample)
    return bool(union) and len(union) <= 1.5 * max(average, 1) and len(keys) >= 3 * len(union)


@dataclass(frozen=True)
class StandIn:
    """What the schema needs of a large array it never holds: the list object that stands for
    it in the document (identity marks it), the union of its items' shapes (built a segment at a
    time), its item count and the lines it takes in the body."""

    node: list[Any]
    shape: Shape
    total: int
    lines: int


class _SchemaWriter:
    def __init__(
        self, max_depth: int, lines: bool = True, stand_in: StandIn | None = None, check: Check = None
    ) -> None:
        self.max_depth = max_depth
        self.lines = lines  # line ranges in the body (not for a part of it, nor a string's document)
        self.stand_in = stand_in
        self.check = check  # the call's check_time (or the spill worker's bound)
        self.rows: list[dict[str, Any]] = []
        self.truncated = 0

    def _pretty_lines(self, value: Any, depth: int) -> int:
        if self.stand_in is not None and value is self.stand_in.node:
            return self.stand_in.lines
        return _pretty_lines(value, depth)

    def _row(self, path: str, kind: str, where: str) -> None:
        if len(self.rows) >= MAX_SCHEMA_NODES:
            self.truncated += 1
            return
        self.rows.append({"path": path, "kind": kind, "where": where})

    def concrete(self, value: Any, path: str, depth: int, first_line: int, known_lines: int | None = None) -> int:
        """Rows for a value that sits at one place in the body; returns its line count.

        ``known_lines``: the value's line count when it is already known (the root: the body's).
        """
        stand_in = self.stand_in if self.stand_in is not None and value is self.stand_in.node else None
        if stand_in is not None:  # a streamed array: the rows of the array branch below, from its summary
            kind = Shape()
            kind.count, kind.len_lo, kind.len_hi = 1, stand_in.total, stand_in.total
            kind.kinds["array"] = 1
        else:
            kind = Shape.of([value], 0)
        index = len(self.rows)
        self._row(path, kind.describe(), "")
        if stand_in is not None:
            lines = stand_in.lines
            if depth < self.max_depth:
                self.repeated(
                    stand_in.shape,
                    f"{path}[*]",
                    depth + 1,
                    stand_in.total,
                    f"{stand_in.total} items, lines {first_line + 1}-{first_line + lines - 2}"
                    if self.lines
                    else f"{stand_in.total:,} items",
                )
        elif depth >= self.max_depth or not isinstance(value, (dict, list)) or not value:
            lines = self._pretty_lines(value, depth) if depth >= self.max_depth and self.lines else 1
        elif isinstance(value, dict) and _is_map(value):
            lines = self._pretty_lines(value, depth) if self.lines else 1
            shape = Shape.of(list(value.values()), self.max_depth - depth - 1, self.check)
            examples = ", ".join(sendable(json.dumps(k, ensure_ascii=False)) for k in list(value)[:3])
            self.rows[index]["kind"] = f"map of {len(value):,} keys (e.g. {examples})" if index < len(self.rows) else ""
            self.repeated(shape, f"{path}{{*}}", depth + 1, len(value), f"{len(value):,} values, same shape")
        elif isinstance(value, dict):
            lines, line = 2, first_line + 1
            for i, (key, child) in enumerate(value.items()):
                if i >= MAX_KEYS_SHOWN:
                    rest = sum(self._pretty_lines(v, depth + 1) for v in list(value.values())[i:]) if self.lines else 1
                    self._row(
                        f"{path}.…",
                        f"{len(value) - i} more keys",
                        f"lines {line}-{line + rest - 1}" if self.lines else "",
                    )
                    lines += rest
                    break
                child_lines = self.concrete(child, _child_path(path, key), depth + 1, line)
                line += child_lines
                lines += child_lines
        else:
            # at most one serialisation of the array
            lines = known_lines or (self._pretty_lines(value, depth) if self.lines else 2)
            item_lines = lines - 2
            shape = Shape.of(value, self.max_depth - depth - 1, self.check)
            self.repeated(
                shape,
                f"{path}[*]",
                depth + 1,
                len(value),
                f"{len(value)} items, lines {first_line + 1}-{first_line + item_lines}"
                if self.lines
                else f"{len(value):,} items",
            )
        if index < len(self.rows) and self.lines:
            self.rows[index]["where"] = (
                f"line {first_line}" if lines == 1 else f"lines {first_line}-{first_line + lines - 1}"
            )
        return lines

    def repeated(self, shape: Shape, path: str, depth: int, parent_count: int, where: str, whole: bool = True) -> None:
        """Rows for the union of many values (array items). A key in every object at its path, and
        its parents in every one at theirs (``whole``), is present in ``all`` the items: a column
        of ``2000/2000`` was a sixth of a records array's schema."""
        self._row(path, shape.describe(), where)
        if depth >= self.max_depth:
            return
        ordered = sorted(shape.keys.items(), key=lambda kv: -kv[1].count)
        for i, (key, child) in enumerate(ordered):
            if i >= MAX_KEYS_SHOWN:
                self._row(f"{path}.…", f"{len(ordered) - i:,} more keys", "")
                break
            # (in every object, and every value here an object: null or 5 among the items is not "all")
            every = whole and child.count == shape.objects == shape.count
            present = "all" if every else f"{child.count}/{shape.objects}"
            self.repeated(child, _child_path(path, key), depth + 1, shape.objects, present, every)
        if shape.rest is not None:  # many keys, each in few of the objects: one row, as a map's
            folded = sum(1 for k in shape.rest_names if k not in shape.keys)
            examples = ", ".join(sendable(json.dumps(k, ensure_ascii=False)) for k in list(shape.rest_names)[:3])
            self.repeated(
                shape.rest,
                f"{path}{{*}}",
                depth + 1,
                shape.objects,
                f"{shape.rest.count:,} values of {folded:,}{'+' if shape.rest_over else ''} keys, each in "
                f"under 1% of the objects (e.g. {examples})",
            )
        if shape.items is not None:
            self.repeated(
                shape.items,
                f"{path}[*]",
                depth + 1,
                shape.count,
                f"{shape.items.count} items in {shape.kinds['array']} arrays",
            )


_SCHEMAS: dict[tuple[str, int], _SchemaWriter] = {}
_SCHEMA_LOCK = threading.Lock()
DEFAULT_DEPTH = 4  # schema's default max_depth: the one computed at spill time
# v2: the line ranges of a document nested deeper than the body's 64-level cut (v1 files of such
# documents gave ranges past the body's end; every v1 file is ignored and computed again)
# v3: a key in every item says "all" (v2 rows said 2000/2000: such files are computed again);
# v4: not when some items are no objects (v3 said "all" of 2 objects among 4 items)
_SCHEMA_FILE = "schema-v4-d{depth}.json"


_EXECUTOR: ThreadPoolExecutor | None = None
_PENDING: dict[str, Future[None]] = {}
# how long the spill's worker (one thread, shared by every spill) spends on one body's schema and
# item counts: past it, it gives up and a tool computes them when asked, under the call's own
# time limit (a hostile document tied it up for minutes, and every later spill queued behind it)
PRECOMPUTE_LIMIT_S = 60.0
# ... or longer for a large body: at least this many bytes a second (the passes run ~30 MB/s; a
# 1 GiB document is not given up at 60 s and then computed on demand, timing out, at every call)
PRECOMPUTE_MIN_BYTES_PER_S = 2_000_000


class _GaveUp(Exception):
    """The spill's worker spent ``PRECOMPUTE_LIMIT_S`` on one body."""


def _worker_check(body_dir: Path) -> Check:
    """A ``check`` that stops the worker's passes on the body in ``body_dir`` once its time is up:
    ``PRECOMPUTE_LIMIT_S``, or more for a large body (``PRECOMPUTE_MIN_BYTES_PER_S``)."""
    try:
        size = (body_dir / "raw").stat().st_size
    except OSError:
        size = 0
    seconds = max(PRECOMPUTE_LIMIT_S, size / PRECOMPUTE_MIN_BYTES_PER_S)
    deadline = time.monotonic() + seconds

    def check() -> None:
        if time.monotonic() > deadline:
            raise _GaveUp(f"gave up after {seconds:g} s")

    return check


def precompute_schema(body_dir: Path, body_id: str, line_count: int | None, value: Any) -> Future[None]:
    """Compute (and save beside the body) the default-depth schema of a JSON body just spilled,
    and the item_schema of each of its arrays of records, from the value the spill parsed, on a
    worker thread: the stub does not wait for them, and a cold call, in this process or another,
    finds them done."""

    def job() -> None:
        from ._json import precompute_item_counts

        check = _worker_check(body_dir)
        json_schema(body_dir, body_id, DEFAULT_DEPTH, line_count, lambda: value, check=check)
        precompute_item_counts(body_dir, body_id, value, check=check)

    return _submit(body_id, job)


def precompute_streamed_schema(
    body_dir: Path, body_id: str, line_count: int | None, streamed: StreamedJson
) -> Future[None]:
    """``precompute_schema`` for a document the spill read a segment at a time: the worker reads
    the array's segments back from the stored raw file, one at a time, and merges their shapes
    and item counts (never the whole array in memory, and the same result)."""
    from ._json import precompute_item_counts
    from ._relations import array_relations

    depth = len(streamed.path)
    segments, skeleton, sample, node = streamed.segments, streamed.skeleton, streamed.sample, streamed.placeholder
    total, lines, path = streamed.total, streamed.array_lines, list(streamed.path)
    # item_schema is precomputed for the root array and each array of records the spill found
    counted = not path or any(keys == path for _name, keys in array_relations(sample))

    def job() -> None:
        shape: Shape | None = None
        counts = ItemKeyCounts() if counted else None
        check = _worker_check(body_dir)
        with open(body_dir / "raw", "rb") as fh:

            def read(start: int, end: int) -> bytes:
                fh.seek(start)
                return fh.read(end - start)

            for items in streamed_segments(segments, read):
                part = Shape.of(items, DEFAULT_DEPTH - depth - 1, check)
                shape = part if shape is None else shape.merge(part)
                if counts is not None:
                    counts.add(items, check)
                del items
        assert shape is not None
        stand_in = StandIn(node, shape, total, lines)
        json_schema(body_dir, body_id, DEFAULT_DEPTH, line_count, lambda: skeleton, stand_in, check)
        streamed_counts = (path, counts) if counts is not None else None
        precompute_item_counts(body_dir, body_id, sample, streamed_counts, check=check)

    return _submit(body_id, job)


def _submit(body_id: str, compute: Callable[[], None]) -> Future[None]:
    global _EXECUTOR

    def job() -> None:
        try:
            compute()
        except _GaveUp as stop:  # (what is done is kept: the schema, when only the item counts were left)
            log.info("the schema of spilled body %s was not precomputed (%s): the tools compute it", body_id, stop)
        except Exception:
            log.exception("computing the schema of a spilled body failed (the tool will compute it)")
        finally:
            with _SCHEMA_LOCK:
                _PENDING.pop(body_id, None)

    with _SCHEMA_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scratch-schema")
        future = _EXECUTOR.submit(job)
        _PENDING[body_id] = future
    return future


def wait_for_schema(body_id: str | None, timeout_s: float) -> bool:
    """Wait (at most ``timeout_s``) for a schema being computed for ``body_id`` after its spill;
    whether none is being computed now."""
    with _SCHEMA_LOCK:
        future = _PENDING.get(body_id or "")
    if future is not None:
        with contextlib.suppress(Exception):
            future.result(timeout=max(0.0, timeout_s))
    return future is None or future.done()


def save_beside_body(path: Path, payload: Any) -> None:
    """Write ``payload`` as JSON to ``path`` in a body directory, whole then renamed (a reader in
    any process never sees half a file); a read-only or vanished body keeps only the memory copy.

    Nothing is written beside a body that is gone or going (its ``raw`` removed: a delete, in this
    process or another): a file written while the delete removed the directory kept it there, an
    orphan holding only that file, until a sweep past the grace. The directory is never made."""
    raw = path.parent / "raw"
    if not raw.exists():
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    try:
        data = orjson.dumps(payload)
    except (TypeError, orjson.JSONEncodeError):  # a key with a lone surrogate: kept in memory only
        return
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return
    if not raw.exists():  # removed while this was written: take it back, and the directory if it is empty
        with contextlib.suppress(OSError):
            path.unlink()
        with contextlib.suppress(OSError):
            path.parent.rmdir()


def json_schema(
    body_dir: Path,
    body_id: str,
    max_depth: int,
    line_count: int | None,
    value: Callable[[], Any],
    stand_in: StandIn | Callable[[Any], StandIn | None] | None = None,
    check: Check = None,
) -> _SchemaWriter:
    """The schema rows of a JSON body: from memory, else the body's ``schema-v4-d<depth>.json``
    (written by the spill's worker, or by any process that computed it), else computed from
    ``value()`` and saved beside the body. A body never changes, so neither does its schema.
    ``stand_in``: for a big array the value does not hold, or a function of the value giving it.
    ``check``: called as the shapes are built (a tool call's ``check_time``)."""
    key = (body_id, max_depth)
    with _SCHEMA_LOCK:
        writer = _SCHEMAS.get(key)
    if writer is not None:
        return writer
    path = body_dir / _SCHEMA_FILE.format(depth=max_depth)
    try:
        saved = orjson.loads(path.read_bytes())
        writer = _SchemaWriter(max_depth)
        writer.rows, writer.truncated = list(saved["rows"]), int(saved["truncated"])
    except (OSError, ValueError, KeyError, TypeError):
        doc = value()
        writer = _SchemaWriter(max_depth, stand_in=stand_in(doc) if callable(stand_in) else stand_in, check=check)
        writer.concrete(doc, "$", 0, 1, line_count or None)
        save_beside_body(path, {"rows": writer.rows, "truncated": writer.truncated})
    with _SCHEMA_LOCK:
        _SCHEMAS[key] = writer
        while len(_SCHEMAS) > 64:
            _SCHEMAS.pop(next(iter(_SCHEMAS)), None)
    return writer


PENDING_RESERVE_S = 2.0  # of a call's time, kept to answer when the spill's schema is not done


def _pending_sketch(ctx: ToolContext, entry: Entry, title: str) -> Output | None:
    """A streamed spill whose schema is still being computed: the stub's sketch of its skeleton
    and first items, said to be that. None when the spill was not streamed."""
    from ..spill._stub import schema_sketch
    from ._segments import MISSING, streamed_sample

    sample = streamed_sample(ctx, entry)
    if sample is MISSING:
        return None
    sketch = schema_sketch(sample)
    text = "\n".join(
        [
            f"{title}: the full schema (every node, presence counts over every item) is still being "
            "computed after the spill; ask again in a few seconds. Meanwhile, from the document's "
            "skeleton and its first items:",
            *sketch,
        ]
    )
    data = {"handle": entry.key, "format": "json", "pending": True, "sketch": sketch}
    return Output(text, data, budget_footer("schema still being computed: the sketch", "sketch"))


def _child_path(path: str, key: str) -> str:
    return path + key_step(key)


def _render_rows(rows: list[dict[str, Any]]) -> str:
    width = min(60, max(len(r["path"]) for r in rows)) if rows else 0
    kwidth = min(40, max(len(r["kind"]) for r in rows)) if rows else 0
    return "\n".join(f"{r['path']:<{width}}  {r['kind']:<{kwidth}}  {r['where']}".rstrip() for r in rows)


MAX_DEPTH = 32  # the deepest schema one call describes


def schema(ctx: ToolContext, handle: str, max_depth: int = 4, path: str | None = None) -> Output:
    entry = ctx.entry(handle)
    max_depth = _positive_int(max_depth, "max_depth", 0)
    if max_depth > MAX_DEPTH:  # (the published schema says so too: a strict client checks it first)
        raise ToolError("invalid_argument", f"'max_depth' must be at most {MAX_DEPTH}", argument="max_depth")
    if path is not None and str(path).strip() not in ("", "$"):
        return _schema_at(ctx, entry, max_depth, path)
    title = f"schema of {entry.key} ({entry.format}, {fmt_bytes(entry.size_bytes)}, {entry.line_count or 0:,} lines)"
    if entry.format == "json":
        assert entry.body_id is not None
        # computed after the spill, on a worker thread: let it land, or (a streamed spill of
        # hundreds of MB takes longer than a call) answer with the stub's sketch meanwhile rather
        # than compute it a second time, at the same time, past the call's limit
        if max_depth == DEFAULT_DEPTH and not wait_for_schema(entry.body_id, ctx.time_left() - PENDING_RESERVE_S):
            pending = _pending_sketch(ctx, entry, title)
            if pending is not None:
                return pending
        from ._json import _node_at

        writer = json_schema(  # (a streamed spill: its skeleton, the array's shape merged a segment at a time)
            ctx.reader(entry).directory,
            entry.body_id,
            max_depth,
            entry.line_count,
            lambda: _node_at(ctx, entry, "$", lazy=True),
            lambda doc: _streamed_stand_in(doc, max_depth, ctx.check_time),
            ctx.check_time,
        )
        rows = writer.rows
        text = _render_rows(rows)
        if writer.truncated:
            text += f"\n… {writer.truncated:,} more nodes: lower max_depth, or item_schema / get_in a path"
        embedded = list(entry.meta.get("embedded") or [])
        if embedded:
            text += "\n" + _embedded_lines(ctx, entry, embedded)
        next_steps = _json_next_steps(entry, rows, _items_sampler(ctx, entry), _page_fit(ctx, entry))
        if next_steps[0].startswith("get_in(") and not _fits_whole(ctx, entry, rows):
            next_steps = [_read_window(ctx, entry)]
        if embedded:
            next_steps.insert(0, call_repr("schema", {"handle": entry.key, "path": embedded[0]["path"]}))
        data = {
            "handle": entry.key,
            "format": "json",
            "max_depth": max_depth,
            "nodes": rows,
            "truncated_nodes": writer.truncated,
        }
        if embedded:
            data["embedded"] = embedded
    elif entry.format == "markdown":
        reader = ctx.reader(entry)
        text, heads = _markdown_outline(reader.iter_lines(), entry.line_count or 0, max_depth, entry.key)
        data = {"handle": entry.key, "format": "markdown", "headings": heads}
        next_steps = [_section_slice(ctx, entry, heads)]
    else:
        text, data = _text_summary(ctx, entry, max_depth)
        fit = _lines_fit(ctx, entry)
        # (lines longer than the call's limit: a head of one is refused; the bytes are read a window at a time)
        head = call_repr("head", {"handle": entry.key, "lines": fit}) if fit else _read_window(ctx, entry)
        # (a grep shows whole lines: when not even one fits, the byte window alone)
        errors = _grep_fit(ctx, entry) if fit else None
        next_steps = [call_repr("grep", errors["arguments"]), head] if errors else [head]
        if entry.format == "jsonl":
            next_steps.insert(0, f'item_schema(handle="{entry.key}", path="$")')
    body = f"{title}\n{text}\nnext: " + "; ".join(next_steps)
    return Output(body, data, budget_footer(f"schema · {entry.line_count or 0:,} lines"))


def _section_slice(ctx: ToolContext, entry: Entry, heads: list[dict[str, Any]]) -> str:
    """A slice of the first section (as much of it as fits the call's limit, measured), or of
    the first lines when there is no heading; a window of bytes when not even a line fits."""
    start, end = (heads[0]["start"], heads[0]["end"]) if heads else (1, entry.line_count or 1)
    fit = _lines_fit(ctx, entry, most=min(50, max(1, end - start + 1)), start=start)
    if not fit:
        return _read_window(ctx, entry)
    return call_repr("slice", {"handle": entry.key, "start": start, "end": start + fit - 1}) + " reads a section"


GREP_MATCHES = 20  # matches the next: line's grep asks for, at most


def _grep_fit(ctx: ToolContext, entry: Entry) -> Any:
    """``grep_errors``'s search sized to the call's limit, as the head beside it is: the largest
    context (3, 1, then 0) at which 20 matches fit, else fewer matches with no context; None when
    not even one fits. Sized from the longest line (as grep clips it) at a token per byte, a
    bound no text passes, so the call named runs as it is: 20 matches with 3 lines of context
    over a log of 400-byte lines was 37,000 tokens, refused at every call."""
    call = grep_errors(entry.key, "")
    args = dict(call["arguments"])
    longest = int(getattr(ctx.reader(entry), "longest_line", 0) or 0)
    # (a line as grep shows it, at most CLIP_CHARS characters with its clip marks; its number, a
    # '>' mark and a newline; the '--' between windows)
    shown = min(longest, 4 * CLIP_CHARS) + (60 if longest > CLIP_CHARS else 0) + 12
    factor = float(getattr(ctx.pad.tokenizer.rule, "factor", 1.0) or 1.0)
    room = int((ctx.limit_tokens - 60) * 0.8)
    for context in (3, 1):
        if GREP_MATCHES * ((2 * context + 1) * shown + 3) * factor <= room:
            if context != 3:
                args["context"] = context
            return suggestion("grep", "", **args)
    matches = min(GREP_MATCHES, int(room / ((shown + 3) * factor)))
    if matches < 1:
        return None
    return suggestion("grep", "", **{**args, "context": 0, "max_matches": matches})


def _lines_fit(ctx: ToolContext, entry: Entry, most: int = 50, start: int = 1) -> int:
    """Lines of ``entry`` a head may ask for within the call's limit (``most`` at most; 0 when
    not even the first line fits), measured on the first lines as numbered: 50 lines of a log
    of long lines were refused where the hint was followed, and "2.5 bytes a token" offered a
    head of one line of digits (~1.5 bytes a token) that was refused."""
    reader = ctx.reader(entry)
    room = int((ctx.limit_tokens - 60) * 0.8)
    n = min(most, (entry.line_count or 0) - start + 1)
    while n >= 1:
        a, b = reader.line_span(start, start + n - 1)
        if b - a <= room * 8:  # (a token is never more than ~8 bytes: no need to count more)
            lines = reader.read_lines(start, start + n - 1)
            page = "\n".join(f"{i}\t{line}" for i, line in enumerate(lines, start=start))
            if ctx.pad.tokenizer.count(page) <= room:
                return n
        n //= 2
    return 0


def _string_window(
    ctx: ToolContext, handle: str, path: str, node: str, lines: list[str], offset: int = 0, end: int | None = None
) -> str:
    """A get_in of the string's lines from ``offset`` (to line ``end`` at most) that fits the
    call's limit, measured; a window of its characters when not even its first line fits (a
    one-line string of 2 MB)."""
    from ._json import _chars_that_fit

    room = int((ctx.limit_tokens - 60) * 0.8)
    n = max(1, min(50, (len(lines) if end is None else end) - offset))
    while n >= 1:
        page = "\n".join(f"{i}\t{line}" for i, line in enumerate(lines[offset : offset + n], start=offset + 1))
        if len(page) <= room * 8 and ctx.pad.tokenizer.count(page) <= room:
            return call_repr("get_in", {"handle": handle, "path": path, "offset": offset, "limit": n})
        n //= 2
    return call_repr(
        "get_in", {"handle": handle, "path": path, "chars": True, "offset": 0, "limit": _chars_that_fit(node, 0, room)}
    )


def _read_window(ctx: ToolContext, entry: Entry) -> str:
    """A read_handle of the output's first bytes that fits the call's limit (what is always
    readable, whatever the lines or the structure), measured: CJK or hieroglyphs cost about a
    token a byte, where "2 bytes a token, at worst" offered a window then refused."""
    room = int((ctx.limit_tokens - 60) * 0.8)
    end = min(entry.size_bytes, max(256, room * 2))
    reader = ctx.reader(entry)
    for _ in range(6):
        tokens = ctx.pad.tokenizer.count(reader.read_raw(0, end).decode("utf-8", "replace"))
        if tokens <= room or end <= 256:
            break
        end = max(256, int(end * room / tokens * 0.9))
    return call_repr("read_handle", {"handle": entry.key, "start": 0, "end": end})


def _fits_whole(ctx: ToolContext, entry: Entry, rows: list[dict[str, Any]]) -> bool:
    """Whether the node the next-step get_in names (``_first_named``) fits the
    call's limit: a map of 60,000 keys or a 2 MB string there was named, then refused."""
    from ._json import _estimate, _node_at, lean_json

    path = _first_named(rows)
    room = (ctx.limit_tokens - 60) * 0.8
    try:
        node = _node_at(ctx, entry, path, lazy=True)
    except ToolError:
        return True  # (the call says what is wrong itself)
    if isinstance(node, str):
        return len(node) <= room * 8 and ctx.pad.tokenizer.count(node) <= room
    found = _estimate(ctx, node)
    if found is not None:
        return found[0] <= room
    return ctx.pad.tokenizer.count(lean_json(node)) <= room


def _embedded_lines(ctx: ToolContext, entry: Entry, embedded: list[dict[str, Any]]) -> str:
    """The documents inside strings, one line per path with its array indices as ``[*]`` (an
    issue list's 600 bodies are one line, not ten identical rows and "… 10 more"), each with how
    many items hold one and a call on a real one."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in embedded:
        groups.setdefault((re.sub(r"\[\d+\]", "[*]", str(e["path"])), str(e["format"])), []).append(e)
    rows = ["documents inside strings (paths go through them):"]
    for (path, fmt), docs in groups.items():
        first = str(docs[0]["path"])
        size = _spread([d["bytes"] for d in docs], fmt_bytes)
        lines = _spread([d["lines"] for d in docs], lambda n: f"{n:,}")
        lines += " line" if lines == "1" else " lines"
        call = _embedded_call(ctx, entry, first, fmt)
        n, holders = _holders(ctx, entry, path, fmt, len(docs), len(embedded) >= MAX_EMBEDDED)
        if n == 1 or path == first:  # one document: its own path
            rows.append(f"  {first}: {fmt}, {size}, {lines} ({call})")
            continue
        seen = "" if n == len(docs) else "~"  # (sizes of the ones the spill listed)
        rows.append(f"  {path}: {fmt} in {holders} ({seen}{size}, {lines} each; {call})")
    return "\n".join(rows)


def _spread(values: list[int], say: Callable[[int], str]) -> str:
    """``1.4 KB`` when the least and the most of ``values`` say the same, else ``1.2 KB-1.6 KB``."""
    lo, hi = say(min(values)), say(max(values))
    return lo if lo == hi else f"{lo}-{hi}"


def _embedded_call(ctx: ToolContext, entry: Entry, path: str, fmt: str) -> str:
    """A call on one document inside a string: its headings (markdown), else a path inside it."""
    from ._embedded import embedded_json
    from ._json import _node_at
    from ._paths import Step, format_path, parse_path

    if fmt == "json":
        try:
            doc = embedded_json(_node_at(ctx, entry, path, lazy=True))
        except ToolError:
            doc = None
        if isinstance(doc, (dict, list)) and doc:
            step = Step(str(next(iter(doc))), True) if isinstance(doc, dict) else Step(0)
            inside = format_path([*parse_path(path), step])
            return f"get_in path={json.dumps(inside, ensure_ascii=False)} reads inside it"
    return f"schema path={json.dumps(path, ensure_ascii=False)} shows {'the headings' if fmt == 'markdown' else 'it'}"


HOLDERS_COUNTED = 20_000  # values at a [*] path whose documents schema counts (else "20+")
HOLDERS_S = 0.25  # seconds schema spends counting them at most


def _holders(ctx: ToolContext, entry: Entry, path: str, fmt: str, found: int, capped: bool) -> tuple[int | None, str]:
    """How many of the strings at ``path`` (one ``[*]``) hold a ``fmt`` document, and in how
    many items, said: counted over every item of an array held in memory (the spill lists at
    most ``MAX_EMBEDDED``), else ``20+ items`` when the spill's list was cut (None)."""
    from ._embedded import _embedded_format
    from ._json import _items_at
    from ._paths import LazyArray, PathError, PathMiss, parse_path, resolve

    if path.count("[*]") == 1:
        array, rest = path.split("[*]")
        try:
            items = _items_at(ctx, entry, array or "$")
            steps = parse_path(rest)
        except (ToolError, PathError):
            items, steps = [], []
        if items and not isinstance(items, LazyArray) and len(items) <= HOLDERS_COUNTED:
            n, until = 0, time.monotonic() + HOLDERS_S
            for i, item in enumerate(items):
                if i % 256 == 0:
                    ctx.check_time()
                    if time.monotonic() > until:  # (a JSON document is parsed to be told)
                        return None, f"{max(n, found)}+ items"
                try:
                    value = resolve(item, steps)
                except PathMiss:
                    continue
                n += isinstance(value, str) and _embedded_format(value) == fmt
            if n >= found:
                return n, f"{n:,} of {len(items):,} items" if n < len(items) else f"{n:,} items"
    return (None, f"{found}+ items") if capped else (found, f"{found} items")


def _schema_at(ctx: ToolContext, entry: Entry, max_depth: int, path: str) -> Output:
    """The schema of one part of a JSON handle; a string there that holds JSON or markdown is
    described as the document it holds (Aura's companion file, by path)."""
    from ._embedded import embedded_json, is_markdown
    from ._json import _canonical, _node_at, _show

    if entry.format not in ("json", "jsonl"):
        raise ToolError(
            "invalid_argument",
            f"'path' needs a JSON handle; {entry.key} is {entry.format} (schema without a path describes it)",
            [suggestion("schema", "the whole handle", handle=entry.key)],
            argument="path",
        )
    node = _node_at(ctx, entry, path, lazy=True)
    shown = _show(_canonical(path))
    doc = embedded_json(node) if isinstance(node, str) else None
    data: dict[str, Any]
    if isinstance(node, str) and doc is None:
        lines = node.split("\n")
        if is_markdown(node):
            text, heads = _markdown_outline(iter(lines), len(lines), max_depth, entry.key, path)
            title = f"schema of {entry.key} at {shown}: a string that holds markdown ({len(lines):,} lines)"
            data = {"handle": entry.key, "path": path, "format": "markdown", "headings": heads}
            first = heads[0] if heads else {"start": 1, "end": len(lines)}
            steps = [_string_window(ctx, entry.key, path, node, lines, first["start"] - 1, first["end"])]
        else:
            title = f"schema of {entry.key} at {shown}: a string ({len(lines):,} lines, {len(node):,} characters)"
            text = "(plain text: no JSON and no markdown headings in it)"
            data = {"handle": entry.key, "path": path, "format": "text", "lines": len(lines)}
            steps = [_string_window(ctx, entry.key, path, node, lines)]
        body = f"{title}\n{text}\nnext: " + "; ".join(steps)
        return Output(body, data, budget_footer(f"schema · {shown}"))
    value = doc if doc is not None else node
    stand_in = _streamed_stand_in(value, max_depth, ctx.check_time)
    writer = _SchemaWriter(max_depth, lines=False, stand_in=stand_in, check=ctx.check_time)
    writer.concrete(value, _canonical(path), 0, 1)
    rows = writer.rows
    what = "a string that holds JSON, read as the document" if doc is not None else "a part of the document"
    text = f"schema of {entry.key} at {shown} ({what})\n" + _render_rows(rows)
    if writer.truncated:
        text += f"\n… {writer.truncated:,} more nodes: lower max_depth, or item_schema / get_in a path"
    steps = _json_next_steps(entry, rows, _items_sampler(ctx, entry), _page_fit(ctx, entry))
    data = {
        "handle": entry.key,
        "path": path,
        "format": "json",
        "embedded": doc is not None,
        "max_depth": max_depth,
        "nodes": rows,
        "truncated_nodes": writer.truncated,
    }
    return Output(text + "\nnext: " + "; ".join(steps), data, budget_footer(f"schema · {shown}"))


_ITEM_SHAPES: dict[tuple[str | None, int], Shape | None] = {}  # a streamed array's shape, by depth


def _streamed_stand_in(node: Any, max_depth: int, check: Check = None) -> StandIn | None:
    """For a part of a streamed spill that holds its big array (``$``, ``$.items``): the array's
    shape, merged a segment at a time (the memory of one segment, never the whole array)."""
    from ._segments import find_lazy

    found = find_lazy(node)
    if found is None:
        return None
    items, keys = found
    depth = max(0, max_depth - len(keys) - 1)
    key = (items.body_id, depth)
    with _SCHEMA_LOCK:
        shape = _ITEM_SHAPES.get(key)
    if shape is None:
        for part in items.each_segment():
            batch = Shape.of(part, depth, check)
            shape = batch if shape is None else shape.merge(batch)
            del part
        with _SCHEMA_LOCK:
            _ITEM_SHAPES[key] = shape
            while len(_ITEM_SHAPES) > 16:
                _ITEM_SHAPES.pop(next(iter(_ITEM_SHAPES)), None)
    return StandIn(items, shape or Shape.of([], 0), len(items), items.lines)  # type: ignore[arg-type]


ItemsAt = Callable[[str], tuple[Any, Any]]  # an array's path: (its items, its fields' values counted)


def _items_in_hand(ctx: ToolContext, entry: Entry) -> bool:
    """Whether the items of a JSON body can be read without parsing it whole: its parsed value is
    in memory, or the spill streamed its array (a segment is read). A cold schema call (another
    process) parsed a 3 MB body for its next: line alone, 1 ms became 40-90 ms; it names the
    fields from the saved counts then."""
    from ._base import VALUE_CACHE
    from ._segments import _index

    if entry.body_id is None:
        return False
    return VALUE_CACHE.holds(entry.body_id) or _index(ctx.reader(entry).directory, entry.body_id) is not None


def _items_sampler(ctx: ToolContext, entry: Entry) -> ItemsAt:
    """The items at a path (a streamed array's first segment, at most; none when only a parse
    of the whole body would give them) and, when the spill counted them, the distinct values of
    their fields (item_schema's)."""
    from ._json import _items_at, _saved_item_counts

    def items_at(path: str) -> tuple[Any, Any]:
        saved = _saved_item_counts(ctx, entry, path)
        items = _items_at(ctx, entry, path) if _items_in_hand(ctx, entry) else []
        return items, (saved[2] if saved is not None else None)

    return items_at


PAGE_ITEMS = 20  # items in the iterate_over that schema's next: names, when they fit


def _page_fit(ctx: ToolContext, entry: Entry) -> Callable[[str, str], int]:
    """How many of the first ``PAGE_ITEMS`` items' ``fields`` at a path fit 80 % of the call's
    limit, measured as iterate_over shows them (its cells cut the same way): 20 items of three
    2,000-character CJK fields were ~37,000 tokens, and the next: call it named was refused."""
    from ._json import _array_path, _cut, _fields, _items_at
    from ._paths import PathError, PathMiss, parse_path, resolve

    def fit(path: str, fields: str) -> int:
        if not _items_in_hand(ctx, entry):  # (not parsed for this alone: see _items_in_hand)
            return PAGE_ITEMS
        try:
            items = _items_at(ctx, entry, path)
            steps = [parse_path(str(_array_path(name))) for name in _fields(fields)]
            window = [items[i] for i in range(min(PAGE_ITEMS, len(items)))]
        except (ToolError, PathError):
            return PAGE_ITEMS
        cells: list[Any] = []
        for i, item in enumerate(window):
            row: list[Any] = [i]
            for at in steps:
                try:
                    row.append(_cut(resolve(item, at), entry.key, "$", ctx.limit_tokens))
                except PathMiss:
                    row.append(None)
            cells.append(row)
        tokens = ctx.pad.tokenizer.count(orjson.dumps(cells, default=str).decode())
        room = ctx.limit_tokens * 0.8
        return PAGE_ITEMS if tokens <= room else max(1, int(len(window) * room / tokens))

    return fit


def _json_next_steps(
    entry: Entry,
    rows: list[dict[str, Any]],
    items_at: ItemsAt | None = None,
    fit: Callable[[str, str], int] | None = None,
) -> list[str]:
    maps = [
        r["path"]
        for r in rows
        if r["path"].endswith("{*}")
        and r["path"].count("{*}") == 1
        and "[*]" not in r["path"]
        and r["kind"].startswith("object")
    ]
    arrays = [
        r["path"] for r in rows if r["kind"].startswith("array") and "[*]" not in r["path"] and "{*}" not in r["path"]
    ]
    arrays = maps[:1] + arrays
    if arrays:
        p = arrays[0] if arrays[0] != "$" else "$"
        steps = [call_repr("item_schema", {"handle": entry.key, "path": p})]
        fields = _item_fields(rows, p, items_at)
        if fields:  # the fields that say what each item is, as iterate_over reads them
            limit = fit(p, fields) if fit is not None else PAGE_ITEMS
            steps.append(call_repr("iterate_over", {"handle": entry.key, "path": p, "fields": fields, "limit": limit}))
        return steps
    cut = _first_cut(rows)
    if cut is not None:  # a container the depth cut left unopened: get_in on it is likely refused
        where = {} if cut == "$" else {"path": cut}
        return [call_repr("schema", {"handle": entry.key, **where, "max_depth": DEFAULT_DEPTH})]
    return [call_repr("get_in", {"handle": entry.key, "path": _first_named(rows)})]


_SCALAR_KINDS = ("string", "number", "bool", "null", "integer", "boolean")


def _item_fields(rows: list[dict[str, Any]], path: str, items_at: ItemsAt | None = None, most: int = 4) -> str | None:
    """Up to ``most`` fields of the items at ``path`` whose values are scalars, comma-separated
    (``$["a.b"]`` for a key a dot would split): with ``items_at``, those that say what each item
    is (``telling_fields``: no constant, id or URL), else the first the rows show; None when the
    rows show none."""
    prefix = path if path.endswith("{*}") else f"{path}[*]"
    names: list[str] = []
    for r in rows:
        rest = str(r["path"])[len(prefix) :] if str(r["path"]).startswith(prefix) else ""
        kind = str(r["kind"]).split("(")[0].strip()
        if not rest or "*" in rest or "…" in rest or not kind.startswith(_SCALAR_KINDS):
            continue
        if re.fullmatch(r"(\.[A-Za-z_][A-Za-z0-9_]*)+", rest):  # metadata.name: a dot path iterate_over reads
            names.append(rest[1:])
        elif rest.startswith('["') and rest.endswith('"]') and rest.count('"]') == 1:
            names.append("$" + rest)
    if items_at is not None and names:
        try:
            items, values = items_at(path)
        except ToolError:
            items, values = [], None
        chosen = telling_fields(items, names, most, values)
        if chosen:
            return ",".join(chosen)
        if values:  # (no items in hand: the counted values still tell a field that never changes)
            names = [n for n in names if len(values.get(n) or [None, None]) != 1] or names
    return ",".join(names[:most]) or None


def _first_named(rows: list[dict[str, Any]]) -> str:
    """The path next steps name for get_in: the first row of no wildcard, else ``$``."""
    return next((r["path"] for r in rows if r["path"] != "$" and "*" not in r["path"]), "$")


_EMPTY = re.compile(r"(object|array)\(0 ")


def _first_cut(rows: list[dict[str, Any]]) -> str | None:
    """The first non-empty object or array whose children no row shows (the depth cut it)."""
    paths: list[str] = [r["path"] for r in rows]
    for i, r in enumerate(rows):
        path, kind = paths[i], str(r["kind"])
        if "*" in path or "…" in path or not kind.startswith(("object(", "array(")) or _EMPTY.match(kind):
            continue
        child = paths[i + 1] if i + 1 < len(paths) else ""
        if not (len(child) > len(path) and child.startswith(path) and child[len(path)] in ".[{"):
            return path
    return None


_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")


def _markdown_outline(
    lines: Any, total: int, max_depth: int, handle: str, path: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """The heading tree with line ranges and, per section, its top-level ``- key:`` items (Aura's
    section keys: ``- version: 3`` gives ``version``), headings of level ``max_depth`` and above."""
    max_depth = max(1, max_depth)  # (0: the top level still)
    heads: list[dict[str, Any]] = []
    fence: str | None = None
    for n, line in enumerate(lines, start=1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
            continue
        if fence is not None:
            continue
        m = _HEADING.match(line)
        if m:
            heads.append({"level": len(m.group(1)), "title": m.group(2), "start": n, "keys": []})
        elif heads and line.startswith("- ") and len(heads[-1]["keys"]) < MAX_SECTION_KEYS:
            item = line[2:]
            key = item.split(": ", 1)[0] if ": " in item else item.rstrip().rstrip(":")
            if key and len(key) <= 80:
                heads[-1]["keys"].append(key)
    for i, h in enumerate(heads):
        end = total
        for later in heads[i + 1 :]:
            if later["level"] <= h["level"]:
                end = later["start"] - 1
                break
        h["end"] = end
    levels = Counter(h["level"] for h in heads)
    deep = [h for h in heads if h["level"] > max_depth]
    heads = [h for h in heads if h["level"] <= max_depth]
    shown = heads[:MAX_SCHEMA_NODES]
    rows = []
    for h in shown:
        row = f"{'  ' * (h['level'] - 1)}{'#' * h['level']} {h['title'][:120]}  lines {h['start']}-{h['end']}"
        if h["keys"]:
            keys = h["keys"][:SECTION_KEYS_SHOWN]
            more = f", +{len(h['keys']) - len(keys)}" if len(h["keys"]) > len(keys) else ""
            row += f"  (keys: {', '.join(k[:40] for k in keys)}{more})"
        rows.append(row)
    if not heads:
        rows = [f"(no headings of level {max_depth} or above)" if deep else "(no headings)"]
    if len(heads) > len(shown):  # the deepest level at which every heading fits, or the headings by grep
        fits = [lv for lv in range(1, 7) if sum(n for level, n in levels.items() if level <= lv) <= MAX_SCHEMA_NODES]
        rest = f"… {len(heads) - len(shown):,} more headings from line {heads[len(shown)]['start']:,}"
        if fits:
            call = call_repr("schema", {"handle": handle, **({"path": path} if path else {}), "max_depth": fits[-1]})
            rows.append(f"{rest}: {call} shows every heading of its levels")
        else:
            rows.append(f'{rest}: grep(handle="{handle}", pattern="^# ", context=0) lists the top-level ones')
    if deep:
        rows.append(f"({len(deep):,} headings deeper than level {max_depth}: a larger max_depth shows them)")
    return "\n".join(rows), heads


def _bare_cr(reader: Any, entry: Entry) -> bool:
    """Whether the body's lines were split at bare CRs (its own file, unlike a text's as given)."""
    from ..store._format import has_bare_cr

    if entry.format not in ("text", "markdown") or reader.body_path == reader.raw_path:
        return False
    return has_bare_cr(reader.read_raw(0, min(reader.raw_size, 1 << 20))) or not entry.meta.get("utf8_errors")


def _text_summary(ctx: ToolContext, entry: Entry, max_depth: int = DEFAULT_DEPTH) -> tuple[str, dict[str, Any]]:
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
        # (a line as shown: each byte that is not UTF-8 is a 3-byte U+FFFD, so the longest line
        # could be said to be longer than all of the bytes)
        out[-1] += " as shown"
        out.append("encoding: not valid UTF-8 (shown with U+FFFD; read_handle has the exact bytes)")
    if _bare_cr(reader, entry):
        info["bare_cr"] = True
        out.append("line breaks: bare CR (\\r, a progress bar's) read as new lines; read_handle has the exact bytes")
    if entry.format == "jsonl":  # the records as the array $ (item_schema and iterate_over read them so)
        records = ctx.json_value(entry)
        writer = _SchemaWriter(max_depth, lines=False, check=ctx.check_time)
        writer.concrete(records, "$", 0, 1)
        info["records"] = len(records)
        info["nodes"] = writer.rows
        out.append(f"records: {len(records):,}, as the array $ (a record per line)")
        out += ["  " + line for line in _render_rows(writer.rows).split("\n")]
        if writer.truncated:
            out.append(f"  … {writer.truncated:,} more nodes: lower max_depth, or item_schema path=$")
    from ._csv import ROWS_RELATION, shape_of

    shape = shape_of(entry.meta)
    if shape is not None:  # (its rows are a relation: SELECT status, count(*) … reads them)
            info["csv"] = {"delimiter": shape.delimiter, "columns": list(shape.columns)}
            out.append(f"table: {shape.describe(most=30)}; SQL reads its rows as {entry.key}.{ROWS_RELATION}")
    out.append("sample:")
    out += [f"{n}\t{line}" for n, line in enumerate(sample, start=1)]
    return "\n".join(out), info
