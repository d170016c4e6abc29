"""A progress line under the cell while a spill (or a first SQL load) runs longer than a second.

The core reports phases (``Scratchpad.progress_listeners``); this shows them as one display that is
updated in place (a ``display_id``), with a ``<progress>`` bar for HTML front ends and a text line
for terminals, and leaves a one-line summary when the spill is done.
"""

from __future__ import annotations

import html
import threading
from typing import Any

from ..explore._base import fmt_bytes

__all__ = ["ProgressLine"]


class ProgressLine:
    """A pad progress listener that draws one updating display per spill (or table load)."""

    def __init__(self) -> None:
        self._handles: dict[tuple[str, str, int], Any] = {}
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        from IPython.display import display

        key = (str(event.get("kind", "spill")), str(event["tool"]), int(event["size_bytes"]))
        bundle = self.bundle(event)
        with self._lock:
            handle = self._handles.get(key)
            if handle is None:
                self._handles[key] = display(bundle, raw=True, display_id=True)
            else:
                handle.update(bundle, raw=True)
            if event["phase"] == "done":
                self._handles.pop(key, None)

    @staticmethod
    def bundle(event: dict[str, Any]) -> dict[str, str]:
        size = fmt_bytes(event["size_bytes"])
        if event.get("kind") == "sql_tables":
            return ProgressLine._load_bundle(event, size)
        if event["phase"] == "done":
            text = f"[scratchpad] stored the {size} output of {event['tool']} in {event['elapsed_s']:.1f} s"
            if event.get("handle"):
                text += f" as {event['handle']}"
        else:
            text = (
                f"[scratchpad] storing the {size} output of {event['tool']}: {event['phase']} "
                f"({event['step']}/{event['steps']}), {event['elapsed_s']:.1f} s"
            )
        bar = (
            f'<progress value="{event["step"]}" max="{event["steps"]}" style="width:12em"></progress> '
            if event["phase"] != "done"
            else ""
        )
        return _bundle(text, bar)

    @staticmethod
    def _load_bundle(event: dict[str, Any], size: str) -> dict[str, str]:
        """A person's first SQL over a large JSON handle: its load into DuckDB tables."""
        percent = event.get("percent")
        if event["phase"] == "done":
            text = (
                f"[scratchpad] loaded {event['handle']} ({size}) into DuckDB tables in {event['elapsed_s']:.1f} s; "
                "later queries read them"
            )
            bar = ""
        else:
            how_far = f"{percent:.0f} %, " if percent is not None else ""
            text = (
                f"[scratchpad] loading {event['handle']} ({size}) into DuckDB tables for SQL (once per handle): "
                f"{how_far}{event['elapsed_s']:.1f} s"
            )
            value = f' value="{percent:.1f}" max="100"' if percent is not None else ""  # none: indeterminate
            bar = f'<progress{value} style="width:12em"></progress> '
        return _bundle(text, bar)


def _bundle(text: str, bar: str) -> dict[str, str]:
    """The line as text, and as HTML after its ``<progress>`` bar (``bar``: "" when done)."""
    return {"text/plain": text, "text/html": f"<div>{bar}<small>{html.escape(text)}</small></div>"}
