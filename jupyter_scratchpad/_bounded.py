"""Text that reaches a model is bounded by construction: head and tail kept, the cut said out loud.

Every error a tool returns goes through ``bound_error`` (at most ``ERROR_MAX_BYTES`` of JSON), so a
model-caused mistake can never carry a flood back into the context (``SELECT error(string_agg(...))``,
a wrong path on an object with megabytes of keys, ...).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "ERROR_MAX_BYTES",
    "bound_error",
    "carried_whole",
    "clip_middle",
    "is_utf8_text",
    "positive_seconds",
    "redact_paths",
    "sendable",
    "short_repr",
]

ERROR_MAX_BYTES = 2048
_LIST_ITEMS = 20  # items kept of a list field of an error (available_keys, close_matches, ...)
_FIELD_CHARS = 300  # characters kept of a string field other than the message


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def is_utf8_text(text: str) -> bool:
    """Whether UTF-8 can encode ``text``: False when it holds a lone surrogate (``"\\ud800"`` in a
    JSON document or a call's arguments decodes to one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sendable(text: str) -> str:
    """``text`` as any transport can send it: a lone surrogate (a JSON document may hold
    ``"\\ud800"``; UTF-8 cannot) written as its escape, ``\\ud800``, as the document wrote it;
    ``text`` itself (the same object) when there is none."""
    if is_utf8_text(text):
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def sendable_value(value: Any) -> Any:
    """``value`` (JSON-like) with every string ``sendable``; containers rebuilt, at any depth."""
    if isinstance(value, str):
        return sendable(value)
    if not isinstance(value, (dict, list, tuple)):
        return value
    try:
        if isinstance(value, dict):
            return {sendable(k) if isinstance(k, str) else k: sendable_value(v) for k, v in value.items()}
        return [sendable_value(v) for v in value]
    except RecursionError:  # (deeper than Python recurses: sent as its text)
        return sendable(json.dumps(value, ensure_ascii=False, default=str)[:10_000])


def positive_seconds(value: object) -> float | None:
    """``value`` as seconds when it is a positive, finite number (not a bool), else None: the
    check of every interval and timeout a caller passes (a negative or NaN sweep interval made
    the sweeper busy-loop); each caller words its own refusal."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        return None
    return float(value)


def short_repr(value: Any, chars: int = 60) -> str:
    """A repr of at most ``chars`` characters, safe on any value (a list 100,000 deep, a huge one)."""
    import reprlib

    shown = reprlib.Repr()
    shown.maxlevel, shown.maxstring, shown.maxother, shown.maxlist, shown.maxdict = 3, chars, chars, 6, 4
    try:
        said = shown.repr(value)
    except Exception:  # (a repr of a user's object that raises)
        said = f"<{type(value).__name__}>"
    return sendable(said[:chars])


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def clip_middle(text: str, max_bytes: int, head_share: float = 0.75, unit: str = "bytes") -> str:
    """``text`` within ``max_bytes`` of UTF-8: a head and a tail, and a marker of what was cut.

    >>> clip_middle("a" * 50, 40)
    'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
    """
    data = _utf8(text)
    if len(data) <= max_bytes:
        return text
    marker_room = 48
    room = max(0, max_bytes - marker_room)
    head = data[: int(room * head_share)].decode("utf-8", errors="ignore")
    tail_bytes = room - len(_utf8(head))
    tail = data[len(data) - tail_bytes :].decode("utf-8", errors="ignore") if tail_bytes > 0 else ""
    cut = len(data) - len(_utf8(head)) - len(_utf8(tail))
    return f"{head}[… {cut:,} of {len(data):,} {unit} cut …]{tail}"


def _bound_value(name: str, value: Any) -> tuple[Any, dict[str, Any]]:
    """A field of an error made small; returns the value and any ``<name>_total`` it needs."""
    extra: dict[str, Any] = {}
    if isinstance(value, str):
        return clip_middle(value, _FIELD_CHARS), extra
    if isinstance(value, (list, tuple)):
        items = list(value)
        if len(items) > _LIST_ITEMS:
            extra[f"{name}_total"] = len(items)
            items = items[:_LIST_ITEMS]
        return [clip_middle(v, 120) if isinstance(v, str) else v for v in items], extra
    if isinstance(value, dict):
        return {k: _bound_value(str(k), v)[0] for k, v in list(value.items())[:_LIST_ITEMS]}, extra
    return value, extra


def carried_whole(suggestion: Any, max_bytes: int = ERROR_MAX_BYTES) -> bool:
    """Whether an error of ``max_bytes`` carries ``suggestion`` whole: ``bound_error`` leaves out
    one over a third of it (a call naming a 500,000-character key)."""
    said = json.dumps(suggestion, ensure_ascii=False, default=str)
    return len(_utf8(said)) <= max_bytes // 3


def bound_error(err: dict[str, Any], max_bytes: int = ERROR_MAX_BYTES) -> dict[str, Any]:
    """An error dict whose JSON is at most ``max_bytes``: message clipped, lists cut with a total.

    The keys ``error``, ``message`` and ``suggestions`` are kept; other fields are shortened, then
    dropped (largest first) if the whole still does not fit.
    """
    text = json.dumps(err, ensure_ascii=False, default=str)
    if len(_utf8(text)) <= max_bytes:
        return err
    out: dict[str, Any] = {"error": str(err.get("error", "error"))[:80]}
    out["message"] = clip_middle(str(err.get("message", "")), max_bytes // 3)
    for name, value in err.items():
        if name in ("error", "message", "suggestions"):
            continue
        small, extra = _bound_value(name, value)
        out[name] = small
        out.update(extra)
    suggestions = [s for s in err.get("suggestions") or [] if isinstance(s, dict)]
    out["suggestions"] = suggestions
    dropped: list[str] = []
    left_out: list[dict[str, Any]] = []  # suggestions too large to send whole (a long path or key in them)

    def size(value: Any) -> int:
        return len(_utf8(json.dumps(value, ensure_ascii=False, default=str)))

    for _ in range(200):  # every step shrinks something; the cap only guards against surprises
        if size(out) <= max_bytes:
            break
        sugg = out["suggestions"]
        if sugg and (largest := max(sugg, key=size)) and not carried_whole(largest, max_bytes):
            left_out.append(largest)  # one that alone takes a third: the others may still fit
            out["suggestions"] = [x for x in sugg if x is not largest]
            out["suggestions_left_out"] = _outline(left_out)
            continue
        if len(sugg) > 1:
            out["suggestions"] = sugg[:-1]
            continue
        optional = [k for k in out if k not in ("error", "message", "suggestions", "fields_dropped")]
        optional = [k for k in optional if k != "suggestions_left_out"] or optional
        if optional:
            largest_field = max(optional, key=lambda k: size(out[k]))
            dropped.append(largest_field)
            del out[largest_field]
            out["fields_dropped"] = dropped[:_LIST_ITEMS]
            continue
        if out["suggestions"]:
            out["suggestions"] = []
            continue
        out["message"] = clip_middle(out["message"], max(64, len(_utf8(out["message"])) // 2))
    return out


def _outline(suggestions: list[dict[str, Any]]) -> str:
    """Suggestions too large to send, in a line: each tool with its short arguments (a long path
    or key in them is named by its length), so the model can still make the call."""
    parts = []
    for sugg in suggestions[:5]:
        given = sugg.get("arguments")
        args: dict[str, Any] = given if isinstance(given, dict) else {}
        shown = []
        for key, value in list(args.items())[:8]:
            said = json.dumps(value, ensure_ascii=False, default=str)
            shown.append(f"{key}={said}" if len(said) <= 60 else f"{key}=<{len(said):,} characters>")
        parts.append(f"{str(sugg.get('tool', '?'))[:40]}({', '.join(shown)})")
    more = f" and {len(suggestions) - 5} more" if len(suggestions) > 5 else ""
    return "; ".join(parts) + more


def redact_paths(text: str, paths: Iterable[str | os.PathLike[str]], placeholder: str = "<store>") -> str:
    """``text`` with host paths (the store directory, the home directory) replaced.

    What a model reads never names the machine's directories: it names handles.
    """
    for path in sorted({os.fspath(p) for p in paths if os.fspath(p) not in ("", "/")}, key=len, reverse=True):
        text = text.replace(path, placeholder)
    home = os.path.expanduser("~")
    if home not in ("", "/", "~"):
        text = text.replace(home, "~")
    return text
