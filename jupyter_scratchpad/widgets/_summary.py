"""The explorer as static text, HTML and data: what shows where no kernel renders the widget.

A saved notebook on GitHub, nbviewer, or VS Code before its kernel starts cannot draw a widget
view; they fall back to ``text/html`` or ``text/plain``. JupyterLab with this package's
extension reads ``application/vnd.jupyter.scratchpad.explorer+json`` instead: the live explorer
when the kernel still has it, else this summary (never "model not found"). The summary names the
run, the budget and the live handles, and says how to get the explorer back. It never raises: a
closed store gives a summary that says so.
"""

from __future__ import annotations

import sys
from typing import Any

from ._render import entry_label, esc

__all__ = [
    "EXPLORER_MIME",
    "MAX_LISTED",
    "closed_store_message",
    "meter_state",
    "meter_text",
    "summary_html",
    "summary_payload",
    "summary_text",
]

EXPLORER_MIME = "application/vnd.jupyter.scratchpad.explorer+json"
MAX_LISTED = 20


def meter_state(pad: Any) -> dict[str, Any]:
    """The numbers the budget meter shows: the pad's budget and usage, in one dict."""
    budget = pad.budget
    usage = pad.usage()
    return {
        "used": budget.used,
        "usable": budget.usable,
        "remaining": budget.remaining,
        "context_window": budget.context_window,
        "per_call_limit": budget.max_extraction_tokens,
        "tokens_intercepted": usage.get("tokens_intercepted", 0),
        "tokens_extracted": usage.get("tokens_extracted", 0),
        "spills": pad.spill_count,
        "model": pad.model,
    }


def meter_text(state: dict[str, Any]) -> str:
    """``"used 3,414 / 102,400 usable tokens (3.3%) · 98,986 left · … · intercepted … · extracted …"``."""
    share = 100.0 * state["used"] / state["usable"] if state["usable"] else 100.0
    return (
        f"used {state['used']:,} / {state['usable']:,} usable tokens ({share:.1f}%) · "
        f"{state['remaining']:,} left · ≤ {state['per_call_limit']:,} a call · "
        f"intercepted {state['tokens_intercepted']:,} · extracted {state['tokens_extracted']:,}"
    )


def closed_store_message(pad: Any, handle: str | None = None) -> str | None:
    """What to do about ``pad``'s store being closed, in a notebook's words when the extension
    closed it (``%unload_ext``/``%reload_ext``, a ``store_path`` change: "open a new ScratchStore"
    is advice for the Python API); None when the store is open or not the extension's."""
    if not pad.store.closed:
        return None
    ext = sys.modules.get("jupyter_scratchpad.ipython._session")  # (never imported from here)
    how = ext.store_closed_by(pad.store) if ext is not None else None
    if ext is None or how is None:
        return None
    session = ext.get_session()
    if session is None or session.closed:
        return (
            "this explorer's store was closed by %unload_ext jupyter_scratchpad: run %load_ext "
            "jupyter_scratchpad, then %scratch explore for an explorer of the new store"
        )
    try:
        again = f"%scratch explore {handle}" if handle and session.pad.stub(handle) else "%scratch explore"
    except Exception:  # (not in the current store)
        again = "%scratch explore"
    if how == ext.SWITCH:
        what = "when ScratchMagics.store_path (or store_url) changed"
    else:
        what = "when jupyter_scratchpad was reloaded (%reload_ext, or %unload_ext then %load_ext)"
    return f"this explorer's store was closed {what}: run {again} for an explorer of the current store"


def _facts(pad: Any) -> tuple[list[dict[str, Any]], str, float | None]:
    """``(entries, budget line, now)``; on any failure, no entries and a line that says why."""
    closed = closed_store_message(pad)
    if closed is not None:
        return [], f"({closed})", None
    try:
        entries = pad.entries("handle")
        return entries, "budget: " + meter_text(meter_state(pad)), pad.store.now()
    except Exception as exc:
        return [], f"(the store cannot be read: {type(exc).__name__}: {exc})", None


def _again(handle: str | None) -> str:
    return f"%scratch explore {handle}" if handle else "%scratch explore"


def _lines(pad: Any, handle: str | None) -> tuple[list[str], list[str], str]:
    entries, budget, now = _facts(pad)
    listed = [
        ("*" if e["handle"] == handle else "-", entry_label(e, now or 0.0))
        for e in list(reversed(entries))[:MAX_LISTED]
    ]
    more = f"… {len(entries) - MAX_LISTED:,} more" if len(entries) > MAX_LISTED else ""
    head = [
        f"Scratchpad explorer — run {pad.run_id} · agent {pad.agent_id} · model {pad.model}",
        f"exploring: {handle or '(nothing selected)'}",
        budget,
        f"{len(entries):,} live spilled {'entry' if len(entries) == 1 else 'entries'}" + (":" if entries else ""),
    ]
    items = [f"{mark} {label}" for mark, label in listed] + ([more] if more else [])
    again = _again(None if now is None and pad.store.closed else handle)  # (a closed store's handle may be gone)
    return head, items, f"(a static summary: run the notebook and `{again}` for the live explorer)"


def summary_text(pad: Any, handle: str | None) -> str:
    """A few plain lines: run, budget, the live handles (newest first), how to reopen the explorer."""
    head, items, again = _lines(pad, handle)
    return "\n".join([*head, *("  " + item for item in items), again])


def summary_html(pad: Any, handle: str | None) -> str:
    """The same summary as a compact HTML card (carries the explorer's CSS class)."""
    head, items, again = _lines(pad, handle)
    listing = "".join(f"<li>{esc(item)}</li>" for item in items)
    return (
        f"<div class='jp-scratchpad-explorer-summary' style='border:1px solid #ccc;padding:6px;"
        f"border-radius:4px'><b>{esc(head[0])}</b><br><small>{esc(head[1])}</small><br>"
        f"<small>{esc(head[2])}</small><br><small>{esc(head[3])}</small>"
        f"<ul style='margin:2px 0'>{listing}</ul><small><i>{esc(again)}</i></small></div>"
    )


def summary_payload(pad: Any, handle: str | None, model_id: str | None) -> dict[str, Any]:
    """The summary as data for JupyterLab's renderer, with the widget's model id."""
    head, items, again = _lines(pad, handle)
    return {"model_id": model_id or "", "handle": handle, "title": head[0], "lines": head[1:] + items, "again": again}
