"""A progress line under the cell while a spill (or a first SQL load) runs longer than a second.

The core reports phases (``Scratchpad.progress_listeners``); this shows them as one display that is
updated in place (a ``display_id``), with a ``<progress>`` bar for HTML front ends and a text line
for terminals, and leaves a one-line summary when the spill is done: "stored ... as H", or, when
the spill failed (a store that is down), "not stored: <why, short>" (it said "stored" either way).
The line is the extension's own: the per-cell display budget and the update throttle of the hooks
let it through (``PUBLISHING``).
"""

from __future__ import annotations

import html
import re
import sys
import threading
from typing import Any

from ..spill._progress import describe, how_far

__all__ = ["PUBLISHING", "ProgressLine", "short_reason"]

# set while a progress line is being displayed or updated (this thread): the hooks let it through
PUBLISHING = threading.local()
_PARENS = re.compile(r"\s*\([^()]*\)")


def short_reason(reason: str, limit: int = 120) -> str:
    """A failure's reason in a few words: ``StoreUnavailableError: the shared store's PostgreSQL
    is unavailable: couldn't get a connection after 5.00 sec`` (no URL, no advice)."""
    said = _PARENS.sub("", " ".join(reason.split()))
    said = said.split("; ", 1)[0].strip()
    return said if len(said) <= limit else said[: limit - 1].rstrip() + "…"


class ProgressLine:
    """A pad progress listener that draws one updating display per spill (or table load)."""

    def __init__(self) -> None:
        self._handles: dict[tuple[str, str, int], Any] = {}
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        from IPython.display import display

        key = (str(event.get("kind", "spill")), str(event["tool"]), int(event["size_bytes"]))
        if event["phase"] == "done" and event.get("kind", "spill") == "spill" and not event.get("handle"):
            # the spill ended without an entry: it failed (the core's Progress reports "done" as it
            # exits, while the exception that stopped the spill is being handled)
            failed = sys.exc_info()[1]
            why = short_reason(f"{type(failed).__name__}: {failed}") if failed is not None else "the spill failed"
            event = {**event, "not_stored": why}
        bundle = self.bundle(event)
        with self._lock:
            PUBLISHING.active = True
            try:
                handle = self._handles.get(key)
                if handle is None:
                    self._handles[key] = display(bundle, raw=True, display_id=True)
                else:
                    handle.update(bundle, raw=True)
            finally:
                PUBLISHING.active = False
            if event["phase"] == "done":
                self._handles.pop(key, None)

    @staticmethod
    def bundle(event: dict[str, Any]) -> dict[str, str]:
        """The line as text, and as HTML after a ``<progress>`` bar while the work runs."""
        if event.get("not_stored"):
            from ..explore._base import fmt_bytes

            text = (
                f"[scratchpad] the {fmt_bytes(event['size_bytes'])} output of {event['tool']} was not stored: "
                f"{event['not_stored']} ({event['elapsed_s']:.1f} s)"
            )
            return _bundle(text, "")
        text = describe(event)
        if event["phase"] == "done":
            return _bundle(text, "")
        percent = how_far(event)  # none yet: an indeterminate bar
        value = f' value="{percent:.1f}" max="100"' if percent is not None else ""
        return _bundle(text, f'<progress{value} style="width:12em"></progress> ')


def _bundle(text: str, bar: str) -> dict[str, str]:
    """The line as text, and as HTML after its ``<progress>`` bar (``bar``: "" when done)."""
    return {"text/plain": text, "text/html": f"<div>{bar}<small>{html.escape(text)}</small></div>"}
