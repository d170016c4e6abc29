"""``Explorer``: the scratch store of one pad, explored with stock ipywidgets.

>>> # from jupyter_scratchpad.widgets import Explorer
>>> # Explorer(pad, handle="list_pods_3f2a9c1b0d4e")      # displays itself as a cell's value

Every action is one ``pad.call_tool`` call, charged to the pad's budget like an agent's call;
the meter shows the budget after each. Refusals come with their suggestions as buttons that
fill the right form in. A callback never raises: what goes wrong is shown in the notice area.
Saved without its kernel, the output still reads: the MIME bundle carries a text and an HTML
summary next to the widget view.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from .._pad import Scratchpad
from ..errors import NotFoundError
from ..store import validate_handle
from ..tools import ToolResult
from ._base import Form, guarded
from ._grep import GrepTab
from ._iterate import IterateTab
from ._meter import BudgetMeter
from ._notice import Notice
from ._picker import EntryPicker
from ._preview import PreviewTab
from ._schema_tab import SchemaTab
from ._sql_tab import SqlTab
from ._summary import summary_html, summary_text

__all__ = ["CSS_CLASS", "Explorer", "refresh_all"]

log = logging.getLogger("jupyter_scratchpad.widgets")

CSS_CLASS = "jp-scratchpad-explorer"  # the JupyterLab browser test finds the explorer by it: keep it
DEFAULT_POLL_S = 2.0

_LIVE: weakref.WeakSet[Explorer] = weakref.WeakSet()


def refresh_all() -> int:
    """Refresh every open explorer (e.g. after each cell); returns how many were refreshed."""
    done = 0
    for explorer in list(_LIVE):
        if not explorer.closed and not explorer.pad.store.closed:
            done += explorer.refresh()
    return done


class Explorer(w.VBox):
    """An entry picker, a budget meter, a notice, and the Preview / Schema / Grep / Iterate / SQL tabs.

    ``poll_interval_s`` (default 2 s; None for no thread) looks for new spills in the background;
    ``refresh()`` does the same at once. ``close()`` stops the polling and closes every part.
    """

    def __init__(self, pad: Scratchpad, handle: str | None = None, *,
                 poll_interval_s: float | None = DEFAULT_POLL_S) -> None:
        if not isinstance(pad, Scratchpad):
            raise TypeError(f"Explorer needs a Scratchpad (store.scratchpad(...)), not {type(pad).__name__}")
        if handle is not None:
            validate_handle(handle)
            if pad.store.get_entry(pad.scope, "handle", handle) is None:
                live = [e["handle"] for e in pad.entries("handle")]
                raise NotFoundError(f"no live handle {handle!r} in run {pad.run_id!r}; live handles: "
                                    f"{', '.join(live[-10:]) or 'none'}", handle=handle)
        if poll_interval_s is not None and poll_interval_s <= 0:
            raise ValueError(f"poll_interval_s must be positive or None, not {poll_interval_s!r}")
        self.pad = pad
        self._lock = threading.RLock()  # the poller and the user's clicks take turns
        self._closed = False
        self.meter = BudgetMeter()
        self.notice = Notice(self.apply_suggestion, self.guard)
        self.picker = EntryPicker(pad, self._entry_changed, self.guard)
        self.picker.refresh_button.on_click(self.guard(self._refresh_clicked))
        self.preview = PreviewTab(self)
        self.iterate = IterateTab(self)
        self.schema = SchemaTab(self, self.iterate.set_paths)
        self.grep = GrepTab(self)
        self.sql = SqlTab(self)
        self.tabs_list: list[Form] = [self.preview, self.schema, self.grep, self.iterate, self.sql]
        self.tab = w.Tab(children=[t.box for t in self.tabs_list])
        self.tab.titles = tuple(t.title for t in self.tabs_list)
        self._tab_for = {tool: (i, t) for i, t in enumerate(self.tabs_list) for tool in t.tools}
        title = w.HTML(f"<b>Scratchpad explorer</b> <small>run {pad.run_id} · agent {pad.agent_id} · "
                       f"model {pad.model}</small>")
        # The notice sits above the tabs: a refusal must be seen next to the form, not under a long page.
        super().__init__([title, self.picker.box, self.meter.box, self.notice.box, self.tab])
        self.add_class(CSS_CLASS)
        self.results: list[ToolResult] = []  # every call made from this explorer, in order
        self.picker.refresh(prefer=handle)
        self.sql.set_relations(list(self.picker.entries.values()))
        if self.handle is not None:
            self.sql.select_relation(self.handle)
        self.meter.update(pad)
        self._poller = _Poller(self, poll_interval_s) if poll_interval_s else None
        _LIVE.add(self)

    # -- what the tabs call -------------------------------------------------------------------

    @property
    def handle(self) -> str | None:
        """The handle being explored (None when the run has no spills yet)."""
        return self.picker.value

    @property
    def closed(self) -> bool:
        return self._closed

    def guard(self, fn: Callable[..., Any]) -> Callable[..., None]:
        """``fn`` as a callback: under the explorer's lock (the poller waits its turn), never raising."""

        def locked(*args: Any, **kwargs: Any) -> None:
            with self._lock:
                fn(*args, **kwargs)

        locked.__name__ = getattr(fn, "__name__", "callback")
        return guarded(self.notice.exception, locked)

    def note(self, text: str, kind: str = "info") -> None:
        self.notice.info(text, kind)

    def call(self, tool: str, arguments: dict[str, Any], *, quiet: bool = False) -> ToolResult | None:
        """One tool call through the pad: charged, metered, its refusal shown with suggestions."""
        with self._lock:
            self.notice.clear()
            result = self.pad.call_tool(tool, arguments)
            self.results.append(result)
            self.meter.update(self.pad, result)
            if result.ok:
                return result
            error = result.error or {}
            if error.get("error") == "unknown_handle":
                self.refresh()
            if not quiet:
                self.notice.refusal(error, self._tab_for.keys() | {"scratch_list"})
            return None

    # -- suggestions, selection, refresh -------------------------------------------------------

    def apply_suggestion(self, suggestion: dict[str, Any]) -> None:
        """Put a refusal's suggested call in the form of the tab that runs it, and show that tab."""
        tool = suggestion.get("tool")
        arguments = dict(suggestion.get("arguments") or {})
        if tool == "scratch_list":
            self.refresh()
            self.notice.show_filled(suggestion, "the entry list (refreshed)")
            return
        if tool not in self._tab_for:
            self.note(f"There is no form for {tool}; run it with pad.call_tool: {suggestion.get('call')}", "warn")
            return
        handle = arguments.pop("handle", None) or arguments.pop("file", None)
        if handle and handle != self.handle:
            self.select(str(handle))
        index, tab = self._tab_for[tool]
        pressed = tab.fill(str(tool), arguments)
        self.tab.selected_index = index
        self.notice.show_filled(suggestion, f"{tab.title} (press {pressed})")

    def select(self, handle: str) -> None:
        """Explore ``handle`` (a live handle of this pad)."""
        self.picker.refresh(prefer=handle)
        if self.handle != handle:
            raise NotFoundError(f"no live handle {handle!r} in run {self.pad.run_id!r}", handle=handle)

    def refresh(self) -> bool:
        """Look for new or vanished spills; update the picker, the relations and the meter.

        Safe to call after every cell: it never raises (a failure, such as a closed store, is
        shown in the explorer and gives False).
        """
        try:
            with self._lock:
                self._refresh_unlocked()
        except Exception as exc:
            log.warning("refreshing the explorer failed: %s", exc)
            self.notice.exception(exc, "refreshing the entries")
            return False
        return True

    def _refresh_clicked(self, _: Any) -> None:
        if self.refresh():
            self.note(f"{len(self.picker.entries):,} live entries.", "ok")

    def _refresh_unlocked(self) -> None:
        self.picker.refresh()
        self.sql.set_relations(list(self.picker.entries.values()))
        self.meter.update(self.pad)

    def poll(self) -> None:
        """What the background thread runs: a refresh, skipped while a call is in progress."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self._refresh_unlocked()
        finally:
            self._lock.release()

    def _entry_changed(self, handle: str | None, vanished: str | None) -> None:
        for tab in self.tabs_list:
            tab.reset()
        if handle is not None:
            self.sql.select_relation(handle)
        if vanished:
            now = f"; now exploring {handle}" if handle else ""
            self.note(f"{vanished} is no longer live (expired or deleted){now}.", "warn")

    # -- display and lifetime ------------------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget view, plus text and HTML summaries for a notebook shown without its kernel."""
        bundle = dict(super()._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = summary_text(self.pad, self.handle)
        bundle["text/html"] = summary_html(self.pad, self.handle)
        return bundle

    def close(self) -> None:
        """Stop polling and close every widget of the explorer."""
        # Also run by Widget.__del__, possibly on a half-built explorer.
        self._closed = True
        poller = getattr(self, "_poller", None)
        if poller is not None:
            poller.stop()
        _LIVE.discard(self)
        _close_tree(self)


def _close_tree(widget: w.Widget) -> None:
    for child in list(getattr(widget, "children", ()) or ()):
        _close_tree(child)
    for name in ("layout", "style"):
        part = getattr(widget, name, None)
        if isinstance(part, w.Widget):
            part.close()
    if isinstance(widget, Explorer):
        w.VBox.close(widget)
    else:
        widget.close()


class _Poller:
    """A daemon thread that refreshes one explorer every ``interval_s`` until it or its store closes."""

    def __init__(self, explorer: Explorer, interval_s: float) -> None:
        self._ref = weakref.ref(explorer)
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="scratchpad-explorer-poll", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            explorer = self._ref()
            if explorer is None or explorer.closed or explorer.pad.store.closed:
                return
            try:
                explorer.poll()
            except Exception:  # a failing poll must not kill the kernel's thread pool quietly either
                log.exception("the explorer's background refresh failed; polling stops")
                return
            finally:
                del explorer
