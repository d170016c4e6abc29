"""Every tool on a handle nested 100 … 100,000 deep: an answer or a bounded, structured refusal —
never an internal error, never a flood (issue 11 §2)."""

from __future__ import annotations

import json

import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.tokens import count_tokens

DEPTHS = [100, 300, 1_000, 10_000, 100_000]


def _deep_doc(depth: int) -> str:
    # an ordinary payload with one very deep branch, as the audit's 1 MB JSON had
    items = [{"id": i, "name": f"pod-{i}", "labels": {"app": "web"}} for i in range(200)]
    return '{"items": ' + json.dumps(items) + ', "deep": ' + '{"a":' * depth + '"leaf"' + "}" * depth + "}"


@pytest.mark.parametrize("depth", DEPTHS)
def test_every_tool_answers_at_any_depth(pad: Scratchpad, depth: int) -> None:
    r = pad.spill(_deep_doc(depth), tool="deep")
    assert r.spilled and r.stub["format"] == "json", r.failure
    h = r.handle
    deep_path = "deep" + ".a" * (depth - 1)
    calls = [
        ("schema", {"handle": h}),
        ("schema", {"handle": h, "max_depth": 32}),
        ("schema", {"handle": h, "path": "deep"}),
        ("item_schema", {"handle": h, "path": "items"}),
        ("iterate_over", {"handle": h, "path": "items", "fields": "id,labels.app", "limit": 3}),
        ("get_in", {"handle": h, "path": deep_path}),
        ("get_in", {"handle": h, "path": "deep.a.a"}),
        ("grep", {"handle": h, "pattern": "leaf"}),
        ("head", {"handle": h, "lines": 5}),
        ("sql", {"query": f"SELECT count(*) FROM {h}.items"}),
    ]
    for name, args in calls:
        res = pad.call_tool(name, args)
        assert res.ok or res.error["error"] not in ("internal_error",), (name, res.text[:300])
        assert count_tokens(res.text) < 20_000, name
    leaf = pad.call_tool("get_in", {"handle": h, "path": deep_path})
    assert leaf.ok and json.loads(leaf.text.split("\n---")[0]) == {"a": "leaf"}
    rows = pad.call_tool("iterate_over", {"handle": h, "path": "items", "fields": "id,labels.app", "limit": 3})
    assert rows.ok and rows.data[0]["labels.app"] == "web" and '[0,0,"web"]' in rows.text
    assert pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {h}.items"}).data == [{"n": 200}]


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_deep_python_value_is_explored_like_deep_text(pad: Scratchpad, depth: int) -> None:
    value: object = "leaf"
    for _ in range(depth):
        value = {"a": value}
    r = pad.intercept({"deep": value, "pad": "z" * 30_000}, tool="deep_value")
    assert r.spilled, r.failure
    res = pad.call_tool("schema", {"handle": r.handle, "max_depth": 32})
    assert res.ok and "$.deep.a.a" in res.text
    got = pad.call_tool("get_in", {"handle": r.handle, "path": "deep" + ".a" * depth})
    assert got.ok and got.text.startswith('"leaf"')


def test_schema_line_ranges_hold_past_the_64_level_cut(pad: Scratchpad) -> None:
    # the body puts a container more than 64 levels below its root on one line; the schema's line
    # ranges count the lines of each node as the body has them (they counted the node as if it were
    # the root, and ran past the end of the body)
    def nest(depth: int, leaf: int) -> object:
        value: object = leaf
        for i in range(depth):
            value = {"k": value} if i % 2 else [value]
        return value

    doc = {"meta": {"n": 1}, "data": {"items": [nest(70, i) for i in range(6)]}}
    h = pad.spill(json.dumps(doc), tool="deep").handle
    pad.wait_for_counts()
    total = pad.entry(h).line_count
    body = pad.call_tool("slice", {"handle": h, "start": 1, "end": total}, charge=False).data["lines"]
    rows = pad.call_tool("schema", {"handle": h, "max_depth": 3}, charge=False).data["nodes"]
    where = {r["path"]: r["where"] for r in rows}
    assert where["$"] == f"lines 1-{total}"
    start, end = (int(n) for n in where["$.data.items"].removeprefix("lines ").split("-"))
    assert body[start - 1].strip() == '"items": [' and body[end - 1].strip() == "]"
    assert body[end].strip() == "}"  # closes $.data: the next line after the array


@pytest.mark.parametrize("depth", [1_000, 5_000])
def test_a_note_at_any_depth_is_written_read_and_queried(pad: Scratchpad, depth: int) -> None:
    # json's recursion limit made scratch_write an internal_error from 1,000 levels (as a value
    # and as the JSON text of the arguments an OpenAI loop passes), and its log line raised
    value: dict[str, object] = {"leaf": True}
    for _ in range(depth):
        value = {"a": value}
    pad.set_model("gpt-4o", max_extraction_tokens=40_000)  # (5,000 levels are 17,767 tokens: a note is read whole)
    wrote = pad.call_tool("scratch_write", {"key": "deep", "value": value})
    assert wrote.ok, wrote.text
    as_text = pad.call_tool("scratch_write", '{"key": "deep_text", "value": ' + '{"a":' * depth + "1" + "}" * depth + "}")
    assert as_text.ok, as_text.text
    for key, leaf in (("deep", {"leaf": True}), ("deep_text", 1)):
        node = pad.scratch_read(key)  # (== of two such values would itself recurse too deep)
        for _ in range(depth):
            node = node["a"]
        assert node == leaf
    read = pad.call_tool("scratch_read", {"key": "deep"})
    assert read.ok and read.tokens <= 40_000, read.text[:300]
    rows = pad.call_tool("sql", {"query": "SELECT key, length(value) AS n FROM scratch_notes ORDER BY key"})
    assert rows.ok and [r["key"] for r in rows.data] == ["deep", "deep_text"], rows.text


def test_a_refusal_at_a_deep_path_keeps_what_fits_of_its_suggestions(pad: Scratchpad) -> None:
    # a schema refusal 2,000 levels down came back with "suggestions": [] and without its
    # estimate: each suggestion repeated the 4,000-character path, and the 2 KiB bound dropped them all
    h = pad.spill('{"a":' * 10_000 + '"leaf"' + "}" * 10_000, tool="deep").handle
    path = ".".join(["a"] * 2000)
    res = pad.call_tool("schema", {"handle": h, "path": path})
    assert not res.ok and res.error["error"] == "schema_too_large", res.text[:300]
    assert len(json.dumps(res.error).encode()) <= 2048
    assert res.error["estimated_tokens"] > res.error["per_call_limit"]  # kept: small fields go last
    outline = res.error["suggestions_left_out"]
    assert outline.startswith("schema(") and "max_depth=" in outline and "path=<4,001 characters>" in outline
    depth = int(outline.split("max_depth=")[1].split(",")[0].rstrip(")"))
    assert pad.call_tool("schema", {"handle": h, "path": path, "max_depth": depth}).ok  # the outlined call runs
    # a small suggestion beside a large one survives the bound (it was dropped with the large one)
    items = [{"K" * 60_000: i, "b": i} for i in range(300)]
    k = pad.spill(json.dumps({"items": items}), tool="bigkey").handle
    ref = pad.call_tool("get_in", {"handle": k, "path": "items[0]"})
    assert not ref.ok and len(json.dumps(ref.error).encode()) <= 2048
    runs = [s for s in ref.error["suggestions"] if s["tool"] != "get_in" or "K" * 100 not in s["arguments"]["path"]]
    assert runs, ref.error
    for s in runs:
        assert pad.call_tool(s["tool"], s["arguments"]).ok, s
