"""A progress line under the cell while a spill (or a first SQL load) runs longer than a second.

The core reports phases (``Scratchpad.progress_listeners``); this shows them as one display that is
updated in place (a ``display_id``), with a ``<progress>`` bar for HTML front ends and a text line
for terminals, and leaves a one-line summary when the spill is done.
"""

from __future__ import annotations

import html
import threading
from typing import Any

from ..spill._progress import describe, how_far

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
        """The line as text, and as HTML after a ``<progress>`` bar while the work runs."""
        text = describe(event)
        if event["phase"] == "done":
            return _bundle(text, "")
        percent = how_far(event)  # none yet: an indeterminate bar
        value = f' value="{percent:.1f}" max="100"' if percent is not None else ""
        return _bundle(text, f'<progress{value} style="width:12em"></progress> ')


def _bundle(text: str, bar: str) -> dict[str, str]:
    """The line as text, and as HTML after its ``<progress>`` bar (``bar``: "" when done)."""
    return {"text/plain": text, "text/html": f"<div>{bar}<small>{html.escape(text)}</small></div>"}
