"""Read one item of a streamed JSON spill without parsing the whole document.

A large JSON document whose one big array was spilled a segment at a time (``store._jsonstream``)
has ``segments.json`` beside its body: the array's path and, for each segment, its byte range in
the raw file and how many items it holds. ``get_in("$.items[41235].spec")`` then parses the one
segment (about half a megabyte) that holds item 41,235, and ``iterate_over`` / ``item_schema`` windows
read the segments they cover: O(window), where the whole document parsed is O(body) in time and
about ten times the body in memory.

Anything else (a path that does not go through the array by index, an index out of range, a
miss inside the item) returns ``MISSING`` and the caller resolves the path in the whole value, so
the answers, errors and suggestions included, are the same either way.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, overload

import orjson

from ..store import Entry
from ..store._jsonstream import parse_items
from ._base import ToolContext
from ._paths import PathError, PathMiss, parse_path, resolve

__all__ = ["MISSING", "SEGMENTS_FILE", "SegmentedItems", "streamed_node"]

SEGMENTS_FILE = "segments.json"
MISSING: Any = object()

_LOCK = threading.Lock()
_INDEX: OrderedDict[str, tuple[list[str], list[tuple[int, int]], list[int]] | None] = OrderedDict()
_PARSED: OrderedDict[tuple[str, int], list[Any]] = OrderedDict()
_PARSED_MAX = 4  # segments kept parsed (about 0.5 MB of JSON each)


def segments_record(path: tuple[str, ...], segments: list[tuple[int, int]], counts: list[int]) -> dict[str, Any]:
    """What ``segments.json`` holds."""
    return {"path": list(path), "segments": [[s, e, n] for (s, e), n in zip(segments, counts, strict=True)]}


def _index(directory: Path, body_id: str) -> tuple[list[str], list[tuple[int, int]], list[int]] | None:
    with _LOCK:
        if body_id in _INDEX:
            return _INDEX[body_id]
    try:
        saved = orjson.loads((directory / SEGMENTS_FILE).read_bytes())
        found: tuple[list[str], list[tuple[int, int]], list[int]] | None = (
            [str(k) for k in saved["path"]],
            [(int(s), int(e)) for s, e, _n in saved["segments"]],
            [int(n) for _s, _e, n in saved["segments"]],
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


class SegmentedItems(Sequence[Any]):
    """The items of a streamed array, parsed a segment at a time as they are read."""

    def __init__(self, ctx: ToolContext, entry: Entry, segments: list[tuple[int, int]], counts: list[int]) -> None:
        self._ctx, self._entry, self._segments = ctx, entry, segments
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

    def _segment(self, seg: int) -> list[Any]:
        key = (str(self._entry.body_id), seg)
        with _LOCK:
            items = _PARSED.get(key)
            if items is not None:
                _PARSED.move_to_end(key)
                return items
        start, end = self._segments[seg]
        items = parse_items(self._ctx.reader(self._entry).read_raw(start, end))
        with _LOCK:
            _PARSED[key] = items
            while len(_PARSED) > _PARSED_MAX:
                _PARSED.popitem(last=False)
        return items


def streamed_node(ctx: ToolContext, entry: Entry, path: str, whole_array: bool = False) -> Any:
    """The node at ``path`` read from the segment that holds it, when ``path`` goes through the
    streamed array by index; with ``whole_array``, also the array itself (as ``SegmentedItems``).
    A miss raises the ``PathMiss`` the whole value would (an index out of range, a key the item
    lacks): a model's typo costs a segment, not a parse of the whole document. ``MISSING`` when
    none of that applies: the caller resolves ``path`` in the whole value."""
    if entry.format != "json" or entry.body_id is None or not isinstance(path, str):
        return MISSING
    index = _index(ctx.reader(entry).directory, entry.body_id)
    if index is None:
        return MISSING
    keys, segments, counts = index
    try:
        steps = parse_path(path)
    except PathError:
        return MISSING
    n = len(keys)
    if len(steps) < n or any(str(step.value) != key for step, key in zip(steps, keys, strict=False)):
        return MISSING
    items = SegmentedItems(ctx, entry, segments, counts)
    if len(steps) == n:
        return items if whole_array else MISSING
    step = steps[n]
    if not isinstance(step.value, int) or step.quoted:
        return MISSING
    if not -len(items) <= step.value < len(items):  # as ``resolve`` says it of a list
        raise PathMiss(path, steps[:n], items, step, f"index {step.value} out of range")
    try:
        item = items[step.value]
    except ValueError:  # a segment that no longer parses: the whole value decides
        return MISSING
    try:
        return resolve(item, steps[n + 1 :], path)
    except PathMiss as miss:  # the same miss, its valid prefix counted from the root
        raise PathMiss(path, [*steps[: n + 1], *miss.valid_prefix], miss.node, miss.failed, miss.reason) from None
