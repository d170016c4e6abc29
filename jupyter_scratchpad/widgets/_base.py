"""What every tab of the explorer shares: the host it calls through, and client-free pagers.

A tab never calls ``pad.call_tool`` itself: it asks its ``Host`` (the ``Explorer``), which charges
the budget, updates the meter and shows refusals with their suggestions. A pager keeps one tool
result in the kernel and sends the browser one page of it at a time; moving through pages costs
no tokens, because nothing new is read.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import ipywidgets as w

from ..tools import ToolResult
from ._render import esc, numbered_html, page_count, pre_html, table_html, windows_html

__all__ = ["Form", "Host", "PagedView", "button", "clamp", "guarded", "int_box", "row"]

log = logging.getLogger("jupyter_scratchpad.widgets")


class Host(Protocol):
    """What a tab needs from the explorer."""

    @property
    def handle(self) -> str | None: ...

    def call(self, tool: str, arguments: dict[str, Any], *, quiet: bool = False) -> ToolResult | None:
        """Run a tool through the pad; ``None`` when refused (the refusal is shown unless ``quiet``)."""

    def guard(self, fn: Callable[..., Any]) -> Callable[..., None]:
        """``fn`` wrapped so that an exception is shown in the explorer, never raised."""

    def note(self, text: str, kind: str = "info") -> None:
        """Show a short message in the explorer's notice area."""


class Form(Protocol):
    """A tab: its title, the tools whose suggested calls it can take, its widgets."""

    title: str
    tools: tuple[str, ...]
    box: Any

    def fill(self, tool: str, arguments: dict[str, Any]) -> str:
        """Put a suggested call's arguments in the form; returns the button that runs it."""

    def reset(self) -> None:
        """Another entry was picked: forget the results shown."""


def guarded(show: Callable[[BaseException, str], None], fn: Callable[..., Any]) -> Callable[..., None]:
    """``fn`` as a widget callback: an ``Exception`` is logged and handed to ``show``, not raised.

    A traitlets observer that raises would propagate into the kernel's comm handler, and a
    button handler's traceback would land in a random output area; both are worse than a
    message in the widget.
    """

    @functools.wraps(fn)
    def callback(*args: Any, **kwargs: Any) -> None:
        try:
            fn(*args, **kwargs)
        except Exception as exc:
            log.exception("explorer callback %s failed", getattr(fn, "__name__", fn))
            try:
                show(exc, getattr(fn, "__name__", "callback"))
            except Exception:  # the notice itself failed: the log above is all that is left
                log.exception("showing an explorer error failed")

    return callback


def button(description: str, tooltip: str = "", *, icon: str = "", style: str = "") -> w.Button:
    return w.Button(description=description, tooltip=tooltip or description, icon=icon, button_style=style,
                    layout=w.Layout(width="auto"))


def int_box(description: str, value: int, minimum: int, maximum: int, width: str = "150px") -> w.BoundedIntText:
    return w.BoundedIntText(value=value, min=minimum, max=maximum, description=description,
                            style={"description_width": "initial"}, layout=w.Layout(width=width))


def row(*children: w.Widget) -> w.HBox:
    return w.HBox(list(children), layout=w.Layout(flex_flow="row wrap", align_items="center", grid_gap="4px"))


def clamp(value: Any, box: w.BoundedIntText) -> int:
    """``value`` as an int within ``box``'s bounds (what a suggestion may put in a form)."""
    try:
        number = int(value)
    except (TypeError, ValueError):
        return int(box.value)
    return max(int(box.min), min(int(box.max), number))


class PagedView:
    """A tool result kept in the kernel, shown one page at a time under a page slider.

    Set it with ``show_lines`` (numbered lines), ``show_text`` (preformatted blocks) or
    ``show_table`` (rows); the slider appears when there is more than one page.
    """

    def __init__(self, guard: Callable[[Callable[..., Any]], Callable[..., None]], page_size: int) -> None:
        self.page_size = page_size
        self.caption = w.HTML()
        self.body = w.HTML()
        self.slider = w.IntSlider(value=1, min=1, max=1, description="page", continuous_update=False,
                                  layout=w.Layout(width="360px", display="none"))
        self.slider.observe(guard(self._on_page), names="value")
        self.box = w.VBox([row(self.slider, self.caption), self.body])
        self._render: Callable[[int, int], str] = lambda lo, hi: ""
        self._total = 0
        self._summary = ""

    @property
    def page(self) -> int:
        return int(self.slider.value)

    @property
    def pages(self) -> int:
        return int(self.slider.max)

    def clear(self, message: str = "") -> None:
        self._set(0, lambda lo, hi: "", message)

    def show_html(self, html_text: str, summary: str = "") -> None:
        """One block of already bounded HTML, no paging."""
        self._set(1, lambda lo, hi: html_text, summary)

    def show_lines(self, lines: Sequence[str], first: int = 1, marked: Sequence[int] = (), summary: str = "") -> None:
        self._set(len(lines), lambda lo, hi: numbered_html(lines[lo:hi], first + lo, marked), summary)

    def show_text(self, blocks: Sequence[str], summary: str = "", separator: str | None = None) -> None:
        """Blocks (lines, or grep windows) joined by newlines, or by a ``separator`` line."""
        joiner = "\n" if separator is None else f"\n{separator}\n"
        self._set(len(blocks), lambda lo, hi: pre_html(joiner.join(blocks[lo:hi])), summary)

    def show_windows(self, windows: Sequence[tuple[int, Sequence[str]]], marked: Sequence[int] = (),
                     summary: str = "") -> None:
        """Numbered line windows (``(first_line, lines)``), ``page_size`` windows a page."""
        self._set(len(windows), lambda lo, hi: windows_html(windows[lo:hi], marked), summary)

    def show_table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], summary: str = "") -> None:
        self._set(len(rows), lambda lo, hi: table_html(columns, rows[lo:hi]), summary)

    def _set(self, total: int, render: Callable[[int, int], str], summary: str) -> None:
        self._render, self._total, self._summary = render, total, summary
        pages = page_count(total, self.page_size)
        # Setting max below the current value moves the value (and fires _on_page): reset first.
        with self.slider.hold_trait_notifications():
            self.slider.value = 1
            self.slider.max = pages
        self.slider.layout.display = "flex" if pages > 1 else "none"
        self._draw()

    def _on_page(self, change: dict[str, Any]) -> None:
        self._draw()

    def _draw(self) -> None:
        lo = (self.page - 1) * self.page_size
        hi = min(self._total, lo + self.page_size)
        where = f" · page {self.page:,} of {self.pages:,}" if self.pages > 1 else ""
        self.caption.value = f"<span>{esc(self._summary)}{esc(where)}</span>" if self._summary or where else ""
        self.body.value = self._render(lo, hi)
