"""Probe H: agent tool calls end within their time limit on hostile input (issues 1, 4 and 6).

Structural checks on small inputs (a call answers, or answers ``timeout``, well within a limit a
quadratic pass or an unbounded dry run overran), not speed targets: those are the benchmarks'.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest

from jupyter_scratchpad import ScratchStore, tools
from jupyter_scratchpad.explore import _schema
from jupyter_scratchpad.explore._base import ToolError, suggestion
from jupyter_scratchpad.explore._shape import ItemKeyCounts, Shape, item_key_counts


def _own_keys(n: int) -> str:
    """An array of ``n`` objects, each with a key of its own: ``[{"u0": 0}, {"u1": 1}, …]``."""
    return json.dumps([{f"u{i}": i} for i in range(n)])


# -- 1. objects with many distinct keys: linear, summarised, bounded by the call's time ----------


def test_objects_each_with_its_own_key_answer_at_once_as_one_map_row(store: ScratchStore) -> None:
    # 20,000 such objects (360 KB): schema 33 s, item_schema 45 s, iterate_over's error 32-41 s
    # with a 10 s limit (a scan of every object per key)
    pad = store.scratchpad(run_id="r", agent_id="a", tool_timeout_s=3.0)
    h = pad.spill(_own_keys(20_000), tool="uniq").handle
    for tool, args in (
        ("schema", {}),
        ("item_schema", {"path": "$"}),
        ("iterate_over", {"path": "$"}),  # (no fields: an error, whose suggestions are dry-run)
    ):
        started = time.monotonic()
        res = pad.call_tool(tool, {"handle": h, **args})
        assert time.monotonic() - started < 3.0, tool
        if tool == "schema":
            assert res.ok and "$[*]{*}" in res.text and "20,000 distinct" in res.text, res.text
            assert "$[*].u7 " not in res.text  # (not a row a key: 60 rows of "1/20000")
        elif tool == "item_schema":
            assert res.ok and [r["key"] for r in res.data["keys"]] == ["{*}"], res.text
            assert res.data["keys"][0]["present"] == 20_000
        else:
            assert res.error["error"] == "invalid_argument"
            assert any(s["tool"] == "item_schema" for s in res.error["suggestions"]), res.error


def test_a_shape_pass_stops_when_told(store: ScratchStore) -> None:
    class Stop(Exception):
        pass

    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) > 3:
            raise Stop

    with pytest.raises(Stop):
        Shape.of([{f"u{i}": {"x": i}, "id": i} for i in range(50_000)], 4, check)
    calls.clear()
    with pytest.raises(Stop):
        item_key_counts([{f"u{i}": {"x": i}, "id": i} for i in range(50_000)], check=check)


def _records(n: int) -> str:
    return json.dumps(
        [
            {
                "id": i,
                "name": f"n{i}",
                "tags": ["a", "b"],
                "meta": {"score": i % 7, "ok": i % 2 == 0, "at": "2026-01-01", "by": {"id": i % 9, "kind": "u"}},
                **{f"f{j}": j for j in range(8)},
            }
            for i in range(n)
        ]
    )


def test_schema_and_item_schema_end_as_timeout_at_the_calls_limit(
    store: ScratchStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the shapes were built with no look at the clock: a hostile input was a hang, not a timeout
    monkeypatch.setattr(_schema, "PRECOMPUTE_LIMIT_S", 0.0)
    monkeypatch.setattr(_schema, "PRECOMPUTE_MIN_BYTES_PER_S", float("inf"))  # (the spill's worker leaves it to the tools)
    pad = store.scratchpad(run_id="r", agent_id="a", tool_timeout_s=0.01)
    h = pad.spill(_records(60_000), tool="recs").handle
    pad.wait_for_counts()
    for tool, args in (("schema", {}), ("item_schema", {"path": "$"})):
        res = pad.call_tool(tool, {"handle": h, **args})
        assert not res.ok and res.error["error"] == "timeout", (tool, res.text[:300])


def test_the_spill_worker_gives_up_and_the_tool_computes_on_demand(
    store: ScratchStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one worker thread for every spill: a body it spent minutes on held up every later spill's
    monkeypatch.setattr(_schema, "PRECOMPUTE_LIMIT_S", 0.0)
    monkeypatch.setattr(_schema, "PRECOMPUTE_MIN_BYTES_PER_S", float("inf"))
    pad = store.scratchpad(run_id="r", agent_id="a")
    h = pad.spill(_records(5_000), tool="recs").handle
    pad.wait_for_counts()
    entry = pad.entry(h)
    directory = store.reader(entry).directory
    assert not list(directory.glob("schema-*.json")) and not list(directory.glob("items-*.json"))
    res = pad.call_tool("schema", {"handle": h})
    assert res.ok and "$[*].meta.score" in res.text, res.text
    assert pad.call_tool("item_schema", {"handle": h, "path": "$"}).ok


def test_batches_merge_to_the_shape_and_counts_of_the_whole() -> None:
    # a streamed array is summarised a segment at a time: the folded keys come out the same
    items = [{"id": i, f"k{i % 3000}": "v" * (i % 3), "s": "ok" if i % 3 else "bad"} for i in range(30_001)]
    whole = Shape.of(items, 3)
    merged: Shape | None = None
    batches = ItemKeyCounts()
    for start in range(0, len(items), 7_000):  # (a last batch of one item, with a key of its own)
        part = items[start : start + 7_000]
        merged = Shape.of(part, 3) if merged is None else merged.merge(Shape.of(part, 3))
        batches.add(part)
    assert merged is not None
    assert set(whole.keys) == set(merged.keys) == {"id", "s"}
    assert whole.rest is not None and merged.rest is not None and whole.rest.count == merged.rest.count == 30_001
    assert whole.distinct_keys() == merged.distinct_keys() == 3002
    assert whole.describe() == merged.describe() == "object(3 keys, 3,002 distinct)"
    counts = item_key_counts(items)
    assert {k: dict(c) for k, c in batches.counts.items()} == {k: dict(c) for k, c in counts.items()}
    assert set(counts) == {"id", "s", "{*}"}


def test_uniform_and_optional_keys_are_listed_as_before() -> None:
    items = [{"id": i, "name": f"n{i}", **({"opt": i} if i % 2 else {})} for i in range(1000)]
    shape = Shape.of(items, 2)
    assert list(shape.keys) == ["id", "name", "opt"] and shape.rest is None
    assert shape.keys["opt"].count == 500 and shape.describe() == "object(2-3 keys)"


# -- 4. the dry runs of an error's suggestions have what is left of the call's time --------------


def test_suggestions_are_checked_within_the_calls_time(store: ScratchStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # each dry run had a fresh tool_timeout_s: a call answered after 11.5-15.8 s with a 10 s limit
    pad = store.scratchpad(run_id="r", agent_id="a", tool_timeout_s=2.0)
    h = pad.spill("\n".join(f"line {i}" for i in range(3000)), tool="log").handle
    head, grep = tools.TOOLS["head"], tools.TOOLS["grep"]

    def slow_failure(ctx: Any, **kwargs: Any) -> Any:
        while ctx.time_left() > 1.3:  # most of the call's time spent, then a failure to suggest after
            time.sleep(0.01)
        raise ToolError("invalid_argument", "not this way", [suggestion("grep", "search", handle=h, pattern="x")])

    def never_done(ctx: Any, **kwargs: Any) -> Any:
        while True:  # a suggestion whose dry run only ends at its time limit
            ctx.check_time()
            time.sleep(0.01)

    monkeypatch.setitem(tools.TOOLS, "head", dataclasses.replace(head, run=slow_failure))
    monkeypatch.setitem(tools.TOOLS, "grep", dataclasses.replace(grep, run=never_done))
    started = time.monotonic()
    res = pad.call_tool("head", {"handle": h, "lines": 5})
    elapsed = time.monotonic() - started
    assert elapsed < 2.5, elapsed  # (the limit, and the error's own few milliseconds)
    assert res.error["error"] == "invalid_argument"
    assert not any(s["tool"] == "grep" for s in res.error["suggestions"])  # not checked: not offered
    assert "left out" in res.error["message"] and "time ran out" in res.error["message"], res.error["message"]


# -- 6. a long path given as a list says its real limit -----------------------------------------


def test_a_long_list_path_is_refused_for_its_length_with_the_string_path(store: ScratchStore) -> None:
    pad = store.scratchpad(run_id="r", agent_id="a")
    deep: Any = 7
    for _ in range(300):
        deep = {"a": deep}
    h = pad.spill(json.dumps(deep), tool="deep").handle
    res = pad.call_tool("get_in", {"handle": h, "path": ["a"] * 300})
    message = res.error["message"]
    assert "must be string" not in message and "at most 256 keys" in message and "300" in message, message
    (same,) = [s for s in res.error["suggestions"] if s["tool"] == "get_in"]
    assert same["arguments"]["path"] == "$" + ".a" * 300
    assert pad.call_tool("get_in", same["arguments"]).data == 7
    assert pad.call_tool("get_in", {"handle": h, "path": ["a"] * 3}).ok  # (a short list is read as before)
    bad = pad.call_tool("get_in", {"handle": h, "path": ["a", None]})
    assert "item 1 is null" in bad.error["message"], bad.error["message"]
