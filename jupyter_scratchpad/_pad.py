"""``Scratchpad``: one (run, agent)'s view of a store — intercept, explore, take notes."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _person
from ._bounded import clip_middle, redact_paths
from ._person import SQL_DF_MAX_ROWS
from .budget import ContextBudget, context_window_for
from .errors import InvalidArgumentError, NotFoundError, StoreClosedError, StoreError
from .explore._base import VALUE_CACHE
from .spill import SpillDecision, SpillPolicy, bound_error_text
from .spill._counting import EXACT_INLINE_BYTES, submit_count
from .spill._envelope import unwrap_call_tool_result
from .spill._progress import Progress
from .spill._stub import _clean, build_stub, catalog_preview, handle_for, render_stub_text, reserved_handle
from .spill._withheld import NOTEBOOK, POINTER_MAX_BYTES, audience, withheld_pointer
from .store import Entry, Scope, ScratchStore, as_text, normalise, validate_handle
from .store._bodies import BodyReader
from .store._entry import validate_ttl
from .store._format import Normalised
from .store._jsonstream import NotStreamable
from .store._jsontext import dumps_compact
from .tokens import Tokenizer, encoding_for_model, tokenizer_for
from .tokens._count import utf8_len
from .tools import ToolResult, dispatch, tool_specs

__all__ = ["InterceptResult", "Scratchpad"]

log = logging.getLogger("jupyter_scratchpad")

# a handle deleted by another process between its spill and its stub is stored again this many
# times (the spill has the bytes); a spill that loses every time fails closed
STUB_RESPILLS = 2
STUB_SKETCH_MAX_BYTES = 64 << 20  # ``stub(handle)`` re-reads a JSON body up to this size for its sketch


@dataclass(frozen=True)
class InterceptResult:
    """What ``Scratchpad.intercept`` did with one output.

    ``content`` is what enters the context: the original object when it was not spilled (an
    error may be bounded to 8 KiB; an object whose ``str`` and ``repr`` raise is a one-line text
    saying so), the stub rendered as text for a model when it was, and a short pointer
    (``failure`` set) when a spill was decided on but failed — naming the ``handle`` when the
    output was stored and only its stub failed.
    """

    spilled: bool
    content: Any
    stub: dict[str, Any] | None
    decision: SpillDecision
    handle: str | None = None
    failure: str | None = None  # why a spill that should have happened did not

    def __str__(self) -> str:
        return self.content if isinstance(self.content, str) else as_text(self.content)


def _unprintable(result: Any, text: str) -> bool:
    """Whether ``result`` is an object whose ``str`` and ``repr`` both raise (its text, as
    ``as_text`` writes it, is then only ``"<unprintable TYPE>"``)."""
    if isinstance(result, (str, bytes, bytearray, memoryview, dict, list)) or not text.startswith('"<unprintable '):
        return False
    try:
        return bool(json.loads(text) == f"<unprintable {type(result).__name__}>")
    except ValueError:
        return False


class Scratchpad:
    """The scratchpad of one run of one agent. Get it from ``ScratchStore.scratchpad``."""

    def __init__(
        self,
        store: ScratchStore,
        scope: Scope,
        *,
        model: str = "gpt-4o",
        context_window: int | None = None,
        safety_margin: float | None = None,
        max_extraction_tokens: int | None = None,
        policy: SpillPolicy | None = None,
        turn_depth_bonus: int | None = None,
        preview_lines: int = 20,
        tool_timeout_s: float = 10.0,
    ) -> None:
        self.store = store
        self.scope = scope
        self.model = model
        self.policy = policy or SpillPolicy()
        self.tokenizer: Tokenizer = tokenizer_for(model)
        self.tokens_are_estimates = encoding_for_model(model).is_estimate
        if isinstance(preview_lines, bool) or not isinstance(preview_lines, int) or preview_lines < 0:
            raise InvalidArgumentError("preview_lines must be a non-negative integer")
        self.preview_lines = preview_lines
        if isinstance(tool_timeout_s, bool) or not isinstance(tool_timeout_s, (int, float)) or not tool_timeout_s > 0:
            raise InvalidArgumentError(f"tool_timeout_s must be a positive number of seconds, not {tool_timeout_s!r}")
        self.tool_timeout_s = float(tool_timeout_s)  # each call_tool stops (``timeout``) after this long
        self._specs = ("anthropic" if "claude" in model.lower() else "openai", "")  # (see _specs_tokens)
        self._specs_counted: tuple[Any, int] = (None, 0)
        self.budget = ContextBudget(
            context_window if context_window is not None else context_window_for(model),
            self.policy.context_safety_margin if safety_margin is None else safety_margin,
            initial_used=self._specs_tokens(),
            max_extraction_tokens=(
                self.policy.max_extraction_tokens if max_extraction_tokens is None else max_extraction_tokens
            ),
            turn_depth_bonus=self.policy.turn_depth_bonus if turn_depth_bonus is None else turn_depth_bonus,
        )
        # ends a budget_exhausted refusal's message: what a person can do about it (a server says
        # how it is restarted or sized); empty by default
        self.budget_exhausted_note = ""
        self._usage_lock = threading.Lock()
        self._pending: list[Future[Any]] = []
        # called as listener(handle, tokens) when a large spill's exact count lands (the notebook
        # card and sidebar refresh from it)
        self.token_listeners: list[Callable[[str, int], None]] = []
        # called with {"tool", "handle", "phase", "step", "steps", "size_bytes", "elapsed_s"} while a
        # spill runs longer than a second (see spill/_progress.py)
        self.progress_listeners: list[Callable[[dict[str, Any]], None]] = []
        self._progress_here = threading.local()  # progress_to: this thread's work reports elsewhere
        self._tokens_intercepted = 0
        self._tokens_extracted = 0
        self._spills = 0
        self._counted: set[str] = set()  # handles whose tokens are in _tokens_intercepted

    @contextmanager
    def progress_to(self, listeners: Sequence[Callable[[dict[str, Any]], None]]) -> Iterator[None]:
        """Work this thread starts inside the block reports its progress to ``listeners`` instead
        of ``progress_listeners`` (an explorer shows its own request's load in itself, not under
        whichever cell ran last)."""
        before = getattr(self._progress_here, "listeners", None)
        self._progress_here.listeners = list(listeners)
        try:
            yield
        finally:
            self._progress_here.listeners = before

    def listeners_here(self) -> list[Callable[[dict[str, Any]], None]]:
        """Whom work started on this thread reports progress to (see ``progress_to``)."""
        routed = getattr(self._progress_here, "listeners", None)
        return list(self.progress_listeners if routed is None else routed)

    @property
    def run_id(self) -> str:
        return self.scope.run_id

    @property
    def agent_id(self) -> str:
        return self.scope.agent_id

    def __repr__(self) -> str:
        return f"<Scratchpad run={self.run_id!r} agent={self.agent_id!r} model={self.model!r} {self.budget!r}>"

    def set_model(
        self, model: str, context_window: int | None = None, max_extraction_tokens: int | None = None
    ) -> None:
        """Count in ``model``'s tokens from now on and size the budget to its window.

        Tokens already used stay used (a window change does not refund them).
        """
        old = self.budget
        self.tokenizer = tokenizer_for(model)
        self.tokens_are_estimates = encoding_for_model(model).is_estimate
        self.model = model
        window = context_window if context_window is not None else context_window_for(model)
        cap = old.max_extraction_tokens if max_extraction_tokens is None else max_extraction_tokens
        if (window, cap) != (old.context_window, old.max_extraction_tokens):
            self.budget = ContextBudget(
                window,
                old.safety_margin,
                initial_used=old.used,
                max_extraction_tokens=cap,
                turn_depth_bonus=old.turn_depth_bonus,
            )

    # -- spilling ----------------------------------------------------------------------------

    def intercept(
        self,
        result: Any,
        tool: str = "output",
        server: str | None = None,
        result_class: str | None = "query",
        metadata: Mapping[str, Any] | None = None,
        is_error: bool = False,
        *,
        handle: str | None = None,
        force: bool = False,
        ttl_s: float | None = None,
        text: str | None = None,
    ) -> InterceptResult:
        """Spill ``result`` (str, bytes, dict or list) when the policy says so; else pass it through.

        ``force`` spills whatever the policy says; ``handle`` names the entry (a valid handle);
        ``text`` is the result's text when the caller has already serialised it.

        Raises only for a malformed ``handle``, ``ttl_s``, ``tool``, ``result_class`` or ``metadata``
        argument (checked before anything else). Whatever the result holds, it never raises, and it
        fails closed: when a spill the policy decided on fails (disk full, a closed store,
        anything), ``content`` is a short pointer (at most ``POINTER_MAX_BYTES``: tool, size, the
        reason, a few first and last lines), never the output itself; the failure is logged at
        ERROR level with its traceback and set on ``failure``.
        """
        if handle is not None:  # the caller's own arguments: a programming error, raised up front
            validate_handle(handle)
            if (why := reserved_handle(handle)) is not None:
                raise InvalidArgumentError(f"{handle!r} is reserved: {why}; pick another name")
        if ttl_s is not None:
            validate_ttl(ttl_s)
        if not isinstance(tool, str):
            raise InvalidArgumentError(
                f"tool must be the tool's name (a string), got {type(tool).__name__}; "
                "pass the output first: intercept(result, tool='name')"
            )
        # (a typo in result_class let a flood through; metadata=5 withheld a 12-byte output as "too large")
        result_class = self.policy.check_call(result_class, metadata)
        decision: SpillDecision | None = None
        stored: dict[str, str] = {}  # the entry ``_spill`` stored, once it is stored
        try:
            if text is None:
                text = as_text(result)
            if force:
                decision = SpillDecision(True, "forced", size_bytes=utf8_len(text))
            else:
                decision = self.policy.explain(
                    result,
                    tool=tool,
                    server=server,
                    result_class=result_class,
                    metadata=metadata,
                    is_error=is_error,
                    model=self.model,
                    text=text,
                )
            if not decision.spill:
                content = result
                if decision.rule == "is_error":
                    bounded = bound_error_text(text, self.policy.error_max_bytes)
                    content = result if bounded == text else bounded
                elif _unprintable(result, text):  # (passed on, any ``str(content)`` raised)
                    content = (
                        f"[scratchpad] The output of {_clean(tool, 120)} (a {_clean(type(result).__name__, 120)} "
                        "object) has no text to show: its str() and repr() raise."
                    )
                return InterceptResult(False, content, None, decision)
            # the work after the stub (exact count, schema) starts once the stub is rendered: a
            # worker thread started sooner competed with the stub's reads for the GIL (each I/O
            # call then waited up to a switch interval, 5 ms, to run again)
            after_stub: list[Callable[[], None]] = []
            try:
                with Progress(self.listeners_here(), tool, decision.size_bytes) as progress:
                    stub = self._spill(
                        result,
                        text,
                        tool=tool,
                        server=server,
                        handle=handle,
                        ttl_s=ttl_s,
                        metadata=metadata,
                        decision=decision,
                        progress=progress,
                        after_stub=after_stub,
                        stored=stored,
                    )
                    content = render_stub_text(stub, self.tokenizer.count)
            finally:
                for start in after_stub:
                    start()
            return InterceptResult(True, content, stub, decision, stub["handle"])
        except Exception as exc:  # fail closed: a pointer, never the flood
            if stored:  # the entry is stored (and live): say so, with its handle
                return self._stored_without_stub(text, tool, decision, exc, stored["handle"])
            return self._withheld(text, tool, decision, exc)

    def _stored_without_stub(
        self, text: str | None, tool: str, decision: SpillDecision | None, exc: Exception, handle: str
    ) -> InterceptResult:
        """A spill that failed after its entry was stored (its stub, say): the pointer names the
        handle, which is live and read by every tool — "nothing was stored" would be untrue, and
        each retry (the same bytes, the same entry) would fail the same way."""
        reason = self._failure_reason(exc)
        log.error(
            "the output of %s was stored as %s, but its stub failed: %s", tool[:200], handle, reason, exc_info=exc
        )
        decision = decision or SpillDecision(True, "failed", detail="the spill decision itself failed")
        size = "size unknown" if text is None else f"{utf8_len(text):,} bytes"
        next_line = (
            f"Next: %scratch schema {handle}; %scratch head {handle}; %scratch grep {handle} PATTERN; "
            f"%scratch sql SELECT … FROM {handle}."
            if audience() == NOTEBOOK
            else f"Next, with this handle: schema; head; grep; slice; sql over {handle}."
        )
        content = clip_middle(
            f'[scratchpad] The output of {_clean(tool, 120)} ({size}) is stored as handle "{handle}", not in '
            f"context, but its summary could not be made ({reason}).\n{next_line}",
            POINTER_MAX_BYTES,
        )
        return InterceptResult(False, content, None, decision, handle, failure=reason)

    def _failure_reason(self, exc: Exception) -> str:
        """A failed spill's cause in one line of at most about 300 characters, host paths redacted."""
        reason = redact_paths(" ".join(f"{type(exc).__name__}: {exc}".split()), [self.store.path])
        if len(reason) > 300:  # cut at a clause, not mid-word ("… nothing was")
            cut = max(reason.rfind("; ", 0, 300), reason.rfind(": ", 0, 300))
            reason = reason[: cut if cut > 100 else 300].rstrip(" ;:,") + " …"
        return reason

    def _withheld(self, text: str | None, tool: str, decision: SpillDecision | None, exc: Exception) -> InterceptResult:
        reason = self._failure_reason(exc)
        log.error(
            "spilling the output of %s failed; it was withheld from the context: %s", tool[:200], reason, exc_info=exc
        )
        decision = decision or SpillDecision(True, "failed", detail="the spill decision itself failed")
        content = withheld_pointer(text, tool, decision, reason, error=exc)
        return InterceptResult(False, content, None, decision, failure=reason)

    def spill(
        self,
        result: Any,
        tool: str = "output",
        *,
        handle: str | None = None,
        ttl_s: float | None = None,
        server: str | None = None,
    ) -> InterceptResult:
        """Spill ``result`` whatever its size (``intercept(..., force=True)``)."""
        return self.intercept(result, tool, server, handle=handle, force=True, ttl_s=ttl_s)

    def _spill(
        self,
        result: Any,
        text: str,
        *,
        tool: str,
        server: str | None,
        handle: str | None,
        ttl_s: float | None,
        metadata: Mapping[str, Any] | None,
        decision: SpillDecision,
        progress: Progress,
        after_stub: list[Callable[[], None]],
        stored: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Store ``result`` and make its stub; ``stored`` gets the entry's handle once it is stored
        (a failure after that leaves a live entry, which the caller names)."""
        progress.phase("normalise")
        inner = unwrap_call_tool_result(result)
        source, source_text = (inner, inner) if inner is not None else (result, text)
        # a large JSON text that is one big array is read a segment at a time (never whole in
        # memory) unless it holds strings of JSON or markdown, which the spill walks for
        norm = normalise(source, source_text, stream=True)
        digest = hashlib.sha256(norm.raw).hexdigest()
        # one output, one entry: the same bytes already stored in this scope are reused
        existing = self.store.find_by_hash(self.scope, digest) if handle is None else None
        name = existing.key if existing is not None else handle or self._free_handle(tool, digest)
        tokens, exact = self._tokens_now(text, decision)
        for respill in range(STUB_RESPILLS + 1):
            while True:
                meta = self._spill_meta(norm, inner is not None, exact, metadata)
                progress.phase("write")
                body = norm.streamed.body_chunks() if norm.streamed else None if norm.body is norm.raw else norm.body
                try:
                    entry, _created = self.store.put_body(
                        self.scope,
                        handle=name,
                        raw=norm.raw,
                        body=body,
                        content_hash=digest,
                        fmt=norm.format,
                        size_bytes=len(norm.raw),
                        tokens=tokens,
                        preview=catalog_preview(norm.body_head()),
                        source_tool=existing.source_tool if existing is not None else tool,
                        server=existing.server if existing is not None else server,
                        meta=meta,
                        ttl_s=ttl_s,
                        dedupe=handle is None,
                    )
                    break
                except NotStreamable:  # a segment was not JSON: the whole text decides what it is
                    progress.phase("normalise")
                    norm = normalise(source, source_text)
            if stored is not None:
                stored["handle"] = entry.key
            mark = len(after_stub)
            try:
                # its files held open: a delete by another process once this reader is open no
                # longer pulls the body away in the middle of the stub
                with self.store.held_reader(entry) as reader:
                    self._beside_body(entry, _created, norm, result, after_stub, reader.directory)
                    progress.handle = entry.key
                    progress.phase("stub")
                    stub = self._build_stub(entry, norm.value if norm.format == "json" else None, reader)
                break
            except NotFoundError:
                # another process deleted the handle (its body with it) between this store and
                # the reader's open: the output is stored again (its bytes are here) rather than a
                # stub naming a handle that is gone; losing again and again, it fails closed as before
                del after_stub[mark:]
                if respill == STUB_RESPILLS:
                    raise
                log.debug("%s was deleted while its stub was made; storing the output again", entry.key)
        if existing is not None and not _created:  # (a body lost meanwhile is written anew: created)
            stub["reused"] = True
            stub["source_tool"] = tool
        with self._usage_lock:
            self._spills += 1
            first = entry.key not in self._counted  # an entry's tokens count once per pad
            self._counted.add(entry.key)
            if exact and first:
                self._tokens_intercepted += tokens
        if not exact:
            key = entry.key
            after_stub.append(lambda: self._count_later(text, key, digest, add=first))
        return stub

    def _beside_body(
        self, entry: Entry, created: bool, norm: Normalised, result: Any, after_stub: list[Callable[[], None]],
        directory: Path,
    ) -> None:  # fmt: skip
        """What a spill keeps beside its body (a streamed spill's segments) or in memory (the
        parsed value), and the schema work it starts once the stub is rendered."""
        if norm.streamed is not None:
            if not norm.streamed.total:  # the body was stored before: count the items for the stub
                norm.streamed.count_items()
            if created and entry.body_id is not None:
                from .explore._schema import precompute_streamed_schema, save_beside_body
                from .explore._segments import SEGMENTS_FILE, segments_record

                # one item is read from the segment that holds it (get_in, iterate_over windows)
                streamed = norm.streamed
                record = segments_record(
                    streamed.path,
                    streamed.segments,
                    streamed.counts,
                    len(streamed.pre),
                    len(streamed.post),
                    streamed.array_lines,
                )
                save_beside_body(directory / SEGMENTS_FILE, record)
                # parse once per segment: the schema's shape comes from the segments, off the stub's path

                body_id, line_count = entry.body_id, entry.line_count
                after_stub.append(
                    lambda: self._track(precompute_streamed_schema(directory, body_id, line_count, streamed))
                )
        elif norm.format in ("json", "jsonl") and norm.value is not result and entry.body_id is not None:
            # parse once: the JSON tools start from the value the spill parsed (never from a
            # caller's object, which the caller may still change)
            VALUE_CACHE.put(entry.body_id, entry.body_bytes or len(norm.body), norm.value)
            if norm.format == "json" and created:
                # parse once: the schema's shape comes from this value, off the stub's path
                from .explore._schema import precompute_schema

                body_id, line_count = entry.body_id, entry.line_count
                value = norm.value
                after_stub.append(lambda: self._track(precompute_schema(directory, body_id, line_count, value)))

    def _track(self, future: Future[Any]) -> None:
        with self._usage_lock:
            self._pending.append(future)

    @staticmethod
    def _spill_meta(
        norm: Normalised, unwrapped: bool, tokens_exact: bool, metadata: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"utf8_errors": norm.utf8_errors, "tokens_exact": tokens_exact}
        if unwrapped:
            meta["unwrapped"] = "mcp_call_tool_result"
        if norm.format == "json":  # SQL relations per array of records, found once, at spill time
            from .explore._relations import array_relations

            meta["sql_arrays"] = array_relations(norm.value)
            from .explore._embedded import embedded_relations, find_embedded, may_embed

            embeds = norm.marks[1] if norm.marks is not None else may_embed(norm.raw)
            if norm.streamed is None and embeds:  # strings that hold JSON or markdown
                embedded = find_embedded(norm.value)
                if embedded:
                    embedded_relations(norm.value, embedded)
                    meta["embedded"] = embedded
        elif norm.format == "text":  # a CSV table: SQL reads its rows too (h.rows), found once
            from .explore._csv import csv_meta

            found = csv_meta(norm.body)
            if found is not None:
                meta["csv"] = found
        if metadata:
            meta["metadata"] = json.loads(dumps_compact(dict(metadata)))
        return meta

    def _tokens_now(self, text: str, decision: SpillDecision) -> tuple[int, bool]:
        """``(tokens, exact)`` for the stub: exact when known or cheap, else the decision's bound."""
        if decision.tokens is not None and decision.tokens_exact:
            return decision.tokens, True
        size = decision.size_bytes or utf8_len(text)
        if size <= EXACT_INLINE_BYTES:
            return self.tokenizer.count(text), True
        if decision.rule == "threshold" and decision.threshold is not None:
            return decision.threshold, False
        bound = max(1, self.policy.min_tokens)
        tokens, exact = self.tokenizer.count_upto(text, bound)
        return (tokens, True) if exact else (bound, False)

    def _count_later(self, text: str, handle: str, content_hash: str, *, add: bool = True) -> None:
        def done(tokens: int) -> None:
            if add:
                with self._usage_lock:
                    self._tokens_intercepted += tokens
            try:
                self.store.set_tokens(self.scope, handle, content_hash, tokens)
            except StoreClosedError:
                return
            except StoreError as exc:  # e.g. a shared store's database away: the stub's bound stands
                log.warning("the exact token count of %s (%d) was not recorded: %s", handle, tokens, exc)
            for listener in list(self.token_listeners):
                try:
                    listener(handle, tokens)
                except Exception:
                    log.exception("a token listener failed")

        future = submit_count(lambda: self.tokenizer.count(text), done)
        self.store.track_count(future)  # (closing the store waits for it, bounded)
        with self._usage_lock:
            self._pending = [f for f in self._pending if not f.done()]
            self._pending.append(future)

    def wait_for_counts(self, timeout_s: float | None = None) -> bool:
        """Wait until the exact token counts (and the JSON schemas computed after the spill) of
        this pad's spills are in; False on timeout."""
        with self._usage_lock:
            pending = list(self._pending)
        _done, not_done = wait(pending, timeout=timeout_s)
        return not not_done

    def _build_stub(self, entry: Entry, value: Any, reader: BodyReader | None = None) -> dict[str, Any]:
        return build_stub(
            entry,
            self.store.reader(entry) if reader is None else reader,
            preview_lines=self.preview_lines,
            value=value,
            model=self.model,
            tokens_estimate=self.tokens_are_estimates,
            tokens_exact=entry.tokens_exact,
            unwrapped=entry.meta.get("unwrapped"),
            embedded=entry.meta.get("embedded"),
        )

    def _free_handle(self, tool: str, digest: str) -> str:
        """``<tool>_<hash12>``; a longer hash in the (astronomically rare) case of a collision."""
        for chars in (12, 16, 20, 23):
            name = handle_for(tool, digest, chars)
            existing = self.store._row_any_expiry(self.scope, "handle", name)
            if existing is None or existing.content_hash == digest:
                return name
        return handle_for(tool, digest, 23)

    def stub(self, handle: str) -> dict[str, Any]:
        """The stub of a live handle (as ``intercept`` returned it)."""
        entry = self.store.require_entry(self.scope, "handle", validate_handle(handle))
        value = None
        if entry.format == "json":  # a streamed spill: its skeleton and first items, as the spill saw them
            from .explore._base import ToolContext
            from .explore._segments import MISSING, streamed_sample
            from .tools import UNCHARGED_LIMIT_TOKENS

            value = streamed_sample(ToolContext(self, "stub", UNCHARGED_LIMIT_TOKENS), entry)
            value = None if value is MISSING else value
        if value is None and entry.format == "json" and (entry.body_bytes or 0) <= STUB_SKETCH_MAX_BYTES:
            from .store._format import parse_json_bytes

            reader = self.store.reader(entry)
            value = parse_json_bytes(reader.read_body(0, reader.body_bytes))
        return self._build_stub(entry, value)

    def get(self, handle: str) -> Any:
        """The spilled value itself: parsed JSON for json/jsonl, else the text exactly as spilled
        (lone surrogates included); bytes that are not UTF-8 text come back as ``bytes``, as
        spilled."""
        from .store._format import parse_json_bytes

        entry = self.store.require_entry(self.scope, "handle", validate_handle(handle))
        reader = self.store.reader(entry)
        if entry.format == "json":
            return parse_json_bytes(reader.read_raw(0, reader.raw_size))
        if entry.format == "jsonl":
            return [parse_json_bytes(line) for line in reader.body_bytes_all().split(b"\n") if line.strip()]
        raw = reader.read_raw(0, reader.raw_size)
        for errors in ("strict", "surrogatepass"):  # (a str with lone surrogates was spilled with surrogatepass)
            try:
                return raw.decode("utf-8", errors)
            except UnicodeDecodeError:
                continue
        return raw

    # -- tools -------------------------------------------------------------------------------

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        charge: bool = True,
        prefix: str = "",
        page_tokens: int | None = None,
    ) -> ToolResult:
        """Run one exploration or note tool; never raises for a mistake a model can make.

        ``charge=False`` reads for a person, not a model: no per-call cap, nothing charged;
        with ``page_tokens`` a result far larger than that page is refused early, with
        suggestions, instead of being built (the explorer's get_in of ``$`` on a 1 GB handle).
        ``prefix``: the one given to ``tool_specs`` (names are then ``prefix + tool``).
        """
        if page_tokens is not None and charge:
            raise InvalidArgumentError("page_tokens bounds a person's uncharged read: pass charge=False with it")
        return dispatch(self, name, arguments, charge=charge, prefix=prefix, limit_tokens=page_tokens)

    def sql_df(
        self,
        query: str,
        limit: int | None = None,
        *,
        params: Mapping[str, Any] | Sequence[Any] | None = None,
        max_rows: int | None = SQL_DF_MAX_ROWS,
        time_limit_s: float | None = None,
    ) -> Any:
        """Every row of a sandboxed SQL query as a pandas DataFrame: read as the person, whole and
        not charged to the agent's budget (``time_limit_s``: stopped then; none by default)."""
        return _person.sql_df(self, query, limit, params=params, max_rows=max_rows, time_limit_s=time_limit_s)

    def dataframe(self, handle: str, path: str = "$") -> Any:
        """The array at ``path`` of a handle as a pandas DataFrame: read as the person, whole and
        not charged to the agent's budget."""
        return _person.dataframe(self, handle, path)

    def export(
        self,
        handle: str,
        dest: str | os.PathLike[str],
        *,
        fmt: str | None = None,
        path: str | None = None,
        overwrite: bool = False,
    ) -> dict[str, Any]:
        """Write a handle (or the array at ``path`` in it) to a file others can read: ``fmt``
        ``"json"`` (the output's own bytes), ``"jsonl"``, ``"parquet"`` or ``"csv"`` (rows), else
        the format ``dest``'s extension names. The file appears whole or not at all; an existing
        one is kept unless ``overwrite``. Returns ``{"path", "format", "rows", "bytes"}``."""
        from ._export import export

        return export(self, handle, Path(dest), path=path, fmt=fmt, overwrite=overwrite)

    def sql_relations(self) -> list[dict[str, Any]]:
        """The relations SQL can read here: ``{"name", "format", "source_tool"}`` each."""
        return _person.sql_relations(self)

    def reset_budget(self) -> None:
        """Start the budget again: ``used`` back to the tokens of the tool definitions alone."""
        self.budget.reset(self._specs_tokens())

    def _specs_tokens(self) -> int:
        """The tokens of the tool definitions the model holds: those this pad handed out last
        (``tool_specs``), before that the model family's own flavor (a Claude model: Anthropic's);
        counted once per flavor, prefix and tokenizer."""
        key = (*self._specs, self.tokenizer)
        if self._specs_counted[0] != key:
            flavor, prefix = self._specs
            self._specs_counted = (key, self.tokenizer.count(json.dumps(tool_specs(flavor, prefix=prefix))))
        return self._specs_counted[1]

    def tool_specs(self, flavor: str = "openai", *, prefix: str = "") -> list[dict[str, Any]]:
        """JSON-schema tool definitions: ``"openai"``, ``"openai-responses"``, ``"anthropic"`` or ``"mcp"``.

        The budget's ``used`` starts at the tokens of the definitions handed out: while nothing
        else was charged, it follows the flavor and prefix asked for here."""
        specs = tool_specs(flavor, prefix=prefix)
        if (flavor, prefix) != self._specs:
            before = self._specs_tokens()
            self._specs = (flavor, prefix)
            if self.budget.used == before:  # nothing charged yet: the definitions the model got
                self.budget.reset(self._specs_tokens())
        return specs

    def record_llm_usage(self, input_tokens: Any, output_tokens: int = 0) -> None:
        """Ground truth from the model API; raises ``budget.used`` only. ``input_tokens`` may be the
        SDK's usage object itself (``response.usage`` of OpenAI or Anthropic)."""
        self.budget.record_llm_usage(input_tokens, output_tokens)

    def _record_extraction(self, tokens: int) -> None:
        with self._usage_lock:
            self._tokens_extracted += tokens

    def usage(self) -> dict[str, Any]:
        """``{"agent_id", "tokens_intercepted", "tokens_extracted"}``: what was kept out, what read back.

        Exact: it waits for the exact counts of large spills still being computed in the
        background (see ``wait_for_counts``).
        """
        self.wait_for_counts()
        with self._usage_lock:
            return {
                "agent_id": self.agent_id,
                "tokens_intercepted": self._tokens_intercepted,
                "tokens_extracted": self._tokens_extracted,
            }

    @property
    def spill_count(self) -> int:
        """How many outputs this pad has spilled (the same output twice counts twice)."""
        return self._spills

    # -- notes (Python API: raises, unlike the tools) ----------------------------------------

    def scratch_write(self, key: str, value: Any, ttl_s: float | None = None) -> None:
        self.store.put_note(self.scope, key, value, ttl_s)

    def scratch_read(self, key: str) -> Any:
        entry = self.store.get_entry(self.scope, "note", key)
        if entry is None:
            raise NotFoundError(f"no live note {key!r} in run {self.run_id!r}", key=key)
        return entry.value

    def scratch_list(self) -> list[dict[str, Any]]:
        return [e.as_dict() for e in self.store.entries(self.scope, "note")]

    def scratch_delete(self, key: str) -> bool:
        return self.store.delete_entry(self.scope, "note", key)

    def entries(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Metadata of this pad's live entries (``kind``: ``"handle"``, ``"note"`` or both)."""
        return [e.as_dict() for e in self.store.entries(self.scope, kind)]

    def entry(self, handle: str) -> Entry:
        return self.store.require_entry(self.scope, "handle", validate_handle(handle))

    def delete(self, handle: str) -> bool:
        """Delete a spilled output."""
        return self.store.delete_entry(self.scope, "handle", validate_handle(handle))

    def extend(self, handle_or_key: str, ttl_s: float | None = None) -> Entry:
        """Give an entry ``ttl_s`` more seconds from now (a handle, else a note)."""
        kind = "handle" if self.store.get_entry(self.scope, "handle", handle_or_key) else "note"
        return self.store.touch(self.scope, kind, handle_or_key, ttl_s)
