"""The entry picker: the pad's live handles (handle, tool, size, tokens, age) in a dropdown.

``refresh`` reads the catalog (metadata only, one small query) and touches the dropdown only
when the list changed, so it can run after every cell or on a timer without flooding the
browser. Ages are shown to the minute, which bounds how often a label changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w

from ._base import button
from ._render import entry_info, entry_label, esc

__all__ = ["EntryPicker"]


class EntryPicker:
    """A dropdown of live handles, a refresh button and a line about the selected entry.

    The refresh button is wired by the explorer, which refreshes more than the picker.
    """

    def __init__(self, pad: Any, on_change: Callable[[str | None, str | None], None],
                 guard: Callable[[Callable[..., Any]], Callable[..., None]]) -> None:
        self.pad = pad
        self._on_change = on_change
        self.dropdown = w.Dropdown(options=[], value=None, description="entry",
                                   style={"description_width": "initial"}, layout=w.Layout(width="640px"))
        self.refresh_button = button("", "look for new spills", icon="refresh")
        self.info = w.HTML()
        self.box = w.VBox([w.HBox([self.dropdown, self.refresh_button]), self.info])
        self.entries: dict[str, dict[str, Any]] = {}
        self._labels: tuple[tuple[str, str], ...] = ()
        self._syncing = False
        self.dropdown.observe(guard(self._changed), names="value")

    @property
    def value(self) -> str | None:
        return self.dropdown.value

    def refresh(self, prefer: str | None = None) -> bool:
        """Re-read the live handles; select ``prefer`` (or keep the selection). True if the list changed.

        When the selected handle is gone (expired, deleted), the newest entry is selected and
        ``on_change`` is told the old one vanished.
        """
        entries = self.pad.entries("handle")
        now = self.pad.store.now()
        self.entries = {e["handle"]: e for e in entries}
        # Newest first: a fresh spill is what a user most likely wants to look at.
        labels = tuple((entry_label(e, now), e["handle"]) for e in reversed(entries))
        current = self.dropdown.value
        target = prefer if prefer in self.entries else current if current in self.entries else None
        if target is None and labels:
            target = labels[0][1]
        changed = labels != self._labels
        if changed:
            self._labels = labels
            self._syncing = True  # replacing the options moves the value; say so once, below
            try:
                # Not under hold_trait_notifications: the value is validated against the
                # options list, which is only rebuilt once the options change is observed.
                self.dropdown.options = list(labels)
                self.dropdown.value = target
            finally:
                self._syncing = False
        elif target != current:
            self._syncing = True
            try:
                self.dropdown.value = target
            finally:
                self._syncing = False
        self.dropdown.disabled = not labels
        self._show_info(now)
        if target != current:
            self._on_change(target, current if current not in self.entries else None)
        return changed

    def _show_info(self, now: float) -> None:
        entry = self.entries.get(self.dropdown.value) if self.dropdown.value else None
        if entry is not None:
            self.info.value = f"<small>{esc(entry_info(entry, now))}</small>"
        else:
            self.info.value = ("<small>No spilled outputs yet in this run. Large outputs spill on their own; "
                               "<code>pad.spill(obj)</code> forces one.</small>")

    def _changed(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        self._show_info(self.pad.store.now())
        self._on_change(change["new"], None)
