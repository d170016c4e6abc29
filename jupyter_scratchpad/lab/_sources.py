"""``read_trace``: a trace file, a conversation log, or calls in memory, as one ``Trace``."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from ..store._format import parse_json_bytes
from ._trace import BOM, MalformedLine, Trace, TraceCall, TraceFormatError, json_error, parse_line, parse_trace_record
from ._transcripts import TRANSCRIPT_FORMATS, detect_transcript_format

__all__ = ["FORMATS", "read_trace"]

FORMATS = ("auto", "trace", *TRANSCRIPT_FORMATS)
_SNIFF_LINES = 20  # non-blank lines looked at to tell a trace from a transcript


_TRACE_KEYS = frozenset({"tool", "result", "result_path"})
# (jsonrpc: an MCP session's messages, whose responses carry a "result" too)
_TRANSCRIPT_KEYS = frozenset({"role", "type", "messages", "input", "output", "content", "jsonrpc"})


def _is_trace_record(value: Any) -> bool:
    """A trace line (perhaps a malformed one), as opposed to a message or a whole conversation."""
    return isinstance(value, dict) and bool(_TRACE_KEYS & value.keys()) and not (_TRANSCRIPT_KEYS & value.keys())


def _sniff(path: Path) -> str:
    """``"trace"``, ``"jsonl"`` (a transcript written one message a line) or ``"json"``.

    The first lines that parse decide: a trace record means a trace, a message or item a JSONL
    transcript, a single line the whole document. Lines that parse but are neither (``[1]``)
    mean a trace with malformed lines, which replay reports line by line; when no line parses,
    the file is one (pretty-printed) JSON document.
    """
    parsed = 0
    with open(path, "rb") as fh:
        for seen, raw in enumerate((r for r in fh if r.strip()), start=1):
            if seen > _SNIFF_LINES:
                break
            try:
                value = parse_line(raw)
            except orjson.JSONDecodeError:
                continue  # a pretty-printed document, or a malformed line of a trace
            parsed += 1
            if _is_trace_record(value):
                return "trace"
            if seen == 1 and not any(r.strip() for r in fh):
                return "json"  # one line: a whole conversation
            if isinstance(value, dict) and _TRANSCRIPT_KEYS & value.keys():
                return "jsonl"
    return "trace" if parsed else "json"


def _read_jsonl_values(path: Path) -> tuple[list[Any], list[MalformedLine]]:
    values: list[Any] = []
    malformed: list[MalformedLine] = []
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if raw.strip():
                try:
                    values.append(parse_line(raw))
                except orjson.JSONDecodeError as exc:
                    malformed.append(MalformedLine(number, json_error(exc)))
    return values, malformed


def _transcript_trace(doc: Any, fmt: str, name: str, malformed: list[MalformedLine] | None = None) -> Trace:
    forced = fmt != "auto"
    if not forced:
        fmt = detect_transcript_format(doc)
    calls = TRANSCRIPT_FORMATS[fmt](doc, name=name)
    trace = Trace.from_calls(calls, name=name, fmt=fmt)
    trace.preset_malformed = list(malformed or [])
    if forced and not calls:  # a format given by hand that finds nothing: say what the content looks like
        try:
            found = detect_transcript_format(doc)
        except TraceFormatError:
            found = None
        looks = f"; the content looks like {found!r} (format={found!r}, or 'auto')" if found not in (None, fmt) else ""
        trace.notes.append(f"format={fmt!r} found no tool results{looks}")
    return trace


def _is_blank(path: Path) -> bool:
    """Whether the file holds nothing but white space (and perhaps a byte order mark)."""
    with open(path, "rb") as fh:
        chunk = fh.read(1 << 16)
        chunk = chunk[len(BOM) :] if chunk.startswith(BOM) else chunk
        while chunk:
            if chunk.strip():
                return False
            chunk = fh.read(1 << 16)
    return True


def _from_path(path: Path, fmt: str) -> Trace:
    if not path.is_file():
        raise TraceFormatError(f"trace file {str(path)!r} not found (or not a file)", path=str(path))
    if _is_blank(path):
        raise TraceFormatError(
            f"{path} is empty (no lines, or only blank ones): no tool calls to replay", path=str(path)
        )
    kind = "trace" if fmt == "trace" else _sniff(path)
    if kind == "trace":
        if fmt not in ("auto", "trace"):
            raise TraceFormatError(f"{path} is a JSONL trace, not a {fmt} transcript", path=str(path))
        return Trace(name=path.name, path=path)
    if kind == "jsonl":
        values, malformed = _read_jsonl_values(path)
        return _transcript_trace(values, fmt, path.name, malformed)
    try:
        doc = parse_json_bytes(path.read_bytes())
    except ValueError as exc:
        raise TraceFormatError(
            f"{path} is neither a JSONL trace (one JSON object a line) nor a JSON conversation log: {exc}",
            path=str(path),
        ) from exc
    return _transcript_trace(doc, fmt, path.name)


def _from_records(records: list[Any], base_dir: Path | None) -> Trace:
    calls: list[TraceCall] = []
    malformed: list[MalformedLine] = []
    for number, record in enumerate(records, start=1):
        if isinstance(record, TraceCall):
            calls.append(record)
            continue
        try:
            calls.append(parse_trace_record(record, line=number, base_dir=base_dir, source=f"record {number}"))
        except ValueError as exc:
            malformed.append(MalformedLine(number, str(exc)))
    trace = Trace.from_calls(calls, name="<records>")
    trace.preset_malformed = malformed
    return trace


def read_trace(source: Any, format: str = "auto", *, base_dir: str | os.PathLike[str] | None = None) -> Trace:
    """Open what ``replay`` replays: a JSONL trace, a conversation log, or calls in memory.

    >>> trace = read_trace("tests/lab/data/trace.jsonl")  # doctest: +SKIP
    >>> [call.tool for call in trace]  # doctest: +SKIP

    ``source`` is a path (a ``.jsonl`` trace, or a JSON conversation log of OpenAI Chat
    Completions, OpenAI Responses or Anthropic Messages, detected from its content unless
    ``format`` says which), a parsed conversation (dict or list), a list of trace records
    (dicts with ``tool`` and ``result`` / ``result_path``, read relative to ``base_dir``), a list
    of ``TraceCall`` s, or a ``Trace``. ``format`` is one of ``FORMATS``.
    """
    if format not in FORMATS:
        raise TraceFormatError(f"unknown trace format {format!r}; expected one of {', '.join(FORMATS)}")
    if isinstance(source, Trace):
        return source
    if isinstance(source, (str, os.PathLike)):
        return _from_path(Path(source), format)
    base = Path(base_dir) if base_dir is not None else None
    if isinstance(source, dict):
        if format == "trace":
            return _from_records([source], base)
        return _transcript_trace(source, format, "<transcript>")
    if isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray)):
        items = list(source)
        if format == "trace" or (format == "auto" and items and all(_is_record_like(i) for i in items)):
            return _from_records(items, base)
        if not items:
            return Trace.from_calls([], name="<records>")
        return _transcript_trace(items, format, "<transcript>")
    raise TraceFormatError(
        f"cannot replay a {type(source).__name__}: pass a path, a conversation (dict or list), "
        "trace records, TraceCall objects or a Trace"
    )


def _is_record_like(item: Any) -> bool:
    return isinstance(item, TraceCall) or (isinstance(item, dict) and "tool" in item)
