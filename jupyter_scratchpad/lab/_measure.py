"""What a replay measures once per result, whatever the number of policies: tokens, and the stub.

The stub is the one ``Scratchpad.intercept`` would put in the context: the core's ``build_stub``
and ``render_stub_text`` on the core's ``normalise`` of the result, with the handle the store
would give it. Only the body's first lines are needed for the preview, so they are read from
memory instead of from a body written to disk: for a 59 KB listing this costs ~1.3 ms against
10-50 ms for a spill into a temporary ``ScratchStore`` (``tests/lab/bench_replay.py``; ~3.5 ms
through a body directory without the catalog). ``tests/lab/test_lab_stub.py`` checks that the
text is identical to the stub of a real spill.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, cast

from ..spill._counting import EXACT_INLINE_BYTES
from ..spill._policy import DEFAULT_MIN_TOKENS
from ..spill._stub import build_stub, handle_for, render_stub_text
from ..store import BodyReader, Entry, normalise
from ..tokens import encoding_for_model, tokenizer_for

__all__ = ["Measurer", "render_stub"]


class _BodyHead:
    """The part of ``BodyReader`` that ``build_stub`` uses, over a body held in memory.

    ``read_lines(start, end)`` has ``BodyReader``'s meaning: lines ``start..end``, 1-based,
    inclusive, clamped, split on ``\\n`` only, the final newline not starting a line.
    """

    def __init__(self, body: bytes, raw: bytes) -> None:
        self.body, self.raw = body, raw
        self.line_count = body.count(b"\n") + (1 if body and not body.endswith(b"\n") else 0)
        # (a body of its own, as a spill writes one, or the raw bytes themselves)
        self.raw_path, self.body_path = "raw", ("raw" if body is raw or body == raw else "body")
        self.raw_size = len(raw)

    def read_raw(self, start: int, end: int) -> bytes:
        return self.raw[start:end]

    def read_lines(self, start: int, end: int) -> list[str]:
        start, end = max(1, start), min(end, self.line_count)
        if end < start:
            return []
        parts = self.body.split(b"\n", end)[start - 1 : end]
        return [part.decode("utf-8", errors="replace") for part in parts]


def render_stub(
    result: Any,
    *,
    tool: str,
    server: str | None = None,
    tokens: int,
    model: str = "gpt-4o",
    preview_lines: int = 20,
    threshold: int = DEFAULT_MIN_TOKENS,
) -> str:
    """The stub text that would replace ``result`` (whose exact count is ``tokens``), without a store.

    As in a real spill, a body over ``EXACT_INLINE_BYTES`` shows the decision's bound
    (``≥ threshold``): its exact count is computed after the stub is returned.
    """
    norm = normalise(result)
    exact = len(norm.raw) <= EXACT_INLINE_BYTES or tokens < threshold
    digest = hashlib.sha256(norm.raw).hexdigest()
    head = _BodyHead(norm.body, norm.raw)
    entry = Entry(
        run_id="lab",
        agent_id="lab",
        kind="handle",
        key=handle_for(tool, digest),
        body_id=None,
        value_json=None,
        format=norm.format,
        size_bytes=len(norm.raw),
        body_bytes=len(norm.body),
        line_count=head.line_count,
        tokens=tokens if exact else threshold,
        preview=None,
        source_tool=tool,
        server=server,
        content_hash=digest,
        meta={"utf8_errors": norm.utf8_errors},
    )
    stub = build_stub(
        entry,
        cast(BodyReader, head),  # build_stub reads only the first lines
        preview_lines=preview_lines,
        value=norm.value if norm.format == "json" else None,
        model=model,
        tokens_estimate=encoding_for_model(model).is_estimate,
        tokens_exact=exact,
    )
    return render_stub_text(stub, tokenizer_for(model).count)


def content_key(text: str) -> bytes:
    """A short digest of ``text`` (the same text is counted once per replay)."""
    h = hashlib.blake2b(digest_size=16)
    for start in range(0, len(text), 1 << 20):
        h.update(text[start : start + (1 << 20)].encode("utf-8", "surrogatepass"))
    return h.digest()


@dataclass
class Measurer:
    """Exact token counts and stub sizes, each computed once per distinct content.

    ``seconds`` records where time went (``count``, ``stub``), for the report of a replay.
    """

    model: str = "gpt-4o"
    preview_lines: int = 20
    _tokens: dict[bytes, int] = field(default_factory=dict, repr=False)
    _stubs: dict[tuple[bytes, str, str | None, int | None], int] = field(default_factory=dict, repr=False)
    seconds: dict[str, float] = field(default_factory=lambda: {"count": 0.0, "stub": 0.0})
    counted: int = 0  # distinct texts tokenized in full

    def __post_init__(self) -> None:
        self.tokenizer = tokenizer_for(self.model)

    def tokens(self, text: str, key: bytes) -> int:
        """The exact count of ``text`` (whose ``content_key`` is ``key``), tokenized once per replay."""
        cached = self._tokens.get(key)
        if cached is None:
            started = time.perf_counter()
            cached = self._tokens[key] = self.tokenizer.count(text)
            self.seconds["count"] += time.perf_counter() - started
            self.counted += 1
        return cached

    def text_tokens(self, text: str) -> int:
        """The count of a small text (a bounded error, a stub): not cached here."""
        return self.tokenizer.count(text)

    def stub_tokens(
        self, result: Any, key: bytes, *, tool: str, server: str | None, tokens: int, threshold: int | None = None
    ) -> int:
        """Tokens of the stub that would replace ``result`` (once per content and tool)."""
        stub_key = (key, tool, server, threshold)
        cached = self._stubs.get(stub_key)
        if cached is None:
            started = time.perf_counter()
            text = render_stub(
                result,
                tool=tool,
                server=server,
                tokens=tokens,
                model=self.model,
                preview_lines=self.preview_lines,
                threshold=threshold if threshold is not None else DEFAULT_MIN_TOKENS,
            )
            cached = self._stubs[stub_key] = self.tokenizer.count(text)
            self.seconds["stub"] += time.perf_counter() - started
        return cached
