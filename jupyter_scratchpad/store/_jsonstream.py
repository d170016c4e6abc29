"""Pretty-print a large JSON document without ever holding it as Python objects.

Parsed into Python objects, JSON takes about ten times its size in memory, and the pretty body
about twice more. A large document is nearly always one big array of records with a little
around it (``{"kind": "PodList", "items": [...], "metadata": {...}}``, or an array at the root).
Such a document is read in pieces instead:

1. One vectorised pass over the bytes (NumPy, 1 MB at a time) finds the quotes that open and
   close strings (a quote after an odd run of backslashes is escaped), the brackets outside
   strings and their depth, and a comma between two items about every ``SEGMENT_BYTES``.
2. The biggest container at the root, or one or two keys below it, must be an array holding at
   least half of the bytes: that array is streamed. Anything else takes the ordinary path.
3. The rest of the document, with the array replaced by a sentinel string (the *skeleton*), is
   parsed and pretty-printed as usual; the sentinel is where the array's lines go.
4. The array is parsed one segment (``[`` + about half a megabyte of items + ``]``) at a time and
   written with the same printer, indented to its depth. Each segment is also validated by that
   parse: if one fails, the document is not what it looked like and the caller falls back to the
   ordinary path, which decides what it is.

The body is byte for byte what ``dumps_pretty(loads(raw))`` writes (``tests/core/test_jsonstream.py``
checks this against the ordinary path on documents of many shapes). The memory a spill adds is
the raw bytes, the scan's small arrays and one segment's objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._jsontext import dumps_pretty, loads

__all__ = [
    "STREAM_MIN_BYTES",
    "STREAMED_ARRAY",
    "NotStreamable",
    "StreamedJson",
    "parse_items",
    "skeleton_of",
    "stream_json",
    "streamed_segments",
]

STREAM_MIN_BYTES = 8 << 20  # smaller documents are parsed whole (the JSON tools then reuse the value)
SEGMENT_BYTES = 512 << 10  # the array is parsed about this many bytes at a time (~10x that as objects)
SCAN_CHUNK = 1 << 20  # (its temporary arrays are ~10x a chunk: 10 MB)
DOMINANT_SHARE = 0.5  # the streamed array holds at least this share of the document's bytes
SAMPLE_ITEMS = 50  # items kept whole for the stub and the SQL relations (they look at 50)
SAMPLE_KEY_ITEMS = 2000  # items whose keys the stub's sketch lists (it looks at 2,000)

_SENTINEL = "\x00jupyter-scratchpad:streamed-array\x00"
_SENTINEL_TEXT = b'"\\u0000jupyter-scratchpad:streamed-array\\u0000"'
STREAMED_ARRAY = _SENTINEL  # the array's place in the skeleton (``skeleton_of`` reads it back)
_WS = b" \t\r\n"


class NotStreamable(ValueError):
    """A segment did not parse: the document takes the ordinary path, which decides what it is."""


@dataclass
class StreamedJson:
    """A JSON document whose dominant array is read, and written, a segment at a time."""

    raw: bytes
    path: tuple[str, ...]  # keys from the root to the array; () for an array at the root
    skeleton: Any  # the document parsed with the array replaced by ``placeholder``
    placeholder: list[Any]  # a list object standing for the array (identity marks it)
    sample: Any  # the document with the array as its first items (the stub, the SQL relations)
    segments: list[tuple[int, int]]  # raw byte ranges of the array's items, a segment each
    pre: bytes  # the skeleton's pretty text before the array
    post: bytes  # ... and after it
    total: int = 0  # the array's items (known once the body is written)
    counts: list[int] = field(default_factory=list)  # items per segment (known once the body is written)
    array_lines: int = 0  # lines the array takes in the body (known once the body is written)
    _first: list[Any] | None = field(default=None, repr=False)
    _first_text: bytes | None = field(default=None, repr=False)
    _sample_list: list[Any] = field(default_factory=list, repr=False)
    # False when the whole text has no number a double would change (``raw_marks``): then no
    # segment has one, and none is scanned again; None scans each
    _long_numbers: bool | None = field(default=None, repr=False)

    @property
    def depth(self) -> int:
        return len(self.path)

    def head(self, limit: int) -> bytes:
        """The first ``limit`` bytes of the body, or fewer (for the catalog's preview)."""
        if self._first_text is None:
            self._first_text = self._pretty(self._first or [])
        return (self.pre + b"[\n" + self._first_text[:limit])[:limit]

    def _pretty(self, items: list[Any]) -> bytes:
        """The items of one segment as they sit in the body: indented to the array's depth."""
        text = dumps_pretty(items, base_depth=self.depth)[2:-3]  # drop "[\n" and "\n]\n"
        if self.depth:
            pad = b"  " * self.depth
            text = pad + text.replace(b"\n", b"\n" + pad)
        return text

    def parse_segment(self, index: int) -> list[Any]:
        start, end = self.segments[index]
        try:
            items = parse_items(self.raw[start:end], self._long_numbers)
        except ValueError as exc:
            raise NotStreamable(str(exc)) from None
        if not items:
            raise NotStreamable("an empty item")
        return items

    def body_chunks(self) -> Iterator[bytes]:
        """The pretty body, a segment at a time. Raises ``NotStreamable`` if a segment is not JSON
        (nothing the caller stored is affected: the body is still being written)."""
        yield self.pre + b"[\n"
        lines = 2
        for index, items in enumerate(self._each_segment()):
            text = self._first_text if index == 0 and self._first_text is not None else self._pretty(items)
            self._first_text = None
            del items
            lines += text.count(b"\n") + 1
            yield (b",\n" + text) if index else text
        yield b"\n" + b"  " * self.depth + b"]" + self.post
        self.array_lines = lines

    def count_items(self) -> None:
        """What writing the body learns (the item counts, the sample), without writing it: for an
        output whose body was already stored."""
        for _items in self._each_segment():
            pass
        self._first_text = None

    def _each_segment(self) -> Iterator[list[Any]]:
        """The items of each segment in turn; keeps the sample and counts the items on the way."""
        total = 0
        counts: list[int] = []
        for index in range(len(self.segments)):
            items = self._first if index == 0 and self._first is not None else self.parse_segment(index)
            self._first = None
            self._keep_sample(items, total)
            total += len(items)
            counts.append(len(items))
            yield items
        self.total, self.counts = total, counts
        # the stub's sketch and relations read the first items and the array's length
        self._sample_list.extend([None] * (total - len(self._sample_list)))

    def _keep_sample(self, items: list[Any], seen: int) -> None:
        """Keep the first items whole and the keys of the next ones, up to ``SAMPLE_KEY_ITEMS``."""
        have = len(self._sample_list)
        for item in items[max(0, have - seen) : max(0, SAMPLE_KEY_ITEMS - seen)]:
            if len(self._sample_list) < SAMPLE_ITEMS:
                self._sample_list.append(item)
            else:  # only its keys: what the sketch counts
                self._sample_list.append(dict.fromkeys(item) if isinstance(item, dict) else None)


def parse_items(segment: bytes, long_numbers: bool | None = None) -> list[Any]:
    """The items of one segment: the bytes between two item separators of the streamed array.
    ``long_numbers``: see ``loads`` (False when the whole text had none)."""
    items = loads(b"[" + segment + b"]", long_numbers)
    if not isinstance(items, list):  # pragma: no cover - brackets around anything parse as a list
        raise ValueError("a segment is not a run of array items")
    return items


def streamed_segments(segments: list[tuple[int, int]], read: Callable[[int, int], bytes]) -> Iterator[list[Any]]:
    """A streamed array's items a segment at a time, read back with ``read(start, end)`` (from
    the stored raw file: the schema worker runs after the spill has let go of the raw bytes)."""
    for start, end in segments:
        yield parse_items(read(start, end))


def stream_json(raw: bytes, long_numbers: bool | None = None) -> StreamedJson | None:
    """The streamed form of ``raw`` when it is one dominant array of at least two segments; None
    for any other document (and for what does not look like JSON at all). ``long_numbers``: see
    ``loads``, of the whole text (its parts have a long number only if it has one)."""
    found = _dominant_array(raw)
    if found is None:
        return None
    open_at, close_at, level, commas = found
    inside = commas[(commas > open_at) & (commas < close_at)]
    if inside.size == 0:
        return None  # one segment: nothing to gain
    bounds = [open_at, *inside.tolist(), close_at]
    segments = [(bounds[i] + 1, bounds[i + 1]) for i in range(len(bounds) - 1)]
    try:
        skeleton = loads(raw[:open_at] + _SENTINEL_TEXT + raw[close_at + 1 :], False if long_numbers is False else None)
    except ValueError:
        return None
    path = _path_to_sentinel(skeleton, level - 1)
    if path is None:
        return None
    pretty = dumps_pretty(skeleton)
    at = pretty.find(_SENTINEL_TEXT)
    if at < 0 or pretty.find(_SENTINEL_TEXT, at + 1) >= 0:
        return None
    placeholder: list[Any] = [None]
    sample_list: list[Any] = []
    sample = _replace_at(skeleton, path, sample_list)
    skeleton = _replace_at(skeleton, path, placeholder)
    streamed = StreamedJson(
        raw=raw,
        path=path,
        skeleton=skeleton,
        placeholder=placeholder,
        sample=sample,
        segments=segments,
        pre=pretty[:at],
        post=pretty[at + len(_SENTINEL_TEXT) :],
        _sample_list=sample_list,
        _long_numbers=False if long_numbers is False else None,
    )
    try:
        streamed._first = streamed.parse_segment(0)
        # the SQL relations are decided before the body is written: they read the first 50 items
        sample_list.extend(streamed._first[:SAMPLE_ITEMS])
        index = 1
        while len(sample_list) < SAMPLE_ITEMS and index < len(segments):
            sample_list.extend(streamed.parse_segment(index)[: SAMPLE_ITEMS - len(sample_list)])
            index += 1
    except NotStreamable:
        return None
    return streamed


def _path_to_sentinel(skeleton: Any, depth: int) -> tuple[str, ...] | None:
    """The keys to the sentinel, which must sit exactly ``depth`` keys below the root."""
    if depth == 0:
        return () if skeleton == _SENTINEL else None
    if not isinstance(skeleton, dict):
        return None
    for key, child in skeleton.items():
        if depth == 1 and child == _SENTINEL:
            return (key,)
        if depth == 2 and isinstance(child, dict):
            for key2, grandchild in child.items():
                if grandchild == _SENTINEL:
                    return (key, key2)
    return None


def _replace_at(value: Any, path: tuple[str, ...], new: Any) -> Any:
    """A copy of ``value`` (only along ``path``) with the node at ``path`` replaced by ``new``."""
    if not path:
        return new
    copy = dict(value)
    copy[path[0]] = _replace_at(value[path[0]], path[1:], new)
    return copy


# -- the scan -----------------------------------------------------------------------------------


def _dominant_array(raw: bytes) -> tuple[int, int, int, np.ndarray] | None:
    """``(open, close, level, commas)`` of the array to stream: the byte offsets of its brackets,
    its nesting level (1 at the root) and comma offsets at that level, about one per segment."""
    n = len(raw)
    first = len(raw) - len(raw.lstrip(_WS))
    last = len(raw.rstrip(_WS)) - 1
    if first >= last or raw[first : first + 1] not in (b"[", b"{"):
        return None
    scan = _scan(raw)
    if scan is None:
        return None
    pos, depth, opens, commas = scan
    open_at, close_at, level = first, last, 1
    if raw[first : first + 1] == b"{":
        for level in (2, 3):
            child = _largest_child(pos, depth, opens, level, open_at, close_at)
            if child is None or (child[1] - child[0]) < DOMINANT_SHARE * n:
                return None
            open_at, close_at = child
            if raw[open_at : open_at + 1] == b"[":
                break
        else:
            return None
    if raw[open_at : open_at + 1] != b"[" or raw[close_at : close_at + 1] != b"]":
        return None
    return open_at, close_at, level, commas.get(level, np.empty(0, np.int64))


def _largest_child(
    pos: np.ndarray, depth: np.ndarray, opens: np.ndarray, level: int, lo: int, hi: int
) -> tuple[int, int] | None:
    """The widest container at nesting ``level`` between offsets ``lo`` and ``hi``."""
    inside = (pos > lo) & (pos < hi)
    starts = pos[inside & opens & (depth == level)]
    ends = pos[inside & ~opens & (depth == level - 1)]
    if starts.size == 0 or starts.size != ends.size:
        return None
    widths = ends - starts
    best = int(np.argmax(widths))
    return int(starts[best]), int(ends[best])


def _scan(raw: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[int, np.ndarray]] | None:
    """Brackets outside strings that open or close a container at nesting level 1-3 (offset,
    depth after it, whether it opens), and for levels 1-3 commas outside strings at that depth,
    the last one before each ``SEGMENT_BYTES`` mark. None if the brackets or quotes do not balance."""
    a = np.frombuffer(raw, dtype=np.uint8)
    n = len(a)
    in_string = 0
    level = 0
    carry = 0  # backslashes that end the chunk before
    pos_parts: list[np.ndarray] = []
    depth_parts: list[np.ndarray] = []
    open_parts: list[np.ndarray] = []
    comma_parts: dict[int, list[np.ndarray]] = {1: [], 2: [], 3: []}
    for base in range(0, n, SCAN_CHUNK):
        chunk = a[base : base + SCAN_CHUNK]
        quotes = np.flatnonzero(chunk == 0x22)
        quotes += base
        quotes, carry = _unescaped(a, quotes, base, base + chunk.size, carry)
        folded = chunk | 0x20  # '[' -> '{', ']' -> '}'
        marks = np.flatnonzero((folded == 0x7B) | (folded == 0x7D) | (chunk == 0x2C))
        del folded
        if marks.size:
            marks += base
            before = np.searchsorted(quotes, marks)  # quotes before each mark in this chunk
            marks = marks[((before + in_string) & 1) == 0]
            kind = a[marks] | 0x20
            step = np.zeros(marks.size, dtype=np.int64)
            step[kind == 0x7B] = 1
            step[kind == 0x7D] = -1
            after = np.cumsum(step)
            after += level
            if after.size and int(after.min()) < 0:
                return None
            opening = step == 1
            keep = (opening & (after <= 3)) | ((step == -1) & (after <= 2))
            pos_parts.append(marks[keep])
            depth_parts.append(after[keep].astype(np.int8))
            open_parts.append(opening[keep])
            goals = np.arange(base + SEGMENT_BYTES, base + chunk.size + SEGMENT_BYTES, SEGMENT_BYTES)
            for lvl, parts in comma_parts.items():
                at = marks[(step == 0) & (after == lvl)]
                if at.size:
                    pick = np.unique(np.clip(np.searchsorted(at, goals) - 1, 0, at.size - 1))
                    parts.append(at[pick])
            if after.size:
                level = int(after[-1])
        in_string ^= int(quotes.size) & 1
    if in_string or level != 0:
        return None

    def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
        return np.concatenate(parts) if parts else np.empty(0, dtype)

    commas = {lvl: cat(parts, np.int64) for lvl, parts in comma_parts.items()}
    return cat(pos_parts, np.int64), cat(depth_parts, np.int8), cat(open_parts, bool), commas


def _unescaped(a: np.ndarray, quotes: np.ndarray, base: int, end: int, carry: int) -> tuple[np.ndarray, int]:
    """``quotes`` (offsets in ``a[base:end]``) without those escaped by an odd run of backslashes,
    and the length of the run of backslashes that ends the chunk. ``carry``: the run that ended
    the chunk before (a run may cross the boundary)."""
    slashes = np.flatnonzero(a[base:end] == 0x5C)
    if slashes.size == 0:
        if carry & 1 and quotes.size and quotes[0] == base:
            quotes = quotes[1:]
        return quotes, 0
    slashes += base
    # runs of consecutive backslashes: where each starts and ends
    breaks = np.flatnonzero(np.diff(slashes) != 1)
    starts = np.concatenate(([slashes[0]], slashes[breaks + 1]))
    ends = np.concatenate((slashes[breaks], [slashes[-1]]))
    lengths = ends - starts + 1
    if starts[0] == base:
        lengths[0] += carry
    elif carry & 1 and quotes.size and quotes[0] == base:
        quotes = quotes[1:]
    tail = int(lengths[-1]) if ends[-1] == end - 1 else 0
    odd_ends = ends[(lengths & 1) == 1]
    if quotes.size and odd_ends.size:
        quotes = quotes[~np.isin(quotes - 1, odd_ends)]
    return quotes, tail


def skeleton_of(body_head: bytes, body_tail: bytes) -> Any:
    """The skeleton (the document with ``STREAMED_ARRAY`` where the array is) from the body's
    text before the array's ``[`` and after its ``]``: ``pre`` and ``post`` as they were written."""
    return loads(body_head + _SENTINEL_TEXT + body_tail)
