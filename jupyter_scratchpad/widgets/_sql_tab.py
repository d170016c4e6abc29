"""The SQL tab: a query over the spilled relations, its result a paged table; relations beside it.

Paging wraps the query, ``SELECT * FROM (<query>) LIMIT page OFFSET k``, so each page is one
``sql`` call that returns one page. A first ``count(*)`` call over the same wrapping gives the
page count. A statement that cannot be wrapped (``SHOW``-like, several statements...) runs as it
is, limited to one page by ``max_rows``; a refused call costs nothing, so trying the wrap first
is free when it fails.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ._base import Host, PagedView, button, clamp, int_box, row
from ._render import esc, message_html, page_count, table_html

__all__ = ["SqlTab", "count_query", "page_query", "quote_ident"]

DEFAULT_PAGE_ROWS = 20
MAX_PAGE_ROWS = 500
NOTES_RELATION = "scratch_notes"


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _inner(query: str) -> str:
    # On lines of its own, so that a trailing "-- comment" cannot swallow the closing parenthesis.
    inner = query.strip()
    while inner.endswith(";"):
        inner = inner[:-1].rstrip()
    return inner


def count_query(query: str) -> str:
    return f"SELECT count(*) AS n FROM (\n{_inner(query)}\n) AS _scratch_q"


def page_query(query: str, limit: int, offset: int) -> str:
    return f"SELECT * FROM (\n{_inner(query)}\n) AS _scratch_q LIMIT {int(limit)} OFFSET {int(offset)}"


class SqlTab:
    """Query box, page size, Run / Prev / Next; the relations and their columns on the right."""

    title: str = "SQL"
    tools: tuple[str, ...] = ("sql",)

    def __init__(self, host: Host) -> None:
        self.host = host
        g = host.guard
        self.query = w.Textarea(value="", placeholder="SELECT status, count(*) FROM <handle> GROUP BY 1",
                                layout=w.Layout(width="100%", height="7em"))
        self.page_rows = int_box("rows per page", DEFAULT_PAGE_ROWS, 1, MAX_PAGE_ROWS, width="170px")
        self.run_button = button("Run", "run the query (sql)", icon="play", style="primary")
        self.prev_button = button("Prev", "the page before", icon="chevron-left")
        self.next_button = button("Next", "the page after", icon="chevron-right")
        self.status = w.HTML()
        self.run_button.on_click(g(self.run))
        self.prev_button.on_click(g(self.run_prev))
        self.next_button.on_click(g(self.run_next))
        self.relations = w.Select(options=[], rows=8, description="", layout=w.Layout(width="100%"))
        self.relations.observe(g(self._on_relation), names="value")
        self.describe_button = button("Columns", "list the columns of the chosen relation (DESCRIBE)",
                                      icon="columns")
        self.describe_button.on_click(g(self.describe))
        self.columns = w.HTML()
        self.view = PagedView(g, page_size=MAX_PAGE_ROWS)
        side = w.VBox([w.HTML("<b>relations</b>"), self.relations, self.describe_button, self.columns],
                      layout=w.Layout(width="34%", min_width="220px"))
        main = w.VBox([self.query, row(self.page_rows, self.run_button, self.prev_button, self.next_button,
                                       self.status), self.view.box], layout=w.Layout(width="66%"))
        self.box = w.HBox([main, side], layout=w.Layout(grid_gap="8px"))
        self._syncing = False
        self._columns: dict[str, list[dict[str, Any]]] = {}  # handles are content-addressed: cache by name
        self.ran_query: str | None = None
        self.total: int | None = None
        self.page = 0
        self._set_paging()

    # -- relations ----------------------------------------------------------------------------

    def set_relations(self, entries: list[dict[str, Any]]) -> None:
        """Offer one relation per live handle (and the notes), keeping the current choice."""
        options = [(f"{e['handle']} ({e.get('format') or '?'})", e["handle"]) for e in entries]
        options.append((f"{NOTES_RELATION} (notes)", NOTES_RELATION))
        if list(self.relations.options) == options:
            return
        keep = self.relations.value
        names = {value for _, value in options}
        live = {e["handle"] for e in entries}
        self._columns = {k: v for k, v in self._columns.items() if k in live or k == NOTES_RELATION}
        self._syncing = True  # the options change resets the value: only a real choice loads columns
        try:
            self.relations.options = options
            self.relations.value = keep if keep in names else None
        finally:
            self._syncing = False
        if self.relations.value is None:
            self.columns.value = ""

    def select_relation(self, name: str) -> None:
        if name in {value for _, value in self.relations.options}:
            self.relations.value = name

    def _on_relation(self, change: dict[str, Any]) -> None:
        name = change["new"]
        if self._syncing and name is not None:
            self._show_columns(name)
            return
        if name is None:
            self.columns.value = ""
            return
        if not self.query.value.strip():
            self.query.value = f"SELECT * FROM {quote_ident(name)}"
        self._show_columns(name)

    def _show_columns(self, name: str) -> None:
        cached = self._columns.get(name)
        self.columns.value = (self._columns_html(name, cached) if cached is not None else
                              message_html(f"Columns of {name}: press Columns (a DESCRIBE query, charged).",
                                           "info"))

    def describe(self, _: Any = None) -> None:
        name = self.relations.value
        if name is None:
            self.host.note("Choose a relation first.", "warn")
            return
        if name not in self._columns:
            result = self.host.call("sql", {"query": f"DESCRIBE {quote_ident(name)}", "max_rows": 1000})
            if result is None:
                return
            self._columns[name] = list(result.data)
        self.columns.value = self._columns_html(name, self._columns[name])

    @staticmethod
    def _columns_html(name: str, rows: list[dict[str, Any]]) -> str:
        return table_html(["column", "type"], [[r.get("column_name"), r.get("column_type")] for r in rows],
                          caption=f"{name}: {len(rows):,} columns")

    # -- query and pages ----------------------------------------------------------------------

    def reset(self) -> None:
        """A new entry was picked: nothing to clear, a query spans every handle."""

    def fill(self, tool: str, arguments: dict[str, Any]) -> str:
        if "query" in arguments:
            self.query.value = str(arguments["query"])
        if "max_rows" in arguments:
            self.page_rows.value = clamp(arguments["max_rows"], self.page_rows)
        return self.run_button.description

    def run(self, _: Any = None) -> None:
        query = self.query.value
        if not query.strip():
            self.host.note("Type a query; each live handle is a relation named by its handle.", "warn")
            return
        counted = self.host.call("sql", {"query": count_query(query)}, quiet=True)
        if counted is None:
            # Not wrappable, or simply wrong: run it as typed so its own error (or rows) show.
            self.ran_query, self.total, self.page = None, None, 0
            result = self.host.call("sql", {"query": query, "max_rows": int(self.page_rows.value)})
            if result is not None:
                self._show(result, f"{len(result.data):,} rows (not paged: the statement cannot be wrapped)")
            self._set_paging()
            return
        self.ran_query, self.total = query, int(counted.data[0]["n"]) if counted.data else 0
        self._load_page(0)

    def run_prev(self, _: Any = None) -> None:
        self._load_page(max(0, self.page - 1))

    def run_next(self, _: Any = None) -> None:
        self._load_page(self.page + 1)

    def _load_page(self, page: int) -> None:
        if self.ran_query is None:
            return
        size = int(self.page_rows.value)
        result = self.host.call("sql", {"query": page_query(self.ran_query, size, page * size), "max_rows": size})
        if result is not None:
            self.page = page
            pages = page_count(self.total or 0, size)
            first = page * size
            self._show(result, f"rows {first + 1:,}-{first + len(result.data):,} of {self.total:,} · page "
                               f"{page + 1:,} of {pages:,}" if result.data else f"0 rows of {self.total:,}")
        self._set_paging()

    def _show(self, result: Any, where: str) -> None:
        rows = list(result.data)
        columns = list(rows[0]) if rows else []
        self.status.value = f"<span>{esc(where)} · {result.tokens:,} tokens</span>"
        if columns:
            self.view.show_table(columns, [[r.get(c) for c in columns] for r in rows])
        else:
            self.view.clear("(no rows)")

    def _set_paging(self) -> None:
        size = int(self.page_rows.value)
        known = self.ran_query is not None and self.total is not None
        self.prev_button.disabled = not known or self.page <= 0
        self.next_button.disabled = not known or (self.page + 1) * size >= (self.total or 0)
