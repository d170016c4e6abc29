"""The budget meter: how much of the model's context the exploration has used.

>>> # meter = BudgetMeter(); meter.update(pad); meter.bar.value == pad.budget.used
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..explore._base import call_repr
from ..tools import ToolResult
from ._render import esc

__all__ = ["BudgetMeter", "meter_state", "meter_text"]


def meter_state(pad: Any) -> dict[str, Any]:
    """The numbers the meter shows: the pad's budget and usage, in one dict."""
    budget = pad.budget
    usage = pad.usage()
    return {"used": budget.used, "usable": budget.usable, "remaining": budget.remaining,
            "context_window": budget.context_window, "per_call_limit": budget.max_extraction_tokens,
            "tokens_intercepted": usage.get("tokens_intercepted", 0),
            "tokens_extracted": usage.get("tokens_extracted", 0), "spills": pad.spill_count}


def meter_text(state: dict[str, Any]) -> str:
    """``"used 3,414 / 102,400 usable tokens (3.3%) · 98,986 left · … · intercepted … · extracted …"``."""
    share = 100.0 * state["used"] / state["usable"] if state["usable"] else 100.0
    return (f"used {state['used']:,} / {state['usable']:,} usable tokens ({share:.1f}%) · "
            f"{state['remaining']:,} left · ≤ {state['per_call_limit']:,} a call · "
            f"intercepted {state['tokens_intercepted']:,} · extracted {state['tokens_extracted']:,}")


def _bar_style(used: int, usable: int) -> str:
    share = used / usable if usable else 1.0
    return "success" if share < 0.5 else "warning" if share < 0.8 else "danger"


class BudgetMeter:
    """A progress bar (used / usable) and a line of numbers; ``update`` after every call."""

    def __init__(self) -> None:
        self.bar = w.IntProgress(value=0, min=0, max=1, description="budget",
                                 style={"description_width": "initial"},
                                 layout=w.Layout(width="220px"))
        self.label = w.HTML()
        self.last_call = w.HTML()
        self.box = w.VBox([w.HBox([self.bar, self.label], layout=w.Layout(align_items="center", grid_gap="6px")),
                           self.last_call])
        self.state: dict[str, Any] = {}

    def update(self, pad: Any, result: ToolResult | None = None) -> bool:
        """Show the pad's current numbers (and ``result``'s cost); True when anything changed."""
        state = meter_state(pad)
        changed = state != self.state
        if changed:
            self.state = state
            with self.bar.hold_trait_notifications():
                self.bar.max = max(1, state["usable"])
                self.bar.value = min(state["used"], self.bar.max)
            self.bar.bar_style = _bar_style(state["used"], state["usable"])
            self.label.value = f"<span>{esc(meter_text(state))}</span>"
        if result is not None:
            cost = f"{result.tokens:,} tokens charged" if result.ok else "refused, nothing charged"
            call = call_repr(result.tool, result.arguments)
            self.last_call.value = f"<small>last call: {esc(call)} · {esc(cost)}</small>"
        return changed
