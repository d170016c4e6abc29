"""What the store hands out and what it accepts: entries, scopes, and argument checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .._bounded import is_utf8_text
from ..errors import InvalidArgumentError

__all__ = ["MAX_KEY_CHARS", "Entry", "Scope", "validate_handle", "validate_id", "validate_key", "validate_ttl"]

HANDLE_RE = re.compile(r"[a-z0-9_]{1,64}")
MAX_ID_CHARS = 256
MAX_KEY_CHARS = 1024
# Bounds in UTF-8 bytes too, the same on every backend: an entry's run id, agent id and key are
# one PostgreSQL index row, which holds at most 2,704 bytes. A key of 1,024 four-byte characters
# (4 KB) was kept by the embedded store and refused by the shared one (as an outage). At these
# bounds a row is under 2.1 KB; ASCII ids and keys keep their limits in characters.
MAX_ID_BYTES = 512
MAX_KEY_BYTES = 1024


def validate_handle(handle: object) -> str:
    """Return ``handle`` if it is a safe handle (``[a-z0-9_]{1,64}``), else raise."""
    if not isinstance(handle, str) or not HANDLE_RE.fullmatch(handle):
        shown = handle if not isinstance(handle, str) or len(handle) <= 80 else handle[:77] + "..."
        raise InvalidArgumentError(
            f"invalid handle {shown!r}: a handle is 1-64 characters of a-z, 0-9 and _ "
            "(as printed in a spill stub); list live handles with scratch_list",
            handle=shown,
        )
    return handle


def _storable(text: str) -> bool:
    """Text both catalogs keep as it is: no NUL (PostgreSQL's text refuses it) and no unpaired
    surrogate (UTF-8 cannot encode it; DuckDB and psycopg each failed their own way)."""
    return "\x00" not in text and is_utf8_text(text)


def _shown(value: object) -> str:
    return ascii(value)[:80] if not isinstance(value, str) or len(value) > 80 or not _storable(value) else value


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def validate_id(value: object, what: str) -> str:
    if (
        not isinstance(value, str)
        or not value
        or len(value) > MAX_ID_CHARS
        or not _storable(value)
        or _utf8_len(value) > MAX_ID_BYTES
    ):
        raise InvalidArgumentError(
            f"{what} must be a non-empty string of at most {MAX_ID_CHARS} characters and {MAX_ID_BYTES} bytes "
            "of UTF-8, without NUL or an unpaired surrogate",
            **{what: _shown(value)},
        )
    return value


def validate_key(key: object) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS or not _storable(key):
        raise InvalidArgumentError(
            f"a note key must be a non-empty string of at most {MAX_KEY_CHARS} characters, without NUL or an "
            "unpaired surrogate (the same on every backend)",
            key=_shown(key),
        )
    if _utf8_len(key) > MAX_KEY_BYTES:
        raise InvalidArgumentError(
            f"a note key must be at most {MAX_KEY_BYTES} bytes of UTF-8 ({MAX_KEY_BYTES} ASCII characters, fewer "
            f"of other scripts: this one is {_utf8_len(key)} bytes); use a shorter key (the same on every backend)",
            key=_shown(key),
        )
    return key


def validate_ttl(ttl_s: object) -> float:
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)) or not ttl_s > 0:
        raise InvalidArgumentError(f"ttl_s must be a positive number of seconds, not {ttl_s!r}")
    if ttl_s > 10 * 365 * 86400:
        raise InvalidArgumentError("ttl_s must be at most ten years")
    return float(ttl_s)


@dataclass(frozen=True)
class Scope:
    run_id: str
    agent_id: str


@dataclass(frozen=True)
class Entry:
    """One live row of ``scratch_entries`` (metadata; bodies are read through ``BodyReader``)."""

    run_id: str
    agent_id: str
    kind: str
    key: str
    body_id: str | None
    value_json: str | None
    format: str | None
    size_bytes: int
    body_bytes: int | None
    line_count: int | None
    tokens: int | None
    preview: str | None
    source_tool: str | None
    server: str | None
    content_hash: str | None
    meta: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    expires_at: float = 0.0

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Entry:
        values = list(row)
        meta = json.loads(values[15]) if values[15] else {}
        return cls(*values[:15], meta, float(values[16]), float(values[17]))  # type: ignore[call-arg]

    def as_row(self) -> list[Any]:
        """The values in catalog column order (the inverse of ``from_row``)."""
        return [
            self.run_id, self.agent_id, self.kind, self.key, self.body_id, self.value_json, self.format,
            self.size_bytes, self.body_bytes, self.line_count, self.tokens, self.preview, self.source_tool,
            self.server, self.content_hash, json.dumps(self.meta), self.created_at, self.expires_at,
        ]  # fmt: skip

    @property
    def handle(self) -> str | None:
        return self.key if self.kind == "handle" else None

    @property
    def value(self) -> Any:
        if self.value_json is None:
            return None
        from ._jsontext import loads_any_depth

        return loads_any_depth(self.value_json)

    @property
    def tokens_exact(self) -> bool:
        """False while a large output's exact count is being computed (``tokens`` is then the
        decision's bound, "at least"); True once it lands, and for every small output."""
        return bool(self.meta.get("tokens_exact", True))

    def as_dict(self) -> dict[str, Any]:
        """Metadata as plain data (what ``list_entries`` returns)."""
        return {
            "kind": self.kind,
            "handle": self.key if self.kind == "handle" else None,
            "key": self.key if self.kind == "note" else None,
            "run_id": self.run_id,
            "agent_id": self.agent_id,
            "source_tool": self.source_tool,
            "server": self.server,
            "format": self.format,
            "size": self.size_bytes,
            "lines": self.line_count,
            "tokens": self.tokens,
            "tokens_exact": self.tokens_exact if self.kind == "handle" else None,
            "preview": self.preview,
            "created_at": datetime.fromtimestamp(self.created_at, tz=timezone.utc),
            "expires_at": datetime.fromtimestamp(self.expires_at, tz=timezone.utc),
        }
