"""The explorer as a whole: one widget model, its state, selection and refresh, display, lifetime."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import pytest
from ipywidgets.widgets import widget as ipywidget_module
from widget_helpers import ask

from jupyter_scratchpad import NotFoundError, Scratchpad, ScratchStore
from jupyter_scratchpad.widgets import CSS_CLASS, EXPLORER_MIME, Explorer, live_explorer, refresh_all
from jupyter_scratchpad.widgets._explorer import ENTRY_PAGE, RELATION_PAGE


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """The explorer and the lab bridge work unchanged on both backends (embedded, shared PostgreSQL)."""
    return backend_store


ESM = Path(__file__).parents[2] / "jupyter_scratchpad" / "widgets" / "explorer.js"


def test_one_widget_model_with_small_state(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    before = set(ipywidget_module._instances)
    explorer = make_explorer(pods_handle)
    created = set(ipywidget_module._instances) - before
    # The widget and the Layout every DOMWidget carries: two models where the old explorer had 246.
    assert created == {explorer.model_id, explorer.layout.model_id}
    assert isinstance(explorer, anywidget.AnyWidget) and CSS_CLASS in explorer._dom_classes
    state = json.dumps(explorer.get_state(), default=str)
    assert len(state) < len(ESM.read_text()) + 20_000  # the ES module and a few facts, never the entry
    assert explorer._esm == ESM.read_text()


def test_state_lists_entries_relations_and_budget(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, events_handle: str
) -> None:
    explorer = make_explorer()
    assert [e["handle"] for e in explorer.entries] == [e["handle"] for e in pad.entries("handle")]
    assert explorer.handle == explorer.entries[-1]["handle"]  # the newest spill is explored
    names = [r["name"] for r in explorer.relations]
    assert {pods_handle, events_handle, "scratch_notes"} <= set(names)
    assert explorer.budget["used"] == pad.budget.used and explorer.budget["usable"] == pad.budget.usable
    assert explorer.title == "run run-1 · agent agent-1 · model gpt-4o"
    assert explorer.defaults["grep_context"] == 1 and explorer.defaults["grep_max"] == 20


def test_saved_state_stays_small_however_many_entries(make_explorer: Callable[..., Explorer], pad: Scratchpad) -> None:
    # 1,500 handles of two arrays each made 1.1 MB of widget state (every entry, every relation),
    # saved in the notebook and sent again on every refresh; the README says about 25 KB
    handles = [
        pad.spill({f"array_{i}_with_a_long_name": [1, 2], f"other_array_{i}": [3]}, tool=f"a_long_tool_name_{i}").handle
        for i in range(120)
    ]
    explorer = make_explorer(handles[0])
    state = json.dumps(explorer.get_state(), default=str)
    assert len(state) < len(ESM.read_text()) + 16_000
    assert len(explorer.entries) == ENTRY_PAGE and explorer.entries_total == 120
    assert explorer.entries_left == 120 - ENTRY_PAGE and len(explorer.relations) <= RELATION_PAGE
    shown = [e["handle"] for e in explorer.entries]
    newest = [e["handle"] for e in pad.entries("handle")][-(ENTRY_PAGE - 1) :]
    assert shown == [handles[0], *newest]  # the selected one, then the newest
    assert explorer.relations[0]["name"] == handles[0]  # the selected handle's relations first
    assert "scratch_notes" in {r["name"] for r in explorer.relations} and explorer.relations_left > 0
    explorer.entry_filter = "a_long_tool_name_7"  # the picker's find box reaches the others
    assert {e["handle"] for e in explorer.entries} >= {h for h in handles if h.startswith("a_long_tool_name_7_")}
    assert explorer.entries_total == 1 + 10 and len(explorer.entries) == 12  # 7, 70-79, and the selected one
    assert explorer.handle == handles[0]


def test_handle_argument_selects_it_and_bad_ones_are_clear_errors(
    make_explorer: Callable[..., Explorer],
    pad: Scratchpad,
    pods_handle: str,
    events_handle: str,
) -> None:
    assert make_explorer(pods_handle).handle == pods_handle
    with pytest.raises(NotFoundError, match="no live handle 'nope_000'"):
        make_explorer("nope_000")
    with pytest.raises(ValueError, match="handle"):
        make_explorer("Not A Handle!")
    with pytest.raises(TypeError, match="Scratchpad"):
        Explorer(pad.store)  # type: ignore[arg-type]


def test_select_and_refresh_follow_the_store(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, pods: dict[str, Any]
) -> None:
    explorer = make_explorer(pods_handle)
    later = pad.spill("a later output\n" * 300, tool="later").handle
    assert later not in [e["handle"] for e in explorer.entries]
    assert refresh_all() >= 1
    assert later in [e["handle"] for e in explorer.entries] and explorer.handle == pods_handle  # kept
    assert ask(explorer, "select", handle=later)["ok"] and explorer.handle == later
    pad.delete(later)
    reply = ask(explorer, "preview", tool="head")
    assert not reply["ok"] and reply["error"]["error"] == "unknown_handle"
    assert explorer.handle == pods_handle  # the vanished handle was replaced by the newest live one


def test_an_empty_run_says_to_spill_first(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods: dict[str, Any]
) -> None:
    explorer = make_explorer()
    assert explorer.handle is None and explorer.entries == []
    reply = ask(explorer, "preview", tool="head")
    assert not reply["ok"] and "pick an entry first" in reply["error"]["message"]
    handle = pad.intercept(pods, tool="k8s_list_pods").handle
    explorer.refresh()
    assert explorer.handle == handle


def test_messages_from_the_page_get_replies(
    make_explorer: Callable[..., Explorer], pods_handle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    explorer = make_explorer(pods_handle)
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(explorer, "send", lambda content, buffers=None: sent.append(content))
    explorer._on_message(explorer, {"type": "request", "id": 41, "action": "preview", "args": {"lines": 2}}, [])
    explorer._on_message(explorer, {"type": "something else"}, [])
    explorer._on_message(explorer, "not even a dict", [])
    assert [(m["id"], m["ok"], m["view"]["lines"]) for m in sent] == [(41, True, ["{", '  "apiVersion": "v1",'])]


def test_the_bundle_carries_summaries_for_a_notebook_without_its_kernel(
    make_explorer: Callable[..., Explorer],
    pods_handle: str,
    events_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    data, _meta = explorer._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == explorer.model_id
    assert data["text/plain"].startswith("Scratchpad explorer — run run-1")
    assert f"exploring: {pods_handle}" in data["text/plain"] and events_handle in data["text/plain"]
    assert "jp-scratchpad-explorer-summary" in data["text/html"] and f"{pods_handle}" in data["text/html"]
    payload = data[EXPLORER_MIME]
    assert payload["model_id"] == explorer.model_id and payload["handle"] == pods_handle
    assert any(events_handle in line for line in payload["lines"]) and "%scratch explore" in payload["again"]


def test_summary_of_a_closed_store_says_so(tmp_path: Path, pods: dict[str, Any]) -> None:
    store = ScratchStore(tmp_path / "s", sweep_interval_s=None)
    pad = store.scratchpad(run_id="r", agent_id="a")
    explorer = Explorer(pad, handle=pad.intercept(pods, tool="t").handle)
    store.close()
    try:
        assert explorer.refresh() is False  # never raises
        data, _ = explorer._repr_mimebundle_()
        assert "the store cannot be read" in data["text/plain"]
        reply = ask(explorer, "preview", tool="head")
        assert not reply["ok"] and "closed" in reply["error"]["message"].lower()
    finally:
        explorer.close()


def test_close_forgets_the_explorer(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    model_id = explorer.model_id
    assert live_explorer(model_id) is explorer
    explorer.close()
    assert live_explorer(model_id) is None and model_id not in ipywidget_module._instances
    explorer.close()  # idempotent


def test_a_first_sql_load_shows_its_progress_in_the_explorer_not_under_a_cell(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_scratchpad.spill import _progress

    # every load "runs longer than a second": events from its start, every 10 ms
    monkeypatch.setattr(_progress, "TICK_AFTER_S", 0.0)
    monkeypatch.setattr(_progress, "TICK_EVERY_S", 0.01)
    notebook: list[dict[str, Any]] = []  # the notebook's progress line, as %load_ext adds it
    pad.progress_listeners.append(notebook.append)
    records = [{"id": i, "phase": "ab"[i % 2]} for i in range(3000)]
    first, second = (pad.intercept(records + [{"id": n}], tool="list").handle for n in (-1, -2))
    explorer = make_explorer(first)
    shown: list[dict[str, Any]] = []
    explorer.observe(lambda change: shown.append(change["new"]), names="progress")
    notebook.clear()  # (the two spills reported to it: they ran in the cell)

    reply = ask(explorer, "sql", query=f"SELECT phase, count(*) AS n FROM {first} GROUP BY 1 ORDER BY 1")
    assert reply["ok"], reply
    assert [row[-1] for row in reply["view"]["rows"]] == ["1500", "1500", "1"]  # a, b, nulls last
    loading = [p for p in shown if p]
    assert loading and all(p["text"].startswith(f"[scratchpad] loading {first} (") for p in loading)
    assert "into DuckDB tables for SQL" in loading[0]["text"]
    assert all(p["percent"] is None or 0 <= p["percent"] <= 100 for p in loading)
    assert explorer.progress == {}  # the reply came: nothing left running
    assert notebook == []  # routed to the explorer alone, not to the last cell's output

    # outside an explorer request, the pad's own listeners hear a load again
    assert len(pad.sql_df(f"SELECT * FROM {second}")) == 3001
    assert {e["handle"] for e in notebook} == {second} and notebook[-1]["phase"] == "done"
    assert explorer.progress == {}
