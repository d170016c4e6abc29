"""Progress of long work, for whoever shows it (a notebook's progress line, the lab card).

A spill reports its phases (``decide``, ``normalise``, ``write``, ``stub``) to the pad's
``progress_listeners``; once it has run longer than ``TICK_AFTER_S`` a ticker thread repeats the
current phase every ``TICK_EVERY_S`` with the elapsed time, so a display can move while a long C
call (parsing a gigabyte) blocks the spilling thread. Nothing is emitted for a spill that ends
within the first second, and nothing at all when no one listens. A listener that fails is logged
and dropped; it never fails the work.

The same events report a person's first SQL over a large JSON handle, which loads it into DuckDB
tables in the kernel (a gigabyte takes ~13 s): ``kind`` ``"sql_tables"``, one phase (``load``),
and ``percent`` where DuckDB reports how far its statement is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LOAD_PHASES", "PHASES", "Progress", "describe", "how_far"]

PHASES = ("decide", "normalise", "write", "stub", "done")
LOAD_PHASES = ("load", "done")
TICK_AFTER_S = 1.0
TICK_EVERY_S = 0.5
log = logging.getLogger("jupyter_scratchpad")

Listener = Callable[[dict[str, Any]], None]


def describe(event: dict[str, Any]) -> str:
    """One event as the line a person reads (the notebook's progress line, the explorer)."""
    from ..explore._base import fmt_bytes

    size = fmt_bytes(event["size_bytes"])
    done = event["phase"] == "done"
    if event.get("kind") == "sql_tables":  # a person's first SQL over a large JSON handle
        if done:
            return (
                f"[scratchpad] loaded {event['handle']} ({size}) into DuckDB tables in {event['elapsed_s']:.1f} s; "
                "later queries read them"
            )
        percent = event.get("percent")
        how_far = f"{percent:.0f} %, " if percent is not None else ""
        return (
            f"[scratchpad] loading {event['handle']} ({size}) into DuckDB tables for SQL (once per handle): "
            f"{how_far}{event['elapsed_s']:.1f} s"
        )
    if done:
        text = f"[scratchpad] stored the {size} output of {event['tool']} in {event['elapsed_s']:.1f} s"
        return text + (f" as {event['handle']}" if event.get("handle") else "")
    return (
        f"[scratchpad] storing the {size} output of {event['tool']}: {event['phase']} "
        f"({event['step']}/{event['steps']}), {event['elapsed_s']:.1f} s"
    )


def how_far(event: dict[str, Any]) -> float | None:
    """How far the work is, 0-100, for a bar: a load's DuckDB figure (None before it has one: an
    indeterminate bar), a spill's step of its phases."""
    if event.get("kind") == "sql_tables":
        percent: float | None = event.get("percent")
        return percent
    return round(100.0 * int(event["step"]) / int(event["steps"]), 1)


class Progress:
    """One piece of work's progress (a spill, by default); a context manager that stops the ticker
    and reports ``done``. ``probe`` (``set_probe``): a callable saying how far the work is (0-100)."""

    def __init__(
        self,
        listeners: list[Listener],
        tool: str,
        size_bytes: int,
        *,
        kind: str = "spill",
        phases: tuple[str, ...] = PHASES,
        handle: str | None = None,
    ) -> None:
        self.listeners = list(listeners)
        self.tool = tool
        self.size_bytes = size_bytes
        self.kind = kind
        self.phases = phases
        self.started = time.monotonic()
        self.current = phases[0]
        self.handle = handle
        self._probe: Callable[[], float | None] | None = None
        self._probe_lock = threading.Lock()
        self._best: float | None = None  # how far, as said so far: a bar never moves back
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.listeners:
            self._ticker = threading.Thread(target=self._tick, name="scratch-spill-progress", daemon=True)
            self._ticker.start()

    def _event(self, phase: str) -> dict[str, Any]:
        event = {
            "kind": self.kind,
            "tool": self.tool,
            "handle": self.handle,
            "phase": phase,
            "step": self.phases.index(phase) + 1,
            "steps": len(self.phases),
            "size_bytes": self.size_bytes,
            "elapsed_s": round(time.monotonic() - self.started, 3),
        }
        if phase != "done":  # how far, where the work can say (None: it cannot, or not yet)
            with self._probe_lock:  # (never while set_probe lets go of what it asks)
                try:
                    value = self._probe() if self._probe is not None else None
                except Exception:  # the work's own state moved on: no figure
                    value = None
            if value is not None and 0 <= value <= 100:  # DuckDB says -1 before it knows
                self._best = max(self._best or 0.0, round(float(value), 1))
            # a load runs a few statements, the first the bulk: its last figure stands for the rest
            event["percent"] = self._best
        return event

    def _emit(self, event: dict[str, Any]) -> None:
        with self._lock:
            listeners = list(self.listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                log.exception("a spill progress listener failed; it is dropped for this spill")
                with self._lock:
                    if listener in self.listeners:
                        self.listeners.remove(listener)

    def set_probe(self, probe: Callable[[], float | None] | None) -> None:
        """Ask ``probe`` how far the work is from now on (None: stop asking). Returns once no call
        of the old one is running, so what it asks (a DuckDB connection) may then be closed."""
        with self._probe_lock:
            self._probe = probe

    def phase(self, name: str) -> None:
        self.current = name
        if self.listeners and time.monotonic() - self.started >= TICK_AFTER_S:
            self._emit(self._event(name))

    def _tick(self) -> None:
        if self._stop.wait(TICK_AFTER_S):
            return
        while not self._stop.is_set():
            self._emit(self._event(self.current))
            self._stop.wait(TICK_EVERY_S)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=1)
        if self.listeners and time.monotonic() - self.started >= TICK_AFTER_S:
            self._emit(self._event("done"))
