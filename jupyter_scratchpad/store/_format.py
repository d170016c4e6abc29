"""Normalise an output once, at write time: raw bytes, format, and the body the line tools see.

* ``json``: the raw text parses as a JSON object or array; the body is the value pretty-printed
  with a 2-space indent, so that line tools see one key per line.
* ``jsonl``: at least two non-empty lines, each a JSON object or array; the body is the text.
* ``markdown``: ATX headings or fenced code blocks; the body is the text.
* ``text``: anything else, including bytes that are not UTF-8 (decoded with U+FFFD replacements
  for the body; the raw bytes are kept exactly for ``read_handle``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["Normalised", "as_text", "normalise", "parse_json_bytes", "pretty_json"]

_MD_HEADING = re.compile(rb"^#{1,6}[ \t]+\S", re.M)
_MD_FENCE = re.compile(rb"^(```|~~~)", re.M)
_MD_OTHER = re.compile(rb"^([-*+] \S|\d+\. \S|> |\|.*\|\s*$)|\[[^\]\n]+\]\([^)\n]+\)", re.M)


@dataclass(frozen=True)
class Normalised:
    """What a store writes for one output."""

    raw: bytes  # the original bytes, exactly
    body: bytes  # UTF-8 text for line tools (may be ``raw`` itself)
    format: str  # json | jsonl | markdown | text
    value: Any = None  # the parsed JSON value, for json (and jsonl: list of records)
    utf8_errors: bool = False  # raw was not valid UTF-8


def _jsonable_default(obj: Any) -> Any:
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", errors="replace")
    return str(obj)


def _sanitize_floats(value: Any) -> Any:
    """NaN/Infinity are not JSON; represent them as strings like Python's json would read."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _sanitize_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_sanitize_floats(v) for v in value]
    return value


def dumps_compact(value: Any) -> bytes:
    """The JSON text of a Python value as it would enter a model's context."""
    try:
        return json.dumps(value, ensure_ascii=False, default=_jsonable_default, allow_nan=False).encode(
            "utf-8", "surrogatepass"
        )
    except ValueError:
        return json.dumps(_sanitize_floats(value), ensure_ascii=False, default=_jsonable_default).encode(
            "utf-8", "surrogatepass"
        )


def pretty_json(value: Any) -> bytes:
    """2-space indented JSON (orjson when it can, the stdlib otherwise), newline-terminated."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    except (TypeError, orjson.JSONEncodeError):
        text = json.dumps(_sanitize_floats(value), indent=2, ensure_ascii=False, default=_jsonable_default)
        return text.encode("utf-8", "surrogatepass") + b"\n"


def parse_json_bytes(data: bytes) -> Any:
    """Parse JSON bytes; raises ``ValueError`` (orjson's JSONDecodeError is one) on failure."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson refuses big integers and some valid-but-unusual inputs the stdlib accepts;
        # it also refuses nesting deeper than 1024, which the stdlib turns into RecursionError.
        try:
            return json.loads(data)
        except RecursionError as exc:
            raise ValueError("JSON nested too deeply") from exc


def as_text(result: Any) -> str:
    """The text of a tool result as a model would see it (for counting tokens)."""
    if isinstance(result, str):
        return result
    if isinstance(result, (bytes, bytearray, memoryview)):
        return bytes(result).decode("utf-8", errors="replace")
    return dumps_compact(result).decode("utf-8", errors="replace")


def to_raw(result: Any) -> bytes:
    """The exact bytes to keep for ``result``."""
    if isinstance(result, str):
        return result.encode("utf-8", "surrogatepass")
    if isinstance(result, (bytes, bytearray, memoryview)):
        return bytes(result)
    return dumps_compact(result)


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
            records.append(orjson.loads(stripped))
        except orjson.JSONDecodeError:
            return None
    return records


def _looks_like_markdown(text: bytes) -> bool:
    head = text[: 1 << 20]
    headings = len(_MD_HEADING.findall(head))
    if headings >= 2 or (headings >= 1 and _MD_OTHER.search(head)):
        return True
    return len(_MD_FENCE.findall(head)) >= 2 and headings >= 1


def normalise(result: Any, text: str | None = None) -> Normalised:
    """Detect the format of ``result`` and build the body the line tools read.

    ``text`` is ``as_text(result)`` when the caller already has it (it is the raw bytes of a dict
    or list), so that big values are serialised once.
    """
    if text is not None and isinstance(result, (dict, list)):
        raw = text.encode("utf-8", "surrogatepass")
    else:
        raw = to_raw(result)
    if isinstance(result, (dict, list)):
        return Normalised(raw=raw, body=pretty_json(result), format="json", value=result)
    try:
        raw.decode("utf-8")
        utf8_errors = False
    except UnicodeDecodeError:
        utf8_errors = True
    if utf8_errors:
        body = raw.decode("utf-8", errors="replace").encode("utf-8")
        return Normalised(raw=raw, body=body, format="text", utf8_errors=True)
    stripped = raw.lstrip()[:1]
    if stripped in (b"{", b"["):
        try:
            value = parse_json_bytes(raw)
        except ValueError:
            value = None
        if isinstance(value, (dict, list)):
            return Normalised(raw=raw, body=pretty_json(value), format="json", value=value)
        records = _looks_like_jsonl(raw)
        if records is not None:
            return Normalised(raw=raw, body=raw, format="jsonl", value=records)
    if _looks_like_markdown(raw):
        return Normalised(raw=raw, body=raw, format="markdown")
    return Normalised(raw=raw, body=raw, format="text")
