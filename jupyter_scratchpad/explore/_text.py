"""Line and byte tools: head, tail, slice, grep, read_handle, read."""

from __future__ import annotations

import base64
import contextlib
import copy
import mmap
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2

from ..store import BodyReader, Entry
from ..store._bodies import BYTE_STEP
from ._base import Output, TooLarge, ToolContext, ToolError, call_repr, fmt_bytes, grep_errors, suggestion

__all__ = ["grep", "head", "read", "read_handle", "shown_path", "slice_lines", "tail"]

MAX_PATTERN_BYTES = 1024
CLIP_CHARS = 1000
MAX_COUNTED_MATCHES = 100_000
MAX_BYTE_WINDOWS = 20


def numbered(first_line: int, lines: list[str]) -> str:
    """``lines`` as ``<number>\t<line>`` (not right-aligned: the padding cost a quarter of the
    tokens of a head of pretty-printed JSON and said nothing)."""
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, start=first_line))


SMALL_RESULT_TOKENS = 200  # a result this small gets the short footer (the facts in ≤ ~15 tokens)


class BudgetFooter:
    """The footer of a charged result: the result's totals, then this call's tokens and what is left.

    A small result gets the short form (``--- 1 row · 57 tokens, 97196 left``), since there
    the long one would be most of what the model reads; ``short`` is the totals in a few words.
    """

    def __init__(self, summary: str, short: str | None = None) -> None:
        self.summary = summary
        self.short = short or summary

    def __call__(self, tokens: int, used: int, remaining: int, estimate: bool = False) -> str:
        # (a Claude pad's counts are an estimate: said so, as its stubs say it)
        if tokens <= SMALL_RESULT_TOKENS:
            return f"--- {self.short} · {tokens} tokens{' (estimate)' if estimate else ''}, {remaining} left"
        said = "tokens (estimates)" if estimate else "tokens"
        return f"--- {self.summary} · {said}: {tokens:,} this call, {used:,} used, {remaining:,} remaining ---"


def budget_footer(summary: str, short: str | None = None) -> BudgetFooter:
    return BudgetFooter(summary, short)


def _describe(entry: Entry) -> str:
    return f"{entry.format} · {fmt_bytes(entry.size_bytes)}"


def _read_line_range(ctx: ToolContext, entry: Entry, start: int, end: int) -> list[str]:
    reader = ctx.reader(entry)
    a, b = reader.line_span(start, end)
    ctx.guard_bytes(b - a, lambda n: reader.read_body(a, a + n).decode("utf-8", errors="replace"))
    return reader.read_lines(start, end)


def _line_output(ctx: ToolContext, entry: Entry, start: int, end: int, note: str = "") -> Output:
    total = entry.line_count or 0
    lines = _read_line_range(ctx, entry, start, end) if total else []
    if not lines:
        text = f"({entry.key} is empty)" if not total else "(no lines in that range)"
        summary = f"0 lines of {total:,} · {_describe(entry)}"
    else:
        text = numbered(start, lines)
        summary = f"lines {start:,}-{start + len(lines) - 1:,} of {total:,}{note} · {_describe(entry)}"
    data = {
        "handle": entry.key,
        "start": start,
        "end": start + len(lines) - 1 if lines else start - 1,
        "total_lines": total,
        "lines": lines,
    }
    return Output(text, data, budget_footer(summary))


def _positive_int(value: Any, name: str, minimum: int = 1) -> int:
    if value is None or isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolError("invalid_argument", f"'{name}' must be an integer >= {minimum}, got {value!r}", argument=name)
    return value


def head(ctx: ToolContext, handle: str, lines: int = 50) -> Output:
    entry = ctx.entry(handle)
    n = _positive_int(lines, "lines")
    return _line_output(ctx, entry, 1, min(n, entry.line_count or 0))


def tail(ctx: ToolContext, handle: str, lines: int = 50) -> Output:
    entry = ctx.entry(handle)
    n = _positive_int(lines, "lines")
    total = entry.line_count or 0
    return _line_output(ctx, entry, max(1, total - n + 1), total)


def slice_lines(ctx: ToolContext, handle: str, start: int, end: int) -> Output:
    entry = ctx.entry(handle)
    start = _positive_int(start, "start")
    if isinstance(end, bool) or not isinstance(end, int):
        raise ToolError("invalid_argument", f"'end' must be an integer, got {end!r}", argument="end")
    if end < start:
        raise ToolError(
            "invalid_argument",
            f"end ({end}) is before start ({start}); lines are 1-indexed and inclusive",
            [suggestion("slice", "the same start with a valid end", handle=entry.key, start=start, end=start + 49)],
            argument="end",
        )
    total = entry.line_count or 0
    if start > total:
        raise ToolError(
            "invalid_argument",
            f"start ({start}) is past the last line ({total:,})",
            [suggestion("tail", "read the last lines", handle=entry.key, lines=50)],
            argument="start",
            total_lines=total,
        )
    note = f" (end {end:,} clamped to {total:,})" if end > total else ""
    return _line_output(ctx, entry, start, min(end, total), note)


def fewer_lines(
    handle: str, start: int, lines: int, estimated: int, limit: int, *, last_line: int | None = None, tool: str = "head"
) -> list[dict[str, Any]]:
    """The smaller line read that fits, in the refused ``tool``'s own form (a tail ending at
    ``last_line``, a slice from the same start, else head; one of them: not the same lines twice),
    or none when the read asked for no more."""
    per_line = max(estimated / max(lines, 1), 1.0)
    fit = max(1, int(limit * 0.8 / per_line))
    if fit >= lines:
        return []
    if last_line:
        return [suggestion("tail", f"about {fit} lines fit", handle=handle, lines=fit)]
    if tool == "slice" or start > 1:
        return [suggestion("slice", f"about {fit} lines fit", handle=handle, start=start, end=start + fit - 1)]
    return [suggestion("head", f"about {fit} lines fit", handle=handle, lines=fit)]


def line_suggestions(
    handle: str, start: int, lines: int, estimated: int, limit: int, *, last_line: int | None = None, tool: str = "head"
) -> list[dict[str, Any]]:
    """Smaller line reads for a refused one (``fewer_lines``), a search, the structure."""
    return [
        *fewer_lines(handle, start, lines, estimated, limit, last_line=last_line, tool=tool),
        grep_errors(handle, "search instead"),
        suggestion("schema", "see the structure first", handle=handle),
    ]


# -- grep -------------------------------------------------------------------------------------


class _Literal:
    """``bytes.find`` with the ``search(buf, pos) -> match | None`` shape of a compiled regex."""

    def __init__(self, needle: bytes) -> None:
        self.needle = needle
        self._at = -1

    def search(self, buf: Any, pos: int = 0) -> _Literal | None:
        self._at = int(buf.find(self.needle, pos))
        return self if self._at >= 0 else None

    def start(self) -> int:
        return self._at


_REGEX_SYNTAX = frozenset(".^$*+?{}[]\\|()")


def _compile(pattern: str, ignore_case: bool) -> tuple[Any, str | None]:
    if not ignore_case and "\n" not in pattern and not _REGEX_SYNTAX.intersection(pattern):
        return _Literal(pattern.encode("utf-8")), None  # a plain string: memchr-speed find
    options = re2.Options()
    options.log_errors = False
    options.never_nl = True  # grep semantics: a match never spans lines
    options.never_capture = True  # only where a match starts is used; groups cost RE2 dearly
    options.case_sensitive = not ignore_case
    try:
        # (?m): ^ and $ anchor at each line's start and end, as in GNU grep and Aura (lines are the
        # unit of every tool); a pattern's own flags still apply after it
        return re2.compile(b"(?m)" + pattern.encode("utf-8"), options), None
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        reason = reason.replace("(?m)", "", 1)  # (our own prefix: the model never wrote it)
        options.literal = True
        return re2.compile(pattern.encode("utf-8"), options), (
            f"not a valid regex ({reason}; RE2 syntax, no look-around or back-references): "
            "searched for the literal text instead"
        )


def _bounded_needle(needle: str, name: str) -> None:
    """grep's pattern and read_handle's match: at most ``MAX_PATTERN_BYTES`` (a 1 MB needle was
    echoed back, or refused as a 125,000-token answer with calls that had nothing to do with it)."""
    if len(needle) > MAX_PATTERN_BYTES or len(needle.encode("utf-8", "surrogatepass")) > MAX_PATTERN_BYTES:
        raise ToolError(
            "invalid_argument",
            f"'{name}' is longer than {MAX_PATTERN_BYTES} bytes; search for a distinctive part of it",
            argument=name,
        )


SHOWN_NEEDLE_CHARS = 80  # of a match echoed in read_handle's text


def _shown_needle(needle: str) -> str:
    """``needle`` as read_handle's text echoes it: its first characters and its length."""
    if len(needle) <= SHOWN_NEEDLE_CHARS:
        return repr(needle)
    return f"{needle[:SHOWN_NEEDLE_CHARS]!r}… ({len(needle):,} characters)"


def _clip(line: str, at: int | None = None) -> str:
    if len(line) <= CLIP_CHARS:
        return line
    if at is None or at < CLIP_CHARS * 3 // 4:
        return f"{line[:CLIP_CHARS]}…[+{len(line) - CLIP_CHARS:,} chars clipped]"
    lo = max(0, at - CLIP_CHARS // 2)
    hi = min(len(line), lo + CLIP_CHARS)
    after = f"…[+{len(line) - hi:,} chars clipped]" if hi < len(line) else ""  # (never "+0")
    return f"[{lo:,} chars clipped]…{line[lo:hi]}{after}"


class StringLines:
    """One string of a JSON handle read like a body (``grep`` with a ``path``)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8", "surrogatepass")
        self.lines = text.split("\n")
        if len(self.lines) > 1 and self.lines[-1] == "":
            self.lines.pop()
        self.body_bytes = len(self.data)
        starts, pos = [0], 0
        for line in self.lines[:-1]:
            pos += len(line.encode("utf-8", "surrogatepass")) + 1
            starts.append(pos)
        self._starts = starts

    @property
    def line_count(self) -> int:
        return len(self.lines) if self.data else 0

    def line_at(self, offset: int) -> int:
        import bisect

        return bisect.bisect_right(self._starts, offset)

    def offset_of(self, line: int) -> int:
        """The byte offset where 1-based ``line`` starts."""
        return self._starts[line - 1]

    def read_lines(self, start: int, end: int) -> list[str]:
        return self.lines[start - 1 : end]


class NotExact(Exception):
    """The body's lines of a node are not the node's own (the body cut them at its depth limit)."""


class NodeLines:
    """The lines of a node that holds a streamed array (``grep`` with a ``path``), as the node
    pretty-printed alone would have them, read from the body a chunk at a time: the node's own
    lines around the array (``head``, ending with its ``[``; ``tail``, from its ``]``), and the
    item lines between from the body, ``dedent`` spaces less indented (the body indents them to
    their depth in the whole document). The whole document is never parsed.

    The body cuts containers at ``PRETTY_MAX_DEPTH`` from the root, the node's own rendering at
    that depth from the node: a chunk with a line that deep raises ``NotExact`` (the caller then
    renders the node whole, as before)."""

    CHUNK = 4 << 20

    def __init__(self, reader: BodyReader, head: list[str], first: int, last: int, dedent: int, tail: list[str]):
        self.reader, self.head, self.tail = reader, head, tail
        self.first, self.last = first, last  # the body's lines of the items
        self.dedent = dedent
        self.line_count = len(head) + (last - first + 1) + len(tail)
        self.body_bytes = 1  # (never empty: it has at least its brackets)

    def read_lines(self, start: int, end: int) -> list[str]:
        start, end = max(1, start), min(end, self.line_count)
        out: list[str] = []
        n_head, n_items = len(self.head), self.last - self.first + 1
        out += self.head[start - 1 : min(end, n_head)]
        lo, hi = max(start, n_head + 1), min(end, n_head + n_items)
        if lo <= hi:
            body = self.reader.read_lines(self.first + lo - n_head - 1, self.first + hi - n_head - 1)
            out += [line[self.dedent :] for line in body]
        out += self.tail[max(0, start - n_head - n_items - 1) : max(0, end - n_head - n_items)]
        return out

    def pieces(self, check_time: Callable[[], None]) -> Any:
        """``(bytes, first line)`` pieces that end at line ends: the head, the items a chunk at a
        time, the tail."""
        from ..store._jsontext import PRETTY_MAX_DEPTH

        yield "\n".join(self.head).encode("utf-8", "surrogatepass") + b"\n", 1
        line = len(self.head) + 1
        margin, too_deep = b"\n" + b" " * self.dedent, b"\n" + b" " * (2 * PRETTY_MAX_DEPTH)
        pos, end = self.reader.line_offset(self.first), self.reader.line_offset(self.last + 1)
        carry = b""
        while pos < end:
            check_time()
            chunk = carry + self.reader.read_body(pos, min(end, pos + self.CHUNK))
            pos = min(end, pos + self.CHUNK)
            cut = len(chunk) if pos >= end else chunk.rfind(b"\n") + 1
            if cut <= 0:  # one line longer than a chunk: read on
                carry = chunk
                continue
            chunk, carry = b"\n" + chunk[:cut], chunk[cut:]
            if too_deep in chunk:
                raise NotExact
            yield chunk.replace(margin, b"\n")[1:], line
            line += chunk.count(b"\n") - 1
        yield "\n".join(self.tail).encode("utf-8", "surrogatepass"), line


def _buffer(reader: BodyReader | StringLines) -> Any:
    if isinstance(reader, StringLines):
        return contextlib.nullcontext(reader.data)
    return _mapped(reader)


def _pieces(reader: BodyReader | StringLines | NodeLines, check_time: Callable[[], None]) -> Any:
    """``(buffer, first line, line_at or None)``: what ``_scan`` searches, a piece at a time."""
    if isinstance(reader, NodeLines):
        for data, first in reader.pieces(check_time):
            yield data, first, None
        return
    with _buffer(reader) as mm:
        yield mm, 1, reader.line_at


@contextlib.contextmanager
def _mapped(reader: BodyReader) -> Any:
    with open(reader.body_path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        yield mm


def _scan(
    reader: BodyReader | StringLines | NodeLines,
    rx: Any,
    max_matches: int,
    check_time: Callable[[], None] = lambda: None,
    stop_counting: Callable[[], bool] = lambda: False,
) -> tuple[list[tuple[int, int]], int, bool]:
    """``([(line_no, column_of_match)...], matching_lines_counted, count_is_complete)``.

    Searched a piece at a time (one piece but for ``NodeLines``); a match never spans lines, and
    pieces end at line ends. Once ``max_matches`` are found, the rest are only counted, until
    ``stop_counting()`` says so (a slow pattern counting past its first page timed out with
    nothing shown, where the page was found in milliseconds)."""
    if reader.body_bytes == 0:
        return [], 0, True
    hits: list[tuple[int, int]] = []
    counted = 0
    for mm, first_line, line_at in _pieces(reader, check_time):
        pos = 0
        line_no = first_line
        counted_to = 0  # newlines before this offset are in line_no - first_line
        size = len(mm)
        while pos < size:
            if counted & 255 == 0:
                check_time()
            m = rx.search(mm, pos)
            if m is None:
                break
            start = m.start()
            if start >= size and mm[size - 1 : size] == b"\n":
                break  # an empty match after the final newline is on no line (GNU grep agrees)
            line_start = mm.rfind(b"\n", 0, start) + 1
            line_end = mm.find(b"\n", start)
            if line_end < 0:
                line_end = size
            if len(hits) >= max_matches and stop_counting():
                return hits, counted, False
            counted += 1
            if len(hits) < max_matches:
                if line_at is not None and line_start - counted_to > 4 * BYTE_STEP:  # far: the line index
                    line_no = line_at(line_start)
                else:
                    line_no += mm[counted_to:line_start].count(b"\n")
                counted_to = line_start
                column = len(mm[line_start:start].decode("utf-8", errors="replace"))
                hits.append((line_no, column))
            elif counted >= MAX_COUNTED_MATCHES:  # (a later piece may hold more: not complete)
                return hits, counted, line_at is not None and line_end >= size
            pos = line_end + 1
    return hits, counted, True


def grep(
    ctx: ToolContext,
    handle: str,
    pattern: str,
    context: int = 3,
    ignore_case: bool = False,
    max_matches: int = 100,
    path: str | None = None,
) -> Output:
    entry = ctx.entry(handle)
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("invalid_argument", "'pattern' must be a non-empty string (a regex)", argument="pattern")
    _bounded_needle(pattern, "pattern")
    context = _positive_int(context, "context", minimum=0)
    if context > 50:
        raise ToolError("invalid_argument", "'context' must be at most 50 lines", argument="context")
    max_matches = _positive_int(max_matches, "max_matches")
    if max_matches > 1000:
        raise ToolError("invalid_argument", "'max_matches' must be at most 1000", argument="max_matches")
    rx, fallback = _compile(pattern, bool(ignore_case))
    part: _Part | None = None
    reader: BodyReader | StringLines | NodeLines
    if path is not None and str(path).strip() not in ("", "$"):
        part = _part_at(ctx, entry, path, pattern=pattern)
        reader = part.reader
        total = reader.line_count
    else:
        reader = ctx.reader(entry)
        total = entry.line_count or 0
    # counting the matches past the page may use half the call's time; the page never waits for it
    counting_until = time.monotonic() + ctx.timeout_s / 2

    def stop_counting() -> bool:
        return time.monotonic() > counting_until

    try:
        hits, counted, complete = _scan(reader, rx, max_matches, ctx.check_time, stop_counting)
    except NotExact:  # a streamed node nested past the body's depth limit: rendered whole
        part = _part_at(ctx, entry, str(path), from_body=False)
        reader = part.reader
        total = reader.line_count
        hits, counted, complete = _scan(reader, rx, max_matches, ctx.check_time, stop_counting)
    where = part.where if part is not None else ""
    # a node's lines are numbered as the body's (slice reads them), the node's first line being
    # the body's line ``shift + 1``; a string's, and a node the body does not hold line for line,
    # from their own first line (said in a header)
    shift = part.first_line - 1 if part is not None and part.first_line is not None else 0
    own_numbers = part is not None and part.first_line is None
    if not hits:
        text = f"No matches for {pattern!r} in {total:,} lines of {entry.key}{where}."
        if fallback:
            text = f"Note: {fallback}.\n{text}"
        data = {
            "handle": entry.key,
            "pattern": pattern,
            "matches": [],
            "total_matches": 0,
            "total_lines": total,
            "literal_fallback": bool(fallback),
        }
        return Output(text, data, budget_footer(f"0 matching lines of {total:,}", f"no match in {total} lines"))
    match_lines = {line for line, _ in hits}
    columns = dict(hits)
    paths, timed_out = _paths_of(ctx, entry, part, reader, [line for line, _ in hits], shift)
    windows: list[list[int]] = []
    for line, _ in hits:
        lo, hi = max(1, line - context), min(total, line + context)
        if windows and lo <= windows[-1][1] + 1:
            windows[-1][1] = max(windows[-1][1], hi)
        else:
            windows.append([lo, hi])
    blocks: list[str] = []
    plain: list[str] = []  # (the same blocks without the paths)
    matches: list[dict[str, Any]] = []
    shown_lines: list[dict[str, Any]] = []
    for lo, hi in windows:
        rows, bare = [], []
        for n, text_line in enumerate(reader.read_lines(lo, hi), start=lo):
            is_match = n in match_lines
            shown = _clip(text_line, columns.get(n))
            mark = ">" if is_match and context else ""  # (> marks a match among context)
            at = shown_path(paths[n]) if is_match and n in paths else ""
            at = f" {at}" if at else ""
            number = n + shift
            rows.append(f"{mark}{number}{at}\t{shown}")  # (where in the document a match is: its item's path)
            bare.append(f"{mark}{number}\t{shown}")
            shown_lines.append({"line": number, "text": shown, "match": is_match})
            if is_match:
                matches.append({"line": number, "text": shown, **({"path": paths[n]} if n in paths else {})})
        blocks.append("\n".join(rows))
        plain.append("\n".join(bare))
    # (no context: every line shown is a match, numbered; a "--" between them said nothing)
    text = ("\n--\n" if context else "\n").join(blocks)
    paths_left_out = ""
    if timed_out:  # (said: the model would otherwise read a match without one as odd)
        paths_left_out = f" · paths of {len(paths):,} of the matches (their time ran out; a next grep is quicker)"
    if paths and len(text) > ctx.limit_tokens // 4:  # (a character can take several tokens: counted)
        without = ("\n--\n" if context else "\n").join(plain)
        limit = ctx.limit_tokens
        if ctx.pad.tokenizer.count(text) > limit >= ctx.pad.tokenizer.count(without):
            # the paths would have the grep refused where without them it fits: left out, and said
            text, paths_left_out = without, " · paths left out to fit the call's limit (fewer max_matches shows them)"
    if fallback:
        text = f"Note: {fallback}.\n{text}"
    more = "" if complete else "+"
    span = f"lines {shift + 1:,}-{shift + total:,}{where}" if part is not None and not own_numbers else ""
    summary = (
        f"{len(hits):,} of {counted:,}{more} matching lines shown"
        + (" (counting stopped at half the call's time)" if not complete and counted < MAX_COUNTED_MATCHES else "")
        + (f" (max_matches={max_matches})" if counted > len(hits) else "")
        + f" · {span or f'{total:,} lines{where}'} · {_describe(entry)}"
        + paths_left_out
    )
    rest = ""
    if counted > len(hits) and part is None and entry.format in ("text", "markdown"):
        # grep shows the first matches only: the rest are pages of the line relation in SQL
        # (DuckDB's regexes are RE2's, as grep's are)
        query = _rest_query(entry.key, pattern, ignore_case, fallback, hits[-1][0])
        rest = f" · the next ones: {call_repr('sql', {'query': query})}"
        summary += rest
    if own_numbers:  # (its own numbers: slice reads the body's, which these are not)
        text = f"lines{where}, numbered from its first line:\n{text}"
    elif part is None and entry.meta.get("embedded"):
        text += _inside_document(ctx, entry, paths, [line for line, _ in hits], pattern, bool(ignore_case))
    data = {
        "handle": entry.key,
        "pattern": pattern,
        "matches": matches,
        "windows": [[lo + shift, hi + shift] for lo, hi in windows],
        "lines": shown_lines,
        "total_matches": counted,
        "total_complete": complete,
        "total_lines": total,
        "literal_fallback": bool(fallback),
    }
    if shift:
        data["first_line"] = shift + 1  # (the body's line of the node's first)
    short = f"{counted}{more} matching lines" + (
        f", {len(hits)} shown (max_matches={max_matches})" if counted > len(hits) else ""
    )
    return Output(text, data, budget_footer(summary, short + rest + paths_left_out))


def _inside_document(
    ctx: ToolContext, entry: Entry, paths: dict[int, str], lines: list[int], pattern: str, ignore_case: bool
) -> str:
    """A note for a match inside a string that holds a document (an issue's markdown body): the
    grep of that very string, which shows its own lines; nothing when no match is in one."""
    import re

    from ._embedded import _embedded_format
    from ._json import _node_at

    listed = entry.meta.get("embedded") or []
    shapes = {re.sub(r"\[\d+\]", "[*]", str(e["path"])) for e in listed}  # (the spill lists 20 at most)
    for line in lines:
        found = paths.get(line)
        if not found or re.sub(r"\[\d+\]", "[*]", found) not in shapes:
            continue
        try:
            value = _node_at(ctx, entry, found, lazy=True)
        except ToolError:
            continue
        fmt = _embedded_format(value) if isinstance(value, str) else None
        if fmt:
            args: dict[str, Any] = {"handle": entry.key, "path": found, "pattern": pattern}
            args.update({"ignore_case": True} if ignore_case else {})
            return f"\nnote: {found} holds a {fmt} document; {call_repr('grep', args)} searches its own lines"
    return ""


# of a grep call's time, spent at most on the JSON paths of its matches: finding them reads the
# body up to the last match shown, about 0.25 s for 34 MB of pretty-printed JSON
PATHS_MAX_S = 0.5


# per body, what finding paths learnt (where its arrays' items begin, where containers close):
# the next grep of the same handle reads only past it. A few numbers per megabyte of body.
_PATH_MEMOS: dict[str, dict[int, Any]] = {}
_MEMO_LOCK = threading.Lock()


def _match_paths(ctx: ToolContext, entry: Entry, reader: Any, lines: list[int]) -> tuple[dict[int, str], bool]:
    """The JSON path of each match line of a JSON body (``$.items[412].status.phase``), read from
    the body's layout (``LinePaths``); those it had no time for, or that do not read as the
    layout, have none; and whether the time ran out before the last."""
    from ._linepaths import LinePaths

    if not isinstance(reader, BodyReader) or not lines:
        return {}, False
    deadline = time.monotonic() + max(0.0, min(PATHS_MAX_S, ctx.time_left() / 4))

    def check() -> None:
        if time.monotonic() > deadline:
            raise _NoTime

    out: dict[int, str] = {}
    ran_out = False
    key = str(entry.body_id or entry.key)
    with _MEMO_LOCK:  # (a call's own copy: two calls on one body never share a list)
        memo = copy.deepcopy(_PATH_MEMOS.get(key) or {})
    with _mapped(reader) as mm:
        paths = LinePaths(mm, check, memo)
        for line in sorted(lines):
            try:
                found = paths.path(reader.line_offset(line))
            except _NoTime:
                ran_out = True
                break
            if found is not None:
                out[line] = found
    with _MEMO_LOCK:
        _PATH_MEMOS.pop(key, None)
        _PATH_MEMOS[key] = paths.trimmed_memo()  # (most recent last)
        while len(_PATH_MEMOS) > 32:
            _PATH_MEMOS.pop(next(iter(_PATH_MEMOS)))
    return out, ran_out


PATH_WHOLE_MAX = 80  # characters of a match's path shown whole beside it
PATH_SHOWN_MAX = 120  # ... else of the path of the item holding it (a 50,000-character key: none)


def shown_path(path: str) -> str:
    """What a match line shows of its path: the whole path up to ``PATH_WHOLE_MAX`` characters,
    else up to the innermost array item holding it (``$.items[17]``: ``get_in`` of it reads the
    item), else nothing when even that is over ``PATH_SHOWN_MAX`` (``res.data`` has every path)."""
    from ._linepaths import item_path

    if len(path) <= PATH_WHOLE_MAX:
        return path
    try:
        shown = item_path(path)
    except ValueError:  # (a path not of LinePaths' making)
        return ""
    return shown if len(shown) <= PATH_SHOWN_MAX else ""


class _NoTime(Exception):
    """The time for match paths is up (the matches are shown without)."""


@dataclass
class _Part:
    """The lines of a part of a JSON handle ``grep`` searches (``path``): ``first_line``, the
    body's line of its first when the body holds its lines line for line (else its lines are
    numbered from 1); ``base``, the path its own lines' paths are under when they are JSON."""

    reader: StringLines | NodeLines
    where: str
    first_line: int | None = None
    base: str | None = None


def _part_at(ctx: ToolContext, entry: Entry, path: str, from_body: bool = True, pattern: str = "") -> _Part:
    """The lines of the value at ``path`` of a JSON handle: a string's own lines (a document in a
    string that holds JSON: that document pretty-printed), else the value pretty-printed. A node
    that holds a streamed array: its lines read from the body (``NodeLines``) when ``from_body``.
    A node's lines are the body's, less indented: numbered as the body's (``first_line``)."""
    from ..store._jsontext import dumps_pretty
    from ._embedded import embedded_json
    from ._json import _canonical, _node_at, _resolve_or_error, _show
    from ._segments import holds_lazy

    if entry.format not in ("json", "jsonl"):
        raise ToolError(
            "invalid_argument",
            f"'path' needs a JSON handle; {entry.key} is {entry.format}: grep without a path searches its lines",
            [suggestion("grep", "search every line", handle=entry.key, pattern=pattern or ".")],
            argument="path",
        )
    node = _node_at(ctx, entry, path, lazy=True)
    canonical = _canonical(path)
    shown = _show(canonical)
    if holds_lazy(node):
        held = _node_lines(ctx, entry, node) if from_body else None
        if held is not None:
            return _Part(held, f" of {shown}", _first_body_line(ctx, entry, canonical, held.line_count))
        node = _resolve_or_error(entry, ctx.json_value(entry), path)
    if isinstance(node, str):
        doc = embedded_json(node)
        if doc is None:
            return _Part(StringLines(node), f" of the string at {shown}")
        return _Part(StringLines(dumps_pretty(doc).decode("utf-8", "surrogatepass")), f" of {shown}, pretty-printed",
                     base=canonical)  # fmt: skip
    lines = StringLines(dumps_pretty(node).decode("utf-8", "surrogatepass"))
    first = _first_body_line(ctx, entry, canonical, lines.line_count)
    return _Part(lines, f" of {shown}" if first else f" of {shown}, pretty-printed", first, canonical)


def _first_body_line(ctx: ToolContext, entry: Entry, canonical: str, count: int) -> int | None:
    """The body's line of the first line of the node at ``canonical`` when the body holds its
    ``count`` lines line for line (its layout read by ``node_span``), else None: a node inside a
    string that holds JSON, past the body's depth cut, a JSON Lines body."""
    from ._linepaths import node_span
    from ._paths import parse_path

    if entry.format != "json":
        return None
    reader = ctx.reader(entry)
    if not reader.body_bytes:
        return None
    with _mapped(reader) as mm:
        span = node_span(mm, parse_path(canonical), ctx.check_time)
    if span is None:
        return None
    first, last = reader.line_at(span[0]), reader.line_at(span[1])
    return first if last - first + 1 == count else None


def _paths_of(
    ctx: ToolContext, entry: Entry, part: _Part | None, reader: Any, lines: list[int], shift: int
) -> tuple[dict[int, str], bool]:
    """The JSON path of each match line (numbered as ``reader`` numbers them): of the whole body,
    or of a part the body holds line for line, from the body's layout at the body's lines; of a
    part printed alone (a document in a string) from its own lines, under the part's path. None
    for a plain string's lines."""
    if part is None:
        return _match_paths(ctx, entry, reader, lines) if entry.format == "json" else ({}, False)
    if part.first_line is not None:  # the body's lines: the same paths as a grep of the whole body
        found, ran_out = _match_paths(ctx, entry, ctx.reader(entry), [n + shift for n in lines])
        return {n - shift: p for n, p in found.items()}, ran_out
    if part.base is None or not isinstance(reader, StringLines):
        return {}, False
    return _own_paths(ctx, reader, lines, part.base)


def _own_paths(ctx: ToolContext, reader: StringLines, lines: list[int], base: str) -> tuple[dict[int, str], bool]:
    """Paths of lines of a value printed alone, under ``base`` (its own path)."""
    from ._linepaths import LinePaths

    deadline = time.monotonic() + max(0.0, min(PATHS_MAX_S, ctx.time_left() / 4))

    def check() -> None:
        if time.monotonic() > deadline:
            raise _NoTime

    paths = LinePaths(reader.data, check)
    out: dict[int, str] = {}
    for line in sorted(lines):
        try:
            found = paths.path(reader.offset_of(line))
        except _NoTime:
            return out, True
        if found is not None:
            out[line] = base + found[1:]
    return out, False


def _node_lines(ctx: ToolContext, entry: Entry, node: Any) -> NodeLines | None:
    """``node`` (which holds a streamed array) as ``NodeLines``; None when the body cannot say
    where the array's lines are (a spill without a skeleton)."""
    from ..store._jsonstream import STREAMED_ARRAY
    from ..store._jsontext import dumps_pretty
    from ._segments import find_lazy

    found = find_lazy(node)
    if found is None:
        return None
    items, keys = found
    if not items.lines or items.body_start is None:
        return None
    marker = dumps_pretty(STREAMED_ARRAY).decode().rstrip("\n")

    def marked(value: Any, rest: list[str]) -> Any:
        return STREAMED_ARRAY if not rest else {**value, rest[0]: marked(value[rest[0]], rest[1:])}

    lines = dumps_pretty(marked(node, keys)).decode("utf-8", "surrogatepass").split("\n")[:-1]
    at = next((i for i, line in enumerate(lines) if marker in line), None)
    if at is None:
        return None
    before, _, after = lines[at].partition(marker)
    reader = ctx.reader(entry)
    opening = reader.line_at(items.body_start)  # the body's line of the array's "["
    closing = opening + items.lines - 1
    edges = reader.read_lines(opening, opening) + reader.read_lines(closing, closing)
    if len(edges) != 2 or not edges[0].endswith("[") or not edges[1].lstrip().startswith("]"):
        return None
    depth = len(items.path_keys) - len(keys)  # the node's depth in the document
    return NodeLines(
        reader, [*lines[:at], before + "["], opening + 1, closing - 1, 2 * depth,
        [" " * (2 * len(keys)) + "]" + after, *lines[at + 1 :]],
    )  # fmt: skip


def _rest_query(relation: str, pattern: str, ignore_case: bool, literal: str | None, after: int) -> str:
    """The SQL of the matching lines after line ``after``, a page at a time (grep has no offset)."""
    quoted = "'" + pattern.replace("'", "''") + "'"
    if literal is not None or (not ignore_case and not _REGEX_SYNTAX.intersection(pattern)):
        test = f"contains(lower(line), {quoted.lower()})" if ignore_case else f"contains(line, {quoted})"
    else:
        flags = ", 'i'" if ignore_case else ""
        test = f"regexp_matches(line, {quoted}{flags})"
    return f"SELECT line_no, line FROM {relation} WHERE line_no > {after} AND {test} ORDER BY line_no LIMIT 100"


def grep_suggestions(args: dict[str, Any], estimated: int, limit: int) -> list[dict[str, Any]]:
    handle = args.get("handle")
    max_matches = int(args.get("max_matches") or 100)
    context = args.get("context")
    context = 3 if context is None else int(context)
    fit = max(1, int(max_matches * limit * 0.8 / max(estimated, 1)))
    out = [suggestion("grep", f"about {fit} matches fit", **{**args, "max_matches": fit, "handle": handle})]
    if context:
        out.append(suggestion("grep", "no context lines", **{**args, "context": 0, "handle": handle}))
    return out


# -- bytes ------------------------------------------------------------------------------------


def _decode(chunk: bytes) -> tuple[str, bool]:
    try:
        return chunk.decode("utf-8"), True
    except UnicodeDecodeError:
        return chunk.decode("utf-8", errors="replace"), False


def read_handle(
    ctx: ToolContext,
    handle: str,
    start: int | None = None,
    end: int | None = None,
    match: str | None = None,
    window: int = 200,
) -> Output:
    entry = ctx.entry(handle)
    reader = ctx.reader(entry)
    size = reader.raw_size
    if match is not None:
        if start is not None or end is not None:
            raise ToolError("invalid_argument", "give either start/end or match (+ window), not both", argument="match")
        return _read_matches(ctx, entry, reader, match, _positive_int(window, "window", 0), size)
    start = 0 if start is None else _positive_int(start, "start", 0)
    if start >= size and size:  # (said first: "end must be greater than start" hid it)
        last = suggestion("read_handle", "its last bytes", handle=entry.key, start=max(0, size - 4096), end=size)
        raise ToolError(
            "invalid_argument", f"start ({start:,}) is past the end ({size:,} bytes)", [last], argument="start",
            size=size,
        )  # fmt: skip
    end = min(size, start + 4096) if end is None else _positive_int(end, "end", 0)
    if end <= start:
        raise ToolError(
            "invalid_argument",
            f"end ({end}) must be greater than start ({start}); the range is "
            "[start, end) in bytes of the original output",
            argument="end",
            size=size,
        )
    end = min(end, size)
    ctx.guard_bytes(end - start, lambda n: reader.read_raw(start, start + n).decode("utf-8", "replace"))
    chunk = reader.read_raw(start, end)
    text, valid = _decode(chunk)
    data: dict[str, Any] = {
        "handle": entry.key,
        "start": start,
        "end": end,
        "size": size,
        "text": text,
        "valid_utf8": valid,
    }
    if not valid:
        data["base64"] = base64.b64encode(chunk).decode("ascii")
    note = "" if valid else " · not valid UTF-8: shown with U+FFFD, exact bytes in .data['base64']"
    return Output(text, data, budget_footer(f"bytes {start:,}-{end:,} of {size:,}{note}"))


def _char_start(buf: Any, pos: int, size: int | None = None) -> int:
    """``pos`` moved onto the start of the UTF-8 character it falls inside (back for a window's
    start, forward to ``size`` at most for its end): at most three continuation bytes either way,
    so a body that is not UTF-8 moves no further."""
    step, stop = (-1, 0) if size is None else (1, size)
    for _ in range(3):
        if pos == stop or pos >= len(buf) or buf[pos] & 0xC0 != 0x80:
            break
        pos += step
    return pos


def _read_matches(ctx: ToolContext, entry: Entry, reader: BodyReader, match: str, window: int, size: int) -> Output:
    if not isinstance(match, str) or not match:
        raise ToolError("invalid_argument", "'match' must be a non-empty string", argument="match")
    _bounded_needle(match, "match")
    needle = match.encode("utf-8", "surrogatepass")
    spans: list[list[int]] = []
    found = 0
    if size:
        with open(reader.raw_path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            pos = mm.find(needle)
            while pos >= 0:
                found += 1
                if found > 10_000:  # counted far enough; a dense match must not loop per byte
                    break
                if found & 1023 == 0:
                    ctx.check_time()
                if len(spans) < MAX_BYTE_WINDOWS or (spans and pos - window <= spans[-1][1]):
                    lo, hi = max(0, pos - window), min(size, pos + len(needle) + window)
                    if spans and lo <= spans[-1][1]:
                        # overlapping windows merge, up to four windows: a match repeated
                        # every few bytes ("word word …") made one span of all of them, which
                        # no smaller window shrank
                        most = 4 * window + 2 * len(needle)
                        if spans[-1][1] - spans[-1][0] < most:
                            spans[-1][1] = min(max(spans[-1][1], hi), spans[-1][0] + most)
                    else:
                        spans.append([lo, hi])
                elif found > 10_000:
                    break
                pos = mm.find(needle, pos + 1)
            for span in spans:  # a window starts and ends on whole UTF-8 characters
                span[0], span[1] = _char_start(mm, span[0]), _char_start(mm, span[1], size)
    if not spans:
        return Output(
            f"No occurrence of {_shown_needle(match)} in the {size:,} bytes of {entry.key}.",
            {"handle": entry.key, "match": match, "windows": [], "occurrences": 0},
            budget_footer("0 occurrences"),
        )
    total_bytes = sum(hi - lo for lo, hi in spans)
    ctx.guard_bytes(total_bytes, lambda n: reader.read_raw(spans[0][0], spans[0][0] + n).decode("utf-8", "replace"))
    blocks, windows = [], []
    for lo, hi in spans:
        text, valid = _decode(reader.read_raw(lo, hi))
        blocks.append(f"--- bytes {lo:,}-{hi:,} ---\n{text}")
        windows.append({"start": lo, "end": hi, "text": text, "valid_utf8": valid})
    more = "+" if found > 10_000 else ""
    summary = f"{len(spans)} windows around {found:,}{more} occurrences of {_shown_needle(match)} · {size:,} bytes"
    return Output(
        "\n".join(blocks),
        {"handle": entry.key, "match": match, "windows": windows, "occurrences": found},
        budget_footer(summary),
    )


def read_handle_suggestions(args: dict[str, Any], estimated: int, limit: int) -> list[dict[str, Any]]:
    handle = args.get("handle")
    start = int(args.get("start") or 0)
    fit_bytes = max(256, int(limit * 0.8 * 3))
    if args.get("match"):
        return [
            suggestion("read_handle", "a smaller window", handle=handle, match=args["match"], window=50),
            suggestion("grep", "find the lines instead", handle=handle, pattern=args["match"], context=0),
        ]
    return [
        suggestion("read_handle", f"about {fit_bytes:,} bytes fit", handle=handle, start=start, end=start + fit_bytes)
    ]


def read(ctx: ToolContext, handle: str) -> Output:
    entry = ctx.settled(ctx.entry(handle))
    tokens = entry.tokens
    if tokens is not None and tokens > ctx.limit_tokens:
        raise TooLarge(tokens, "the whole output")
    reader = ctx.reader(entry)
    ctx.guard_bytes(reader.raw_size, lambda n: reader.read_raw(0, n).decode("utf-8", "replace"))
    chunk = reader.read_raw(0, reader.raw_size)
    text, valid = _decode(chunk)
    data = {"handle": entry.key, "format": entry.format, "size": len(chunk), "text": text, "valid_utf8": valid}
    return Output(text, data, budget_footer(f"all {len(chunk):,} bytes of {entry.key} ({entry.format})"))


def read_suggestions(
    entry: Entry | None, args: dict[str, Any], estimated: int, limit: int, array_path: str | None = None
) -> list[dict[str, Any]]:
    handle = args.get("handle")
    out = [suggestion("schema", "see the structure first", handle=handle)]
    if array_path is not None:
        out.append(suggestion("item_schema", "the keys of the records", handle=handle, path=array_path))
    lines = entry.line_count if entry is not None and entry.line_count else 1000
    out += fewer_lines(str(handle), 1, lines, estimated, limit)
    out.append(grep_errors(handle, "search for what you need"))
    return out
