"""A stream as a notebook shows it: ``\\r`` returns to the start of its line, and what follows
overwrites it (JupyterLab and the classic notebook alike; ``\\r\\n`` is a newline).

A text progress bar (tqdm on stderr) rewrites one line hundreds of times a minute; every update
counted toward the spill threshold, so a bar that ran for 15 s spilled and its stub showed the 0 %
state. What counts, and what is stored when a stream does spill, is what the front end shows.

>>> visible_text("  0%|          | 0/3\\r 33%|###       | 1/3\\r100%|##########| 3/3\\ndone\\n")
'100%|##########| 3/3\\ndone\\n'
>>> visible_text("abcdef\\rxy")
'xycdef'
"""

from __future__ import annotations

from typing import Any

__all__ = ["StreamMeter", "visible_text"]

_MAX_TOKENS_PER_CHAR = 4 * 1.1  # see _spill: below this bound nothing needs tokenizing


def _overwritten(segments: list[str]) -> str:
    """One line written as ``segments`` (it was split at each ``\\r``): each one written from the
    line's start over what was there. Walked from the last, so each character is copied once."""
    shown = [segments[-1]]
    covered = len(segments[-1])
    for segment in reversed(segments[:-1]):
        if len(segment) > covered:
            shown.append(segment[covered:])
            covered = len(segment)
    return "".join(shown)


def visible_text(text: str) -> str:
    """``text`` as the front end shows it: the characters ``\\r`` let later text overwrite are gone."""
    if "\r" not in text:
        return text
    lines = text.split("\n")
    return "\n".join(_overwritten(line.split("\r")) if "\r" in line else line for line in lines)


class _Line:
    """The line a stream is writing (since its last ``\\n``), as shown, with a write position.

    Appends (the common case) are kept as pieces and counted incrementally; a ``\\r`` moves the
    position to the start, and what is written then overwrites (the count of the line restarts)."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.chars = 0
        self.cursor: int | None = None  # None: at the end (appending)
        self.counted_tokens = 0  # tokens of the first ``counted_chars`` characters
        self.counted_chars = 0

    def write(self, segment: str) -> None:
        if not segment:
            return
        if self.cursor is None:
            self.pieces.append(segment)
            self.chars += len(segment)
            return
        text = self.text()
        end = self.cursor + len(segment)
        self.counted_tokens = self.counted_chars = 0  # (overwritten: counted again when needed)
        text = text[: self.cursor] + segment + text[end:]
        self.pieces, self.chars = [text], len(text)
        self.cursor = None if end >= len(text) else end

    def home(self) -> None:
        """A ``\\r``: what follows overwrites the line from its start."""
        if self.chars:
            self.cursor = 0
            self.counted_tokens = self.counted_chars = 0

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""


class StreamMeter:
    """How far a stream, as shown, is from the threshold: the lines it ended (tokens counted, text
    not counted yet, bytes) and the line it is writing."""

    def __init__(self) -> None:
        self.counted = 0
        self.uncounted: list[str] = []
        self.uncounted_chars = 0
        self.bytes = 0  # of the ended lines
        self.line = _Line()

    def feed(self, text: str) -> None:
        """Add what was written (``\\r`` rewrites the line being written; only its last state counts)."""
        if "\r" not in text:
            nl = text.rfind("\n")
            if nl < 0:
                self.line.write(text)
                return
            self._end_line(text[: nl + 1])
            self.line.write(text[nl + 1 :])
            return
        parts = text.split("\n")
        for i, part in enumerate(parts):
            segments = part.split("\r")
            self.line.write(segments[0])
            for segment in segments[1:]:
                self.line.home()
                self.line.write(segment)
            if i < len(parts) - 1:
                self._end_line("\n")

    def _end_line(self, ending: str) -> None:
        """The line being written ends with ``ending`` (its last ``\\n`` included)."""
        line = self.line
        self.counted += line.counted_tokens
        rest = line.text()[line.counted_chars :] + ending
        self.uncounted.append(rest)
        self.uncounted_chars += len(rest)
        self.bytes += len(rest.encode("utf-8", "surrogatepass"))
        self.line = _Line()

    def bytes_reach(self, limit: int) -> bool:
        """Whether the stream as shown is at least ``limit`` UTF-8 bytes (the line being written is
        encoded only when its characters cannot decide: one is 1 to 4 bytes)."""
        line = self.line
        if self.bytes + 4 * line.chars < limit:
            return False
        if self.bytes + line.chars >= limit:
            return True
        return self.bytes + len(line.text().encode("utf-8", "surrogatepass")) >= limit

    def reaches(self, policy: Any, threshold: int, tokenizer: Any) -> bool:
        """Whether the stream as shown could reach the threshold (``policy.min_bytes`` or
        ``threshold`` tokens); counts lazily, never more than needed to decide."""
        line = self.line
        if policy.min_bytes is not None and self.bytes_reach(policy.min_bytes):
            return True
        pending = self.uncounted_chars + line.chars - line.counted_chars
        if self.counted + line.counted_tokens + pending * _MAX_TOKENS_PER_CHAR + 1 < threshold:
            return False
        if self.uncounted:
            tokens, _exact = tokenizer.count_upto("".join(self.uncounted), max(1, threshold - self.counted))
            self.counted += tokens
            self.uncounted, self.uncounted_chars = [], 0
            if self.counted >= threshold:
                return True
        if line.chars > line.counted_chars:
            rest = line.text()[line.counted_chars :]
            limit = max(1, threshold - self.counted - line.counted_tokens)
            tokens, _exact = tokenizer.count_upto(rest, limit)
            line.counted_tokens += tokens
            line.counted_chars = line.chars
        return self.counted + line.counted_tokens >= threshold
