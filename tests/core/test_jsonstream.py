"""A large JSON document spilled a segment at a time is the same spill as one parsed whole.

The thresholds are lowered (segments of ~300 bytes, scan chunks of 1 KB) so that small documents
take the streamed path and cross every boundary: segments, scan chunks, backslash runs.
"""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.explore import _base
from jupyter_scratchpad.explore._base import VALUE_CACHE
from jupyter_scratchpad.store import _format, _jsonstream
from jupyter_scratchpad.store._jsonstream import NotStreamable, stream_json
from jupyter_scratchpad.store._jsontext import dumps_pretty, loads
from tests.conftest import FakeClock


@pytest.fixture
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jsonstream, "SEGMENT_BYTES", 300)
    monkeypatch.setattr(_jsonstream, "SCAN_CHUNK", 1024)
    monkeypatch.setattr(_format, "STREAM_MIN_BYTES", 2048)


def _pod(i: int, rng: random.Random) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {"name": f"api-{i}", "namespace": rng.choice(["prod", "dev", "kube-system"])},
        "status": {"phase": rng.choice(["Running", "Pending"]), "restarts": rng.randint(0, 3)},
        "spec": {"containers": [{"name": "app", "image": f"reg/app:{i % 7}"}]},
    }
    if i % 3 == 0:
        pod["metadata"]["labels"] = {"app": "api", "tier": rng.choice(["web", "db"])}
    if i % 11 == 0:
        pod["note"] = 'a "quoted" \\ back\\\\slash\\" and \u00e9 \U0001f600 \n newline'
    if i % 17 == 0:
        pod["status"]["phase"] = None
    return pod


def _documents() -> dict[str, bytes]:
    rng = random.Random(7)
    pods = [_pod(i, rng) for i in range(400)]
    escapes = ['\\' * n + '"' + "x" * (n % 5) for n in range(1, 40)]  # backslash runs of every length
    return {
        "root array": json.dumps(pods).encode(),
        "items": json.dumps({"apiVersion": "v1", "items": pods, "kind": "PodList", "metadata": {"rv": "1"}}).encode(),
        "indented": json.dumps({"kind": "List", "items": pods}, indent=3).encode(),
        "two levels": json.dumps({"data": {"result": pods, "type": "vector"}, "status": "ok"}).encode(),
        "scalars": json.dumps({"values": list(range(3000)), "unit": "ms"}).encode(),
        "nested arrays": json.dumps([[i, [i, [i, {"k": [i] * 3}]]] for i in range(600)]).encode(),
        "escapes": json.dumps({"lines": escapes * 20}, ensure_ascii=False).encode(),
        "big numbers": json.dumps({"ids": [12345678901234567890123 + i for i in range(300)]}).encode(),
        "long decimals": b'{"x": [' + b",".join(b"0.1000000000000000000001" for _ in range(400)) + b"]}",
        "deep items": json.dumps({"items": [_nest(70, i) for i in range(40)]}).encode(),
        "duplicate key first": b'{"items": 1, "items": ' + json.dumps(pods[:100]).encode() + b"}",
        "unicode keys": json.dumps({"é": 1, "items": [{"ключ": i, "😀": [i]} for i in range(300)]}).encode(),
    }


def _nest(depth: int, leaf: int) -> Any:
    value: Any = leaf
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


@pytest.mark.parametrize("name", list(_documents()))
def test_the_streamed_body_is_byte_for_byte_the_whole_parse(name: str, small_segments: None) -> None:
    raw = _documents()[name]
    streamed = stream_json(raw)
    assert streamed is not None, name
    assert len(streamed.segments) > 2
    body = b"".join(streamed.body_chunks())
    assert body == dumps_pretty(loads(raw))
    whole = loads(raw)
    array = whole
    for key in streamed.path:
        array = array[key]
    assert streamed.total == len(array)
    # the array's lines in the body, which the schema's line ranges are built on
    assert streamed.array_lines == dumps_pretty(array, base_depth=len(streamed.path)).count(b"\n")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": [1, 2, 3], "b": "' + b"x" * 5000 + b'"}',  # the big value is a string
        json.dumps({"meta": {"k": "v" * 3000}, "items": list(range(50))}).encode(),  # no dominant array
        json.dumps({"m": {str(i): {"v": i} for i in range(500)}}).encode(),  # a map, not an array
        json.dumps({"a": {"b": {"c": list(range(2000))}}}).encode(),  # three keys down
        b"[" + b"1," * 3000 + b"1",  # unbalanced
        b'["' + b"x" * 5000,  # an open string
        b'"' + b"[1]," * 2000 + b'"',  # a string, not a document
    ],
)
def test_what_is_not_one_big_array_is_not_streamed(raw: bytes, small_segments: None) -> None:
    assert stream_json(raw) is None


@pytest.mark.parametrize(
    "raw",
    [
        b"[" + b"1," * 3000 + b"]",  # a trailing comma
        b"[" + b"1," * 1500 + b"1,,1," + b"1," * 1500 + b"1]",  # an empty item
        b"[" + b"1," * 3000 + b"nul]",  # a bad literal in the last segment
        b'{"items": [' + b'{"a": 1},' * 500 + b'{"a": 1}]] }',  # one bracket too many
    ],
)
def test_a_segment_that_is_not_json_stops_the_stream(raw: bytes, small_segments: None) -> None:
    streamed = stream_json(raw)
    if streamed is None:
        return  # found before writing: fine too
    with pytest.raises(NotStreamable):
        b"".join(streamed.body_chunks())


def _two_pads(tmp_path: Path, **options: Any) -> tuple[Scratchpad, Scratchpad]:
    clock = FakeClock()  # (both stubs say when they expire)
    pads = []
    for name in ("whole", "streamed"):
        store = ScratchStore(tmp_path / name, sweep_interval_s=None, clock=clock)
        pads.append(store.scratchpad(run_id="r", agent_id="a", **options))
    return pads[0], pads[1]


def _whole_parses(monkeypatch: pytest.MonkeyPatch, module: Any = _base) -> list[int]:
    """The sizes of every whole-body parse made from now on through ``module.parse_json_bytes``
    (the JSON tools' by default), with no value cached."""
    parsed: list[int] = []
    real = module.parse_json_bytes

    def spy(data: bytes) -> Any:
        parsed.append(len(data))
        return real(data)

    monkeypatch.setattr(module, "parse_json_bytes", spy)
    VALUE_CACHE.clear()
    return parsed


def _spill(pad: Scratchpad, raw: bytes, monkeypatch: pytest.MonkeyPatch, stream: bool) -> Any:
    with monkeypatch.context() as m:
        m.setattr(_format, "STREAM_MIN_BYTES", 2048 if stream else 1 << 40)
        r = pad.intercept(raw.decode(), tool="kubectl", force=True)
    assert r.spilled, r.failure
    assert pad.wait_for_counts(10)
    return r


@pytest.mark.parametrize("name", ["items", "root array", "two levels", "indented", "escapes"])
def test_a_streamed_spill_answers_every_tool_as_a_whole_one(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    raw = _documents()[name]
    whole, streamed = _two_pads(tmp_path)
    a = _spill(whole, raw, monkeypatch, stream=False)
    b = _spill(streamed, raw, monkeypatch, stream=True)
    assert a.content == b.content  # the stub the model reads, its sketch and relations included
    assert a.stub == b.stub
    ea, eb = whole.entry(a.handle), streamed.entry(b.handle)
    assert (ea.line_count, ea.body_bytes, ea.meta["sql_arrays"]) == (eb.line_count, eb.body_bytes, eb.meta["sql_arrays"])
    assert whole.store.reader(ea).body_bytes_all() == streamed.store.reader(eb).body_bytes_all()
    # the spill's worker built the schema and item counts from segments: the same answers
    array_path = "$" if name == "root array" else "$.data.result" if name == "two levels" else (
        "$.items" if name in ("items", "indented") else "$.lines"
    )
    calls: list[tuple[str, dict[str, Any]]] = [
        ("schema", {"handle": a.handle}),
        ("schema", {"handle": a.handle, "max_depth": 2}),
        ("item_schema", {"handle": a.handle, "path": array_path}),
        ("grep", {"handle": a.handle, "pattern": "Running"}),
        ("sql", {"query": f"SELECT count(*) AS n FROM {a.handle}"}),
    ]
    # one item, or a window of items, is read from the segments that hold it
    read_by_segment: list[tuple[str, dict[str, Any]]] = [
        ("get_in", {"handle": a.handle, "path": f"{array_path}[7]"}),
        ("get_in", {"handle": a.handle, "path": f"{array_path}[-1]"}),
        ("iterate_over", {"handle": a.handle, "path": array_path, "limit": 3}),
        ("item_schema", {"handle": a.handle, "path": array_path, "offset": 25, "limit": 40}),
        # a model's typo costs a segment, not the whole document: the same error and suggestions
        ("get_in", {"handle": a.handle, "path": f"{array_path}[99999]"}),
        ("get_in", {"handle": a.handle, "path": f"{array_path}[3].no_such_key"}),
    ]
    if name != "escapes":
        read_by_segment += [
            ("get_in", {"handle": a.handle, "path": f"{array_path}[123].metadata.name"}),
            ("iterate_over", {"handle": a.handle, "path": array_path, "fields": "metadata.name,status.phase",
                              "offset": 37, "limit": 30}),  # (crosses segments)
            ("grep", {"handle": a.handle, "pattern": "api", "path": f"{array_path}[5]"}),
            ("schema", {"handle": a.handle, "path": f"{array_path}[9]"}),
        ]
    else:
        read_by_segment.append(
            ("iterate_over", {"handle": a.handle, "path": array_path, "fields": "x", "offset": 5, "limit": 30})
        )
    parsed = _whole_parses(monkeypatch)
    for tool, args in read_by_segment:
        parsed.clear()
        rb = streamed.call_tool(tool, args)
        assert parsed == [], (tool, "parsed the whole body")
        ra = whole.call_tool(tool, args)
        assert (ra.ok, ra.text) == (rb.ok, rb.text), tool
    # anything else, errors included, comes from the whole value: the same answers
    calls += [("get_in", {"handle": a.handle, "path": f"{array_path}.nope"})]
    for tool, args in calls:
        ra, rb = whole.call_tool(tool, args), streamed.call_tool(tool, args)
        assert (ra.ok, ra.text) == (rb.ok, rb.text), tool


@pytest.mark.parametrize("name", ["items", "root array", "two levels", "indented"])
def test_the_rest_of_a_streamed_document_is_read_from_its_skeleton(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # paths outside the array come from the skeleton (the body's bytes before and after the
    # array); a node that holds the array is refused from 64 sampled items or described a segment
    # at a time. None of it parses the whole document, and every answer is the whole spill's.
    raw = _documents()[name]
    whole, streamed = _two_pads(tmp_path, max_extraction_tokens=1500)
    a = _spill(whole, raw, monkeypatch, stream=False)
    b = _spill(streamed, raw, monkeypatch, stream=True)
    assert a.stub == b.stub
    h = a.handle
    array_path, outside, holders = {
        "items": ("$.items", ["$.metadata", "$.kind", "$.metadata.rv", "$.apiVersion"], ["$"]),
        "root array": ("$", [], []),
        "two levels": ("$.data.result", ["$.status", "$.data.type"], ["$", "$.data"]),
        "indented": ("$.items", ["$.kind"], ["$"]),
    }[name]
    calls: list[tuple[str, dict[str, Any]]] = []
    for path in outside:
        calls += [("get_in", {"handle": h, "path": path}), ("schema", {"handle": h, "path": path})]
    for path in [*holders, array_path]:
        calls += [
            ("get_in", {"handle": h, "path": path}),  # far over 1,500 tokens: refused, with suggestions
            ("schema", {"handle": h, "path": path, "max_depth": 3}),
            ("schema", {"handle": h, "path": path}),
        ]
    if name == "items":  # the values of an object keyed by ids, outside the array
        calls += [
            ("item_schema", {"handle": h, "path": "$.metadata{*}"}),
            ("iterate_over", {"handle": h, "path": "$.metadata{*}"}),
            ("item_schema", {"handle": h, "path": "$.items[3].metadata{*}"}),
        ]
    for path in holders:  # not an array: the error names the arrays inside
        calls += [("iterate_over", {"handle": h, "path": path}), ("item_schema", {"handle": h, "path": path})]
    calls += [
        ("get_in", {"handle": h, "path": "$.no_such_key"}),  # a typo at the root
        ("get_in", {"handle": h, "path": f"{array_path}.name"}),  # a key of an array
        ("get_in", {"handle": h, "path": f"{array_path}[2].metadata.nope"}),
        ("read", {"handle": h}),  # too large: its suggestions name the array
    ]
    parsed = _whole_parses(monkeypatch)
    refused = 0
    for tool, args in calls:
        parsed.clear()
        rb = streamed.call_tool(tool, args)
        assert parsed == [], (tool, args, "parsed the whole body")
        ra = whole.call_tool(tool, args)
        assert (ra.ok, ra.text) == (rb.ok, rb.text), (tool, args)
        refused += rb.error is not None and rb.error.get("error") == "get_in_too_large"
    assert refused == len(holders) + 1
    # the stub a notebook card or the sidebar asks for later: the spill's, from the first segments
    parsed.clear()
    if name != "indented":  # a notebook's DataFrame of the array, built a segment at a time
        import pandas as pd

        frame = streamed.dataframe(h, array_path)
        assert parsed == []
        pd.testing.assert_frame_equal(frame, whole.dataframe(h, array_path))
        assert len(frame) == 400 and "metadata.name" in frame.columns
    # the CLI's export of the records: the same files, a segment at a time
    from jupyter_scratchpad._export import export
    from jupyter_scratchpad.store import _format as format_module

    whole_parses = _whole_parses(monkeypatch, format_module)  # pad.get()'s parse
    for suffix, path in ((".jsonl", None), (".jsonl", array_path), (".csv", None)):
        parsed.clear()
        out_b = export(streamed, h, tmp_path / f"streamed{suffix}", path=path)
        assert parsed == [] and whole_parses == [], (suffix, path)
        out_a = export(whole, h, tmp_path / f"whole{suffix}", path=path)
        whole_parses.clear()
        assert out_b["rows"] == out_a["rows"] == 400
        assert (tmp_path / f"streamed{suffix}").read_bytes() == (tmp_path / f"whole{suffix}").read_bytes()
    parsed.clear()
    later = streamed.stub(h)
    assert later == whole.stub(h)
    assert {**later, "tokens": a.stub["tokens"], "tokens_exact": False} == a.stub  # (the exact count has landed)
    assert parsed == []


@pytest.mark.parametrize(
    "name", [n for n in _documents() if n not in ("items", "root array", "two levels", "indented")]
)
def test_every_streamed_shape_reads_the_rest_from_its_skeleton(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # the other shapes (scalars, arrays of arrays, escapes, big numbers, long decimals, items 70
    # deep, a duplicate key, unicode keys): paths outside the array and misses never parse the
    # whole document; every answer, nodes that hold the array included, is the whole spill's
    from jupyter_scratchpad.explore._paths import Step, format_path
    from jupyter_scratchpad.explore._segments import SEGMENTS_FILE

    raw = _documents()[name]
    whole, streamed = _two_pads(tmp_path, max_extraction_tokens=1500)
    a = _spill(whole, raw, monkeypatch, stream=False)
    _spill(streamed, raw, monkeypatch, stream=True)
    h = a.handle
    record = orjson.loads((streamed.store.reader(streamed.entry(h)).directory / SEGMENTS_FILE).read_bytes())
    keys = [str(k) for k in record["path"]]
    array_path = format_path([Step(k, True) for k in keys])
    value = loads(raw)
    outside = [format_path([Step(k, True)]) for k in value if k != keys[0]] if isinstance(value, dict) else []
    holders = [format_path([Step(k, True) for k in keys[:n]]) for n in range(len(keys))]
    lazy: list[tuple[str, dict[str, Any]]] = [("get_in", {"handle": h, "path": p}) for p in outside]
    lazy += [("schema", {"handle": h, "path": p}) for p in outside]
    lazy += [
        ("get_in", {"handle": h, "path": "$.no_such_key" if isinstance(value, dict) else "$[99999]"}),
        ("get_in", {"handle": h, "path": f"{array_path}[99999]"}),
        ("get_in", {"handle": h, "path": f"{array_path}.not_an_index"}),
        ("get_in", {"handle": h, "path": f"{array_path}[1]"}),
    ]
    either = [("get_in", {"handle": h, "path": p}) for p in [*holders, array_path]]
    either += [("schema", {"handle": h, "path": p, "max_depth": 2}) for p in [*holders, array_path]]
    parsed = _whole_parses(monkeypatch)
    for tool, args in lazy + either:
        parsed.clear()
        rb = streamed.call_tool(tool, args)
        if (tool, args) in lazy:
            assert parsed == [], (tool, args, "parsed the whole body")
        ra = whole.call_tool(tool, args)
        assert (ra.ok, ra.text) == (rb.ok, rb.text), (tool, args)


def test_a_root_of_many_keys_beside_the_streamed_array_is_refused_from_the_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # 300 small keys and one big array: get_in("$") samples the array, never renders it whole
    doc = {f"k{i:03d}": i for i in range(300)}
    doc["items"] = [_pod(i, random.Random(i)) for i in range(2000)]
    raw = json.dumps(doc).encode()
    whole, streamed = _two_pads(tmp_path, max_extraction_tokens=1500)
    a = _spill(whole, raw, monkeypatch, stream=False)
    _spill(streamed, raw, monkeypatch, stream=True)
    parsed = _whole_parses(monkeypatch)
    rb = streamed.call_tool("get_in", {"handle": a.handle, "path": "$"})
    assert parsed == [] and rb.error is not None and rb.error["error"] == "get_in_too_large"
    assert rb.text == whole.call_tool("get_in", {"handle": a.handle, "path": "$"}).text
    assert streamed.call_tool("get_in", {"handle": a.handle, "path": "$.k123"}).text.startswith("123")


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("item_schema", {"path": "${*}"}),
        ("iterate_over", {"path": "${*}", "fields": ["resourceVersion", "name"]}),
        ("iterate_over", {"path": "${*}", "fields": ["resourceVersion"], "offset": 2, "limit": 1}),
        ("item_schema", {"path": "$.metadata{*}"}),
        ("item_schema", {"path": "$.items{*}"}),
    ],
)
def test_the_values_of_the_object_that_holds_the_streamed_array_are_read_without_a_parse(
    tool: str, args: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # {*} takes an object's values as items; the root of a PodList holds the big array, which
    # counts as one "array" value: the whole document was parsed for that (1 GB: ~8 GB, seconds)
    doc = {"kind": "PodList", "metadata": {"resourceVersion": "7", "name": "x"}, "items": []}
    doc["items"] = [_pod(i, random.Random(i)) for i in range(300)]
    raw = json.dumps(doc).encode()
    whole, streamed = _two_pads(tmp_path)
    h = _spill(streamed, raw, monkeypatch, stream=True).handle
    _spill(whole, raw, monkeypatch, stream=False)
    parsed = _whole_parses(monkeypatch)
    r = streamed.call_tool(tool, {"handle": h, **args})
    assert parsed == []
    assert r.text == whole.call_tool(tool, {"handle": h, **args}).text  # the same answer as a whole spill's


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("get_in", {"path": "$.items[*].metadata.name"}),
        ("item_schema", {"path": "$.items[*].metadata"}),
        ("iterate_over", {"path": "$.items[*].metadata", "fields": ["name"]}),
        ("grep", {"pattern": "pod", "path": "$.items["}),
    ],
)
def test_a_path_that_is_not_one_is_refused_before_any_parse(
    tool: str, args: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # a wildcard where an index goes is a model's common slip: on a 1 GB spill the whole document
    # was parsed (~8 GB, seconds) only to answer invalid_path
    raw = json.dumps({"kind": "PodList", "items": [_pod(i, random.Random(i)) for i in range(300)]}).encode()
    whole, streamed = _two_pads(tmp_path)
    h = _spill(streamed, raw, monkeypatch, stream=True).handle
    _spill(whole, raw, monkeypatch, stream=False)
    parsed = _whole_parses(monkeypatch)
    r = streamed.call_tool(tool, {"handle": h, **args})
    assert parsed == [] and r.error is not None and r.error["error"] == "invalid_path", r.error
    assert r.text == whole.call_tool(tool, {"handle": h, **args}).text  # the same answer as a whole spill's


def test_a_streamed_spill_that_is_not_json_after_all_is_stored_as_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    raw = b"[" + b'{"a": 1},' * 3000 + b"oops]"  # the last segment fails, after most are written
    whole, streamed = _two_pads(tmp_path)
    a = _spill(whole, raw, monkeypatch, stream=False)
    b = _spill(streamed, raw, monkeypatch, stream=True)
    assert whole.entry(a.handle).format == streamed.entry(b.handle).format == "text"
    assert a.content == b.content
    assert streamed.store.reader(streamed.entry(b.handle)).body_bytes_all() == raw
    # nothing of the abandoned streamed body is left behind
    assert list((streamed.store.path / "tmp").iterdir()) == []


def test_the_same_document_spilled_again_gets_the_same_stub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    raw = _documents()["items"]
    _whole, streamed = _two_pads(tmp_path)
    first = _spill(streamed, raw, monkeypatch, stream=True)
    again = _spill(streamed, raw, monkeypatch, stream=True)  # stored already: the body is not rewritten
    assert again.handle == first.handle
    assert again.stub["schema"] == first.stub["schema"]
    assert again.stub["relations"] == first.stub["relations"]


def test_a_streamed_spill_never_holds_the_document_as_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    """The memory a spill adds stays a small multiple of one segment, not ~10x the document."""
    rng = random.Random(3)
    pods = [_pod(i, rng) for i in range(24000)]  # 4 MB
    for pod in pods:  # ASCII: Python holds text with an emoji at 4 bytes a character, before any spill
        pod.pop("note", None)
    raw = orjson.dumps({"kind": "PodList", "items": pods})
    monkeypatch.setattr(_jsonstream, "SEGMENT_BYTES", 64 << 10)
    monkeypatch.setattr(_jsonstream, "SCAN_CHUNK", 256 << 10)
    _whole, pad = _two_pads(tmp_path)
    text = raw.decode()
    pad.intercept(_documents()["items"].decode(), tool="warm", force=True)  # imports, tokenizer
    parsed_sizes: list[int] = []
    real_loads = _jsonstream.loads

    def spy(data: bytes | str, long_numbers: bool | None = None) -> Any:
        parsed_sizes.append(len(data))
        return real_loads(data, long_numbers)

    monkeypatch.setattr(_jsonstream, "loads", spy)
    tracemalloc.start()
    try:
        r = pad.intercept(text, tool="kubectl", force=True)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.spilled and pad.wait_for_counts(10)
    assert max(parsed_sizes) < 200 << 10  # one segment (plus the skeleton), never the document
    # the raw bytes (1x), the scan's arrays and one segment's objects (2.1x measured here);
    # parsing whole added 21x the document
    assert peak < 3 * len(raw), (peak, len(raw))
    ok = pad.call_tool("item_schema", {"handle": r.handle, "path": "$.items"})
    assert ok.ok and ok.data["total_items"] == 24000


def _sql_documents() -> dict[str, bytes]:
    rng = random.Random(5)
    pods = [_pod(i, rng) for i in range(200)]
    # an array named like the load's own tables (a relation's name is an identifier; theirs are not)
    return {
        **_documents(),
        "named skeleton": json.dumps({"kind": "x", "skeleton": pods}).encode(),
        "named doc": json.dumps({"kind": "x", "doc": pods}).encode(),  # (v1 named the document's table so)
    }


@pytest.mark.parametrize("name", list(_sql_documents()))
def test_sql_over_a_streamed_spill_has_the_whole_documents_relations(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # a streamed array inside an object is loaded into DuckDB from its own bytes and the rest of
    # the document (DuckDB holds one JSON document whole: a 200 MB PodList ran it out of memory);
    # every relation has the whole spill's columns, types and rows, and any shape that cannot be
    # loaded so (scalars, arrays of arrays, ...) is loaded whole, as before
    import duckdb

    from jupyter_scratchpad.explore._sqlviews import TABLES_FILE

    raw = _sql_documents()[name]
    whole, streamed = _two_pads(tmp_path)
    h = _spill(whole, raw, monkeypatch, stream=False).handle
    assert _spill(streamed, raw, monkeypatch, stream=True).handle == h
    relations = [r["name"] for r in whole.sql_relations() if r["name"] == h or r["name"].startswith(f"{h}.")]
    assert relations == [r["name"] for r in streamed.sql_relations() if r["name"] in relations]

    def answers(pad: Scratchpad) -> list[str]:
        out = []
        for rel in relations:
            for query in (f"DESCRIBE {rel}", f"SELECT * FROM {rel}"):
                try:
                    out.append(pad.sql_df(query).to_json(orient="split", default_handler=str))
                except Exception as exc:  # the same refusal on both sides (the file named differs)
                    out.append(f"{type(exc).__name__}: {str(exc).split(' in file ')[0]}")
        return out

    assert answers(streamed) == answers(whole)
    if name == "named doc":  # the array's rows, not the document's one
        assert streamed.sql_df(f"SELECT count(*) AS n FROM {h}.doc").n.tolist() == [200]
    if name in ("items", "indented", "two levels", "unicode keys", "named skeleton", "named doc"):
        tables = streamed.store.reader(streamed.entry(h)).directory / TABLES_FILE
        with duckdb.connect(str(tables), read_only=True) as conn:
            built = {r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "skeleton-of-doc" in built, built  # loaded without handing DuckDB the whole document
        assert len(relations) >= 2 and all(
            not streamed.call_tool("sql", {"query": f"SELECT count(*) FROM {r}"}).error for r in relations
        )


@pytest.mark.parametrize("chunk", [64, 1 << 20])
@pytest.mark.parametrize("name", list(_documents()))
def test_grep_in_a_node_that_holds_the_streamed_array_reads_the_body(
    name: str, chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # grep with a path that holds the array ($.items, $.data) searches the node's own lines (as the
    # node pretty-printed alone has them: less indented than in the body) read from the body a
    # chunk at a time, never the whole document parsed; the same text and data as the whole spill
    # (64-byte chunks: lines cut across chunks, lines longer than a chunk)
    from jupyter_scratchpad.explore import _text
    from jupyter_scratchpad.explore._paths import Step, format_path
    from jupyter_scratchpad.explore._segments import SEGMENTS_FILE

    monkeypatch.setattr(_text.NodeLines, "CHUNK", chunk)
    raw = _documents()[name]
    whole, streamed = _two_pads(tmp_path, max_extraction_tokens=1_000_000, context_window=1 << 30)
    h = _spill(whole, raw, monkeypatch, stream=False).handle
    _spill(streamed, raw, monkeypatch, stream=True)
    record = orjson.loads((streamed.store.reader(streamed.entry(h)).directory / SEGMENTS_FILE).read_bytes())
    keys = [str(k) for k in record["path"]]
    holders = [format_path([Step(k, True) for k in keys[:n]]) for n in range(1, len(keys) + 1)]
    patterns: list[dict[str, Any]] = [
        {"pattern": "api-1"},
        {"pattern": '^\\s+"name"', "context": 0},
        {"pattern": "^  [{\\[]", "context": 1},  # anchored on the node's own indentation
        {"pattern": "^[\\[\\]{}]", "context": 2},  # the node's first and last lines
        {"pattern": "^  \\S", "max_matches": 5},  # exactly one level in: the node's items
        {"pattern": "RUNNING|prod", "ignore_case": True, "max_matches": 7},
        {"pattern": "\\\\\\\\", "context": 0},  # backslashes, escaped in the body
        {"pattern": "no such text anywhere"},
    ]
    parsed = _whole_parses(monkeypatch)
    for path in holders:
        for args in patterns:
            call = {"handle": h, "path": path, **args}
            parsed.clear()
            VALUE_CACHE.clear()
            rb = streamed.call_tool("grep", call)
            # nested past the body's depth limit: its lines are not the node's, rendered whole as before
            assert (parsed != []) == (name == "deep items"), (path, args, parsed)
            ra = whole.call_tool("grep", call)
            assert (ra.ok, ra.text, ra.data) == (rb.ok, rb.text, rb.data), (path, args)


def test_schema_while_the_spills_own_schema_is_still_computed_answers_with_the_sketch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # a 200 MB PodList's schema took the spill's worker longer than a call: schema waited its
    # whole 10 s, then began the same work again and answered "timeout" with no suggestion
    import threading

    from jupyter_scratchpad.explore import _schema

    release = threading.Event()
    real = _schema.streamed_segments

    def held(*args: Any, **kwargs: Any) -> Any:  # the spill's worker, slow
        assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(_schema, "streamed_segments", held)
    store = ScratchStore(tmp_path / "s", sweep_interval_s=None)
    pad = store.scratchpad(run_id="r", agent_id="a", tool_timeout_s=3.0)
    raw = json.dumps({"kind": "PodList", "items": [_pod(i, random.Random(i)) for i in range(300)]})
    h = pad.intercept(raw, tool="kubectl", force=True).handle
    try:
        sketch = pad.call_tool("schema", {"handle": h})
        assert sketch.ok and sketch.data["pending"] is True
        assert "still being computed" in sketch.text and "$.items: array(300 items)" in sketch.text
        assert sketch.data["sketch"] == pad.stub(h)["schema"]  # what the stub showed
    finally:
        release.set()
    assert pad.wait_for_counts(30)
    full = pad.call_tool("schema", {"handle": h})
    assert full.ok and "pending" not in full.data and "still being computed" not in full.text
    assert any(n["path"] == "$.items[*].metadata" for n in full.data["nodes"])
    store.close()


def test_a_large_dict_is_spilled_as_its_json_text_would_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_segments: None
) -> None:
    # a notebook cell's value (a dict, not text) over the streaming size: a segment at a time, so
    # its SQL tables load the array as records (read whole, a 200 MB one did not fit DuckDB's
    # memory and every agent query of it answered "cannot read")
    from jupyter_scratchpad.explore._segments import SEGMENTS_FILE

    raw = _documents()["items"]
    as_text, as_dict = _two_pads(tmp_path)
    h = _spill(as_text, raw, monkeypatch, stream=True).handle
    r = as_dict.intercept(loads(raw), tool="kubectl", force=True, handle=h)  # (its compact text hashes apart)
    assert r.spilled and as_dict.wait_for_counts(10)
    assert (as_dict.store.reader(as_dict.entry(h)).directory / SEGMENTS_FILE).exists()
    for tool, args in [
        ("get_in", {"path": "$.items[123].metadata"}),
        ("sql", {"query": f"SELECT status.phase AS p, count(*) AS n FROM {h}.items GROUP BY 1 ORDER BY 1"}),
        ("item_schema", {"path": "$.items"}),
    ]:
        a, b = (pad.call_tool(tool, {"handle": h, **args} if tool != "sql" else args) for pad in (as_text, as_dict))
        assert a.ok and b.ok and a.data == b.data, (tool, a.error, b.error)
