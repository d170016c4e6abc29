"""A spill that runs longer than a second reports its phases; a quick one reports nothing."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.spill import _progress


def test_a_slow_spill_reports_phases_then_done(pad: Scratchpad, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_scratchpad.store import _store

    real = _store.write_body_dir

    def slow(*args: Any, **kwargs: Any) -> Any:  # a slow disk: the write phase takes 1.5 s
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(_store, "write_body_dir", slow)
    events: list[dict[str, Any]] = []
    pad.progress_listeners.append(events.append)
    r = pad.spill("line\n" * 100_000, tool="export")
    assert r.spilled
    phases = [e["phase"] for e in events]
    assert "write" in phases and phases[-1] == "done" and phases.count("done") == 1
    assert all(e["tool"] == "export" and e["size_bytes"] == 500_000 for e in events)
    assert events[-1]["handle"] == r.handle and events[-1]["elapsed_s"] >= 1.5
    ticks = [e for e in events if e["phase"] == "write"]
    assert len(ticks) >= 2  # the ticker kept the display moving during the long phase


def test_a_quick_spill_reports_nothing_and_a_failing_listener_is_harmless(pad: Scratchpad) -> None:
    events: list[dict[str, Any]] = []

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("display is gone")

    pad.progress_listeners += [events.append, broken]
    assert pad.spill("x" * 10_000, tool="t").spilled
    assert events == []


def test_the_notebook_progress_line_renders_each_phase() -> None:
    from jupyter_scratchpad.ipython._progress import ProgressLine

    event = {
        "tool": "cell_3",
        "handle": None,
        "phase": "write",
        "step": 3,
        "steps": len(_progress.PHASES),
        "size_bytes": 50_000_000,
        "elapsed_s": 2.25,
    }
    bundle = ProgressLine.bundle(event)
    assert "write (3/5), 2.2 s" in bundle["text/plain"] and "<progress" in bundle["text/html"]
    done = ProgressLine.bundle({**event, "phase": "done", "handle": "cell_3_abc"})
    assert "stored the 47.7 MB output of cell_3" in done["text/plain"] and "cell_3_abc" in done["text/plain"]
