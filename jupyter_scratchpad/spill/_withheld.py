"""The pointer that stands in for an output whose spill failed: short, honest, never the flood.

The scratchpad exists to keep floods out of the context, so when it cannot store an output it
withholds it rather than passing it on: the model (or the notebook) gets the tool's name, the
size, the reason in one line and a few of the first and last lines — at most ``POINTER_MAX_BYTES``.

What it says is true of the case at hand: an output spilled because it reached its threshold was
"too large for the context"; a forced spill (``pad.spill``) was not stored whatever its size; an
output the scratchpad could not even decide on says that. The advice follows the cause where the
error tells it: a closed store needs a new store, a broken entry its handle deleted before the
output is spilled again, a full disk some space, a shared store that is down its return; anything
else may pass, so the tool is run again.

The lines shown are lines as a terminal shows them, as the stub shows them: a bare carriage
return (``\\r`` not before ``\\n``: a progress bar's redraws) ends a line, so the last lines are the
last state; terminal escapes (colours) are left out whole, never cut in half; other control
characters are shown as U+FFFD.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

from .._bounded import clip_middle
from ..tokens._count import utf8_len
from ._policy import SpillDecision
from ._stub import _clean

__all__ = ["AGENT", "NOTEBOOK", "POINTER_MAX_BYTES", "audience", "notebook_wording", "withheld_pointer"]

# Whom the advice is for: an agent runs its tool again; a notebook's person re-runs the cell and
# types %scratch commands. The notebook's side says so with ``notebook_wording()`` around the
# work that may spill (the core's ``intercept`` builds the pointer without knowing who reads it).
AGENT, NOTEBOOK = "agent", "notebook"
_AUDIENCE: ContextVar[str] = ContextVar("jupyter_scratchpad_withheld_audience", default=AGENT)


@contextlib.contextmanager
def notebook_wording() -> Iterator[None]:
    """Pointers built in this block (this thread or task) give a notebook's advice."""
    token = _AUDIENCE.set(NOTEBOOK)
    try:
        yield
    finally:
        _AUDIENCE.reset(token)

def audience() -> str:
    """Whom a pointer built now is for: ``NOTEBOOK`` inside ``notebook_wording()``, else ``AGENT``."""
    return _AUDIENCE.get()


POINTER_MAX_BYTES = 2048
_HEAD_LINES = 5
_TAIL_LINES = 3
_LINE_CHARS = 120
# a line end as the stub's body has it: \n, \r\n, or a bare \r
_LINE_END = re.compile(r"\r\n|\r|\n")
# a whole terminal escape: CSI (colours, cursor), OSC (titles, links; ends in BEL or ESC \), or a
# two-character one
_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]*[0-~])")
# an escape cut short (at the end of a piece of the text, or at a clip)
_PARTIAL_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[ -/]*)$")
_HANDLE_IN_REASON = re.compile(r"the body of '([^']{1,200})'")


def _shown(line: str) -> str:
    """A line as the pointer shows it: no terminal escapes (none cut in half), control characters
    as U+FFFD (as the stub shows them), at most ``_LINE_CHARS`` characters."""
    if "\x1b" in line:
        line = _PARTIAL_ESCAPE.sub("", _ESCAPE.sub("", line))
    return _clean(line, _LINE_CHARS)


def _clip(line: str) -> str:
    return line if len(line) <= _LINE_CHARS else line[: _LINE_CHARS - 1] + "…"


def _lines(piece: str) -> list[str]:
    return _LINE_END.split(piece)


def _line_count(text: str, limit: int = 10_000_000) -> int:
    """Lines as the stub counts them (a bare ``\\r`` ends one), over the first ``limit`` characters."""
    newlines = text.count("\n", 0, limit)
    returns = text.count("\r", 0, limit)
    if returns:
        returns -= text.count("\r\n", 0, limit)
    return newlines + returns + 1


def _cause(error: BaseException | None, reason: str) -> str:
    """The name of the error that stopped the spill: from ``error``, else the reason's prefix."""
    if error is not None:
        return type(error).__name__
    head, sep, _ = reason.partition(":")
    return head.strip() if sep and head.strip().isidentifier() else ""


def _advice(error: BaseException | None, reason: str, forced: bool, audience: str = AGENT) -> str:
    """What to do next, matched to the cause where the error tells it (``audience``: an agent's
    tool calls, or a notebook's cells and %scratch commands)."""
    cause = _cause(error, reason)
    names = {cls.__name__ for cls in type(error).__mro__} if error is not None else {cause}
    lowered = reason.lower()
    notebook = audience == NOTEBOOK
    again = "spill it again" if forced else "re-run the cell" if notebook else "run the tool again"
    if "StoreClosedError" in names or ("store at" in lowered and "is closed" in lowered):
        if notebook:
            return "The store is closed: %reload_ext jupyter_scratchpad (or restart the kernel), then re-run the cell."
        return "The store is closed: open a new store (a new ScratchStore, or restart the session) and spill it there."
    if "StoreLockedError" in names:
        return "Another process holds the store: close it, or use a store in another directory."
    if "StoreUnavailableError" in names:
        back = "once the store is back" if notebook else "once it is back"
        return f"The shared store's database is unreachable; nothing was changed: {again} {back}."
    damaged = bool(getattr(error, "damaged", False)) or any(
        words in lowered for words in ("missing or damaged", "the output is lost")
    )
    if damaged or "removed while it was being read" in lowered:
        handle = getattr(error, "handle", None)
        if not isinstance(handle, str):
            found = _HANDLE_IN_REASON.search(reason)
            handle = found.group(1) if found else None
        delete, listing = ("%scratch delete", "%scratch list") if notebook else ("scratch_delete", "scratch_list")
        which = f"delete handle {handle!r} ({delete})" if handle else f"delete its handle ({listing} shows it)"
        return f"The stored copy of this output is broken: {which}, then {again}."
    if any(
        words in lowered
        for words in ("no space left", "file too large", "disk quota", "errno 28", "errno 27", "errno 122")
    ):
        return f"The disk (or a file size limit) is full: free some space, then {again}."
    if "InvalidArgumentError" in names:
        return "The scratchpad was called with an argument it refuses (the reason says which): fix the call."
    if forced:
        return "Try the spill again later."
    if notebook:
        return "Re-run the cell later, or show less of it (a filter, a page, fewer rows)."
    return "Run the tool again later, or ask it for less (a filter, a page, fewer fields)."


def _opening(tool: str, size: str, decision: SpillDecision, reason: str, whole: bool) -> str:
    if decision.rule == "forced":
        rest = "" if whole else " Only the lines below are shown of it."
        return (
            f"[scratchpad] The output of {tool} ({size}) was not stored: it was spilled on request, "
            f"whatever its size, and storing it failed ({reason}).{rest}"
        )
    if decision.rule in ("threshold", "bytes_threshold", "error"):
        return (
            f"[scratchpad] The output of {tool} ({size}) was withheld: it was too large for the context "
            f"and storing it failed ({reason}). Nothing of it was stored."
        )
    return (
        f"[scratchpad] The output of {tool} ({size}) was withheld: the scratchpad could not decide on it "
        f"or store it ({reason}). Nothing of it was stored."
    )


def withheld_pointer(
    text: str | None,
    tool: str,
    decision: SpillDecision,
    reason: str,
    error: BaseException | None = None,
    audience: str | None = None,
) -> str:
    """What enters the context instead of an output that could not be spilled.

    ``decision``: the spill decision (its ``rule`` says why the output was to be spilled:
    ``forced`` for ``pad.spill``); ``reason``: the failure in one line (``"StoreError: …"``);
    ``error``: the exception itself when the caller has it (the advice reads its type; without it,
    the type named at the start of ``reason``); ``audience``: ``AGENT`` or ``NOTEBOOK`` (whose
    advice: "run the tool again" or "re-run the cell"); default: ``notebook_wording``'s, else an agent's.
    """
    tool = _clip(tool)
    head: list[str] = []
    tail: list[str] = []
    whole = False
    if text is None:
        size = "size unknown"
    else:
        ends = text.endswith(("\n", "\r"))  # (a last line end starts no line)
        total = _line_count(text) - ends
        size = f"{utf8_len(text):,} bytes"
        if total > _HEAD_LINES + _TAIL_LINES:
            head = _lines(text[:4_000])[:_HEAD_LINES]
            tail = _lines(text[-2_000:])[-_TAIL_LINES - ends :][:_TAIL_LINES]
        else:
            head = _lines(text[:4_000])[:total]
            whole = len(text) <= 4_000 and all(len(line) <= _LINE_CHARS and line == _shown(line) for line in head)
    if decision.tokens is not None:
        size += f", {'' if decision.tokens_exact else '≥ '}{decision.tokens:,} tokens"
    lines = [_opening(tool, size, decision, reason, whole)]
    if head:
        lines.append("Its text:" if whole else "First lines:")
        lines += ["  " + _shown(line) for line in head]
    if tail:
        lines.append("Last lines:")
        lines += ["  " + _shown(line) for line in tail]
    lines.append(_advice(error, reason, decision.rule == "forced", audience or _AUDIENCE.get()))
    return clip_middle("\n".join(lines), POINTER_MAX_BYTES)
