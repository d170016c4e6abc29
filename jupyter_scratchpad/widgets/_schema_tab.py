"""The Schema tab: ``schema``, then ``item_schema`` or ``get_in`` at a chosen path."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ._base import Host, PagedView, button, clamp, int_box, row
from ._render import strip_footer

__all__ = ["SchemaTab", "array_paths"]

TEXT_PAGE_LINES = 200
TABLE_PAGE_ROWS = 50


def array_paths(nodes: list[dict[str, Any]]) -> list[str]:
    """The paths of a schema's arrays that a path can name (not the ``[*]`` summaries)."""
    return [n["path"] for n in nodes if str(n.get("kind", "")).startswith("array") and "[*]" not in n["path"]]


class SchemaTab:
    """The shape of the entry; the keys of an array's items; the value at a path."""

    title: str = "Schema"
    tools: tuple[str, ...] = ("schema", "item_schema", "get_in")

    def __init__(self, host: Host, on_paths: Callable[[list[str]], None]) -> None:
        self.host = host
        self._on_paths = on_paths
        g = host.guard
        self.max_depth = int_box("max depth", 4, 0, 32)
        self.schema_button = button("Schema", "the structure of the entry (schema)", icon="sitemap")
        self.path = w.Combobox(value="$", options=[], placeholder="$.items", description="path",
                               ensure_option=False, style={"description_width": "initial"},
                               layout=w.Layout(width="320px"))
        self.offset = int_box("offset", 0, 0, 10**12)
        self.limit = int_box("limit (0 = all)", 0, 0, 10**9, width="170px")
        self.items_button = button("Item schema", "keys, types and presence across the array's items "
                                   "(item_schema)", icon="table")
        self.get_button = button("Get value", "the value at the path (get_in)", icon="crosshairs")
        self.schema_button.on_click(g(self.run_schema))
        self.items_button.on_click(g(self.run_item_schema))
        self.get_button.on_click(g(self.run_get_in))
        self.view = PagedView(g, page_size=TEXT_PAGE_LINES)
        self.box = w.VBox([row(self.max_depth, self.schema_button),
                           row(self.path, self.offset, self.limit, self.items_button, self.get_button),
                           self.view.box])

    def reset(self) -> None:
        self.view.clear()
        self.path.options = []

    def fill(self, tool: str, arguments: dict[str, Any]) -> str:
        if tool == "schema":
            self.max_depth.value = clamp(arguments.get("max_depth", 4), self.max_depth)
            return self.schema_button.description
        self.path.value = str(arguments.get("path") or "$")
        self.offset.value = clamp(arguments.get("offset", 0), self.offset)
        self.limit.value = clamp(arguments.get("limit", 0), self.limit)
        return (self.items_button if tool == "item_schema" else self.get_button).description

    def _window(self) -> dict[str, Any]:
        args: dict[str, Any] = {"path": self.path.value.strip() or "$"}
        if self.offset.value:
            args["offset"] = int(self.offset.value)
        if self.limit.value:
            args["limit"] = int(self.limit.value)
        return args

    def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        handle = self.host.handle
        if handle is None:
            self.host.note("Pick an entry first.", "warn")
            return None
        return self.host.call(tool, {"handle": handle, **arguments})

    def run_schema(self, _: Any = None) -> None:
        result = self._call("schema", {"max_depth": int(self.max_depth.value)})
        if result is None:
            return
        self.view.page_size = TEXT_PAGE_LINES
        self.view.show_text(strip_footer(result.text).split("\n"), summary=f"schema · {result.tokens:,} tokens")
        paths = array_paths(result.data.get("nodes") or []) if isinstance(result.data, dict) else []
        if paths:
            self.path.options = paths
            if self.path.value in ("", "$") and paths[0] != "$":
                self.path.value = paths[0]
            self._on_paths(paths)

    def run_item_schema(self, _: Any = None) -> None:
        result = self._call("item_schema", self._window())
        if result is None:
            return
        data = result.data
        rows = [[k["key"], k["types"], f"{k['present']:,}/{k['of']:,}"] for k in data["keys"]]
        first, count = data["offset"], data["limit"]
        where = (f"items {first:,}-{first + count - 1:,} of {data['total_items']:,}" if count < data["total_items"]
                 else f"all {data['total_items']:,} items")
        self.view.page_size = TABLE_PAGE_ROWS
        self.view.show_table(["key", "type", "present"], rows,
                             summary=f"item_schema of {data['path']}: {where} · {len(rows):,} keys · "
                                     f"{result.tokens:,} tokens")

    def run_get_in(self, _: Any = None) -> None:
        result = self._call("get_in", self._window())
        if result is None:
            return
        self.view.page_size = TEXT_PAGE_LINES
        self.view.show_text(strip_footer(result.text).split("\n"),
                            summary=f"get_in {self.path.value} · {result.tokens:,} tokens")
