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

import difflib
import hashlib
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, cast

from ..budget import CONTEXT_WINDOWS, is_known_model
from ..errors import InvalidArgumentError
from ..spill._counting import EXACT_INLINE_BYTES
from ..spill._envelope import unwrap_call_tool_result
from ..spill._policy import DEFAULT_MIN_TOKENS
from ..spill._stub import build_stub, handle_for, render_stub_text
from ..store import BodyReader, Entry, Normalised, as_text, normalise
from ..tokens import encoding_for_model, tokenizer_for
from ..tokens._count import utf8_len

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


def shown_tokens(text: str, size_bytes: int, tokens: int, limit: int, model: str) -> tuple[int, bool]:
    """``(tokens, exact)`` as the stub of a real spill states them (``Scratchpad._tokens_now``).

    ``tokens`` is the exact count of ``text`` (``size_bytes`` long); ``limit`` is the count the
    decision stopped at: the threshold of a spill by tokens, ``max(1, min_tokens)`` of a spill by
    bytes or a forced one. A body up to ``EXACT_INLINE_BYTES`` shows its exact count; a larger one
    its exact count only when counting up to ``limit`` reached the end, else ``≥ limit``.
    """
    if size_bytes <= EXACT_INLINE_BYTES or tokens < limit:
        return tokens, True
    counted, exact = tokenizer_for(model).count_upto(text, limit)  # (stops at the limit)
    return (counted, True) if exact else (limit, False)


def spill_parts(result: Any, text: str | None = None) -> tuple[Normalised, bool]:
    """What a spill stores for ``result``: the core's ``normalise`` of it, after the pad unwraps
    an MCP ``CallToolResult`` envelope (``Scratchpad._spill``); and whether it did unwrap one."""
    inner = unwrap_call_tool_result(result)
    if inner is not None:
        return normalise(inner, inner), True
    return normalise(result, as_text(result) if text is None else text), False


def stub_of(
    result: Any,
    *,
    tool: str,
    server: str | None,
    tokens: int,
    tokens_exact: bool,
    model: str,
    preview_lines: int,
    text: str | None = None,
) -> str:
    """The text of the stub a spill of ``result`` returns, with ``tokens`` as the stub states them.

    The entry is the one ``Scratchpad._spill`` writes (its ``meta`` from the pad's own
    ``_spill_meta``: embedded documents, the unwrapped envelope), and the stub is built as
    ``Scratchpad._build_stub`` builds it; only the body is read from memory.
    """
    from .._pad import Scratchpad  # (the pad's own code: one design for the lab and the spill)

    norm, unwrapped = spill_parts(result, text)
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
        tokens=tokens,
        preview=None,
        source_tool=tool,
        server=server,
        content_hash=digest,
        meta=Scratchpad._spill_meta(norm, unwrapped, tokens_exact, None),
    )
    stub = build_stub(
        entry,
        cast(BodyReader, head),  # build_stub reads only the first lines
        preview_lines=preview_lines,
        value=norm.value if norm.format == "json" else None,
        model=model,
        tokens_estimate=encoding_for_model(model).is_estimate,
        tokens_exact=entry.tokens_exact,
        unwrapped=entry.meta.get("unwrapped"),
        embedded=entry.meta.get("embedded"),
    )
    return render_stub_text(stub, tokenizer_for(model).count)


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
    (``≥ threshold``): its exact count is computed after the stub is returned. An MCP
    ``CallToolResult`` envelope is unwrapped, and documents inside JSON strings are listed, as a
    spill does.
    """
    text = as_text(result)
    shown, exact = shown_tokens(text, utf8_len(text), tokens, threshold, model)
    return stub_of(
        result, tool=tool, server=server, tokens=shown, tokens_exact=exact, model=model,
        preview_lines=preview_lines, text=text,
    )  # fmt: skip


def check_options(model: object, preview_lines: object) -> None:
    """Refuse a model whose tokenizer is not known (a typo would be counted with o200k_base) and a
    ``preview_lines`` that is not a non-negative integer, as the pad refuses it."""
    if not isinstance(model, str) or not is_known_model(model):
        names = list(dict.fromkeys([*_MODEL_EXAMPLES, *CONTEXT_WINDOWS]))
        close = difflib.get_close_matches(str(model), names, n=3, cutoff=0.8 if isinstance(model, str) else 0.5)
        if close or not isinstance(model, str):  # a typo of a known name: refused, not counted as another
            hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
            raise InvalidArgumentError(
                f"unknown model {model!r}{hint}: the lab counts each model's own tokens; give a known name "
                f"(such as {', '.join(_MODEL_EXAMPLES)}, or one of jupyter_scratchpad.budget.CONTEXT_WINDOWS)"
            )
        # a model this package has no table for (a pad takes it too): counted, and said so
        from ._replay import TraceWarning

        warnings.warn(
            f"unknown model {model!r}: its tokens are counted with o200k_base and its window is 128,000 tokens",
            TraceWarning,
            stacklevel=3,
        )
    if isinstance(preview_lines, bool) or not isinstance(preview_lines, int) or preview_lines < 0:
        raise InvalidArgumentError(f"preview_lines must be a non-negative integer, not {preview_lines!r}")


_MODEL_EXAMPLES = ("gpt-4o", "gpt-4.1", "claude-sonnet-4-5", "claude-opus-4")


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
    # (content, tool, server, tokens as the stub states them, exact): a stub does not depend on
    # the threshold once its count is exact, so a sweep renders each small result's stub once
    _stubs: dict[tuple[bytes, str, str | None, int, bool], int] = field(default_factory=dict, repr=False)
    seconds: dict[str, float] = field(default_factory=lambda: {"count": 0.0, "stub": 0.0})
    counted: int = 0  # distinct texts tokenized in full
    rendered: int = 0  # stubs rendered

    def __post_init__(self) -> None:
        check_options(self.model, self.preview_lines)
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
        self,
        result: Any,
        text: str,
        key: bytes,
        *,
        tool: str,
        server: str | None,
        size_bytes: int,
        tokens: int,
        limit: int,
    ) -> int:
        """Tokens of the stub that would replace ``result`` (``text`` is ``as_text(result)``, of
        ``size_bytes``), decided at ``limit`` (see ``shown_tokens``); rendered once per content,
        tool and stated count."""
        started = time.perf_counter()
        shown, exact = shown_tokens(text, size_bytes, tokens, limit, self.model)
        stub_key = (key, tool, server, shown, exact)
        cached = self._stubs.get(stub_key)
        if cached is None:
            stub = stub_of(
                result, tool=tool, server=server, tokens=shown, tokens_exact=exact, model=self.model,
                preview_lines=self.preview_lines, text=text,
            )  # fmt: skip
            cached = self._stubs[stub_key] = self.tokenizer.count(stub)
            self.rendered += 1
        self.seconds["stub"] += time.perf_counter() - started
        return cached
