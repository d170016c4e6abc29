"""schema, item_schema, get_in, iterate_over on JSON, JSONL, markdown and text bodies."""

from __future__ import annotations

import json

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore, count_tokens
from tests.tools.conftest import pods


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """Every tool works unchanged on both backends (embedded DuckDB, shared PostgreSQL)."""
    return backend_store


def rows(res) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {r["path"]: r for r in res.data["nodes"]}


def test_schema_paths_kinds_and_line_ranges(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("schema", {"handle": pods_handle})
    assert res.ok
    nodes = rows(res)
    assert nodes["$"]["kind"] == "object(3 keys)"
    assert nodes["$.items"]["kind"] == "array(3000 items)"
    assert nodes["$.apiVersion"]["kind"] == "string" and nodes["$.apiVersion"]["where"] == "line 2"
    body = pad.call_tool("slice", {"handle": pods_handle, "start": 1, "end": 6}).data["lines"]
    assert body[1].strip().startswith('"apiVersion"')
    # the line range of $.items is where it really is in the pretty body
    start, end = (int(x.replace(",", "")) for x in nodes["$.items"]["where"].removeprefix("lines ").split("-"))
    total = pad.entry(pods_handle).line_count
    assert (
        pad.call_tool("slice", {"handle": pods_handle, "start": start, "end": start}).data["lines"][0].strip()
        == '"items": ['
    )
    assert end == total - 1
    assert pad.call_tool("slice", {"handle": pods_handle, "start": end, "end": end}).data["lines"][0].strip() == "]"


def test_schema_summarises_arrays_over_all_items(pad: Scratchpad, pods_handle: str) -> None:
    nodes = rows(pad.call_tool("schema", {"handle": pods_handle}))
    # "labels" is in half the items, "note" in one: a first-item summary would miss "note"
    assert nodes["$.items[*].metadata.labels"]["where"] == "1500/3000"
    assert nodes["$.items[*].note"]["where"] == "1/3000"
    assert nodes["$.items[*].metadata"]["kind"].startswith("object(2-3 keys")
    shallow = rows(pad.call_tool("schema", {"handle": pods_handle, "max_depth": 1}))
    assert "$.items" in shallow and "$.items[*]" not in shallow


def test_schema_union_of_kinds(pad: Scratchpad) -> None:
    r = pad.intercept([{"v": 1}, {"v": "x"}, {"v": None}, 5, "s"] * 2000, tool="t", force=True)
    nodes = rows(pad.call_tool("schema", {"handle": r.handle}))
    assert set(nodes["$[*]"]["kind"].split("|")) == {"object(1 key)", "number", "string"}
    assert set(nodes["$[*].v"]["kind"].split("|")) == {"number", "string", "null"}


def test_schema_markdown_heading_tree(pad: Scratchpad) -> None:
    doc = "# Guide\nintro\n## Install\nstep\n```\n# not a heading\n```\n## Use\ntext\n### Deep\nmore\n# Appendix\nend\n"
    r = pad.intercept(doc * 1, tool="docs", force=True)
    res = pad.call_tool("schema", {"handle": r.handle})
    heads = [(h["level"], h["title"], h["start"], h["end"]) for h in res.data["headings"]]
    assert heads == [
        (1, "Guide", 1, 11),
        (2, "Install", 3, 7),
        (2, "Use", 8, 11),
        (3, "Deep", 10, 11),
        (1, "Appendix", 12, 13),
    ]
    assert "  ## Install  lines 3-7" in res.text


def test_schema_text_and_jsonl_summaries(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("schema", {"handle": log_handle})
    assert res.ok and res.data["lines"] == 5000 and res.data["longest_line"] > 40 and len(res.data["sample"]) == 3
    jl = pad.intercept(
        "\n".join(json.dumps({"id": i, **({"late": 1} if i == 999 else {})}) for i in range(1000)), tool="t", force=True
    )
    assert pad.entry(jl.handle).format == "jsonl"
    res = pad.call_tool("schema", {"handle": jl.handle})
    assert res.data["records"] == 1000 and {"path": "$[*].late", "kind": "number", "where": "1/1000"} in res.data["nodes"]
    # max_depth was ignored (records and their top-level keys, whatever was asked)
    nested = pad.intercept("\n".join(json.dumps({"ctx": {"req": {"id": i}}}) for i in range(500)), tool="t", force=True)
    deep = [n["path"] for n in pad.call_tool("schema", {"handle": nested.handle}).data["nodes"]]
    assert "$[*].ctx.req.id" in deep
    shallow = [n["path"] for n in pad.call_tool("schema", {"handle": nested.handle, "max_depth": 1}).data["nodes"]]
    assert shallow == ["$", "$[*]"]
    bad = pad.intercept(b"\xff\xfe garbage" * 1000, tool="t", force=True)
    assert pad.call_tool("schema", {"handle": bad.handle}).ok  # never an error because of the format


def test_item_schema_union_types_presence(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("item_schema", {"handle": pods_handle, "path": "items"})
    keys = {r["key"]: r for r in res.data["keys"]}
    assert keys["metadata.labels.app"]["present"] == 1500 and keys["metadata.labels.app"]["of"] == 3000
    assert keys["status.phase"]["types"] == "string"
    assert "metadata.labels.app  string" in res.text.replace("   ", "  ") or "1500/3000" in res.text
    assert "all 3,000 items" in res.text
    mixed = pad.intercept([{"a": 1}, {"a": "x"}, {"b": {"c": None}}] * 1000, tool="t", force=True)
    win = pad.call_tool("item_schema", {"handle": mixed.handle, "path": "$", "offset": 0, "limit": 3})
    k = {r["key"]: r for r in win.data["keys"]}
    assert k["a"]["types"] in ("number|string", "string|number") and (k["a"]["present"], k["a"]["of"]) == (2, 3)
    assert (k["b.c"]["present"], k["b.c"]["types"]) == (1, "null")
    assert "items 0-2 of 3,000 (window 1 of 1,000)" in win.text
    second = pad.call_tool("item_schema", {"handle": mixed.handle, "path": "$", "offset": 3, "limit": 3})
    assert "window 2 of 1,000" in second.text


def test_item_schema_on_a_non_array_suggests_the_arrays(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("item_schema", {"handle": pods_handle, "path": "$"})
    assert res.error["error"] == "not_an_array"
    assert res.error["suggestions"][0]["arguments"]["path"] == "$.items"


def test_get_in_path_forms(pad: Scratchpad) -> None:
    doc = {
        "results": [{"title": "first"}, {"title": "second"}],
        "a.b": {"200": "ok"},
        "0": "zero-key",
        "nested": {"list": [[1, 2], [3, 4]]},
        "pad": "x" * 30_000,
    }
    h = pad.intercept(doc, tool="t", force=True).handle
    for path, expected in [
        ("results.0.title", "first"),
        ("$.results[0].title", "first"),
        ("results[-1].title", "second"),
        ('["a.b"]["200"]', "ok"),
        ("$['a.b']['200']", "ok"),
        ("0", "zero-key"),
        ("nested.list.1.0", 3),
        ("$.nested.list[-1][-1]", 4),
    ]:
        res = pad.call_tool("get_in", {"handle": h, "path": path})
        assert res.ok and res.data == expected, (path, res.error)
    root = pad.call_tool("get_in", {"handle": h, "path": "$.results"})
    assert root.data == doc["results"]


def test_get_in_miss_says_where_and_what_exists(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("get_in", {"handle": pods_handle, "path": "items.5.metdata.name"})
    e = res.error
    assert e["error"] == "key_path_not_found" and e["requested_path"] == "items.5.metdata.name"
    assert e["valid_prefix"] == "$.items[5]" and e["available_keys"] == ["metadata", "status"]
    assert e["suggestions"][0]["arguments"]["path"] == "$.items[5].metadata"
    oob = pad.call_tool("get_in", {"handle": pods_handle, "path": "items[3000]"}).error
    assert oob["array_length"] == 3000 and oob["valid_prefix"] == "$.items"
    scalar = pad.call_tool("get_in", {"handle": pods_handle, "path": "kind.x"}).error
    assert scalar["value_type"] == "string"
    bad = pad.call_tool("get_in", {"handle": pods_handle, "path": 'items["unterminated'}).error
    assert bad["error"] == "invalid_path"


def test_get_in_pages_long_strings_with_real_line_numbers(pad: Scratchpad) -> None:
    text = "\n".join(f"paragraph {i}" for i in range(1, 501))
    h = pad.intercept({"doc": text, "filler": list(range(6000))}, tool="t").handle
    res = pad.call_tool("get_in", {"handle": h, "path": "doc", "offset": 100, "limit": 3})
    assert res.data["lines"] == ["paragraph 101", "paragraph 102", "paragraph 103"]
    assert res.text.split("\n")[0] == "101\tparagraph 101"
    assert "lines 101-103 of 500" in res.text


def test_get_in_too_large_suggests_narrower_calls(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("get_in", {"handle": pods_handle, "path": "items"})
    assert res.error["error"] == "get_in_too_large" and 0 < res.tokens < 1000
    tools = [s["tool"] for s in res.error["suggestions"]]
    assert "item_schema" in tools and "iterate_over" in tools
    follow = next(s for s in res.error["suggestions"] if s["tool"] == "iterate_over")
    assert pad.call_tool("iterate_over", follow["arguments"]).ok  # the suggestion really runs


def test_iterate_over_names_each_field_once(pad: Scratchpad, pods_handle: str) -> None:
    # each row repeated every field name: ~40 % of what the model read was the same keys again
    fields = "metadata.name,status.phase,metadata.namespace"
    res = pad.call_tool("iterate_over", {"handle": pods_handle, "path": "items", "fields": fields, "limit": 20})
    header, *lines = res.text.split("\n---")[0].split("\n")
    columns = json.loads(header.removeprefix("columns: "))
    assert columns == ["_index", *fields.split(",")]
    assert [dict(zip(columns, json.loads(line), strict=True)) for line in lines] == res.data  # every value, as data
    as_objects = "\n".join(json.dumps(row, separators=(",", ":")) for row in res.data)
    assert count_tokens(res.text) < 0.75 * count_tokens(as_objects)


def test_iterate_over_rows(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool(
        "iterate_over",
        {
            "handle": pods_handle,
            "path": "items",
            "fields": "metadata.name, status.phase,metadata.labels.app",
            "offset": 6,
            "limit": 3,
        },
    )
    assert res.data == [
        {"_index": 6, "metadata.name": "pod-6", "status.phase": "Running", "metadata.labels.app": None},
        {"_index": 7, "metadata.name": "pod-7", "status.phase": "Pending", "metadata.labels.app": "web"},
        {"_index": 8, "metadata.name": "pod-8", "status.phase": "Failed", "metadata.labels.app": None},
    ]
    assert "next: offset=9" in res.text and "no item here has" not in res.text  # (app is on some)
    # a misspelt field was null in every row, charged, without a word
    typo = pad.call_tool("iterate_over", {"handle": pods_handle, "path": "items", "fields": "metadata.nmae", "limit": 3})
    assert typo.error["error"] == "field_not_found" and "metadata.name" in typo.error["available_keys"]
    meant = typo.error["suggestions"][0]
    assert meant["arguments"]["fields"] == "metadata.name" and pad.call_tool("iterate_over", meant["arguments"]).ok
    some = pad.call_tool("iterate_over", {"handle": pods_handle, "path": "items", "fields": "metadata.nmae,status.phase",
                                          "limit": 3})  # fmt: skip
    assert [r["metadata.nmae"] for r in some.data] == [None] * 3  # one of two fields: the rows, and a word
    assert "no item here has 'metadata.nmae' (closest: metadata.name)" in some.text
    as_list = pad.call_tool(
        "iterate_over", {"handle": pods_handle, "path": "items", "fields": ["note"], "offset": 7, "limit": 1}
    )
    note = as_list.data[0]["note"]
    hint = f'get_in(handle="{pods_handle}", path="$.items[7].note", offset=5)'
    assert note.count("\n") == 5 and "+2 more lines" in note and hint in note
    rest = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[7].note", "offset": 5})
    assert rest.data["lines"] == ["line six", "line seven"]  # the hint runs, and reads on from the cut
    full = pad.call_tool("get_in", {"handle": pods_handle, "path": "$.items[7].note"})
    assert "line seven" in full.text


def test_iterate_over_defaults_and_errors(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("iterate_over", {"handle": pods_handle, "path": "items", "fields": "status.phase"})
    assert len(res.data) == 50
    missing = pad.call_tool("iterate_over", {"handle": pods_handle, "path": "items"})
    assert missing.error["error"] == "invalid_argument"
    assert (
        pad.call_tool("iterate_over", {"handle": pods_handle, "path": "nope", "fields": "x"}).error["error"]
        == "key_path_not_found"
    )


def test_json_tools_on_jsonl_and_not_json(pad: Scratchpad, log_handle: str) -> None:
    jl = pad.intercept("\n".join(json.dumps({"id": i, "tags": ["a"] * (i % 3)}) for i in range(3000)), tool="t")
    assert jl.spilled
    assert pad.call_tool("get_in", {"handle": jl.handle, "path": "[2].id"}).data == 2
    assert pad.call_tool("iterate_over", {"handle": jl.handle, "path": "$", "fields": "id", "limit": 2}).data == [
        {"_index": 0, "id": 0},
        {"_index": 1, "id": 1},
    ]
    res = pad.call_tool("item_schema", {"handle": log_handle, "path": "$"})
    assert res.error["error"] == "not_json" and {s["tool"] for s in res.error["suggestions"]} >= {"grep", "head"}


def test_pods_fixture_is_realistic() -> None:
    assert len(json.dumps(pods())) > 200_000


def test_iterate_over_without_fields_suggests_them_and_meta_has_totals(pad: Scratchpad, pods_handle: str) -> None:
    err = pad.call_tool("iterate_over", {"handle": pods_handle, "path": "items"}).error
    assert err["error"] == "invalid_argument"
    follow = err["suggestions"][0]
    assert follow["tool"] == "iterate_over" and follow["arguments"]["fields"]
    res = pad.call_tool("iterate_over", follow["arguments"])
    assert res.ok and res.meta["total_items"] == 3000 and res.meta["next_offset"] == 20


def test_parsed_values_kept_are_bounded_and_a_dropped_one_parses_again(
    pad: Scratchpad, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_scratchpad.explore import _base

    monkeypatch.setattr(_base, "VALUE_CACHE", _base._ValueCache(max_bytes=100_000))
    handles = [pad.spill({"items": [{"i": i, "run": n, "pad": "x" * 20} for i in range(500)]}, tool="t").handle
               for n in range(6)]  # fmt: skip
    first = pad.call_tool("get_in", {"handle": handles[0], "path": "$.items[3]"}).data
    for h in handles:  # each body is ~40 KB: at most two are kept
        assert pad.call_tool("get_in", {"handle": h, "path": "$.items[499].i"}).ok
        assert _base.VALUE_CACHE._bytes <= 100_000
    assert len(_base.VALUE_CACHE._items) == 2
    again = pad.call_tool("get_in", {"handle": handles[0], "path": "$.items[3]"})
    assert again.data == first == {"i": 3, "run": 0, "pad": "x" * 20}  # parsed again


def test_numpy_pandas_and_dates_are_stored_as_the_json_values_they_stand_for(pad: Scratchpad) -> None:
    """A list of records built with numpy / pandas values keeps its types: numbers stay numbers in
    ``get_in``, item_schema and SQL (they were written as their ``str``: ``"1"``, ``"[1 2 3]"``)."""
    import datetime as dt
    from decimal import Decimal

    np = pytest.importorskip("numpy")
    pd = pytest.importorskip("pandas")
    records = [
        {
            "id": np.int64(i),
            "score": np.float64(i) / 4,
            "ok": np.bool_(i % 2),
            "vec": np.arange(3) + i,
            "day": dt.date(2024, 1, 1) + dt.timedelta(days=i % 3),
            "at": pd.Timestamp("2024-01-01 10:00") if i else pd.NaT,
            "price": Decimal("1.10"),
        }
        for i in range(400)
    ]
    handle = pad.spill(records, tool="frame").handle
    first = pad.call_tool("get_in", {"handle": handle, "path": "$[1]"}).data
    assert first == {
        "id": 1, "score": 0.25, "ok": True, "vec": [1, 2, 3], "day": "2024-01-02",
        "at": "2024-01-01T10:00:00", "price": 1.1,
    }
    kinds = {row["key"]: row["types"] for row in pad.call_tool("item_schema", {"handle": handle}).data["keys"]}
    assert (kinds["id"], kinds["ok"], kinds["vec"], kinds["at"]) == ("number", "bool", "array", "string|null")
    res = pad.call_tool("sql", {"query": f"SELECT sum(id) AS s, count(\"at\") AS c, max(price) AS p FROM {handle}"})
    assert res.ok, res.error
    assert res.data == [{"s": sum(range(400)), "c": 399, "p": 1.1}]
