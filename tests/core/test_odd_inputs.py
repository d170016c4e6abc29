"""Odd inputs to the core's writers and readers: each is answered, never raised on."""

from __future__ import annotations

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.store._format import as_text


def test_a_released_memoryview_holds_nothing_and_passes_through(pad: Scratchpad, caplog) -> None:
    view = memoryview(b"x" * 100_000)
    view.release()
    assert as_text(view) == ""  # bytes() of it raised: "never raises" did not hold
    r = pad.intercept(view, tool="t")
    assert not r.spilled and r.decision.rule == "below_threshold" and r.content is view
    assert not [rec for rec in caplog.records if rec.levelname == "WARNING"]  # no traceback logged


def test_a_value_written_by_the_caller_is_not_written_again(monkeypatch) -> None:
    import pandas as pd

    from jupyter_scratchpad.store import _format

    frame = pd.DataFrame({"a": range(1000), "b": [f"x{i}" for i in range(1000)]})
    text = as_text(frame)
    calls: list[object] = []
    real = _format.dumps_compact
    monkeypatch.setattr(_format, "dumps_compact", lambda v: calls.append(v) or real(v))
    norm = _format.normalise(frame, text)
    assert norm.raw == text.encode() and norm.format == "json" and len(norm.value) == 1000
    assert calls == []  # a DataFrame's records were written a second time (to_raw) before
