"""The Iterate tab: chosen fields of an array's items as a table, one ``iterate_over`` call a page."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ._base import Host, PagedView, button, clamp, int_box, row

__all__ = ["IterateTab"]

DEFAULT_PAGE_ROWS = 20
MAX_PAGE_ROWS = 500


class IterateTab:
    """Path, fields, offset and page size; Prev/Next fetch the neighbouring page."""

    title: str = "Iterate"
    tools: tuple[str, ...] = ("iterate_over",)

    def __init__(self, host: Host) -> None:
        self.host = host
        g = host.guard
        self.path = w.Combobox(value="$", options=[], placeholder="$.items", description="path",
                               ensure_option=False, style={"description_width": "initial"},
                               layout=w.Layout(width="280px"))
        self.fields = w.Text(value="", placeholder="metadata.name,status.phase", description="fields",
                             style={"description_width": "initial"}, layout=w.Layout(width="360px"))
        self.offset = int_box("offset", 0, 0, 10**12)
        self.limit = int_box("rows", DEFAULT_PAGE_ROWS, 1, MAX_PAGE_ROWS, width="120px")
        self.show_button = button("Show", "the rows from offset (iterate_over)", icon="table", style="primary")
        self.prev_button = button("Prev", "the page before", icon="chevron-left")
        self.next_button = button("Next", "the page after", icon="chevron-right")
        self.show_button.on_click(g(self.run))
        self.prev_button.on_click(g(self.run_prev))
        self.next_button.on_click(g(self.run_next))
        # One call fetches exactly one page, so the view never pages by itself.
        self.view = PagedView(g, page_size=MAX_PAGE_ROWS)
        self.box = w.VBox([row(self.path, self.fields),
                           row(self.offset, self.limit, self.show_button, self.prev_button, self.next_button),
                           self.view.box])
        self.rows: list[dict[str, Any]] | None = None
        self.page_offset = 0
        self._set_paging()

    def reset(self) -> None:
        self.rows = None
        self.offset.value = 0
        self.path.options = []
        self.view.clear()
        self._set_paging()

    def set_paths(self, paths: list[str]) -> None:
        """The array paths the Schema tab found: offered here, the first one chosen if none was."""
        self.path.options = paths
        if self.path.value in ("", "$") and paths and paths[0] != "$":
            self.path.value = paths[0]

    def fill(self, tool: str, arguments: dict[str, Any]) -> str:
        if "path" in arguments:
            self.path.value = str(arguments["path"])
        fields = arguments.get("fields")
        if isinstance(fields, list):
            fields = ",".join(map(str, fields))
        if fields is not None:
            self.fields.value = str(fields)
        self.offset.value = clamp(arguments.get("offset", 0), self.offset)
        if "limit" in arguments:
            self.limit.value = clamp(arguments["limit"], self.limit)
        return self.show_button.description

    def run(self, _: Any = None) -> None:
        handle = self.host.handle
        if handle is None:
            self.host.note("Pick an entry first.", "warn")
            return
        fields = self.fields.value.strip()
        if not fields:
            # The dispatcher refuses a call without fields before the tool can suggest any.
            self.host.note("Name the fields to show (comma-separated dot paths, e.g. metadata.name,status); "
                           "Schema → Item schema lists the keys of the items.", "warn")
            return
        offset, limit = int(self.offset.value), int(self.limit.value)
        result = self.host.call("iterate_over", {"handle": handle, "path": self.path.value.strip() or "$",
                                                 "fields": fields, "offset": offset, "limit": limit})
        if result is None:
            return
        self.rows = rows = list(result.data)
        self.page_offset = offset
        columns = ["_index", *[f.strip() for f in fields.split(",") if f.strip()]]
        if rows:
            summary = f"items {offset:,}-{offset + len(rows) - 1:,} · {result.tokens:,} tokens"
        else:
            summary = f"no items at offset {offset:,} · {result.tokens:,} tokens"
        self.view.show_table(columns, [[r.get(c) for c in columns] for r in rows], summary)
        self._set_paging()

    def run_prev(self, _: Any = None) -> None:
        self.offset.value = max(0, self.page_offset - int(self.limit.value))
        self.run()

    def run_next(self, _: Any = None) -> None:
        self.offset.value = self.page_offset + len(self.rows or [])
        self.run()

    def _set_paging(self) -> None:
        self.prev_button.disabled = self.rows is None or self.page_offset <= 0
        # iterate_over's data does not carry the item count: a short page is the last one.
        self.next_button.disabled = self.rows is None or len(self.rows) < int(self.limit.value)
