"""The pointer that stands in for an output whose spill failed: short, honest, never the flood.

The scratchpad exists to keep floods out of the context, so when it cannot store an output it
withholds it rather than passing it on: the model (or the notebook) gets the tool's name, the
size, the reason in one line and a few of the first and last lines — at most ``POINTER_MAX_BYTES``.
"""

from __future__ import annotations

from .._bounded import clip_middle
from ..tokens._count import utf8_len
from ._policy import SpillDecision

__all__ = ["POINTER_MAX_BYTES", "withheld_pointer"]

POINTER_MAX_BYTES = 2048
_HEAD_LINES = 5
_TAIL_LINES = 3
_LINE_CHARS = 120


def _clip(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def withheld_pointer(text: str | None, tool: str, decision: SpillDecision, reason: str) -> str:
    """What enters the context instead of an output that could not be spilled."""
    tool = _clip(tool)
    if text is None:
        size = "size unknown"
        head: list[str] = []
        tail: list[str] = []
        total = 0
    else:
        total = text.count("\n", 0, 10_000_000) + 1
        size = f"{utf8_len(text):,} bytes"
        head = text[:4_000].split("\n")[:_HEAD_LINES]
        tail = text[-2_000:].split("\n")[-_TAIL_LINES:] if total > _HEAD_LINES + _TAIL_LINES else []
        if not tail:
            head = text[:4_000].split("\n")[: _HEAD_LINES + _TAIL_LINES]
    if decision.tokens is not None:
        size += f", {'' if decision.tokens_exact else '≥ '}{decision.tokens:,} tokens"
    lines = [
        f"[scratchpad] The output of {tool} ({size}) was withheld: it was too large for the context "
        f"and storing it failed ({reason}). Nothing of it was stored.",
    ]
    if head:
        lines.append("First lines:")
        lines += ["  " + _clip(line) for line in head]
    if tail:
        lines.append("Last lines:")
        lines += ["  " + _clip(line) for line in tail]
    lines.append("Run the tool again later, or ask it for less (a filter, a page, fewer fields).")
    return clip_middle("\n".join(lines), POINTER_MAX_BYTES)
