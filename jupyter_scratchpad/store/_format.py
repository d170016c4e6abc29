"""Normalise an output once, at write time: raw bytes, format, and the body the line tools see.

* ``json``: the raw text parses as a JSON object or array; the body is the value pretty-printed
  with a 2-space indent, so that line tools see one key per line.
* ``jsonl``: at least two non-empty lines, each a JSON object or array; the body is the text.
* ``markdown``: an ATX heading in the first 50 lines (Aura's rule); the body is the text.
* ``text``: anything else, including bytes that are not UTF-8 (decoded with U+FFFD replacements
  for the body; the raw bytes are kept exactly for ``read_handle``).

In a text or markdown body a bare carriage return (``\r`` not before ``\n``: progress bars) ends
a line, as a terminal shows it; a UTF-8 byte order mark is not part of JSON's text.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Any

from ._jsonstream import STREAM_MIN_BYTES, StreamedJson, stream_json
from ._jsontext import dumps_compact, dumps_pretty, loads, raw_marks

__all__ = [
    "Normalised",
    "as_text",
    "dumps_compact",
    "has_bare_cr",
    "looks_like_markdown",
    "normalise",
    "parse_json_bytes",
    "pretty_json",
]

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]")
MARKDOWN_SCAN_LINES = 50


@dataclass(frozen=True)
class Normalised:
    """What a store writes for one output."""

    raw: bytes  # the original bytes, exactly
    body: bytes  # UTF-8 text for line tools (may be ``raw`` itself)
    format: str  # json | jsonl | markdown | text
    value: Any = None  # the parsed JSON value, for json (and jsonl: list of records)
    utf8_errors: bool = False  # raw was not valid UTF-8
    # a large JSON document read a segment at a time: ``body`` is empty, ``streamed.body_chunks()``
    # writes it, and ``value`` is ``streamed.sample`` (the document with its big array's first items)
    streamed: StreamedJson | None = None
    # ``raw_marks`` of a JSON text, when normalising scanned it: (long numbers, may embed a document)
    marks: tuple[bool, bool] | None = None

    def body_head(self, limit: int = 8192) -> bytes:
        """The first bytes of the body (for previews), whether or not it is streamed."""
        return self.streamed.head(limit) if self.streamed is not None else self.body[:limit]


def pretty_json(value: Any) -> bytes:
    """2-space indented JSON, newline-terminated (any depth, exact numbers; see ``_jsontext``)."""
    return dumps_pretty(value)


_BOM = codecs.BOM_UTF8


def parse_json_bytes(data: bytes, long_numbers: bool | None = None) -> Any:
    """Parse JSON bytes exactly and at any depth; raises ``ValueError`` if they are not JSON.
    A UTF-8 byte order mark before the text is not part of it (RFC 8259 §8.1: ignored).
    ``long_numbers``: see ``loads``."""
    return loads(data[len(_BOM) :] if data.startswith(_BOM) else data, long_numbers)


def as_text(result: Any) -> str:
    """The text of a tool result as a model would see it (for counting tokens). Never raises."""
    if isinstance(result, str):
        return str.__str__(result)
    if isinstance(result, (bytes, bytearray, memoryview)):
        try:
            return bytes(result).decode("utf-8", errors="replace")
        except ValueError:  # a released memoryview holds nothing (bytes() raised)
            return ""
    return dumps_compact(result)


def to_raw(result: Any) -> bytes:
    """The exact bytes to keep for ``result`` (lone surrogates of a str kept as they are)."""
    if isinstance(result, str):
        return result.encode("utf-8", "surrogatepass")
    if isinstance(result, (bytes, bytearray, memoryview)):
        return bytes(result)
    return dumps_compact(result).encode("utf-8", "surrogatepass")


def _looks_like_jsonl(text: bytes) -> list[Any] | None:
    lines = [line for line in text.split(b"\n") if line.strip()]
    if len(lines) < 2:
        return None
    records = []
    for line in lines:
        stripped = line.strip()
        if stripped[:1] not in (b"{", b"["):
            return None
        try:
            records.append(loads(stripped))
        except ValueError:
            return None
    return records


def looks_like_markdown(text: str | bytes) -> bool:
    """Aura's rule: an ATX heading (1-6 ``#`` then a space or tab, up to three spaces of indent) in
    the first 50 lines. One heading is enough; ``#!/bin/sh``, ``#include`` and ``#TODO`` are not.
    """
    if isinstance(text, bytes):
        text = text[: 1 << 16].decode("utf-8", errors="replace")
    for i, line in enumerate(text.split("\n", MARKDOWN_SCAN_LINES)):
        if i >= MARKDOWN_SCAN_LINES:
            break
        if _ATX_HEADING.match(line):
            return True
    return False


def _valid_utf8(raw: bytes, step: int = 1 << 20) -> bool:
    """Whether ``raw`` is UTF-8, without decoding it into a second full-size copy."""
    if raw.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(raw)
    try:
        for start in range(0, len(raw), step):
            decoder.decode(view[start : start + step], final=start + step >= len(raw))
    except UnicodeDecodeError:
        return False
    return True


def _streamed(raw: bytes, marks: tuple[bool, bool], text: bytes | None = None) -> Normalised | None:
    """``raw`` (JSON) to be read a segment at a time as its body is written, or None (see ``normalise``);
    ``text``: the JSON text in ``raw`` when it is not all of it (after a byte order mark)."""
    text = raw if text is None else text
    long_numbers, may_embed = marks
    found = None if may_embed else stream_json(text, long_numbers)
    if found is None:
        return None
    return Normalised(raw=raw, body=b"", format="json", value=found.sample, streamed=found, marks=marks)


def normalise(result: Any, text: str | None = None, stream: bool = False) -> Normalised:
    """Detect the format of ``result`` and build the body the line tools read.

    ``text`` is ``as_text(result)`` when the caller already has it (it is the raw bytes of a dict
    or list), so that big values are serialised once. ``stream``: a JSON text of at least
    ``STREAM_MIN_BYTES`` that is one big array, and has no string that may hold a document (which
    a spill walks for), is not parsed whole but a segment at a time as its body is written (see
    ``_jsonstream``); if a segment turns out not to be JSON, writing raises ``NotStreamable`` and
    the caller normalises again without ``stream``. A JSON text's bytes are scanned once
    (``raw_marks``), for both tests and for the numbers a double would change.
    """
    if text is not None and not isinstance(result, (bytes, bytearray, memoryview)):
        # (the caller's text is the value written once: a DataFrame's records were written again)
        raw = text.encode("utf-8", "surrogatepass")
    else:
        raw = to_raw(result)
    if isinstance(result, (dict, list)):
        # a large value (a notebook cell's 200 MB dict) is stored as its JSON text would be, a
        # segment at a time: its SQL tables then load the big array as records, where read whole
        # the document did not fit DuckDB's memory limit and every agent query of it failed
        big = stream and len(raw) >= STREAM_MIN_BYTES
        marks = raw_marks(raw) if big else None
        streamed = _streamed(raw, marks) if marks is not None else None
        return streamed or Normalised(raw=raw, body=pretty_json(result), format="json", value=result, marks=marks)
    utf8_errors = not _valid_utf8(raw)
    if utf8_errors:
        body = _bare_cr_as_newline(raw.decode("utf-8", errors="replace").encode("utf-8"))
        return Normalised(raw=raw, body=body, format="text", utf8_errors=True)
    # a UTF-8 byte order mark (Windows tools write one) is no part of the text: the format is
    # detected and JSON parsed without it; ``raw`` keeps it, the bytes as given
    doc = raw[len(_BOM) :] if raw.startswith(_BOM) else raw
    stripped = doc[:4096].lstrip()[:1]  # (never a copy of the whole body)
    if stripped in (b"{", b"["):
        marks = raw_marks(doc)
        streamed = _streamed(raw, marks, doc) if stream and len(doc) >= STREAM_MIN_BYTES else None
        if streamed is not None:
            return streamed
        try:
            value = loads(doc, marks[0])
        except ValueError:
            value = None
        if isinstance(value, (dict, list)):
            return Normalised(raw=raw, body=pretty_json(value), format="json", value=value, marks=marks)
        records = _looks_like_jsonl(doc)
        if records is not None:
            return Normalised(raw=raw, body=doc, format="jsonl", value=records)
    body = _bare_cr_as_newline(raw)
    if looks_like_markdown(body):
        return Normalised(raw=raw, body=body, format="markdown")
    return Normalised(raw=raw, body=body, format="text")


_BARE_CR = re.compile(rb"\r(?!\n)")


def has_bare_cr(data: bytes) -> bool:
    """Whether ``data`` ends a line with a carriage return alone (a progress bar's redraws)."""
    return b"\r" in data and _BARE_CR.search(data) is not None


def _bare_cr_as_newline(raw: bytes) -> bytes:
    """The body of a text whose lines end in a bare ``\\r`` (a progress bar, old Mac text): each
    such ``\\r`` a line break, so head, slice, grep and SQL's ``line_no`` see its lines (as a
    terminal shows them); ``raw`` itself otherwise. The bytes as given stay in ``raw``."""
    return _BARE_CR.sub(b"\n", raw) if has_bare_cr(raw) else raw
