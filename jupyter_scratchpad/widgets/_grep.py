"""The Grep tab: one ``grep`` call, its match windows paged by a slider (no clicks, no new tokens)."""

from __future__ import annotations

import re
from typing import Any

import ipywidgets as w

from ._base import Host, PagedView, button, clamp, int_box, row
from ._render import strip_footer

__all__ = ["GrepTab", "parse_grep_windows"]

WINDOWS_PER_PAGE = 10
TEXT_PAGE_LINES = 200
_LINE = re.compile(r"([> ])\s*(\d+)\t(.*)", re.DOTALL)


def parse_grep_windows(text: str, expected: int) -> tuple[str, list[tuple[int, list[str]]]] | None:
    """``(note, [(first_line, lines), ...])`` from grep's text, or None if it does not read as expected.

    grep's data carries the window ranges and the matching lines but not the context lines,
    which only its text holds: ``{'>' or ' '}{n:>6}\\t{line}`` rows, ``--`` between windows,
    an optional ``Note: …`` first line. ``expected`` is the number of windows in its data.
    """
    body = strip_footer(text)
    note = ""
    if body.startswith("Note: "):
        note, _, body = body.partition("\n")
    windows: list[tuple[int, list[str]]] = []
    for block in body.split("\n--\n"):
        lines: list[str] = []
        first = None
        for raw in block.split("\n"):
            m = _LINE.fullmatch(raw)
            if m is None:
                return None
            first = int(m.group(2)) if first is None else first
            lines.append(m.group(3))
        if first is None:
            return None
        windows.append((first, lines))
    return (note, windows) if len(windows) == expected else None


class GrepTab:
    """Pattern, ignore-case, context, max matches; the windows around the matches, paged."""

    title: str = "Grep"
    tools: tuple[str, ...] = ("grep",)

    def __init__(self, host: Host) -> None:
        self.host = host
        g = host.guard
        self.pattern = w.Text(value="", placeholder="regex (RE2), e.g. error|failed", description="pattern",
                              style={"description_width": "initial"}, layout=w.Layout(width="360px"))
        self.ignore_case = w.Checkbox(value=False, description="ignore case", indent=False,
                                      layout=w.Layout(width="auto"))
        self.context = int_box("context", 3, 0, 50, width="120px")
        self.max_matches = int_box("max matches", 100, 1, 1000, width="170px")
        self.search_button = button("Search", "grep the entry", icon="search", style="primary")
        self.search_button.on_click(g(self.run))
        self.view = PagedView(g, page_size=WINDOWS_PER_PAGE)
        self.box = w.VBox([row(self.pattern, self.ignore_case, self.context, self.max_matches,
                               self.search_button), self.view.box])
        self.data: dict[str, Any] | None = None

    def reset(self) -> None:
        self.data = None
        self.view.clear()

    def fill(self, tool: str, arguments: dict[str, Any]) -> str:
        if "pattern" in arguments:
            self.pattern.value = str(arguments["pattern"])
        self.ignore_case.value = bool(arguments.get("ignore_case", self.ignore_case.value))
        self.context.value = clamp(arguments.get("context", self.context.value), self.context)
        self.max_matches.value = clamp(arguments.get("max_matches", self.max_matches.value), self.max_matches)
        return self.search_button.description

    def run(self, _: Any = None) -> None:
        handle = self.host.handle
        if handle is None:
            self.host.note("Pick an entry first.", "warn")
            return
        if not self.pattern.value:
            self.host.note("Type a pattern to search for.", "warn")
            return
        result = self.host.call("grep", {
            "handle": handle, "pattern": self.pattern.value, "context": int(self.context.value),
            "ignore_case": bool(self.ignore_case.value), "max_matches": int(self.max_matches.value)})
        if result is None:
            return
        self.data = data = result.data
        total = data["total_matches"]
        matched = [m["line"] for m in data["matches"]]
        summary = (f"{total:,}{'' if data.get('total_complete', True) else '+'} matching lines of "
                   f"{data['total_lines']:,}; {len(matched):,} shown · {result.tokens:,} tokens")
        if not matched:
            self.view.clear(f"No matches for {data['pattern']!r} in {data['total_lines']:,} lines · "
                            f"{result.tokens:,} tokens")
            if data.get("literal_fallback"):
                self.host.note("Not a valid RE2 regex: searched for the literal text.", "warn")
            return
        parsed = parse_grep_windows(result.text, len(data.get("windows") or []))
        if parsed is None:  # an unexpected text layout: show it as it is, paged by lines
            self.view.page_size = TEXT_PAGE_LINES
            self.view.show_text(strip_footer(result.text).split("\n"), summary)
            return
        note, windows = parsed
        self.view.page_size = WINDOWS_PER_PAGE
        if note:
            self.host.note(note, "warn")
        self.view.show_windows(windows, matched, summary)
