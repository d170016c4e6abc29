"""A progress line under the cell while a spill runs longer than a second.

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
    """A pad progress listener that draws one updating display per spill."""

    def __init__(self) -> None:
        self._handles: dict[tuple[str, int], Any] = {}
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        from IPython.display import display

        key = (str(event["tool"]), int(event["size_bytes"]))
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
        return {"text/plain": text, "text/html": f"<div>{bar}<small>{html.escape(text)}</small></div>"}
