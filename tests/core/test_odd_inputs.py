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


def test_a_field_that_is_a_string_then_a_list_has_an_item_schema(pad: Scratchpad) -> None:
    # common in API output ("tags": "x" in one item, ["x", "y"] in the next): item_schema raised
    # "unhashable type: 'list'" while listing the string values, and so did the stub's Next command
    items = [{"name": f"n{i}", "tags": "x" if i % 3 != 2 else ["x", "y"]} for i in range(100)]
    h = pad.intercept({"items": items}, tool="t", force=True).handle
    res = pad.call_tool("item_schema", {"handle": h, "path": "items"})
    assert res.ok, res.error
    assert "string|array" in res.text or "array|string" in res.text, res.text
    assert pad.call_tool("schema", {"handle": h}).ok


def test_a_large_preview_lines_costs_no_more_than_what_fits(store, monkeypatch) -> None:
    # preview_lines=30,000 (a notebook's %config) read 30,000 lines and rendered the preview again
    # for each line it then dropped: 83 s per spill, for the same 17 lines shown
    from jupyter_scratchpad.spill import _stub

    renders: list[int] = []
    real = _stub._render_preview
    monkeypatch.setattr(_stub, "_render_preview", lambda *a: renders.append(1) or real(*a))
    text = "\n".join(f"line {i} " + "x" * 100 for i in range(60_000))
    small = store.scratchpad("r1", "a", preview_lines=20).intercept(text, tool="t").stub
    renders.clear()
    big = store.scratchpad("r2", "a", preview_lines=30_000).intercept(text, tool="t").stub
    assert len(renders) < 80, len(renders)
    assert big["preview"] == small["preview"] and len(big["preview"]) <= _stub.PREVIEW_MAX_CHARS
