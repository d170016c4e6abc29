"""The trace format: JSON Lines, one tool call a line, read as a stream of ``TraceCall``.

A line::

    {"server": "k8s", "tool": "list_pods", "result_class": "query", "is_error": false,
     "metadata": null, "result": {...}}

``tool`` is required; exactly one of ``result`` (any JSON value) or ``result_path`` (a file,
relative to the trace file's folder) is required; ``server`` (default null), ``result_class``
(default ``"query"``; null means no class check), ``is_error`` (default false) and
``metadata`` (an object, default null) are optional; ``call_id`` (or ``id``) is kept to
identify the row; other keys are ignored.

A malformed line never stops a replay: it is recorded with its line number in
``Trace.malformed`` and skipped. A ``result_path`` that cannot be read keeps its row, with the
reason in ``TraceCall.problem``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import InvalidArgumentError
from ..store._format import dumps_compact
from ..store._jsontext import loads as loads_exact

__all__ = ["MalformedLine", "Trace", "TraceCall", "TraceFormatError", "parse_trace_record", "write_trace"]


class TraceFormatError(InvalidArgumentError):
    """A trace or transcript cannot be read (carries ``path`` and, for a line, ``line``)."""


@dataclass(frozen=True)
class MalformedLine:
    """A line of a trace that was skipped, and why."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class TraceCall:
    """One tool call to replay: what the policy sees, and where it came from.

    ``result`` is None with ``problem`` set when the result could not be had (a missing
    ``result_path``). ``line`` is the trace line (1-based), ``source`` a readable location.
    """

    tool: str
    result: Any = None
    server: str | None = None
    result_class: str | None = "query"
    is_error: bool = False
    metadata: Mapping[str, Any] | None = None
    call_id: str | None = None
    line: int | None = None
    source: str | None = None
    problem: str | None = None

    @property
    def available(self) -> bool:
        """Whether the result could be read (a missing ``result_path`` makes it unavailable)."""
        return self.problem is None or self.result is not None


BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark (PowerShell's Out-File, Excel): not part of the text


def parse_line(raw: bytes) -> Any:
    """One JSON line; raises ``orjson.JSONDecodeError``. A byte order mark before it is skipped;
    what orjson refuses but is JSON (a lone surrogate escape such as ``"\\ud83d"``, JavaScript's
    JSON of a cut emoji, as the pad accepts it) is read by the package's exact reader."""
    if raw.startswith(BOM):
        raw = raw[len(BOM) :]
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            return loads_exact(raw)
        except (ValueError, RecursionError):
            raise exc from None


def json_error(exc: ValueError) -> str:
    """A line's JSON error, without the parser's "line 1" (the trace line is reported instead)."""
    msg, col = getattr(exc, "msg", None), getattr(exc, "colno", None)
    return f"not valid JSON: {msg} at column {col}" if msg and col else f"not valid JSON: {exc}"


def _optional_str(record: Mapping[str, Any], key: str, default: str | None) -> str | None:
    if key not in record:
        return default
    value = record[key]
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key!r} must be a string or null, not {type(value).__name__}")
    return value


def _read_result_file(path: str, base_dir: Path | None) -> tuple[Any, str | None]:
    """``(result, problem)``: text when the file is UTF-8, else its bytes."""
    resolved = Path(path) if os.path.isabs(path) or base_dir is None else base_dir / path
    try:
        data = resolved.read_bytes()
    except FileNotFoundError:
        return None, f"result_path {path!r} not found ({resolved})"
    except OSError as exc:
        return None, f"result_path {path!r} cannot be read ({resolved}): {exc.strerror or exc}"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data, None


def parse_trace_record(
    record: Any, *, line: int | None = None, base_dir: Path | None = None, source: str | None = None
) -> TraceCall:
    """Check one trace record (a parsed line) and build its ``TraceCall``; raises ``ValueError``."""
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    tool = record.get("tool")
    if not isinstance(tool, str) or not tool:
        raise ValueError("'tool' is required and must be a non-empty string")
    has_result, has_path = "result" in record, "result_path" in record
    if has_result == has_path:
        raise ValueError("exactly one of 'result' or 'result_path' is required")
    is_error = record.get("is_error", False)
    if not isinstance(is_error, bool):
        raise ValueError(f"'is_error' must be true or false, not {is_error!r}")
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"'metadata' must be an object or null, not {type(metadata).__name__}")
    call_id = record.get("call_id", record.get("id"))
    problem = None
    if has_path:
        path = record["result_path"]
        if not isinstance(path, str) or not path:
            raise ValueError("'result_path' must be a non-empty string")
        result, problem = _read_result_file(path, base_dir)
    else:
        result = record["result"]
    return TraceCall(
        tool=tool,
        result=result,
        server=_optional_str(record, "server", None),
        result_class=_optional_str(record, "result_class", "query"),
        is_error=is_error,
        metadata=metadata,
        call_id=None if call_id is None else str(call_id),
        line=line,
        source=source,
        problem=problem,
    )


@dataclass
class Trace:
    """Tool calls to replay, streamed from a JSONL file or held in memory.

    Iterate it for ``TraceCall`` s. ``malformed`` lists the lines skipped so far (complete once
    iteration has finished); ``consumed``/``total`` measure progress in ``unit`` (bytes of a
    file, else calls).
    """

    name: str
    format: str = "trace"
    path: Path | None = None
    calls: list[TraceCall] | None = None
    malformed: list[MalformedLine] = field(default_factory=list)
    consumed: int = 0
    # Problems found before iteration (records in memory, a transcript's JSONL lines).
    preset_malformed: list[MalformedLine] = field(default_factory=list)
    # What the reader noticed about the whole file (a forced format that found nothing), warned with the rest.
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_calls(cls, calls: Iterable[TraceCall], name: str = "<calls>", fmt: str = "trace") -> Trace:
        return cls(name=name, format=fmt, calls=list(calls))

    @property
    def unit(self) -> str:
        return "B" if self.calls is None else "call"

    @property
    def total(self) -> int:
        if self.calls is not None:
            return len(self.calls)
        assert self.path is not None
        return self.path.stat().st_size

    def __iter__(self) -> Iterator[TraceCall]:
        self.malformed = list(self.preset_malformed)
        self.consumed = 0
        if self.calls is not None:
            for call in self.calls:
                self.consumed += 1
                yield call
            return
        assert self.path is not None
        yield from self._iter_file(self.path)

    def _iter_file(self, path: Path) -> Iterator[TraceCall]:
        base_dir = path.absolute().parent
        with open(path, "rb") as fh:
            for number, raw in enumerate(fh, start=1):
                self.consumed += len(raw)
                if not raw.strip():
                    continue  # blank lines separate nothing; they are not calls
                try:
                    record = parse_line(raw)
                except orjson.JSONDecodeError as exc:
                    self.malformed.append(MalformedLine(number, json_error(exc)))
                    continue
                try:
                    yield parse_trace_record(record, line=number, base_dir=base_dir, source=f"{path.name}:{number}")
                except ValueError as exc:
                    self.malformed.append(MalformedLine(number, str(exc)))


def _record(call: TraceCall | Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(call, TraceCall):
        call = parse_trace_record(dict(call))
    record: dict[str, Any] = {"server": call.server, "tool": call.tool, "result_class": call.result_class}
    record["is_error"] = call.is_error
    record["metadata"] = dict(call.metadata) if call.metadata else None
    if call.call_id is not None:
        record["call_id"] = call.call_id
    result = call.result
    if isinstance(result, (bytes, bytearray)):
        result = bytes(result).decode("utf-8", errors="replace")
    record["result"] = result
    return record


def write_trace(calls: Iterable[TraceCall | Mapping[str, Any]], path: str | os.PathLike[str]) -> Path:
    """Write ``calls`` (from a transcript reader, or trace records) as a JSONL trace; returns the path.

    >>> write_trace(read_trace("chat.json"), "chat.jsonl")  # doctest: +SKIP

    Results are written inline; bytes that are not UTF-8 are written with U+FFFD replacements.
    A call whose result could not be read is refused (it has nothing to write).
    """
    target = Path(path)
    partial = target.with_name(target.name + ".partial")  # no half-written trace under the real name
    try:
        with open(partial, "wb") as fh:
            for call in calls:
                if isinstance(call, TraceCall) and not call.available:
                    raise TraceFormatError(f"cannot write {call.source or call.tool}: {call.problem}")
                fh.write(dumps_compact(_record(call)).encode("utf-8", "surrogatepass") + b"\n")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target
