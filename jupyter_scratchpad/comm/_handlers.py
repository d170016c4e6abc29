"""What the kernel does for each request: one small function per type, over a ``Scratchpad``.

>>> reply = handle_request(pad, {"protocol": "1.0", "id": "r1", "type": "budget"})
>>> reply["ok"], sorted(reply["result"])[:3]
(True, ['context_window', 'max_extraction_tokens', 'model'])

Every failure becomes an error reply: a request never raises into the kernel.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .._pad import Scratchpad
from .._version import __version__
from ..errors import InvalidArgumentError, NotFoundError, ScratchpadError
from ..store import Entry
from ._protocol import PROTOCOL_VERSION, ProtocolError, check_request, error_reply, ok_reply

__all__ = ["MAX_LISTED_ENTRIES", "entry_summary", "handle_request", "hello_result", "note_summary"]

log = logging.getLogger("jupyter_scratchpad.comm")

# A sidebar shows a few hundred rows at most; the reply says how many there were in all.
MAX_LISTED_ENTRIES = 500


def hello_result(pad: Scratchpad) -> dict[str, Any]:
    """Who is at the kernel end: versions and the pad's scope."""
    return {
        "protocol": PROTOCOL_VERSION,
        "package_version": __version__,
        "run_id": pad.run_id,
        "agent_id": pad.agent_id,
        "model": pad.model,
    }


def _times(entry: Entry, now: float) -> dict[str, float]:
    return {
        "created_at": entry.created_at,
        "expires_at": entry.expires_at,
        "ttl_left_s": max(0.0, entry.expires_at - now),
    }


def entry_summary(entry: Entry, now: float) -> dict[str, Any]:
    """One spilled output as the sidebar lists it (no body, no preview)."""
    return {
        "handle": entry.key,
        "source_tool": entry.source_tool,
        "server": entry.server,
        "format": entry.format,
        "size": entry.size_bytes,
        "lines": entry.line_count,
        "tokens": entry.tokens,
        **_times(entry, now),
    }


def note_summary(entry: Entry, now: float) -> dict[str, Any]:
    """One note: its key, size and a short preview of its value."""
    preview = entry.preview if entry.preview is not None else (entry.value_json or "")
    return {
        "key": entry.key,
        "size": entry.size_bytes,
        "preview": preview[:200],
        **_times(entry, now),
    }


def _list(pad: Scratchpad, request: dict[str, Any]) -> dict[str, Any]:
    now = pad.store.now()
    handles = pad.store.entries(pad.scope, "handle")
    notes = pad.store.entries(pad.scope, "note")
    # Newest first: the spill a user just made is what they look for.
    handles.sort(key=lambda e: e.created_at, reverse=True)
    notes.sort(key=lambda e: e.key)
    return {
        "now": now,
        "total_entries": len(handles),
        "total_notes": len(notes),
        "entries": [entry_summary(e, now) for e in handles[:MAX_LISTED_ENTRIES]],
        "notes": [note_summary(e, now) for e in notes[:MAX_LISTED_ENTRIES]],
    }


def _budget(pad: Scratchpad, request: dict[str, Any]) -> dict[str, Any]:
    usage = pad.usage()
    budget = pad.budget
    return {
        "model": pad.model,
        "context_window": budget.context_window,
        "usable": budget.usable,
        "used": budget.used,
        "remaining": budget.remaining,
        "max_extraction_tokens": budget.max_extraction_tokens,
        "safety_margin": budget.safety_margin,
        "tokens_intercepted": usage["tokens_intercepted"],
        "tokens_extracted": usage["tokens_extracted"],
        "spills": pad.spill_count,
    }


def _stub(pad: Scratchpad, request: dict[str, Any]) -> dict[str, Any]:
    return {"stub": pad.stub(request["handle"])}


def _target(request: dict[str, Any]) -> tuple[str, str]:
    return ("handle", request["handle"]) if "handle" in request else ("note", request["key"])


def _refresh_explorers() -> None:
    """Refresh the open explorers, as the kernel does after each cell: a handle deleted or
    extended from the sidebar (no cell ran) must not stay in an explorer's picker."""
    try:
        from ..widgets import refresh_all
    except ImportError:  # no anywidget: no explorer is open
        return
    refresh_all()


def _delete(pad: Scratchpad, request: dict[str, Any]) -> dict[str, Any]:
    kind, key = _target(request)
    deleted = pad.store.delete_entry(pad.scope, kind, key)
    _refresh_explorers()
    return {"kind": kind, "key": key, "deleted": deleted}


def _extend(pad: Scratchpad, request: dict[str, Any]) -> dict[str, Any]:
    kind, key = _target(request)
    now = pad.store.now()
    ttl_s = request.get("ttl_s") or pad.store.ttl_s
    entry = pad.store.get_entry(pad.scope, kind, key)
    # "Extend" keeps an entry longer: an expiry already later than now + ttl_s is left as it is.
    if entry is None or entry.expires_at < now + ttl_s:
        entry = pad.store.touch(pad.scope, kind, key, ttl_s)
    _refresh_explorers()
    return {
        "kind": kind,
        "key": key,
        "expires_at": entry.expires_at,
        "ttl_left_s": entry.expires_at - now,
    }


def _explore(pad: Scratchpad, request: dict[str, Any]) -> dict[str, Any]:
    """The explorer a JupyterLab panel shows: one per pad, moved to ``handle`` when one is given."""
    from ..widgets import Explorer, open_explorers

    handle = request.get("handle")
    if handle is not None:
        pad.entry(handle)  # NotFoundError: a not_found reply naming it
    for explorer in open_explorers():
        if explorer.pad is pad and getattr(explorer, "in_panel", False):
            explorer.refresh(prefer=handle)
            break
    else:
        explorer = Explorer(pad, handle=handle)
        explorer.in_panel = True
    return {"model_id": explorer.model_id, "handle": explorer.handle}


def _explorer(pad: Scratchpad, request: dict[str, Any]) -> dict[str, Any]:
    """Whether an explorer (a saved output's model id) is still alive in this kernel."""
    try:
        from ..widgets import live_explorer
    except ImportError:  # no anywidget: no explorer can be alive
        found = None
    else:
        found = live_explorer(request["model_id"])
    return {"model_id": request["model_id"], "live": found is not None, "handle": found.handle if found else None}


_HANDLERS: dict[str, Callable[[Scratchpad, dict[str, Any]], dict[str, Any]]] = {
    "hello": lambda pad, _request: hello_result(pad),
    "list": _list,
    "budget": _budget,
    "stub": _stub,
    "delete": _delete,
    "extend": _extend,
    "explore": _explore,
    "explorer": _explorer,
}


def handle_request(pad: Scratchpad | None, message: object) -> dict[str, Any]:
    """The reply to one request (``pad`` None: the extension was unloaded)."""
    try:
        request = check_request(message)
    except ProtocolError as exc:
        return error_reply(message, exc.code, exc.message)
    except Exception:  # a check that failed on a value it did not foresee: never past the comm
        log.exception("checking a scratchpad request failed")
        return error_reply(message, "invalid_request", "the request could not be read")
    if pad is None:
        return error_reply(
            request,
            "not_loaded",
            "jupyter_scratchpad is not loaded in this kernel: run %load_ext jupyter_scratchpad",
        )
    try:
        return ok_reply(request, _HANDLERS[request["type"]](pad, request))
    except NotFoundError as exc:
        return error_reply(request, "not_found", str(exc))
    except InvalidArgumentError as exc:
        return error_reply(request, "invalid_request", str(exc))
    except ScratchpadError as exc:
        log.error("scratchpad request %s failed: %s", request["type"], exc)
        return error_reply(request, "internal_error", f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # a bug must not reach the kernel's comm manager
        log.exception("scratchpad request %s crashed", request["type"])
        return error_reply(request, "internal_error", f"{type(exc).__name__}: {exc}")
