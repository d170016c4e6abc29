"""Bodies on disk: the raw bytes, the normalised body, and a sparse line index.

A body directory holds ``raw`` (the original bytes, exactly), ``body`` (UTF-8 text for the line
tools; absent when it would equal ``raw``) and ``lines.idx``. The index records ``(line, offset)``
for line 1, every ``LINE_STEP``-th line, and the first line that starts in each ``BYTE_STEP``-sized
stretch of the body, so finding where any line starts reads at most ``LINE_STEP`` lines or about
``2 × BYTE_STEP`` bytes, whatever the size of the body. Reads of a byte or line range therefore
cost what they return: a 1 GB body is sliced without being loaded.

Bodies are written into a temporary directory and renamed into place, so a reader never sees a
half-written body; the catalog row that makes a body visible is inserted after the rename.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import NotFoundError

__all__ = ["BodyReader", "BodyStats", "LineIndexer", "remove_body_dir", "removed_while_read", "write_body_dir"]

LINE_STEP = 256
BYTE_STEP = 1 << 16
_MAGIC = b"SPLIDX01"
_HEADER = struct.Struct("<8sQQQQ")  # magic, line_count, body_bytes, longest_line, entries
_WRITE_CHUNK = 8 << 20


@dataclass(frozen=True)
class BodyStats:
    line_count: int
    body_bytes: int
    longest_line: int


class LineIndexer:
    """Builds the sparse line index from a stream of body chunks (vectorised with numpy)."""

    def __init__(self) -> None:
        self._entries: list[np.ndarray] = [np.array([[1, 0]], dtype="<u8")]
        self._offset = 0  # bytes seen so far
        self._newlines = 0
        self._last_start = 0  # offset where the current (unfinished) line started
        self._longest = 0

    def feed(self, chunk: bytes | memoryview) -> None:
        arr = np.frombuffer(chunk, dtype=np.uint8)
        if arr.size == 0:
            return
        nl = np.flatnonzero(arr == 10).astype(np.int64) + self._offset
        if nl.size:
            starts = nl + 1  # each newline starts a line (maybe the phantom one after the end)
            lines = np.arange(self._newlines + 2, self._newlines + 2 + nl.size, dtype=np.int64)
            previous = np.concatenate(([self._last_start], starts[:-1]))
            lengths = nl - previous
            self._longest = max(self._longest, int(lengths.max()))
            by_line = (lines - 1) % LINE_STEP == 0
            by_bytes = (starts // BYTE_STEP) > (previous // BYTE_STEP)
            keep = by_line | by_bytes
            if keep.any():
                self._entries.append(np.stack([lines[keep], starts[keep]], axis=1).astype("<u8", copy=False))
            self._newlines += int(nl.size)
            self._last_start = int(starts[-1])
        self._offset += int(arr.size)

    def finish(self) -> tuple[BodyStats, np.ndarray]:
        total = self._offset
        tail = total - self._last_start
        line_count = self._newlines + (1 if tail > 0 else 0)
        self._longest = max(self._longest, tail)
        entries = np.concatenate(self._entries)
        # Drop the phantom entry for a line that would start exactly at the end.
        entries = entries[entries[:, 1] < max(total, 1)] if total else entries[:1]
        return BodyStats(line_count, total, self._longest), entries


def _write_index(path: Path, stats: BodyStats, entries: np.ndarray, durable: bool = False) -> None:
    with open(path, "wb") as fh:
        fh.write(_HEADER.pack(_MAGIC, stats.line_count, stats.body_bytes, stats.longest_line, len(entries)))
        fh.write(np.ascontiguousarray(entries, dtype="<u8").tobytes())
        if durable:
            fh.flush()
            os.fsync(fh.fileno())


def fsync_dir(directory: Path) -> None:
    """Make the names in ``directory`` (a rename into it) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _chunks(data: bytes) -> Iterator[memoryview]:
    view = memoryview(data)
    for start in range(0, len(data), _WRITE_CHUNK):
        yield view[start : start + _WRITE_CHUNK]


def write_body_dir(
    directory: Path, raw: bytes | Iterable[bytes], body: bytes | Iterable[bytes] | None, durable: bool = False
) -> BodyStats:
    """Write a body directory (``directory`` must not exist, its parent must: a store's ``tmp/``
    is not made again here, where a removed store directory would be made again with it);
    returns the body's stats.

    ``raw`` may be an iterable of chunks (a body streamed from a file), and so may ``body`` (a
    large JSON document pretty-printed a segment at a time); ``body`` is None when the body is
    the raw bytes themselves.
    """
    directory.mkdir()
    indexer = LineIndexer()
    with open(directory / "raw", "wb") as fh:
        pieces = _chunks(raw) if isinstance(raw, bytes) else raw
        for piece in pieces:
            fh.write(piece)
            if body is None:
                indexer.feed(piece)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    if body is not None:
        with open(directory / "body", "wb") as fh:
            for piece in _chunks(body) if isinstance(body, bytes) else body:
                fh.write(piece)
                indexer.feed(piece)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
    stats, entries = indexer.finish()
    _write_index(directory / "lines.idx", stats, entries, durable)
    if durable:
        fsync_dir(directory)
    return stats


_REMOVE_TRIES = 5


def remove_body_dir(directory: Path) -> None:
    """Remove a body directory. A file written into it meanwhile (a spill's schema worker, in
    this process or another, saving ``schema-v4-*.json`` beside the body) made the last step,
    removing the directory, fail: it stayed, holding that file alone, an orphan until a sweep
    past the grace. It is removed again then (the writers make no directory: it stays gone)."""
    for _ in range(_REMOVE_TRIES):
        shutil.rmtree(directory, ignore_errors=True)
        if not os.path.lexists(directory):
            return


def removed_while_read() -> NotFoundError:
    """A body removed after its entry was looked up: a sweep, a delete, or a handle replaced."""
    return NotFoundError(
        "the body of this handle was removed while it was being read (it expired, or was deleted or "
        "replaced, possibly by another process of a shared store); list live handles with scratch_list"
    )


class BodyReader:
    """Random access to one body directory: byte ranges of the raw bytes, line ranges of the body."""

    def __init__(self, directory: Path, raw_size: int | None = None) -> None:
        """Open a body directory, checking that its files are whole: the sizes the line index
        recorded when it was written (and ``raw_size``, the raw bytes' size in the catalog).

        A file cut short raises ``ValueError``: what a machine crash leaves of a body whose bytes
        had not reached the disk (the catalog row that names it may have), or a file changed
        outside the store. Read anyway, it gave wrong answers (an empty head, a count of 1).
        """
        self.directory = directory
        self.raw_path = directory / "raw"
        body = directory / "body"
        self.body_path = body if body.exists() else self.raw_path
        index = directory / "lines.idx"
        with open(index, "rb") as fh:
            header = fh.read(_HEADER.size)
        if len(header) < _HEADER.size or header[:8] != _MAGIC:
            raise ValueError("its line index is cut short or not one")
        _magic, lines, nbytes, longest, count = _HEADER.unpack(header)
        for path, want in (
            (index, _HEADER.size + 16 * int(count)),
            (self.body_path, int(nbytes)),
            (self.raw_path, raw_size),
        ):
            have = os.path.getsize(path)
            if want is not None and have != want:
                raise ValueError(f"{path.name} holds {have:,} bytes where {want:,} were written")
        self.line_count = int(lines)
        self.body_bytes = int(nbytes)
        self.longest_line = int(longest)
        self._entries = np.memmap(
            directory / "lines.idx", dtype="<u8", mode="r", offset=_HEADER.size, shape=(int(count), 2)
        )

    def _open(self, path: Path) -> BinaryIO:
        try:
            return open(path, "rb")
        except FileNotFoundError:  # removed after its entry was looked up: a sweep or a delete
            raise removed_while_read() from None

    @property
    def raw_size(self) -> int:
        try:
            return os.path.getsize(self.raw_path)
        except FileNotFoundError:
            raise removed_while_read() from None

    # -- bytes -------------------------------------------------------------------------------

    def read_raw(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the original output."""
        start = max(0, start)
        if end <= start:
            return b""
        with self._open(self.raw_path) as fh:
            fh.seek(start)
            return fh.read(end - start)

    def read_body(self, start: int, end: int) -> bytes:
        start = max(0, start)
        if end <= start:
            return b""
        with self._open(self.body_path) as fh:
            fh.seek(start)
            return fh.read(end - start)

    # -- lines -------------------------------------------------------------------------------

    def line_offset(self, line: int) -> int:
        """Byte offset where 1-based ``line`` starts (``body_bytes`` past the last line)."""
        if line > self.line_count:
            return self.body_bytes
        if line <= 1:
            return 0
        lines = self._entries[:, 0]
        pos = int(np.searchsorted(lines, np.uint64(line), side="right")) - 1  # a uint64 key: no copy of the column
        base_line = int(lines[pos])
        offset = int(self._entries[pos, 1])
        to_skip = line - base_line
        if to_skip == 0:
            return offset
        with self._open(self.body_path) as fh:
            fh.seek(offset)
            while True:
                chunk = fh.read(1 << 16)
                if not chunk:
                    return self.body_bytes
                found = 0
                pos_in = 0
                while found < to_skip:
                    hit = chunk.find(b"\n", pos_in)
                    if hit < 0:
                        break
                    found += 1
                    pos_in = hit + 1
                if found == to_skip:
                    return offset + pos_in
                to_skip -= found
                offset += len(chunk)

    def line_at(self, offset: int) -> int:
        """The 1-based line that contains byte ``offset`` (reads at most ~2 index steps)."""
        offsets = self._entries[:, 1]
        pos = int(np.searchsorted(offsets, np.uint64(offset), side="right")) - 1
        base_line, base_offset = int(self._entries[pos, 0]), int(self._entries[pos, 1])
        return base_line + self.read_body(base_offset, offset).count(b"\n")

    def line_span(self, start: int, end: int) -> tuple[int, int]:
        """Byte span ``[a, b)`` of lines ``start..end`` (inclusive), newline of ``end`` excluded."""
        a = self.line_offset(start)
        b = self.line_offset(end + 1)
        if end < self.line_count or (self.body_bytes and self._ends_with_newline()):
            b -= 1
        return a, max(a, b)

    def _ends_with_newline(self) -> bool:
        return self.read_body(self.body_bytes - 1, self.body_bytes) == b"\n"

    def read_lines(self, start: int, end: int) -> list[str]:
        """Lines ``start..end`` (1-based, inclusive, clamped to the body) as text."""
        start = max(1, start)
        end = min(end, self.line_count)
        if end < start:
            return []
        a, b = self.line_span(start, end)
        return self.read_body(a, b).decode("utf-8", errors="replace").split("\n")

    def iter_lines(self, chunk_bytes: int = 1 << 20) -> Iterator[str]:
        """Every line of the body, streamed."""
        with self._open(self.body_path) as fh:
            rest = b""
            while True:
                chunk = fh.read(chunk_bytes)
                if not chunk:
                    break
                parts = (rest + chunk).split(b"\n")
                rest = parts.pop()
                for part in parts:
                    yield part.decode("utf-8", errors="replace")
            if rest:
                yield rest.decode("utf-8", errors="replace")

    def body_text(self) -> str:
        with self._open(self.body_path) as fh:
            return fh.read().decode("utf-8", errors="replace")

    def body_bytes_all(self) -> bytes:
        with self._open(self.body_path) as fh:
            return fh.read()
