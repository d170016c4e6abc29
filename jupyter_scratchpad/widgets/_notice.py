"""The notice area: refusals and errors, with their suggestions as buttons that fill a form in.

A refusal (``read_too_large``, ``key_path_not_found``, ``sql_forbidden``...) comes back from
``call_tool`` with ``suggestions``: ``{"tool", "arguments", "why", "call"}``. Each becomes a
button; a click hands the suggestion to the explorer, which puts its arguments in the form of
the tab that runs that tool. A suggestion for a tool the explorer has no form for is shown as a
disabled button whose tooltip is the call itself, so it can still be copied.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

import ipywidgets as w

from ._base import button
from ._render import esc, message_html

__all__ = ["Notice", "refusal_text"]

MAX_SUGGESTIONS = 8

_DETAIL_KEYS = (("estimated_tokens", "estimated {:,} tokens"), ("per_call_limit", "per-call limit {:,}"),
                ("remaining_budget_tokens", "{:,} tokens left in the budget"),
                ("valid_prefix", "valid prefix {}"), ("available_keys", "keys there: {}"),
                ("array_length", "array of {:,} items"), ("close_matches", "close matches: {}"))


def refusal_text(error: dict[str, Any]) -> str:
    """``"grep_too_large: grep would return … (estimated 12,000 tokens · per-call limit 10,000)"``."""
    details = []
    for key, template in _DETAIL_KEYS:
        value = error.get(key)
        if value in (None, [], ""):
            continue
        if isinstance(value, list):
            value = ", ".join(map(str, value[:12])) + (" …" if len(value) > 12 else "")
        details.append(template.format(value))
    text = f"{error.get('error', 'error')}: {error.get('message', '')}"
    return f"{text} ({' · '.join(details)})" if details else text


class Notice:
    """One message (info, refusal or error) and the suggestion buttons that go with it."""

    def __init__(self, on_suggestion: Callable[[dict[str, Any]], None],
                 guard: Callable[[Callable[..., Any]], Callable[..., None]]) -> None:
        self._on_suggestion = on_suggestion
        self._guard = guard
        self.message = w.HTML()
        self.filled = w.HTML()
        self.suggestions = w.HBox([], layout=w.Layout(flex_flow="row wrap", grid_gap="4px"))
        self.box = w.VBox([self.message, self.suggestions, self.filled])
        self.error: dict[str, Any] | None = None

    def clear(self) -> None:
        self.error = None
        self.message.value = ""
        self.filled.value = ""
        self._set_buttons([])

    def info(self, text: str, kind: str = "info") -> None:
        """A message without suggestions (replaces what was shown)."""
        self.clear()
        self.message.value = message_html(text, kind)

    def exception(self, exc: BaseException, where: str) -> None:
        self.clear()
        self.message.value = message_html(
            f"{where} failed: {type(exc).__name__}: {exc}. The explorer and the kernel keep working.", "error")

    def refusal(self, error: dict[str, Any], fillable: Container[str]) -> None:
        """Show a tool's structured error and one button per suggestion."""
        self.clear()
        self.error = error
        self.message.value = message_html(refusal_text(error), "error" if "too_large" not in error.get("error", "")
                                          else "warn")
        buttons = []
        for sugg in list(error.get("suggestions") or [])[:MAX_SUGGESTIONS]:
            if not isinstance(sugg, dict):
                continue
            tool = str(sugg.get("tool", ""))
            label = f"{tool}: {sugg.get('why') or sugg.get('call', '')}"
            b = button(label[:60], str(sugg.get("call", tool)), icon="magic")
            b.suggestion = sugg  # what the tests and the click handler read back
            if tool in fillable:
                b.on_click(self._guard(self._clicked))
            else:
                b.disabled = True
                b.tooltip = f"no form for {tool} here; run: {sugg.get('call', tool)}"
            buttons.append(b)
        self._set_buttons(buttons)

    def _clicked(self, b: w.Button) -> None:
        self._on_suggestion(b.suggestion)

    def show_filled(self, sugg: dict[str, Any], where: str) -> None:
        self.filled.value = (f"<small>filled in {esc(where)} from: <code>{esc(sugg.get('call', ''))}</code>"
                             " — check it and run</small>")

    def _set_buttons(self, buttons: list[w.Button]) -> None:
        old = list(self.suggestions.children)
        self.suggestions.children = buttons
        for b in old:
            b.close()

    @property
    def buttons(self) -> list[w.Button]:
        return list(self.suggestions.children)
