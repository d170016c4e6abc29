"""What every exploration tool shares: its context, its output, and its refusals."""

from __future__ import annotations

import difflib
import gc
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..store import BodyReader, Entry
from ..store._format import parse_json_bytes

if TYPE_CHECKING:
    from .._pad import Scratchpad

__all__ = ["Output", "ToolContext", "ToolError", "ToolTimeout", "TooLarge", "call_repr", "fmt_bytes"]

Suggestion = dict[str, Any]


class ToolError(Exception):
    """A mistake in a tool call, returned to the model as a structured error."""

    def __init__(self, code: str, message: str, suggestions: list[Suggestion] | None = None, **fields: Any):
        super().__init__(message)
        self.code = code
        self.message = message
        self.suggestions = suggestions or []
        self.fields = fields

    def as_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.fields, "suggestions": self.suggestions}


class TooLarge(Exception):
    """Raised by a tool that can tell, before rendering, that its result would not fit."""

    def __init__(self, estimated_tokens: int, detail: str = ""):
        super().__init__(detail)
        self.estimated_tokens = estimated_tokens
        self.detail = detail


class ToolTimeout(Exception):
    """Raised by ``ToolContext.check_time`` when a call has used up its time limit."""

    def __init__(self, limit_s: float, detail: str = ""):
        super().__init__(detail)
        self.limit_s = limit_s
        self.detail = detail


@dataclass
class Output:
    """A tool's successful result, before the dispatcher counts and charges it."""

    text: str
    data: Any
    footer: Callable[[int, int, int], str] | None = None  # (tokens, used_after, remaining_after)
    meta: dict[str, Any] = field(default_factory=dict)  # paging facts for programs (totals, cut-offs)


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size):,} bytes" if unit == "bytes" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover


def call_repr(tool: str, args: dict[str, Any], then: str = "") -> str:
    """``tool(a=1, b="x")``: how a suggestion reads in text (each value as JSON: a path with
    quotes in it reads back); ``then``: more, written as it is (``offset=<section start>``)."""
    import json

    parts = [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items()]
    inner = ", ".join([*parts, then] if then else parts)
    return f"{tool}({inner})"


def suggestion(tool: str, why: str, **args: Any) -> Suggestion:
    """A concrete, runnable call: ``{"tool", "arguments", "why", "call"}``."""
    return {"tool": tool, "arguments": args, "why": why, "call": call_repr(tool, args)}


def grep_errors(handle: Any, why: str) -> Suggestion:
    """The search a refusal offers when it knows nothing better: "error", any case (a log says
    ERROR as often as error), the first 20 matches."""
    return suggestion("grep", why, handle=handle, pattern="error", ignore_case=True, max_matches=20)


VALUE_CACHE_BYTES = 128 << 20
"""Parsed values kept, in bytes of the bodies they came from. Parsed JSON takes about three times
its pretty body in a process (30 spills of a 5 MB PodList, each kept: +27 MB of RSS per spill),
so this holds ~400 MB of a kernel's memory at most; an older handle's next JSON call parses its
body again (under 8 MB, the size below which a spill is parsed whole: ~0.1 s)."""


class _ValueCache:
    """Parsed JSON values by body id, bounded by the bytes of the bodies they came from."""

    def __init__(self, max_bytes: int = VALUE_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[int, Any]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: str, size: int, load: Callable[[], Any]) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[1]
        value = load()
        with self._lock:
            if size <= self.max_bytes:
                self._items[key] = (size, value)
                self._bytes += size
                while self._bytes > self.max_bytes and self._items:
                    _, (old, _) = self._items.popitem(last=False)
                    self._bytes -= old
        return value

    def holds(self, key: str) -> bool:
        """Whether the value parsed from body ``key`` is here (a read of it parses nothing)."""
        with self._lock:
            return key in self._items

    def put(self, key: str, size: int, value: Any) -> None:
        """Remember a value parsed elsewhere (the spill already parsed the body it wrote)."""
        self.get(key, size, lambda: value)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


VALUE_CACHE = _ValueCache()


def close_handles(word: str, handles: Iterable[str]) -> list[str]:
    """The live handles ``word`` may be a typo of. A handle is ``<source>_<id>``
    (``cell_5_9861a8aa5f48``): its id must be close, not just the shape every handle of a source
    shares (an expired ``cell_14_…`` was offered ``cell_5_…``, other data); a source written
    without its id (``k8s_pods``) matches the handles of that source."""
    handles = list(handles)
    found = [h for h in handles if h.startswith(word + "_")][:3]
    stem, _, ident = word.rpartition("_")
    for handle in difflib.get_close_matches(word, handles, n=6, cutoff=0.5):
        their_id = handle.rpartition("_")[2]
        ratio = difflib.SequenceMatcher(None, ident, their_id).ratio() if ident else 0.0
        same_id = bool(ident) and (ident == their_id or ratio >= 0.8)
        if handle not in found and (
            same_id or (not stem and difflib.SequenceMatcher(None, word, their_id).ratio() >= 0.8)
        ):
            found.append(handle)
    return found[:3]


def _ago(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def expired_error(ctx: ToolContext, gone: Entry, sugg: list[Suggestion], verb: str, **fields: Any) -> ToolError:
    """``expired_handle`` for ``gone``, a handle past its time to live: how long ago, and what to do."""
    ago = max(0.0, ctx.store.now() - float(gone.expires_at or 0))
    return ToolError(
        "expired_handle",
        f"{gone.key!r} expired {_ago(ago)} ago (unread for its time to live) and is gone; "
        f"spill the output again to {verb} it",
        sugg,
        handle=gone.key,
        **fields,
    )


@dataclass
class ToolContext:
    """One tool call: the pad it runs in and the limit its result must fit."""

    pad: Scratchpad
    tool: str
    limit_tokens: int  # min(per-call cap, remaining budget) at the start of the call
    notes: list[str] = field(default_factory=list)
    timeout_s: float = math.inf  # the pad's time limit for one call
    started: float = field(default_factory=time.monotonic)
    used: list[Entry] = field(default_factory=list)  # handles this call read (their TTL slides)
    charged: bool = True  # a model's call (False: a person's, read in the notebook or the shell)
    opened_at: float | None = None  # the store's time when the call started
    result_rows: int | None = None  # the rows a result holds (sql): a refusal's "rows fit" is of these
    result_columns: int | None = None  # ... and its columns (a wide one is offered DESCRIBE)

    @property
    def deadline(self) -> float:
        """``time.monotonic()`` value after which the call must stop (``check_time`` raises)."""
        return self.started + self.timeout_s

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    def check_time(self, detail: str = "") -> None:
        """Raise ``ToolTimeout`` once the call is past its time limit (call it inside long loops)."""
        if time.monotonic() > self.deadline:
            raise ToolTimeout(self.timeout_s, detail)

    @property
    def store(self) -> Any:
        return self.pad.store

    def entry(self, handle: object) -> Entry:
        """The caller's live entry ``handle``, or an ``unknown_handle`` error with close matches."""
        from ..store import validate_handle

        if handle is None or handle == "":
            raise ToolError(
                "invalid_argument",
                f"{self.tool} needs a 'handle' (the id printed in a spill stub)",
                [suggestion("scratch_list", "see the live handles")],
            )
        try:
            validate_handle(handle)
        except ValueError as exc:
            # (" h_0a1b…", "H_0A1B…": the handle meant, when that one is live, is offered)
            meant = handle.strip().lower() if isinstance(handle, str) else ""
            sugg = [suggestion("scratch_list", "see the live handles")]
            if meant != handle and meant and self.store.get_entry(self.pad.scope, "handle", meant) is not None:
                sugg.insert(0, suggestion(self.tool, "the handle without spaces or capitals", handle=meant))
            raise ToolError("invalid_handle", str(exc), sugg) from None
        assert isinstance(handle, str)
        entry: Entry | None = self.store.get_entry(self.pad.scope, "handle", handle)
        if entry is None:
            live = [e.key for e in self.store.entries(self.pad.scope, "handle")]
            close = close_handles(handle, live)
            sugg = [suggestion(self.tool, "did you mean this handle?", handle=c) for c in close]
            sugg.append(suggestion("scratch_list", "see every live handle"))
            gone = self.store.expired_entry(self.pad.scope, "handle", handle)
            if gone is not None:
                raise expired_error(self, gone, sugg, "read", close_matches=close)
            scope = self.pad.scope
            elsewhere = [r for r in self.store.runs_holding(scope.agent_id, handle) if r != scope.run_id][:3]
            if elsewhere:  # (a handle names its run's body: another run's is read in that run)
                runs = ", ".join(repr(r) for r in elsewhere)
                raise ToolError(
                    "unknown_handle",
                    f"no live handle {handle!r} in this run ({scope.run_id!r}); it is live in run {runs} of this "
                    "agent, which this session does not read: each run reads its own handles",
                    sugg,
                    handle=handle,
                    close_matches=close,
                    in_runs=elsewhere,
                )
            raise ToolError(
                "unknown_handle",
                f"no live handle {handle!r} in this run (expired, deleted, or never spilled here)",
                sugg,
                handle=handle,
                close_matches=close,
            )
        self.used.append(entry)
        return entry

    def settled(self, entry: Entry) -> Entry:
        """``entry`` with its exact token count when a background count is still pending.

        A large spill's stub carries the policy's lower bound while the exact count runs on the
        counting thread; a tool that decides by the whole body's tokens waits for it (within
        the call's time limit, at most 5 s) and re-reads the entry.
        """
        if entry.tokens_exact:
            return entry
        wait = getattr(self.pad, "wait_for_counts", None)
        if wait is not None:
            wait(timeout_s=max(0.0, min(5.0, self.time_left() - 0.5)))
        fresh: Entry | None = self.store.get_entry(self.pad.scope, "handle", entry.key)
        return fresh if fresh is not None else entry

    def reader(self, entry: Entry) -> BodyReader:
        return self.store.reader(entry)  # type: ignore[no-any-return]

    def json_value(self, entry: Entry) -> Any:
        """The parsed JSON of a json/jsonl entry (cached), or a ``not_json`` error."""
        if entry.format not in ("json", "jsonl"):
            from ._csv import ROWS_RELATION, shape_of

            table = shape_of(entry.meta)
            if table is not None:  # a CSV: its rows are a table (a grep for "error" in an orders export said nothing)
                relation = f"{entry.key}.{ROWS_RELATION}"
                columns = ", ".join(table.columns[:8]) + (", …" if len(table.columns) > 8 else "")
                raise ToolError(
                    "not_json",
                    f"{entry.key} is CSV, not JSON; its rows are the SQL relation {relation} ({columns})",
                    [
                        suggestion("sql", "its first rows", query=f"SELECT * FROM {relation} LIMIT 20"),
                        suggestion("schema", "its columns and a summary", handle=entry.key),
                    ],
                    handle=entry.key,
                    format=entry.format,
                )
            raise ToolError(
                "not_json",
                f"{entry.key} is {entry.format}, not JSON; use the text tools instead",
                [
                    suggestion("head", "read the first lines", handle=entry.key, lines=50),
                    grep_errors(entry.key, "search"),
                    suggestion("schema", "a summary of the text", handle=entry.key),
                ],
                handle=entry.key,
                format=entry.format,
            )
        reader = self.reader(entry)

        def load() -> Any:
            data = reader.body_bytes_all()
            # Millions of new containers would trigger the cyclic GC again and again (2x the time);
            # parsed JSON has no cycles.
            was_enabled = gc.isenabled()
            gc.disable()
            try:
                if entry.format == "json":
                    return parse_json_bytes(data)
                return [parse_json_bytes(line) for line in data.split(b"\n") if line.strip()]
            finally:
                if was_enabled:
                    gc.enable()

        assert entry.body_id is not None
        return VALUE_CACHE.get(entry.body_id, reader.body_bytes, load)

    def guard_bytes(self, nbytes: int, sample: Callable[[int], str]) -> None:
        """Refuse early when ``nbytes`` of output would certainly not fit ``limit_tokens``.

        Up to 64 bytes a token nothing is decided here (the dispatcher counts the real text).
        Beyond that a prefix is counted: if even the prefix exceeds the limit, the whole cannot
        fit, and the estimate is the prefix's token density scaled to ``nbytes``.
        """
        probe = 64 * self.limit_tokens + 65_536
        if nbytes <= probe:
            return
        prefix = sample(probe)
        tokens = self.pad.tokenizer.count(prefix)
        if tokens > self.limit_tokens:
            used = max(1, len(prefix.encode("utf-8", "surrogatepass")))
            raise TooLarge(math.ceil(tokens * nbytes / used), f"{fmt_bytes(nbytes)} of output")
