"""The JSON path of a line of a pretty-printed JSON body: where a ``grep`` match is in the document.

A match in a JSON body was a line and its neighbours (``"coupon": "BLACKFRIDAY"``), with nothing
to say which item it is in: a model sliced around it, or guessed, before it could ``get_in`` the
item. The path (``$[412].coupon``) is read from the body's own layout, which this package writes:
two spaces per level, one member or item per line, a container deeper than the body's cut on one
line, and no raw newline inside a string. So a line's parent is the nearest line before it with
less indent, an object member's key begins its line, and an item's index is the count of lines
at its indent that begin an item since its array's opener.

Lines are resolved in order (a grep's matches are), and what the last one found is kept: the
ancestors still open (a line of lower indent in between closes them) and, per array, the items
counted so far. So each byte before the last match is scanned about once, by C regexes, whatever
the number of matches: the opener of a 100 MB body's big array is found once, its items counted
once, and each match then reads back only within its item.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

from ._paths import Step, key_step

__all__ = ["LinePaths", "item_path", "node_span"]

NEAR_LINES = 64  # lines looked at one by one, backward, for a line's parent; past them, windows
WINDOW = 1 << 14  # the first window of a search backward for a line's parent (doubled as it goes)
COUNT_PIECE = 1 << 22  # bytes copied at a time to count an array's items
MARK_EVERY = 1 << 16  # an array's items counted so far are kept every this many bytes (per body)
MEMO_MAX = 64  # containers a body's memo keeps for its next grep


@dataclass
class _Open:
    """A container open at the last line resolved: its opener line and its step from its parent."""

    indent: int
    start: int  # the offset of its opener line
    end: int  # the offset of that line's newline
    kind: bytes  # b"{" or b"["
    step: str  # ".key", '["a.b"]' or "[3]" ("" for the root)
    counted_to: int = 0  # (an array) items were counted up to this offset
    count: int = 0  # (an array) items that begin before counted_to


@functools.cache
def _at_most(indent: int) -> re.Pattern[bytes]:
    """A line with at most ``indent`` spaces of indent."""
    return re.compile(rb"\n {0,%d}(?! )" % indent)


class LinePaths:
    """Paths of lines of one pretty-printed JSON body ``buf`` (bytes or an mmap), asked in order."""

    def __init__(self, buf: Any, check: Callable[[], None] = lambda: None, memo: dict[int, Any] | None = None) -> None:
        self.buf = buf
        self.size = len(buf)
        self.check = check
        # what one body's calls learn, for the next call on the same body (keyed by a container's
        # opener offset): ("open", offset it is open to at least, or "closed" at), and an array's
        # ("marks", [(newline offset, items begun before it), ...]) every MARK_EVERY bytes
        self.memo: dict[int, Any] = {} if memo is None else memo
        self.chain: list[_Open] = []  # the containers open at the last line resolved, outermost first
        self.last = -1  # the offset of the last line resolved

    def path(self, start: int) -> str | None:
        """The path of the value (or member) that begins on the line at offset ``start``; for a
        closing line, the path of the container holding the one it closes. None when the body
        does not read as this layout."""
        if start < self.last:  # (asked out of order: start again)
            self.chain, self.last = [], -1
        try:
            return self._path(start)
        except (ValueError, IndexError):  # a line not of this layout (a body written otherwise)
            self.chain, self.last = [], -1
            return None

    def _path(self, start: int) -> str:
        buf = self.buf
        end = self._line_end(start)
        indent = self._indent(start, end)
        if indent == 0:
            self.chain, self.last = [], start
            return "$"
        if indent % 2:
            raise ValueError("odd indent")
        # keep the containers that no line between the last one and this one closed
        # (a container is closed by its own closing line, the first line at its indent that begins
        # with "]" or "}": no other line at its indent or less comes before it; a search in C)
        keep: list[_Open] = []
        if self.last >= 0:
            lo = self._line_end(self.last)
            for opened in self.chain:
                if opened.indent >= indent:
                    break
                # (the root closes on the body's last line: after every line asked about)
                if opened.indent and self._closed_before(opened, lo, start - 1):
                    break
                keep.append(opened)
        self.chain = keep
        # the containers between the deepest kept one and this line, found backward
        found: list[tuple[int, int]] = []  # (indent, line start), deepest first
        at = start
        for level in range(indent - 2, (self.chain[-1].indent if self.chain else -2), -2):
            self.check()
            at = self._parent_line(at, level)
            found.append((level, at))
        for level, line in reversed(found):
            line_end = self._line_end(line)
            if self._indent(line, line_end) != level:
                raise ValueError("not this layout")
            kind = buf[line_end - 1 : line_end]
            if kind not in (b"{", b"["):
                raise ValueError("a parent line that opens nothing")
            step = self._step(line, line_end, level) if self.chain else ""
            if not self.chain and level != 0:
                raise ValueError("no root")
            self.chain.append(_Open(level, line, line_end, kind, step, counted_to=line_end))
        self.last = start
        steps = "".join(o.step for o in self.chain)
        if buf[start + indent : start + indent + 1] in (b"}", b"]"):  # a closing line: in its parent
            return "$" + steps
        return "$" + steps + self._step(start, end, indent)

    def _closed_before(self, opened: _Open, lo: int, hi: int) -> bool:
        """Whether ``opened`` closes before offset ``hi`` (open at ``lo``)."""
        seen = self.memo.setdefault(opened.start, {})
        if "closed" in seen:
            return bool(seen["closed"] < hi)
        lo = max(lo, seen.get("open", lo))
        if lo >= hi:
            return False
        closer = b"\n" + b" " * opened.indent + (b"]" if opened.kind == b"[" else b"}")
        at = self.buf.find(closer, lo, hi)
        if at >= 0:
            seen["closed"] = at
            return True
        seen["open"] = hi
        return False

    def trimmed_memo(self) -> dict[int, Any]:
        """The memo worth keeping for the body's next grep: the containers seen open over more
        than ``MARK_EVERY`` bytes (the big arrays and what holds them), at most ``MEMO_MAX`` of
        them; an item's own entry helps no later grep (a grep added ~1,000 such, copied each time)."""
        kept = {
            start: seen
            for start, seen in self.memo.items()
            if seen.get("marks") or seen.get("closed", seen.get("open", start)) - start > MARK_EVERY
        }
        return dict(list(kept.items())[-MEMO_MAX:])

    def _step(self, start: int, end: int, indent: int) -> str:
        """The step to the value on the line at ``start`` from its parent (the chain's last)."""
        parent = self.chain[-1]
        if parent.kind == b"{":
            text = bytes(self.buf[start + indent : end]).decode("utf-8", "surrogatepass")
            if not text.startswith('"'):
                raise ValueError("a member without a key")
            key, _ = scanstring(text, 1)
            return key_step(key)
        hi = start - 1
        if parent.counted_to < hi:
            marks: list[tuple[int, int]] = self.memo.setdefault(parent.start, {}).setdefault("marks", [])
            known = bisect.bisect_right(marks, (hi, 1 << 62)) - 1
            if known >= 0 and marks[known][0] > parent.counted_to:
                parent.counted_to, parent.count = marks[known]
            while parent.counted_to < hi:  # a piece at a time, marked every MARK_EVERY for the next call
                to = min(hi, parent.counted_to + MARK_EVERY)
                parent.count += self._items_begun(parent.counted_to, to, indent)
                parent.counted_to = to
                if to - (marks[-1][0] if marks else parent.end) >= MARK_EVERY and (not marks or to > marks[-1][0]):
                    marks.append((to, parent.count))
        return f"[{parent.count}]"

    def _items_begun(self, lo: int, hi: int, indent: int) -> int:
        return _items_begun(self.buf, lo, hi, indent, self.check)

    def _parent_line(self, start: int, level: int) -> int:
        """The start of the nearest line before ``start`` with at most ``level`` spaces (the
        parent: no line between has fewer, so it has exactly ``level``)."""
        # Near (a deep parent, a few lines up): backward, line by line among those indented at
        # least ``level``, in C. Far (an array's opener, an item's many lines up): a window
        # search for lines indented at most ``level``, which are few there.
        pad = b"\n" + b" " * level
        hi = start - 1  # (the newline before this line)
        for _ in range(NEAR_LINES):
            at = self.buf.rfind(pad, 0, hi + len(pad) - 1)  # (one that begins before hi)
            if at < 0:
                break
            if self.buf[at + len(pad) : at + len(pad) + 1] != b" ":
                return int(at) + 1
            hi = at
        else:
            return self._parent_far(hi, level)
        return 0 if self._indent(0, self._line_end(0)) <= level else self._parent_far(hi, level)

    def _parent_far(self, hi: int, level: int) -> int:
        """``_parent_line`` by windows of growing size, searching before offset ``hi``."""
        pattern = _at_most(level)
        window = WINDOW
        while hi > 0:
            self.check()
            lo = max(0, hi - window)
            last = None
            # (the search reads past hi so that its look at the indent is not cut at the window's end)
            for found in pattern.finditer(self.buf, lo, min(self.size, hi + level + 1)):
                if found.start() >= hi:
                    break
                last = found
            if last is not None:
                return last.start() + 1
            hi, window = lo, window * 2
        return 0  # the first line

    def _line_end(self, start: int) -> int:
        end = self.buf.find(b"\n", start)
        return self.size if end < 0 else end

    def _indent(self, start: int, end: int) -> int:
        n = 0
        while start + n < end and self.buf[start + n : start + n + 1] == b" ":
            n += 1
        return n


def _items_begun(buf: Any, lo: int, hi: int, indent: int, check: Callable[[], None] = lambda: None) -> int:
    """The lines of ``buf[lo:hi]`` (``lo`` a newline) at exactly ``indent`` spaces that do not
    close a container: the items of an array there begin on those. Counted in C, a piece at a
    time: newlines followed by ``indent`` spaces, less those by more, less closers."""
    pad = b"\n" + b" " * indent
    n = 0
    for at in range(lo, hi, COUNT_PIECE):
        check()
        # (a piece overlaps the next by the pattern's length: a line is counted where it begins)
        piece = buf[at : min(hi, at + COUNT_PIECE) + indent + 1]
        end = min(hi, at + COUNT_PIECE) - at  # occurrences that begin before this offset
        n += (
            piece.count(pad, 0, end + len(pad) - 1)
            - piece.count(pad + b" ", 0, end + len(pad))
            - piece.count(pad + b"]", 0, end + len(pad))
            - piece.count(pad + b"}", 0, end + len(pad))
        )
    return n


@functools.cache
def _item_start(indent: int) -> re.Pattern[bytes]:
    """A line at exactly ``indent`` spaces that does not close a container (an item's first)."""
    return re.compile(rb"\n {%d}(?![ \]}])" % indent)


def node_span(buf: Any, steps: list[Step], check: Callable[[], None] = lambda: None) -> tuple[int, int] | None:
    """Where the value at ``steps`` is in a pretty-printed JSON body ``buf`` (the layout
    ``LinePaths`` reads): the offset its first line starts at and the offset its last line ends
    at (its newline). None when the body does not hold it so: a step into a container the body
    wrote on one line (past its depth cut), or into a string that holds JSON."""
    size = len(buf)
    start, indent = 0, 0
    for step in steps:
        check()
        end = _end_of_line(buf, start, size)
        opener = bytes(buf[end - 1 : end])
        closer = _closer(buf, end, indent, opener)
        if closer < 0:
            return None
        child = indent + 2
        if isinstance(step.value, int) and not step.quoted:
            if opener != b"[":
                return None
            k = step.value
            if k < 0:
                k += _items_begun(buf, end, closer, child, check)
            found = _nth_line(buf, end, closer, child, k, check) if k >= 0 else None
            if found is None:
                return None
            start = found
        else:
            if opener != b"{":
                return None
            try:
                key = json.dumps(str(step.value), ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # (a lone surrogate: the body has its escape)
                return None
            at = buf.find(b"\n" + b" " * child + key + b": ", end, closer)
            if at < 0:
                return None
            start = at + 1
        indent = child
    end = _end_of_line(buf, start, size)
    closer = _closer(buf, end, indent, bytes(buf[end - 1 : end]))
    return (start, end) if closer == -2 else (start, _end_of_line(buf, closer + 1, size)) if closer >= 0 else None


def _end_of_line(buf: Any, start: int, size: int) -> int:
    end = buf.find(b"\n", start)
    return size if end < 0 else int(end)


def _closer(buf: Any, end: int, indent: int, opener: bytes) -> int:
    """The offset of the newline before the line that closes the container opened on the line
    ending at ``end`` (-1: none found; -2: that line opens no container)."""
    if opener not in (b"{", b"["):
        return -2
    return int(buf.find(b"\n" + b" " * indent + (b"}" if opener == b"{" else b"]"), end))


def _nth_line(buf: Any, lo: int, hi: int, indent: int, k: int, check: Callable[[], None]) -> int | None:
    """The start of the ``k``-th (from 0) item line at ``indent`` in ``buf[lo:hi]``: whole pieces
    counted in C, then the one that holds it searched."""
    at = lo
    while at < hi:
        to = min(hi, at + COUNT_PIECE)
        n = _items_begun(buf, at, to, indent, check)
        if k < n:
            for found in _item_start(indent).finditer(buf, at, min(hi, to + indent + 1)):
                if found.start() >= to:
                    break
                if k == 0:
                    return found.start() + 1
                k -= 1
            return None
        k -= n
        at = to
    return None


def item_path(path: str) -> str:
    """``path`` up to its last array index (``$.items[17]`` of ``$.items[17].status.phase``), the
    whole path when it has none. Keys in brackets are JSON strings, skipped whole (``["a[3]"]``
    holds no index)."""
    end, i = 0, 1
    while i < len(path):
        if path.startswith('["', i):
            _key, i = scanstring(path, i + 2)
            i += 1  # (the "]")
        elif path[i] == "[":
            close = path.index("]", i)
            i = close + 1
            end = i
        else:  # (".name")
            i += 1
            while i < len(path) and path[i] not in ".[":
                i += 1
    return path[:end] if end else path
