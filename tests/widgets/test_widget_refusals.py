"""Refusals with suggestions that fill the form in, a spent budget, errors that never escape, and
what crosses the wire for a large entry."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as w
import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.widgets import Explorer
from jupyter_scratchpad.widgets._render import MAX_PAGE_CHARS


def test_too_large_is_refused_free_and_its_suggestion_fills_the_preview(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.preview
    used = pad.budget.used
    tab.lines.value = 10_000
    tab.head_button.click()
    refused = explorer.results[-1]
    assert not refused.ok and refused.error is not None and refused.error["error"] == "head_too_large"
    assert pad.budget.used == used + refused.tokens  # a refusal costs only its short text
    assert "refused, nothing charged" in explorer.meter.last_call.value
    message = html.unescape(explorer.notice.message.value)
    assert "head_too_large" in message and "per-call limit 10,000" in message
    assert tab.view.body.value == ""  # nothing was shown instead

    buttons = explorer.notice.buttons
    assert [b.suggestion for b in buttons] == refused.error["suggestions"]
    assert all(not b.disabled for b in buttons)
    slice_button = next(b for b in buttons if b.suggestion["tool"] == "slice")
    explorer.tab.selected_index = 4
    slice_button.click()
    args = slice_button.suggestion["arguments"]
    assert explorer.tab.selected_index == 0
    assert (tab.start.value, tab.lines.value) == (args["start"], args["end"] - args["start"] + 1)
    assert "press Show range" in explorer.notice.filled.value
    tab.range_button.click()
    assert explorer.results[-1].ok and explorer.results[-1].arguments == args


def test_key_path_not_found_suggestions_fill_the_schema_tab(
    make_explorer: Callable[..., Explorer], pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    explorer.iterate.path.value, explorer.iterate.fields.value = "itemz", "metadata.name"
    explorer.iterate.show_button.click()
    error = explorer.results[-1].error
    assert error is not None and error["error"] == "key_path_not_found"
    message = html.unescape(explorer.notice.message.value)
    assert "keys there: apiVersion, kind, metadata, items" in message
    get_in = next(b for b in explorer.notice.buttons if b.suggestion["tool"] == "get_in")
    get_in.click()
    assert explorer.tab.selected_index == 1 and explorer.schema.path.value == "$.items"
    schema = next(b for b in explorer.notice.buttons if b.suggestion["tool"] == "schema")
    schema.click()
    explorer.schema.schema_button.click()
    assert explorer.results[-1].ok and explorer.results[-1].tool == "schema"


def test_a_suggestion_without_a_form_is_a_disabled_button_carrying_the_call(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    refused = pad.call_tool("read_handle", {"handle": pods_handle, "start": 0, "end": 2_000_000})
    assert refused.error is not None and refused.error["error"] == "read_handle_too_large"
    explorer.notice.refusal(refused.error, {"grep"})
    by_tool = {b.suggestion["tool"]: b for b in explorer.notice.buttons}
    assert by_tool["read_handle"].disabled
    assert by_tool["read_handle"].tooltip.endswith(by_tool["read_handle"].suggestion["call"])


def test_a_spent_budget_refuses_with_the_remaining_tokens(store: ScratchStore, pods: dict[str, Any],
                                                          make_explorer: Callable[..., Explorer]) -> None:
    small = store.scratchpad(run_id="run-small", agent_id="agent-1", model="gpt-4o", context_window=4_200)
    handle = small.intercept(pods, tool="k8s_list_pods").handle
    explorer = make_explorer(handle, target=small)
    tab = explorer.preview
    tab.lines.value = 40
    for _ in range(10):
        tab.next_button.click() if tab.shown else tab.head_button.click()
        if not explorer.results[-1].ok:
            break
    error = explorer.results[-1].error
    assert error is not None and error["error"] == "slice_too_large"
    assert error["remaining_budget_tokens"] == small.budget.usable - (small.budget.used - explorer.results[-1].tokens)
    assert "tokens left in the budget" in html.unescape(explorer.notice.message.value)
    assert explorer.meter.bar.bar_style == "danger"
    assert explorer.meter.bar.value == min(small.budget.used, small.budget.usable)


def _buttons(widget: Any) -> list[w.Button]:
    found = [widget] if isinstance(widget, w.Button) else []
    for child in getattr(widget, "children", ()) or ():
        found += _buttons(child)
    return found


def test_no_callback_raises_when_the_store_is_gone(tmp_path: Path, pods: dict[str, Any]) -> None:
    store = ScratchStore(tmp_path / "gone", sweep_interval_s=None)
    pad = store.scratchpad(run_id="r", agent_id="a")
    handle = pad.intercept(pods, tool="k8s_list_pods").handle
    explorer = Explorer(pad, handle=handle, poll_interval_s=None)
    try:
        explorer.grep.pattern.value = "Failed"
        explorer.grep.search_button.click()
        explorer.iterate.fields.value = "metadata.name"
        explorer.sql.query.value = "SELECT 1"
        store.close()
        buttons = [b for b in _buttons(explorer) if not b.disabled]
        assert len(buttons) >= 12
        for b in buttons:
            b.click()  # raises nothing: each failure lands in the notice area
            assert explorer.notice.message.value, b.description
        explorer.grep.view.slider.value = 2
        explorer.sql.relations.value = "scratch_notes"
        assert "closed" in explorer.notice.message.value
        assert explorer.refresh() is False
    finally:
        explorer.close()


@pytest.mark.slow
def test_a_large_entry_never_crosses_the_wire(tmp_path: Path, wire_size: Callable[[Any], int],
                                              make_pods: Callable[..., dict[str, Any]]) -> None:
    # A budget so generous that the tools themselves would return megabytes: the widget's own
    # page bound is what keeps the browser's share small.
    store = ScratchStore(tmp_path / "big", sweep_interval_s=None)
    pad = store.scratchpad(run_id="r", agent_id="a", context_window=50_000_000, max_extraction_tokens=5_000_000)
    result = pad.intercept(make_pods(20_000), tool="k8s_list_pods")
    assert result.handle is not None and result.stub is not None and result.stub["size"] > 10_000_000
    explorer = Explorer(pad, handle=result.handle, poll_interval_s=None)
    try:
        explorer.preview.lines.value = 10_000
        explorer.preview.head_button.click()
        assert explorer.results[-1].ok and len(explorer.results[-1].text) > MAX_PAGE_CHARS
        assert len(explorer.preview.view.body.value) < MAX_PAGE_CHARS + 1_000
        assert "more lines or rows not shown" in explorer.preview.view.body.value
        explorer.grep.pattern.value, explorer.grep.max_matches.value = "Running", 1000
        explorer.grep.search_button.click()
        explorer.iterate.path.value, explorer.iterate.fields.value = "items", "metadata,spec,status"
        explorer.iterate.limit.value = 500
        explorer.iterate.show_button.click()
        explorer.schema.schema_button.click()
        explorer.sql.run_button.click()
        assert all(r.ok for r in explorer.results), [r.error for r in explorer.results if not r.ok]
        sent = wire_size(explorer)
        assert sent < 6 * MAX_PAGE_CHARS, sent  # a handful of pages, against an entry of 10+ MB
        bundle = explorer._repr_mimebundle_()
        assert len(bundle["text/html"]) < 20_000 and len(bundle["text/plain"]) < 10_000
    finally:
        explorer.close()
        store.close()
