"""Paths with a wildcard, as ``schema`` writes them (``$.items[*].metadata.name``): a trailing
``[*]`` names the array to tools that take one; elsewhere the error's suggestions ask the same
question without a wildcard, and each of them runs."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad


def test_schema_writes_the_paths_that_item_schema_and_iterate_over_take(pad: Scratchpad, pods_handle: str) -> None:
    paths = {r["path"] for r in pad.call_tool("schema", {"handle": pods_handle}).data["nodes"]}
    assert "$.items[*]" in paths  # what a model copies
    for tool, extra in (("item_schema", {}), ("iterate_over", {"fields": "metadata.name", "limit": 3})):
        starred = pad.call_tool(tool, {"handle": pods_handle, "path": "$.items[*]", **extra})
        plain = pad.call_tool(tool, {"handle": pods_handle, "path": "$.items", **extra})
        assert starred.ok and starred.data == plain.data
        assert starred.text.split("\n--- ")[0] == plain.text.split("\n--- ")[0]  # (the footers' budgets differ)
    root = pad.spill([{"id": i} for i in range(300)], tool="ids").handle
    assert pad.call_tool("item_schema", {"handle": root, "path": "$[*]"}).data["total_items"] == 300
    assert pad.call_tool("item_schema", {"handle": root, "path": " $[ ] "}).data["total_items"] == 300


def _run(pad: Scratchpad, suggestion: dict[str, Any]) -> Any:
    return pad.call_tool(suggestion["tool"], suggestion["arguments"])


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("get_in", {"path": "$.items[*].metadata.name"},
         [("iterate_over", {"path": "$.items", "fields": "metadata.name", "limit": 50}),
          ("get_in", {"path": "$.items[0].metadata.name"})]),
        ("iterate_over", {"path": "$.items[*].metadata", "fields": ["name", "namespace"], "limit": 5},
         [("iterate_over", {"path": "$.items", "fields": "metadata.name,metadata.namespace", "limit": 5})]),
        ("item_schema", {"path": "$.items[*].status"}, [("item_schema", {"path": "$.items"})]),
        ("schema", {"path": "$.items[*].metadata"},
         [("schema", {"path": "$.items[0].metadata"}), ("item_schema", {"path": "$.items"})]),
        ("grep", {"pattern": "Failed", "path": "$.items[*].status"},
         [("grep", {"path": "$.items", "pattern": "Failed"})]),
    ],
)  # fmt: skip
def test_a_wildcard_path_is_answered_with_calls_that_run(
    pad: Scratchpad, pods_handle: str, tool: str, args: dict[str, Any], expected: list[tuple[str, dict[str, Any]]]
) -> None:
    res = pad.call_tool(tool, {"handle": pods_handle, **args})
    assert not res.ok and res.error is not None and res.error["error"] == "invalid_path"
    suggestions = res.error["suggestions"]
    got = [(s["tool"], {k: v for k, v in s["arguments"].items() if k not in ("handle", "max_matches", "context")})
           for s in suggestions]  # fmt: skip
    assert got == expected
    for s in suggestions:  # each runs as given (verified before it was offered)
        answer = _run(pad, s)
        assert answer.ok, (s["call"], answer.error)
    if tool == "get_in":
        names = _run(pad, suggestions[0]).data
        assert [r["metadata.name"] for r in names[:3]] == ["pod-0", "pod-1", "pod-2"]
        assert _run(pad, suggestions[1]).data == "pod-0"


def test_nested_wildcards_point_at_the_first_array_and_the_first_items(pad: Scratchpad) -> None:
    doc = {"items": [{"spec": {"containers": [{"image": f"img-{i}-{j}"} for j in range(2)]}} for i in range(400)]}
    h = pad.spill(doc, tool="deploys").handle
    res = pad.call_tool("get_in", {"handle": h, "path": "$.items[*].spec.containers[*].image"})
    assert res.error is not None and res.error["error"] == "invalid_path"
    calls = {s["tool"]: s for s in res.error["suggestions"]}
    assert calls["get_in"]["arguments"]["path"] == "$.items[0].spec.containers[0].image"
    assert _run(pad, calls["get_in"]).data == "img-0-0"
    per_item = _run(pad, calls["iterate_over"])
    assert per_item.ok and per_item.data[0]["spec.containers"] == [{"image": "img-0-0"}, {"image": "img-0-1"}]


def test_a_path_with_no_wildcard_gets_no_such_suggestions(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[0"})
    assert res.error is not None and res.error["error"] == "invalid_path" and res.error["suggestions"] == []


def test_a_jsonpath_slice_is_answered_with_the_window(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[10:12]"})
    assert res.error is not None and res.error["error"] == "key_path_not_found"
    calls: dict[str, Any] = {}
    for s in res.error["suggestions"]:  # (the first of each tool: the window's come first)
        calls.setdefault(s["tool"], s)
    window = _run(pad, calls["iterate_over"])
    assert [r["_index"] for r in window.data] == [10, 11]
    assert _run(pad, calls["get_in"]).data["metadata"]["name"] == "pod-10"
    tail = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[-2:]"}).error
    assert tail is not None and [r["_index"] for r in _run(pad, tail["suggestions"][0]).data] == [2998, 2999]


def test_a_jsonpath_filter_is_answered_with_sql_and_grep(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[?(@.status.phase=='Failed')]"})
    assert res.error is not None and res.error["error"] == "key_path_not_found"
    calls: dict[str, Any] = {}
    for s in res.error["suggestions"]:  # (the first of each tool: the rows, then their count)
        calls.setdefault(s["tool"], s)
    # a few fields that say what an item is, the filter's among them (SELECT * was struct columns)
    query = f"SELECT metadata.name, metadata.namespace, status.phase FROM {pods_handle}.items WHERE status.phase = 'Failed'"
    assert calls["sql"]["arguments"]["query"] == query + " LIMIT 20"
    rows = _run(pad, calls["sql"]).data
    assert rows and {r["name"] for r in rows} <= {f"pod-{i}" for i in range(2, 3000, 3)}
    hits = _run(pad, calls["grep"])
    assert hits.ok and '"phase": "Failed"' in hits.text
    numeric = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[?(@.status.restarts > 3)]"}).error
    assert numeric is not None
    query = next(s for s in numeric["suggestions"] if s["tool"] == "sql")
    assert {r["restarts"] for r in _run(pad, query).data} == {4}


def test_a_field_that_ends_in_a_wildcard_is_the_node_itself(pad: Scratchpad, pods_handle: str) -> None:
    # metadata.labels.* read as a key named "*": null in every row, a wrong-looking answer
    res = pad.call_tool(
        "iterate_over",
        {"handle": pods_handle, "path": "$.items", "fields": ["metadata.labels.*", "metadata[*]"], "limit": 2},
    )
    assert res.ok and res.data[1]["metadata.labels.*"] == {"app": "web"} and res.data[0]["metadata.labels.*"] is None
    assert res.data[1]["metadata[*]"]["name"] == "pod-1"
    star = pad.call_tool("iterate_over", {"handle": pods_handle, "path": "$.items", "fields": "*", "limit": 2})
    whole = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[1]"})
    assert star.ok and star.data[1]["*"]["metadata"]["name"] == "pod-1", star.text  # was null for every item
    assert whole.ok and star.data[1]["*"] == whole.data
    inner = pad.call_tool(
        "iterate_over", {"handle": pods_handle, "path": "$.items", "fields": "metadata.name,status[*].phase", "limit": 2}
    )
    assert inner.error is not None and inner.error["error"] == "invalid_path"
    again = _run(pad, inner.error["suggestions"][0])
    assert again.ok and again.data[0] == {"_index": 0, "metadata.name": "pod-0", "status": {"phase": "Running", "restarts": 0}}


def test_a_recursive_descent_is_answered_with_a_grep_for_the_key(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("get_in", {"handle": pods_handle, "path": "$..phase"})
    assert res.error is not None and res.error["error"] == "invalid_path"
    grep = next(s for s in res.error["suggestions"] if s["tool"] == "grep")
    hits = _run(pad, grep)
    assert hits.ok and hits.text.count('"phase":') >= 3


def test_a_path_sent_as_a_list_of_keys_and_fields_sent_as_json_text_are_understood(
    pad: Scratchpad, pods_handle: str
) -> None:
    got = pad.call_tool("get_in", {"handle": pods_handle, "path": ["items", 1, "metadata", "name"]})
    assert got.ok and got.data == "pod-1"
    odd = pad.call_tool("get_in", {"handle": pods_handle, "path": ["items", 1, "metadata", "a key"]})
    assert odd.error is not None and odd.error["requested_path"] == '$.items[1].metadata["a key"]'
    for bad in ([], [True], [["items"]], [None]):  # still refused as not a path
        refused = pad.call_tool("get_in", {"handle": pods_handle, "path": bad})
        assert refused.error is not None and refused.error["error"] == "invalid_argument"
    rows = pad.call_tool(
        "iterate_over",
        {"handle": pods_handle, "path": "$.items", "fields": '["metadata.name", "status.phase"]', "limit": 2},
    )
    assert rows.ok and rows.data[1] == {"_index": 1, "metadata.name": "pod-1", "status.phase": "Pending"}


@pytest.mark.parametrize("path", ["$..name", "$..['name']", "$.items..name"])
def test_recursive_descent_is_answered_with_where_the_key_is(pad: Scratchpad, pods_handle: str, path: str) -> None:
    # `$..name` said "at $, no key 'name'": the '..' was read as an empty step, the question lost
    res = pad.call_tool("get_in", {"handle": pods_handle, "path": path})
    assert not res.ok and res.error is not None and res.error["error"] == "invalid_path"
    assert "recursive descent" in res.error["message"] and "no key" not in res.error["message"]
    grep, schema = res.error["suggestions"]
    assert grep["tool"] == "grep" and schema["tool"] == "schema"
    assert "path" not in grep["arguments"]  # (a grep within a path numbers lines of its own, with no paths)
    found = _run(pad, grep)  # each match with its path
    assert found.ok and found.data["total_matches"] > 0
    assert all(m["path"].endswith(".name") for m in found.data["matches"][:5]), found.data["matches"][:5]
    assert _run(pad, schema).ok
