"""Paging at the edges (issue 11 §4) and values any tool can show (exact numbers, any depth)."""

from __future__ import annotations

import json

from jupyter_scratchpad import Scratchpad

DOC = {
    "items": [{"id": i, "name": f"n{i}", "meta": {"zone": "a"}} for i in range(2)],
    "log": "\n".join(f"line {i}" for i in range(250)),
    "big": 123456789012345678901234567890,
}
PRICE = "0.1000000000000000055511151231257827"  # a double would print 0.1


def spilled(pad: Scratchpad) -> str:
    h = pad.spill(json.dumps(DOC)[:-1] + f', "price": {PRICE}}}', tool="api").handle
    assert h is not None
    return h


def run_suggestions(pad: Scratchpad, error: dict) -> None:
    for s in error["suggestions"]:
        res = pad.call_tool(s["tool"], s["arguments"])
        assert res.ok, (s, res.text)


def test_get_in_offset_past_the_end_of_a_string(pad: Scratchpad) -> None:
    h = spilled(pad)
    res = pad.call_tool("get_in", {"handle": h, "path": "$.log", "offset": 999})
    assert not res.ok and res.error["error"] == "offset_out_of_range"
    assert res.error["total_lines"] == 250 and res.error["offset"] == 999
    run_suggestions(pad, res.error)


def test_get_in_offset_without_limit_pages_100_lines(pad: Scratchpad) -> None:
    h = spilled(pad)
    res = pad.call_tool("get_in", {"handle": h, "path": "$.log", "offset": 10})
    assert res.ok and len(res.data["lines"]) == 100 and res.data["lines"][0] == "line 10"


def test_windows_past_the_end_are_never_negative(pad: Scratchpad) -> None:
    h = spilled(pad)
    for tool, extra in (("item_schema", {}), ("iterate_over", {"fields": "id,name"})):
        res = pad.call_tool(tool, {"handle": h, "path": "$.items", "offset": 999, **extra})
        assert not res.ok and res.error["error"] == "offset_out_of_range", res.text
        assert res.error["total_items"] == 2 and "-" not in res.text.split("suggest")[0].replace("-of", "")
        run_suggestions(pad, res.error)


def test_key_path_not_found_names_the_failed_segment(pad: Scratchpad) -> None:
    h = spilled(pad)
    res = pad.call_tool("get_in", {"handle": h, "path": "$.items[0].meta.zonee"})
    assert not res.ok and res.error["error"] == "key_path_not_found"
    assert res.error["failed_segment"] == "zonee" and res.error["valid_prefix"] == "$.items[0].meta"
    run_suggestions(pad, res.error)


def test_numbers_come_back_exactly(pad: Scratchpad) -> None:
    h = spilled(pad)
    res = pad.call_tool("get_in", {"handle": h, "path": "$.big"})
    assert res.ok and res.text.startswith("123456789012345678901234567890")
    whole = pad.call_tool("get_in", {"handle": h, "path": "$"})
    assert whole.ok and "123456789012345678901234567890" in whole.text
    assert PRICE in whole.text
    assert pad.call_tool("get_in", {"handle": h, "path": "$.price"}).text.startswith(PRICE)
    found = pad.call_tool("grep", {"handle": h, "pattern": "123456789012345678901234567890", "context": 0})
    assert found.ok and found.data["total_matches"] == 1


def test_get_in_and_iterate_over_at_any_depth(pad: Scratchpad) -> None:
    for depth in (300, 1000, 10_000):
        doc = {"rows": [{"id": 1}]}
        text = "[" * depth + "1" + "]" * depth
        h = pad.spill('{"rows": [{"deep": ' + text + ', "id": 1}]}', tool=f"deep_{depth}").handle
        node = pad.call_tool("get_in", {"handle": h, "path": "$.rows[0].deep" + "[0]" * (depth - 2)})
        assert node.ok, node.text
        assert node.data == [[1]]
        rows = pad.call_tool("iterate_over", {"handle": h, "path": "$.rows", "fields": "id,deep", "limit": 1})
        assert rows.ok and rows.text.splitlines()[1].startswith("[0,1,"), rows.text
        schema = pad.call_tool("schema", {"handle": h})
        assert schema.ok, schema.text
        assert doc["rows"][0]["id"] == 1


def test_refusals_echo_the_request_as_aura_does(pad: Scratchpad) -> None:
    items = [{"name": f"p{i}", "text": "lorem ipsum " * 40} for i in range(2000)]
    h = pad.intercept({"items": items}, "t", force=True).handle
    it = pad.call_tool("iterate_over", {"handle": h, "path": "items", "fields": "name,text", "limit": 1000}).error
    assert it["error"] == "iterate_over_too_large"
    assert (it["requested_path"], it["offset"], it["limit"], it["window_size"], it["array_length"]) == (
        "items",
        0,
        1000,
        1000,
        2000,
    )
    head = pad.call_tool("head", {"handle": h, "lines": 5000}).error
    assert head["requested_lines"] == 5000
    sl = pad.call_tool("slice", {"handle": h, "start": 1, "end": 9000}).error
    assert sl["requested_lines"] == "1-9000"
    got = pad.call_tool("get_in", {"handle": h, "path": "items"}).error
    assert got["requested_path"] == "items" and got["offset"] == 0


def test_a_huge_node_is_refused_from_a_sample_and_item_schema_is_computed_once(pad: Scratchpad, monkeypatch) -> None:
    from jupyter_scratchpad.explore import _json

    items = [{"name": f"p{i}", "text": "lorem ipsum " * 10, "n": i} for i in range(20_000)]
    h = pad.intercept({"items": items}, "t", force=True).handle
    calls = []
    real = _json.lean_json  # (what get_in writes, and measures a sample with)

    def counting(value):  # type: ignore[no-untyped-def]
        calls.append(len(value) if isinstance(value, (list, dict)) else 1)
        return real(value)

    monkeypatch.setattr(_json, "lean_json", counting)
    res = pad.call_tool("get_in", {"handle": h, "path": "items"})
    monkeypatch.undo()
    assert res.error["error"] == "get_in_too_large" and res.error["estimated_tokens"] > 100_000
    assert 20_000 not in calls  # the whole array was never serialised to be measured
    first = pad.call_tool("item_schema", {"handle": h, "path": "items"})
    assert first.ok and ("n" in first.text)
    assert any(k[0] == pad.entry(h).body_id for k in _json._ITEM_COUNTS)


def test_read_handle_past_the_end_says_so_with_a_read_that_runs(pad: Scratchpad) -> None:
    # start=1e15 without end said "end (2,918,889) must be greater than start", no way on
    h = pad.intercept("\n".join(f"line {i}" for i in range(20_000)), tool="t").handle
    res = pad.call_tool("read_handle", {"handle": h, "start": 10**15})
    assert res.error is not None and "is past the end" in res.error["message"], res.text
    [last] = res.error["suggestions"]
    again = pad.call_tool(last["tool"], last["arguments"])
    assert again.ok and "line 19999" in again.text
