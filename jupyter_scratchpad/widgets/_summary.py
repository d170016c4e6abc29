"""The explorer as static text and HTML: what a notebook shows when no kernel renders the widget.

A saved notebook on GitHub, nbviewer, or VS Code before its kernel starts cannot draw a widget
view; they fall back to ``text/html`` or ``text/plain``. The summary names the run, the budget and
the live handles, and says how to get the live explorer back. It never raises: a closed store
gives a summary that says so.
"""

from __future__ import annotations

from typing import Any

from ._meter import meter_state, meter_text
from ._render import entry_label, esc

__all__ = ["summary_html", "summary_text"]

MAX_LISTED = 20


def _facts(pad: Any) -> tuple[list[dict[str, Any]], str, float | None]:
    """``(entries, budget line, now)``; on any failure, no entries and a line that says why."""
    try:
        entries = pad.entries("handle")
        return entries, "budget: " + meter_text(meter_state(pad)), pad.store.now()
    except Exception as exc:
        return [], f"(the store cannot be read: {type(exc).__name__}: {exc})", None


def _again(handle: str | None) -> str:
    return f"%scratch explore {handle}" if handle else "%scratch explore"


def summary_text(pad: Any, handle: str | None) -> str:
    """A few plain lines: run, budget, the live handles (newest first), how to reopen the explorer."""
    entries, budget, now = _facts(pad)
    lines = [f"Scratchpad explorer — run {pad.run_id} · agent {pad.agent_id} · model {pad.model}",
             f"exploring: {handle or '(nothing selected)'}", budget,
             f"{len(entries):,} live spilled {'entry' if len(entries) == 1 else 'entries'}"
             + (":" if entries else "")]
    for entry in list(reversed(entries))[:MAX_LISTED]:
        lines.append(f"  {'*' if entry['handle'] == handle else '-'} {entry_label(entry, now or 0.0)}")
    if len(entries) > MAX_LISTED:
        lines.append(f"  … {len(entries) - MAX_LISTED:,} more")
    lines.append(f"(a static summary: run the notebook and `{_again(handle)}` for the live explorer)")
    return "\n".join(lines)


def summary_html(pad: Any, handle: str | None) -> str:
    """The same summary as a compact HTML card (carries the explorer's CSS class)."""
    entries, budget, now = _facts(pad)
    items = "".join(
        f"<li>{'<b>' if e['handle'] == handle else ''}{esc(entry_label(e, now or 0.0))}"
        f"{'</b>' if e['handle'] == handle else ''}</li>"
        for e in list(reversed(entries))[:MAX_LISTED])
    more = f"<li>… {len(entries) - MAX_LISTED:,} more</li>" if len(entries) > MAX_LISTED else ""
    listing = f"<ul style='margin:2px 0'>{items}{more}</ul>" if entries else "<p>No live spilled entries.</p>"
    return (f"<div class='jp-scratchpad-explorer-summary' style='border:1px solid #ccc;padding:6px;"
            f"border-radius:4px'><b>Scratchpad explorer</b> <small>run {esc(pad.run_id)} · agent "
            f"{esc(pad.agent_id)} · model {esc(pad.model)}</small><br><small>exploring: "
            f"<code>{esc(handle or '(nothing selected)')}</code></small><br><small>{esc(budget)}</small>"
            f"{listing}<small><i>A static summary: run the notebook and <code>{esc(_again(handle))}</code> "
            f"for the live explorer.</i></small></div>")
