"""The explorer as a whole: construction, picker, refresh and polling, meter, display, lifetime."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w
import pytest

from jupyter_scratchpad import NotFoundError, Scratchpad, ScratchStore
from jupyter_scratchpad.widgets import CSS_CLASS, Explorer, refresh_all


def test_outer_box_has_the_stable_css_class(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    assert isinstance(explorer, w.VBox)
    assert CSS_CLASS == "jp-scratchpad-explorer"
    assert CSS_CLASS in explorer._dom_classes
    assert [explorer.tab.get_title(i) for i in range(5)] == ["Preview", "Schema", "Grep", "Iterate", "SQL"]


def test_picker_lists_live_handles_newest_first_with_their_facts(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, events_handle: str, clock: Any,
) -> None:
    clock.advance(180)
    explorer = make_explorer()
    labels = [label for label, _ in explorer.picker.dropdown.options]
    values = [value for _, value in explorer.picker.dropdown.options]
    # Both spills happened at the same fake instant: the catalog orders them by key then.
    assert set(values) == {pods_handle, events_handle}
    entry = {e["handle"]: e for e in pad.entries("handle")}[pods_handle]
    label = labels[values.index(pods_handle)]
    assert label.startswith(f"{pods_handle} · k8s_list_pods · ")
    assert f"{entry['tokens']:,} tokens" in label and label.endswith("3 min ago")
    # With no handle given, the newest entry is explored.
    assert explorer.handle == values[0]
    assert "expires in 57 min" in explorer.picker.info.value


def test_handle_argument_selects_it_and_bad_ones_are_clear_errors(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, events_handle: str,
) -> None:
    assert make_explorer(pods_handle).handle == pods_handle
    with pytest.raises(NotFoundError, match="no live handle 'nope_000'"):
        make_explorer("nope_000")
    with pytest.raises(ValueError, match="handle"):
        make_explorer("Not A Handle!")
    with pytest.raises(TypeError, match="Scratchpad"):
        Explorer(pad.store, poll_interval_s=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="poll_interval_s"):
        make_explorer(poll_interval_s=0)


def test_empty_run_shows_how_to_spill_and_picks_up_the_first_spill(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods: dict[str, Any],
) -> None:
    explorer = make_explorer()
    assert explorer.handle is None and explorer.picker.dropdown.disabled
    assert "No spilled outputs yet" in explorer.picker.info.value
    explorer.preview.head_button.click()
    assert "Pick an entry first" in explorer.notice.message.value
    assert explorer.results == []  # nothing was called, nothing charged

    handle = pad.intercept(pods, tool="k8s_list_pods").handle
    assert explorer.refresh() is True
    assert explorer.handle == handle and not explorer.picker.dropdown.disabled
    assert handle in [v for _, v in explorer.sql.relations.options]


def test_refresh_keeps_the_selection_and_only_resends_options_when_they_change(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    options = explorer.picker.dropdown.options
    assert explorer.picker.refresh() is False  # nothing new: the dropdown is not touched
    assert explorer.picker.dropdown.options is options
    new = pad.spill("x" * 100, tool="note_dump").handle
    assert explorer.picker.refresh() is True
    assert explorer.handle == pods_handle  # a new spill does not steal the selection
    assert {v for _, v in explorer.picker.dropdown.options} == {pods_handle, new}


def test_a_vanished_handle_moves_to_the_newest_and_says_so(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, events_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    explorer.preview.head_button.click()
    assert explorer.preview.shown is not None
    pad.delete(pods_handle)
    explorer.refresh()
    assert explorer.handle == events_handle
    assert f"{pods_handle} is no longer live" in explorer.notice.message.value
    assert explorer.preview.shown is None  # results of the old entry are not left on screen


def test_expired_entries_leave_the_picker(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, clock: Any,
) -> None:
    short = pad.spill("y" * 200, tool="short_lived", ttl_s=60).handle
    explorer = make_explorer(short)
    clock.advance(61)
    explorer.refresh()
    assert explorer.handle is None and explorer.picker.dropdown.options == ()


def test_refresh_all_reaches_every_open_explorer(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str,
) -> None:
    first, second = make_explorer(pods_handle), make_explorer(pods_handle)
    second.close()
    new = pad.spill("z" * 300, tool="late").handle
    assert refresh_all() >= 1
    assert new in first.picker.entries
    assert new not in second.picker.entries  # closed explorers are left alone


def test_background_poll_picks_up_new_spills(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle, poll_interval_s=0.05)
    assert explorer._poller is not None and explorer._poller.thread.is_alive()
    new = pad.spill("late output\n" * 50, tool="late_tool").handle
    deadline = time.monotonic() + 20
    while new not in explorer.picker.entries and time.monotonic() < deadline:
        time.sleep(0.05)
    assert new in explorer.picker.entries
    assert new in [v for _, v in explorer.sql.relations.options]
    explorer.close()
    assert not explorer._poller.thread.is_alive()


def test_poller_stops_by_itself_when_the_store_closes(tmp_path: Any) -> None:
    store = ScratchStore(tmp_path / "s", sweep_interval_s=None)
    pad = store.scratchpad(run_id="r", agent_id="a")
    explorer = Explorer(pad, poll_interval_s=0.05)
    try:
        store.close()
        explorer._poller.thread.join(timeout=20)  # type: ignore[union-attr]
        assert not explorer._poller.thread.is_alive()  # type: ignore[union-attr]
    finally:
        explorer.close()


def test_meter_shows_the_budget_and_moves_with_each_call(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    meter = explorer.meter
    assert meter.bar.max == pad.budget.usable and meter.bar.value == pad.budget.used
    before = pad.budget.used
    explorer.preview.head_button.click()
    result = explorer.results[-1]
    assert result.ok and result.tokens > 0
    assert pad.budget.used == before + result.tokens
    assert meter.bar.value == pad.budget.used
    usage = pad.usage()
    label = meter.label.value
    assert f"used {pad.budget.used:,} / {pad.budget.usable:,}" in label
    assert f"intercepted {usage['tokens_intercepted']:,}" in label
    assert f"extracted {usage['tokens_extracted']:,}" in label
    assert f"{result.tokens:,} tokens charged" in meter.last_call.value
    assert meter.bar.bar_style == "success"


def test_meter_follows_usage_recorded_elsewhere_on_refresh(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    pad.record_llm_usage(input_tokens=90_000)
    explorer.refresh()
    assert explorer.meter.bar.value == 90_000
    assert explorer.meter.bar.bar_style == "danger"


def test_mimebundle_carries_static_summaries_next_to_the_view(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, events_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    bundle = explorer._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.model_id
    text, page = bundle["text/plain"], bundle["text/html"]
    for handle in (pods_handle, events_handle):
        assert handle in text and handle in page
    assert f"exploring: {pods_handle}" in text
    assert f"used {pad.budget.used:,} / {pad.budget.usable:,}" in text
    assert f"%scratch explore {pods_handle}" in text and "model not found" not in text
    assert page.startswith("<div class='jp-scratchpad-explorer-summary'")


def test_summary_survives_a_closed_store(tmp_path: Any) -> None:
    store = ScratchStore(tmp_path / "s", sweep_interval_s=None)
    pad = store.scratchpad(run_id="r", agent_id="a")
    explorer = Explorer(pad, poll_interval_s=None)
    try:
        store.close()
        bundle = explorer._repr_mimebundle_()
        assert "the store cannot be read: StoreClosedError" in bundle["text/plain"]
        assert "StoreClosedError" in bundle["text/html"]
    finally:
        explorer.close()


def test_close_closes_every_widget_of_the_tree(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    parts = [explorer.tab, explorer.preview.head_button, explorer.sql.query, explorer.meter.bar,
             explorer.grep.view.slider, explorer.notice.message]
    explorer.close()
    assert explorer.closed and explorer.comm is None
    assert all(part.comm is None for part in parts)


def test_clicks_and_the_poller_take_turns(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, caplog: pytest.LogCaptureFixture,
) -> None:
    explorer = make_explorer(pods_handle, poll_interval_s=0.005)
    with caplog.at_level("WARNING", logger="jupyter_scratchpad"):
        for i in range(40):
            pad.spill(f"burst {i}\n" * 20, tool="burst")
            explorer.preview.head_button.click()
            explorer.picker.dropdown.value = pods_handle if i % 2 else explorer.picker.dropdown.options[0][1]
    assert all(r.ok for r in explorer.results) and len(explorer.results) == 40
    assert not [r for r in caplog.records if r.levelno >= 30]
    explorer.refresh()
    assert len(explorer.picker.entries) == 41
