"""``Explorer``: one anywidget over one pad — one model, traitlets for state, messages for pages.

>>> # from jupyter_scratchpad.widgets import Explorer
>>> # Explorer(pad, handle="list_pods_3f2a9c1b0d4e")      # displays itself as a cell's value

State the browser shows is synced as traitlets (the entries, the selected handle, the budget,
the "as the model would see it" switch); pages travel as custom messages::

    browser → kernel  {"type": "request", "id": 7, "action": "grep", "args": {"pattern": "error"}}
    kernel → browser  {"type": "reply", "id": 7, "ok": true, "view": {"kind": "windows", ...}}
                      {"type": "reply", "id": 7, "ok": false, "error": {"error": ..., "suggestions": [...]}}

A handler never raises into the kernel: whatever goes wrong is a reply. Saved without its
kernel, the output still reads: the bundle carries a text and an HTML summary, and JupyterLab's
scratchpad extension shows that summary instead of "model not found".
"""

from __future__ import annotations

import logging
import weakref
from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from .._pad import Scratchpad
from ..errors import NotFoundError
from ..spill._progress import describe, how_far
from ..store import validate_handle
from ._actions import GREP_CONTEXT, GREP_PAGE, ActionError, run_action
from ._summary import EXPLORER_MIME, closed_store_message, meter_state, summary_html, summary_payload, summary_text

__all__ = ["CSS_CLASS", "ENTRY_PAGE", "RELATION_PAGE", "Explorer", "live_explorer", "open_explorers", "refresh_all"]

log = logging.getLogger("jupyter_scratchpad.widgets")

CSS_CLASS = "jp-scratchpad-explorer"  # the browser test finds the explorer by it: keep it
_HERE = Path(__file__).parent

# The synced state (and what a notebook saving widget state keeps) holds one page of the live
# entries and of the SQL relations, never all of them: 1,500 handles made 1.1 MB of widget state,
# sent again on every refresh. The rest are reached by ``entry_filter`` (the picker's search box).
ENTRY_PAGE = 20
RELATION_PAGE = 40

_LIVE: weakref.WeakValueDictionary[str, Explorer] = weakref.WeakValueDictionary()


def refresh_all() -> int:
    """Refresh every open explorer (the kernel runs this after each cell); how many were refreshed."""
    done = 0
    for explorer in list(_LIVE.values()):
        if explorer.refresh():
            done += 1
    return done


def open_explorers() -> list[Explorer]:
    """The explorers open in this kernel, oldest first."""
    return list(_LIVE.values())


def live_explorer(model_id: str) -> Explorer | None:
    """The open explorer with this widget model id, if any (the JupyterLab bridge asks)."""
    return _LIVE.get(model_id)


def _matches(entry: dict[str, Any], words: list[str]) -> bool:
    said = f"{entry['handle']} {entry.get('source_tool') or ''} {entry.get('format') or ''}".lower()
    return all(word in said for word in words)


def _page_entries(
    entries: list[dict[str, Any]], selected: str | None, text: str
) -> tuple[list[dict[str, Any]], int, int]:
    """``(page, matching, left out)``: the newest ``ENTRY_PAGE`` entries matching ``text`` (every
    word, in the handle, source tool or format), oldest first, the selected one always among them."""
    words = text.lower().split()
    found = [e for e in entries if _matches(e, words)] if words else entries
    page = found[-ENTRY_PAGE:]
    if selected and all(e["handle"] != selected for e in page):
        chosen = [e for e in entries if e["handle"] == selected]
        page = chosen + page[max(0, len(page) + len(chosen) - ENTRY_PAGE) :]
    return page, len(found), len(found) - sum(1 for e in page if e in found)


def _page_relations(
    relations: list[dict[str, Any]], handles: set[str], live: set[str], selected: str | None
) -> tuple[list[dict[str, Any]], int]:
    """The relations of the entries on the page (the selected one's first) and those of no handle
    (``scratch_notes``), at most ``RELATION_PAGE``; and how many relations were left out."""

    def owner(name: str) -> str:
        return name.split(".", 1)[0]

    kept = [
        {"name": r["name"], "format": r.get("format")}
        for r in relations
        if owner(str(r["name"])) in handles or owner(str(r["name"])) not in live
    ]
    kept.sort(key=lambda r: owner(str(r["name"])) != selected)  # (stable: the selected handle's first)
    return kept[:RELATION_PAGE], len(relations) - min(len(kept), RELATION_PAGE)


def _entry_row(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "handle": entry["handle"],
        "source_tool": entry.get("source_tool"),
        "format": entry.get("format"),
        "size": entry.get("size"),
        "lines": entry.get("lines"),
        "tokens": entry.get("tokens"),
        "created_at": entry["created_at"].timestamp(),
        "expires_at": entry["expires_at"].timestamp(),
    }


class Explorer(anywidget.AnyWidget):
    """The entries of a pad, a budget meter, and Preview / Schema / Grep / Iterate / SQL tabs.

    It reads as the person (nothing charged) until ``as_agent`` is set ("as the model would see
    it"): then every read is the model's tool call, capped and charged, shown as the model's text.
    """

    _esm = _HERE / "explorer.js"
    _css = _HERE / "explorer.css"

    handle = t.Unicode(None, allow_none=True, help="The handle being explored.").tag(sync=True)
    entries = t.List(
        t.Dict(), help="A page of the live spilled entries (the newest matching entry_filter), oldest first."
    ).tag(sync=True)
    entries_total = t.Int(0, help="How many live entries match entry_filter (the page shows the newest).").tag(
        sync=True
    )
    entries_left = t.Int(0, help="How many of those the page leaves out.").tag(sync=True)
    entry_filter = t.Unicode("", help="Words an entry's handle, source tool or format must hold.").tag(sync=True)
    relations = t.List(t.Dict(), help="What SQL can read, for the entries on the page: {name, format}.").tag(sync=True)
    relations_left = t.Int(0, help="Relations left out of the page (of other entries).").tag(sync=True)
    budget = t.Dict(help="The pad's budget and usage.").tag(sync=True)
    as_agent = t.Bool(False, help="Read as the model would: capped, charged, its text.").tag(sync=True)
    title = t.Unicode("", help="run · agent · model").tag(sync=True)
    defaults = t.Dict(help="Form defaults the page starts with.").tag(sync=True)
    progress = t.Dict(
        help="Long work the current request waits on (a first SQL load): {text, percent}; {} when none."
    ).tag(sync=True)

    def __init__(self, pad: Scratchpad, handle: str | None = None, **kwargs: Any) -> None:
        if not isinstance(pad, Scratchpad):
            raise TypeError(f"Explorer needs a Scratchpad (store.scratchpad(...)), not {type(pad).__name__}")
        if handle is not None:
            validate_handle(handle)
            if pad.store.get_entry(pad.scope, "handle", handle) is None:
                live = [e["handle"] for e in pad.entries("handle")]
                raise NotFoundError(
                    f"no live handle {handle!r} in run {pad.run_id!r}; live handles: {', '.join(live[-10:]) or 'none'}",
                    handle=handle,
                )
        super().__init__(**kwargs)
        self.pad = pad
        self.title = f"run {pad.run_id} · agent {pad.agent_id} · model {pad.model}"
        self.defaults = {
            "grep_context": GREP_CONTEXT,
            "grep_max": GREP_PAGE,
            "preview_lines": 50,
            "sql_page": 20,
            "iterate_rows": 20,
        }
        self.add_class(CSS_CLASS)
        self.results: list[dict[str, Any]] = []  # every reply sent, in order (what tests read back)
        self.refresh(prefer=handle)
        self.on_msg(self._on_message)
        self.observe(lambda _change: self.refresh(), names=["entry_filter"])
        _LIVE[self.model_id] = self

    # -- state ---------------------------------------------------------------------------------

    def refresh(self, prefer: str | None = None) -> bool:
        """Re-read the entries, relations and budget; keep (or pick) the selection. Never raises."""
        if self.pad.store.closed:
            return False
        try:
            entries = [_entry_row(e) for e in self.pad.entries("handle")]
            names = {e["handle"] for e in entries}
            target = prefer if prefer in names else self.handle if self.handle in names else None
            if target is None and entries:
                target = entries[-1]["handle"]  # the newest spill
            page, self.entries_total, self.entries_left = _page_entries(entries, target, self.entry_filter)
            if page != self.entries:
                relations = self.pad.sql_relations()
                shown = {e["handle"] for e in page}
                self.relations, self.relations_left = _page_relations(relations, shown, names, target)
                self.entries = page
            self.handle = target
            self.budget = meter_state(self.pad)
        except Exception:
            log.warning("refreshing the explorer failed", exc_info=True)
            return False
        return True

    # -- messages ------------------------------------------------------------------------------

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "request":
            return
        self._reply(self.handle_request(content))

    def handle_request(self, content: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request from the page (also what tests call directly)."""
        request_id = content.get("id")
        action = str(content.get("action") or "")
        found = content.get("args")
        args: dict[str, Any] = found if isinstance(found, dict) else {}
        if action == "refresh":
            self.refresh()
            return {"type": "reply", "id": request_id, "ok": True, "view": None}
        if action == "select":
            self.refresh(prefer=str(args.get("handle") or ""))
            return {"type": "reply", "id": request_id, "ok": self.handle == args.get("handle"), "view": None}
        closed = closed_store_message(self.pad, self.handle)
        if closed is not None:  # (the core's words, "open a new ScratchStore", are for the Python API)
            error = {"error": "store_closed", "message": closed, "suggestions": []}
            refused: dict[str, Any] = {"type": "reply", "id": request_id, "ok": False, "action": action, "error": error}
            self.results.append(refused)
            return refused
        try:
            # what this request starts (a first SQL load) reports here, not under the last cell
            with self.pad.progress_to([self._show_progress]):
                view = run_action(self.pad, action, self.handle, args, bool(self.as_agent))
            reply: dict[str, Any] = {"type": "reply", "id": request_id, "ok": True, "action": action, "view": view}
        except ActionError as exc:
            if exc.error.get("error") == "unknown_handle":
                self.refresh()
            reply = {"type": "reply", "id": request_id, "ok": False, "action": action, "error": exc.error}
        except Exception as exc:  # a bug of ours is shown in the explorer, never raised into the kernel
            log.exception("explorer action %s failed", action)
            reply = {
                "type": "reply",
                "id": request_id,
                "ok": False,
                "action": action,
                "error": {
                    "error": "internal_error",
                    "message": f"{type(exc).__name__}: {exc}. The explorer and the kernel keep working.",
                },
            }
        self.progress = {}
        self.budget = meter_state(self.pad)
        self.results.append(reply)
        return reply

    def _show_progress(self, event: dict[str, Any]) -> None:
        """A progress listener (the pad's ticker thread calls it): the line the page draws."""
        if event["phase"] == "done":
            self.progress = {}
            return
        self.progress = {"text": describe(event), "percent": how_far(event), "phase": event["phase"]}

    def _reply(self, reply: dict[str, Any]) -> None:
        try:
            self.send(reply)
        except Exception:  # the page went away mid-call
            log.debug("sending an explorer reply failed", exc_info=True)

    # -- display and lifetime ------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget view, a text and HTML summary, and the summary for JupyterLab without a kernel."""
        found = super()._repr_mimebundle_(**kwargs)
        data, metadata = found if isinstance(found, tuple) else (found or {}, {})
        data = dict(data)
        data["text/plain"] = summary_text(self.pad, self.handle)
        data["text/html"] = summary_html(self.pad, self.handle)
        data[EXPLORER_MIME] = summary_payload(self.pad, self.handle, self.model_id)
        return data, metadata

    def close(self) -> None:
        """Close the widget (its page shows nothing more); idempotent."""
        _LIVE.pop(getattr(self, "model_id", "") or "", None)
        super().close()
