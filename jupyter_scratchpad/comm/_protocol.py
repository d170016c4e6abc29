"""The JupyterLab ↔ kernel protocol: versions, message types, request checks and reply shapes.

Every message is one JSON object. A request from the front end::

    {"protocol": "1.0", "id": "r7", "type": "extend", "handle": "pods_0c3f9a1b2c4d", "ttl_s": 60}

and the kernel's reply to it, either a result or an error::

    {"protocol": "1.0", "id": "r7", "type": "extend", "ok": true, "result": {...}}
    {"protocol": "1.0", "id": "r7", "type": "extend", "ok": false,
     "error": {"code": "not_found", "message": "..."}}

The protocol version is not the package version: it changes only when a message changes shape.
A minor bump adds optional fields; a major bump breaks, and a peer of another major is refused.
The JSON Schemas in ``schemas/`` pin every message; the Python and TypeScript tests check both
sides against them.
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from .._bounded import short_repr

__all__ = [
    "COMM_TARGET",
    "MIN_EXTEND_TTL_S",
    "ERROR_CODES",
    "PROTOCOL_VERSION",
    "REQUEST_TYPES",
    "ProtocolError",
    "check_request",
    "error_reply",
    "load_schema",
    "ok_reply",
    "schema_names",
    "schemas_dir",
    "tokens_event",
]

COMM_TARGET = "jupyter_scratchpad"
PROTOCOL_VERSION = "1.1"  # 1.1 added explore and explorer, and the tokens event
REQUEST_TYPES = ("hello", "list", "budget", "stub", "delete", "extend", "explore", "explorer")
ERROR_CODES = (
    "invalid_request",  # not an object, bad id, bad or missing field
    "unsupported_protocol",  # another major version
    "unknown_type",  # a type this kernel does not know
    "not_found",  # no live entry with that handle or key
    "not_loaded",  # the extension was unloaded from the kernel
    "internal_error",  # a bug or a store failure; the message says which
)
MAX_ID_CHARS = 64
MAX_TTL_S = 10 * 365 * 86400
# An extend shorter than this is refused: it would expire the entry the user meant to keep.
MIN_EXTEND_TTL_S = 1.0
# \Z, not $: "$" also matches before a trailing newline, and "r7\n" is not an id.
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}\Z")
_HANDLE = re.compile(r"[a-z0-9_]{1,64}\Z")
_MODEL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


class ProtocolError(Exception):
    """A request the kernel cannot act on; becomes an error reply with ``code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def schemas_dir() -> Path:
    """Where the JSON Schemas of the protocol live (shipped inside the package)."""
    return Path(__file__).with_name("schemas")


def schema_names() -> list[str]:
    """The message types that have a schema (file stems): ``list_request``, ``list_reply``, …"""
    return sorted(p.stem for p in schemas_dir().glob("*.json"))


@cache
def _schema_text(name: str) -> str:
    path = schemas_dir() / f"{name}.json"
    if not path.is_file():
        raise KeyError(f"no protocol schema {name!r}; known: {', '.join(schema_names())}")
    return path.read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one message type, e.g. ``load_schema("list_reply")`` (a fresh copy)."""
    schema: dict[str, Any] = json.loads(_schema_text(name))
    return schema


def _major(version: object) -> str | None:
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+\Z", version):
        return None
    return version.split(".", 1)[0]


def check_request(message: object) -> dict[str, Any]:
    """Validate a request's envelope and arguments; returns it, or raises ``ProtocolError``.

    The checks are those of the ``*_request`` schemas, written out so that the kernel needs no
    JSON Schema library at run time.
    """
    if not isinstance(message, dict):
        raise ProtocolError("invalid_request", f"a request is a JSON object, not {type(message).__name__}")
    if _major(message.get("protocol")) is None:
        raise ProtocolError("invalid_request", "'protocol' must be a version string like \"1.0\"")
    if _major(message["protocol"]) != _major(PROTOCOL_VERSION):
        raise ProtocolError(*_other_protocol(message["protocol"]))
    request_id = message.get("id")
    if not isinstance(request_id, str) or not _ID.match(request_id):
        raise ProtocolError("invalid_request", f"'id' must be 1-{MAX_ID_CHARS} characters of [A-Za-z0-9_.:-]")
    kind = message.get("type")
    if kind not in REQUEST_TYPES:
        raise ProtocolError(
            "unknown_type", f"unknown request type {short_repr(kind, 64)}; known: {', '.join(REQUEST_TYPES)}"
        )
    _check_arguments(kind, message)
    return message


def _check_arguments(kind: str, message: dict[str, Any]) -> None:
    allowed = {"protocol", "id", "type"} | set(_ARGUMENTS[kind])
    extra = sorted(set(message) - allowed)
    if extra:  # (named, a few and short: a 5 MB key, or 200,000 of them, came back whole)
        more = f" and {len(extra) - 5:,} more" if len(extra) > 5 else ""
        named = ", ".join(short_repr(k, 40) for k in extra[:5])
        raise ProtocolError("invalid_request", f"{kind} does not take {named}{more}")
    if kind in ("delete", "extend"):
        if ("handle" in message) == ("key" in message):
            raise ProtocolError("invalid_request", f"{kind} takes exactly one of 'handle' or 'key'")
    elif kind == "stub" and "handle" not in message:
        raise ProtocolError("invalid_request", "stub needs a 'handle'")
    elif kind == "explorer" and not (isinstance(message.get("model_id"), str) and _MODEL_ID.match(message["model_id"])):
        raise ProtocolError("invalid_request", "explorer needs a 'model_id' (1-64 characters of [A-Za-z0-9_-])")
    if "handle" in message and (not isinstance(message["handle"], str) or not _HANDLE.match(message["handle"])):
        raise ProtocolError("invalid_request", "'handle' must be 1-64 characters of [a-z0-9_]")
    if "key" in message and (not isinstance(message["key"], str) or not 1 <= len(message["key"]) <= 256):
        raise ProtocolError("invalid_request", "'key' must be a string of 1-256 characters")
    if "ttl_s" in message:
        ttl = message["ttl_s"]
        if (
            isinstance(ttl, bool)
            or not isinstance(ttl, (int, float))
            or (isinstance(ttl, float) and not math.isfinite(ttl))  # (an int of 401 digits overflowed it)
            or not MIN_EXTEND_TTL_S <= ttl <= MAX_TTL_S
        ):
            raise ProtocolError(
                "invalid_request",
                f"'ttl_s' must be a number of seconds in [{MIN_EXTEND_TTL_S:g}, {MAX_TTL_S}]",
            )


_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "hello": (),
    "list": (),
    "budget": (),
    "stub": ("handle",),
    "delete": ("handle", "key"),
    "extend": ("handle", "key", "ttl_s"),
    "explore": ("handle",),
    "explorer": ("model_id",),
}


def ok_reply(request: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The reply carrying ``result`` for a valid request."""
    return {
        "protocol": PROTOCOL_VERSION,
        "id": request["id"],
        "type": request["type"],
        "ok": True,
        "result": result,
    }


MAX_MESSAGE_CHARS = 2000  # of an error reply's message (a page shows it; it never carries data)


def error_reply(request: object, code: str, message: str) -> dict[str, Any]:
    """An error reply; ``id`` and ``type`` are echoed when the request had usable ones."""
    assert code in ERROR_CODES, code
    request_id = request.get("id") if isinstance(request, dict) else None
    kind = request.get("type") if isinstance(request, dict) else None
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return {
        "protocol": PROTOCOL_VERSION,
        "id": valid_id(request_id),
        "type": kind if isinstance(kind, str) and len(kind) <= 64 else None,
        "ok": False,
        "error": {"code": code, "message": message},
    }


def valid_id(request_id: object) -> str | None:
    """A request's ``id`` when it is one ([A-Za-z0-9_.:-], 1-64 characters), else None: never
    echoed as sent (an opening message's id with a newline and HTML came back as it was)."""
    return request_id if isinstance(request_id, str) and _ID.match(request_id) else None


def open_error(data: object) -> tuple[str, str] | None:
    """What is wrong with a page's opening message (``(code, message)``), or None: a page that
    names another protocol major is told so, as a request would be (9.0 was greeted ``ok``)."""
    if not isinstance(data, dict) or "protocol" not in data:
        return None  # (an opening message without a version: the hello says ours)
    if _major(data.get("protocol")) != _major(PROTOCOL_VERSION):
        return _other_protocol(data.get("protocol"))
    return None


def _other_protocol(version: object) -> tuple[str, str]:
    """The error of a page that speaks another protocol major (a request or an opening message)."""
    return (
        "unsupported_protocol",
        f"this kernel speaks protocol {PROTOCOL_VERSION}, not {short_repr(version, 40)}; "
        "install the same jupyter-scratchpad version in the kernel and in JupyterLab",
    )


def tokens_event(handle: str, tokens: int) -> dict[str, Any]:
    """The unsolicited message telling a page that ``handle``'s exact token count has landed."""
    return {"protocol": PROTOCOL_VERSION, "type": "event", "event": "tokens", "handle": handle, "tokens": int(tokens)}
