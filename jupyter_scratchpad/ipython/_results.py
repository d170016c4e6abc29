"""What some subcommands return: plain ``list``/``dict`` values that also display well.

>>> rows = Rows([{"_index": 0, "name": "a"}], text="{...}")
>>> isinstance(rows, list), rows[0]["name"]
(True, 'a')
"""

from __future__ import annotations

import html
from typing import Any

from ._render import rows_html, stub_bundle, stub_text

__all__ = ["BudgetReport", "Rows", "StubView"]


class Rows(list):
    """The rows of ``%scratch iter``: a real list of dicts, shown as a table."""

    def __init__(self, rows: list[dict[str, Any]], text: str = "") -> None:
        super().__init__(rows)
        self.text = text

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(self.text or list.__repr__(self))

    def _repr_html_(self) -> str:
        return rows_html(list(self))


class StubView(dict):
    """A stub (plus its entry's metadata) as a dict, displayed as the stub card."""

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return stub_bundle(dict(self))

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython's dict printer would win
        p.text(stub_text(dict(self)))


_BUDGET_ROWS = (
    ("model", "model"),
    ("context_window", "context window"),
    ("safety_margin", "safety margin"),
    ("usable", "usable"),
    ("used", "used"),
    ("remaining", "remaining"),
    ("max_extraction_tokens", "per-call cap"),
    ("tokens_intercepted", "tokens intercepted (spilled)"),
    ("tokens_extracted", "tokens extracted (explored)"),
    ("spills", "spills"),
)


class BudgetReport(dict):
    """``%scratch budget``: the notebook's context budget and usage, as a dict."""

    def _lines(self) -> list[tuple[str, str]]:
        out = []
        for key, label in _BUDGET_ROWS:
            value = self.get(key)
            if isinstance(value, float):
                shown = f"{value:.0%}" if key == "safety_margin" else f"{value:,.0f}"
            elif isinstance(value, int):
                shown = f"{value:,}"
            else:
                shown = str(value)
            out.append((label, shown))
        return out

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        width = max(len(label) for label, _ in self._lines())
        p.text("\n".join(f"{label:<{width}}  {value}" for label, value in self._lines()))

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
            for k, v in self._lines()
        )
        return f"<table class='jp-scratchpad-budget'>{rows}</table>"
