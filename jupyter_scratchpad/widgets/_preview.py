"""The Preview tab: head, tail and line-range paging (``head`` / ``tail`` / ``slice``)."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ._base import Host, PagedView, button, clamp, int_box, row

__all__ = ["PreviewTab"]

DEFAULT_LINES = 50
MAX_LINES = 10_000  # the per-call token cap refuses long pages anyway; this bounds the form
MAX_LINE_NO = 10**12  # within what a browser number holds exactly


class PreviewTab:
    """Numbered lines of the entry, one call per page."""

    title: str = "Preview"
    tools: tuple[str, ...] = ("head", "tail", "slice")

    def __init__(self, host: Host) -> None:
        self.host = host
        g = host.guard
        self.lines = int_box("lines", DEFAULT_LINES, 1, MAX_LINES)
        self.start = int_box("from line", 1, 1, MAX_LINE_NO, width="190px")
        self.head_button = button("Head", "the first `lines` lines (head)", icon="arrow-up")
        self.tail_button = button("Tail", "the last `lines` lines (tail)", icon="arrow-down")
        self.range_button = button("Show range", "`lines` lines from `from line` (slice)", icon="eye")
        self.prev_button = button("Prev", "the page before (slice)", icon="chevron-left")
        self.next_button = button("Next", "the page after (slice)", icon="chevron-right")
        self.head_button.on_click(g(self.run_head))
        self.tail_button.on_click(g(self.run_tail))
        self.range_button.on_click(g(self.run_range))
        self.prev_button.on_click(g(self.run_prev))
        self.next_button.on_click(g(self.run_next))
        # The lines come one call per page, so the view itself never pages.
        self.view = PagedView(g, page_size=MAX_LINES)
        self.box = w.VBox([
            row(self.lines, self.head_button, self.tail_button, self.start, self.range_button),
            row(self.prev_button, self.next_button), self.view.box])
        self.shown: dict[str, Any] | None = None  # data of the page on screen
        self._set_paging()

    def reset(self) -> None:
        self.shown = None
        self.start.value = 1
        self.view.clear()
        self._set_paging()

    def fill(self, tool: str, arguments: dict[str, Any]) -> str:
        """Put a suggested ``head``/``tail``/``slice`` call in the form; returns the button to press."""
        if tool == "slice":
            start = clamp(arguments.get("start", 1), self.start)
            end = int(arguments.get("end", start + DEFAULT_LINES - 1))
            self.start.value = start
            self.lines.value = clamp(end - start + 1, self.lines)
            return self.range_button.description
        self.lines.value = clamp(arguments.get("lines", DEFAULT_LINES), self.lines)
        return (self.tail_button if tool == "tail" else self.head_button).description

    def run_head(self, _: Any = None) -> None:
        self._show("head", {"lines": int(self.lines.value)})

    def run_tail(self, _: Any = None) -> None:
        self._show("tail", {"lines": int(self.lines.value)})

    def run_range(self, _: Any = None) -> None:
        start = int(self.start.value)
        self._show("slice", {"start": start, "end": start + int(self.lines.value) - 1})

    def run_prev(self, _: Any = None) -> None:
        first = self.shown["start"] if self.shown else 1
        self.start.value = max(1, first - int(self.lines.value))
        self.run_range()

    def run_next(self, _: Any = None) -> None:
        after = self.shown["end"] + 1 if self.shown else 1
        self.start.value = clamp(after, self.start)
        self.run_range()

    def _show(self, tool: str, arguments: dict[str, Any]) -> None:
        handle = self.host.handle
        if handle is None:
            self.host.note("Pick an entry first.", "warn")
            return
        result = self.host.call(tool, {"handle": handle, **arguments})
        if result is None:
            return
        data = result.data
        self.shown = data
        total = int(data.get("total_lines") or 0)
        if data["lines"]:
            self.start.value = clamp(data["start"], self.start)
            summary = f"lines {data['start']:,}-{data['end']:,} of {total:,} · {result.tokens:,} tokens"
        else:
            summary = f"no lines ({total:,} in the entry)"
        self.view.show_lines(data["lines"], data["start"], summary=summary)
        self._set_paging()

    def _set_paging(self) -> None:
        data = self.shown
        self.prev_button.disabled = not data or data["start"] <= 1
        self.next_button.disabled = not data or data["end"] >= int(data.get("total_lines") or 0)
