"""Read one item of a streamed JSON spill without parsing the whole document.

A large JSON document whose one big array was spilled a segment at a time (``store._jsonstream``)
has ``segments.json`` beside its body: the array's path and, for each segment, its byte range in
the raw file and how many items it holds. ``get_in("$.items[41235].spec")`` then parses the one
segment (about half a megabyte) that holds item 41,235, and ``iterate_over`` / ``item_schema`` windows
read the segments they cover: O(window), where the whole document parsed is O(body) in time and
about ten times the body in memory.

It also records how many bytes of the body come before the array's ``[`` and after its ``]``:
parsed with the array's place marked, they are the *skeleton*, and the document is then the
skeleton with a ``SegmentedItems`` in that place. Every path resolves in it as in the whole value:
``$.metadata`` from the skeleton, ``$.items[7].spec`` from one segment, a miss (an index out of
range, a key an item lacks, a typo at the root) with the same error and suggestions. A node that
holds the array (``$``, ``$.items``) is handed out only to callers that ask for it (``lazy``:
get_in refuses it from a sample of its items); for anything else it is ``MISSING`` and the
caller resolves the path in the whole value. So are paths of a spill whose skeleton is over
``SKELETON_MAX_BYTES`` (a second big container beside the array) or that predates the skeleton.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any, overload

import orjson

from ..store import Entry
from ..store._jsonstream import SAMPLE_ITEMS, SAMPLE_KEY_ITEMS, STREAMED_ARRAY, parse_items, skeleton_of
from ._base import ToolContext
from ._paths import LazyArray, PathError, PathMiss, parse_path, resolve

__all__ = [
    "MISSING",
    "SEGMENTS_FILE",
    "SegmentedItems",
    "array_bytes",
    "find_lazy",
    "holds_lazy",
    "streamed_node",
    "streamed_sample",
]

SEGMENTS_FILE = "segments.json"
SKELETON_MAX_BYTES = 1 << 20  # a larger skeleton is not recorded: paths outside the array parse the whole
MISSING: Any = object()

_LOCK = threading.Lock()
_Index = tuple[list[str], list[tuple[int, int]], list[int], tuple[int, int, int] | None]
_INDEX: OrderedDict[str, _Index | None] = OrderedDict()
_PARSED: OrderedDict[tuple[str, int], list[Any]] = OrderedDict()
_PARSED_MAX = 4  # segments kept parsed (about 0.5 MB of JSON each)
_SKELETONS: OrderedDict[str, Any] = OrderedDict()
_SKELETONS_MAX = 16


def segments_record(
    path: tuple[str, ...], segments: list[tuple[int, int]], counts: list[int], pre: int, post: int, lines: int
) -> dict[str, Any]:
    """What ``segments.json`` holds: the array's path, its segments, and the body's bytes before
    and after the array (when together they are at most ``SKELETON_MAX_BYTES``) with the lines
    the array takes in the body."""
    record: dict[str, Any] = {
        "path": list(path),
        "segments": [[s, e, n] for (s, e), n in zip(segments, counts, strict=True)],
    }
    if pre + post <= SKELETON_MAX_BYTES:
        record["skeleton"] = [pre, post, lines]
    return record


def _index(directory: Path, body_id: str) -> _Index | None:
    with _LOCK:
        if body_id in _INDEX:
            return _INDEX[body_id]
    try:
        saved = orjson.loads((directory / SEGMENTS_FILE).read_bytes())
        around = saved.get("skeleton")
        found: _Index | None = (
            [str(k) for k in saved["path"]],
            [(int(s), int(e)) for s, e, _n in saved["segments"]],
            [int(n) for _s, _e, n in saved["segments"]],
            (int(around[0]), int(around[1]), int(around[2])) if around else None,
        )
    except FileNotFoundError:
        found = None  # not streamed (or written by a version without segments)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable now: do not remember
    with _LOCK:
        _INDEX[body_id] = found
        while len(_INDEX) > 256:
            _INDEX.popitem(last=False)
    return found


def array_bytes(directory: Path, body_id: str) -> dict[str, Any] | None:
    """Where a streamed array sits in the raw file, for SQL (``_sqlviews`` builds its table from
    these bytes without parsing the whole document): its path and ``[start, end)`` (``[`` to
    ``]``), and its longest segment. None when the body is not streamed or the array is the root."""
    index = _index(directory, body_id)
    if index is None or not index[0]:
        return None
    keys, segments, _counts, _skeleton = index
    return {
        "path": keys,
        "start": segments[0][0] - 1,
        "end": segments[-1][1] + 1,
        "longest_segment": max(e - s for s, e in segments),
    }


class SegmentedItems(LazyArray):
    """The items of a streamed array, parsed a segment at a time as they are read."""

    def __init__(
        self,
        ctx: ToolContext,
        entry: Entry,
        segments: list[tuple[int, int]],
        counts: list[int],
        lines: int = 0,
        body_start: int | None = None,
        path_keys: list[str] | None = None,
    ) -> None:
        self._ctx, self._entry, self._segments = ctx, entry, segments
        self.path_keys = path_keys or []  # the keys from the root down to the array
        self.lines = lines  # the lines the array takes in the body (0: not known)
        self.body_start = body_start  # the body's byte offset of its "[" (None: not known)
        self.body_id = entry.body_id
        self._starts = [0, *accumulate(counts)][:-1]
        self._total = sum(counts)

    def __len__(self) -> int:
        return self._total

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._total))]
        if index < 0:
            index += self._total
        if not 0 <= index < self._total:
            raise IndexError(index)
        seg = bisect.bisect_right(self._starts, index) - 1
        return self._segment(seg)[index - self._starts[seg]]

    def pick(self, indices: list[int]) -> list[Any]:
        """The items at ``indices`` (ascending), each segment parsed once and not kept: a sample
        spread over the whole array costs one segment's memory, not the cache's four."""
        out: list[Any] = []
        seg, items = -1, []
        for index in indices:
            at = bisect.bisect_right(self._starts, index) - 1
            if at != seg:
                self._ctx.check_time("sampling a large array")
                seg, items = at, self._parse(at)
            out.append(items[index - self._starts[seg]])
        return out

    def each_segment(self) -> Iterator[list[Any]]:
        """Every segment's items in turn, parsed one at a time and not kept (a pass over the
        array in the memory of one segment); checks the call's time limit between segments."""
        for seg in range(len(self._segments)):
            self._ctx.check_time("reading a large array a segment at a time")
            yield self._parse(seg)

    def _parse(self, seg: int) -> list[Any]:
        start, end = self._segments[seg]
        return parse_items(self._ctx.reader(self._entry).read_raw(start, end))

    def _segment(self, seg: int) -> list[Any]:
        key = (str(self._entry.body_id), seg)
        with _LOCK:
            items = _PARSED.get(key)
            if items is not None:
                _PARSED.move_to_end(key)
                return items
        items = self._parse(seg)
        with _LOCK:
            _PARSED[key] = items
            while len(_PARSED) > _PARSED_MAX:
                _PARSED.popitem(last=False)
        return items


def _document(ctx: ToolContext, entry: Entry, index: _Index, items: SegmentedItems) -> Any:
    """The skeleton with ``items`` in the array's place, or ``MISSING`` without a skeleton."""
    keys, _segments, _counts, around = index
    if around is None or entry.body_id is None or entry.body_bytes is None:
        return MISSING
    with _LOCK:
        skeleton = _SKELETONS.get(entry.body_id, MISSING)
    if skeleton is MISSING:
        pre, post, _lines = around
        reader = ctx.reader(entry)
        try:
            skeleton = skeleton_of(
                reader.read_body(0, pre), reader.read_body(entry.body_bytes - post, entry.body_bytes)
            )
        except ValueError:
            return MISSING
        with _LOCK:
            _SKELETONS[entry.body_id] = skeleton
            while len(_SKELETONS) > _SKELETONS_MAX:
                _SKELETONS.popitem(last=False)
    if not keys:
        return items if skeleton == STREAMED_ARRAY else MISSING
    if not isinstance(skeleton, dict):
        return MISSING
    doc = dict(skeleton)  # (a copy along the path: the cached skeleton is never changed)
    node = doc
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            return MISSING
        node[key] = node = dict(child)
    if node.get(keys[-1]) != STREAMED_ARRAY:
        return MISSING
    node[keys[-1]] = items
    return doc


def _lazy_place(node: Any) -> tuple[SegmentedItems, list[str], dict[str, Any] | None] | None:
    """Where the streamed array sits in ``node``: ``(array, the keys from node down to it, the
    object that holds it)`` (``node`` itself: no keys, no holder). It sits at most two keys below
    the root, so only objects are looked into, two levels deep."""
    if isinstance(node, SegmentedItems):
        return node, [], None
    if not isinstance(node, dict):
        return None
    for key, v in node.items():
        if isinstance(v, SegmentedItems):
            return v, [key], node
    for outer, v in node.items():
        if isinstance(v, dict):
            for key, w in v.items():
                if isinstance(w, SegmentedItems):
                    return w, [outer, key], v
    return None


def find_lazy(node: Any) -> tuple[SegmentedItems, list[str]] | None:
    """The streamed array in ``node`` and the keys from ``node`` down to it."""
    place = _lazy_place(node)
    return None if place is None else (place[0], place[1])


def holds_lazy(node: Any) -> bool:
    """Whether ``node`` is, or holds, a streamed array not yet read."""
    return _lazy_place(node) is not None


def streamed_node(ctx: ToolContext, entry: Entry, path: str, whole_array: bool = False, lazy: bool = False) -> Any:
    """The node at ``path`` of a streamed spill, read without the whole document: from the
    skeleton, or from the segment that holds it when ``path`` goes through the array by index.
    A node that holds the array comes back only with ``lazy`` (with ``SegmentedItems`` in it), or
    the array itself with ``whole_array``. A miss raises the ``PathMiss`` the whole value would
    (an index out of range, a key an item or the root lacks): a model's typo costs a segment,
    not a parse of the whole document. ``MISSING`` when none of that applies: the caller
    resolves ``path`` in the whole value."""
    if entry.format != "json" or entry.body_id is None or not isinstance(path, str):
        return MISSING
    index = _index(ctx.reader(entry).directory, entry.body_id)
    if index is None:
        return MISSING
    keys, segments, counts, skeleton = index
    try:
        steps = parse_path(path)
    except PathError:
        return MISSING
    items = SegmentedItems(
        ctx, entry, segments, counts, skeleton[2] if skeleton else 0, skeleton[0] if skeleton else None, keys
    )
    n = len(keys)
    along = all(str(step.value) == key for step, key in zip(steps, keys, strict=False))
    doc = _document(ctx, entry, index, items)
    if doc is MISSING:  # no skeleton: only the array, and paths into it by index
        if len(steps) < n or not along:
            return MISSING
        if len(steps) == n:
            return items if whole_array or lazy else MISSING
        if not isinstance(steps[n].value, int) or steps[n].quoted:
            return MISSING
        doc, steps, prefix = items, steps[n:], steps[:n]
    else:
        prefix = []
    try:
        node = resolve(doc, steps, path)
    except PathMiss as miss:  # the same miss, its valid prefix counted from the root
        raise PathMiss(path, [*prefix, *miss.valid_prefix], miss.node, miss.failed, miss.reason) from None
    except ValueError:  # a segment that no longer parses: the whole value decides
        return MISSING
    if holds_lazy(node):
        return node if lazy or (whole_array and isinstance(node, LazyArray)) else MISSING
    return node


def streamed_sample(ctx: ToolContext, entry: Entry) -> Any:
    """The document as the spill's stub saw it (``StreamedJson.sample``): the skeleton with the
    array's first items whole, the keys of the next ones and ``None`` for the rest, read from the
    first segments; ``MISSING`` for a spill that was not streamed (or has no skeleton)."""
    doc = streamed_node(ctx, entry, "$", lazy=True)
    place = _lazy_place(doc) if doc is not MISSING else None
    if place is None:
        return MISSING
    items, keys, holder = place
    sample = items[:SAMPLE_ITEMS] + [
        dict.fromkeys(item) if isinstance(item, dict) else None for item in items[SAMPLE_ITEMS:SAMPLE_KEY_ITEMS]
    ]
    sample += [None] * (len(items) - len(sample))
    if holder is None:
        return sample
    holder[keys[-1]] = sample  # (a copy of the skeleton made for this call)
    return doc
