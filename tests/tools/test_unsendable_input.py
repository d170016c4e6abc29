"""Arguments a model can send that are not text or not sane (a lone surrogate decoded from its
JSON, a list 100,000 deep where a number goes, fields nested 10,000 deep) get an
``invalid_argument`` naming the argument, never an internal error or a library's message; and a
document's own lone surrogate comes back as text any transport can send (its escape)."""

from __future__ import annotations

import json

import pytest

from jupyter_scratchpad import Scratchpad


@pytest.fixture
def handle(pad: Scratchpad) -> str:
    return pad.spill(json.dumps({"items": [{"a": i, "b": {"c": i}} for i in range(3000)]}), tool="t").handle


@pytest.mark.parametrize(
    ("tool", "args", "argument"),
    [
        ("sql", {"query": "SELECT 1 \ud800"}, "query"),  # was pybind's "incompatible function arguments"
        ("grep", {"pattern": "\ud800"}, "pattern"),  # was a bare UnicodeEncodeError
        ("get_in", {"path": "items.\udfff"}, "path"),
        ("scratch_write", {"key": "\ud800", "value": "x"}, "key"),  # was a DuckDB "Python Conversion Failure"
        ("scratch_write", {"key": "k", "value": {"x": ["\udfff"]}}, "value"),
    ],
)
def test_a_lone_surrogate_is_named_not_a_library_error(
    pad: Scratchpad, handle: str, tool: str, args: dict, argument: str
) -> None:
    if tool in ("grep", "get_in"):
        args = {"handle": handle, **args}
    res = pad.call_tool(tool, args)
    assert not res.ok and res.error["error"] == "invalid_argument", res.text
    assert f"'{argument}' holds an unpaired surrogate" in res.error["message"]
    res.text.encode("utf-8")  # sendable


def test_deep_arguments_are_invalid_arguments(pad: Scratchpad, handle: str) -> None:
    deep = f'{{"handle": "{handle}", "lines": ' + "[" * 100_000 + "]" * 100_000 + "}"
    res = pad.call_tool("head", deep)  # was internal_error: recursion in the repr of the value
    assert not res.ok and res.error["error"] == "invalid_argument", res.text
    assert "'lines' must be integer" in res.error["message"] and len(res.text) < 1000
    fields = '["a", ' * 10_000 + "]" * 10_000
    res = pad.call_tool("iterate_over", {"handle": handle, "path": "items", "fields": fields})
    assert not res.ok and res.error["error"] == "invalid_argument", res.text  # was internal_error
    assert "'fields' must be a list of field names" in res.error["message"]


def test_a_documents_lone_surrogate_comes_back_sendable(pad: Scratchpad) -> None:
    h = pad.spill('{"items":["\\ud800 x","y"],"pad":"' + "q" * 30_000 + '"}', tool="t").handle
    res = pad.call_tool("get_in", {"handle": h, "path": "items[0]"})
    assert res.ok, res.text
    res.text.encode("utf-8")  # raised: surrogates not allowed
    assert res.text.startswith('"\\ud800 x"')  # the document's own escape
    assert res.tokens == pad.tokenizer.count(res.text)
    json.dumps(res.data, ensure_ascii=False).encode("utf-8")


def test_a_note_no_read_could_return_is_refused_when_written(pad: Scratchpad) -> None:
    # a 600 KB note was saved ("saved note 'findings' (594.6 KB)"), then every scratch_read refused
    # it with only scratch_list to try, which shows no value: written, never readable
    pad.call_tool("scratch_write", {"key": "findings", "value": "3 pods failed"})
    big = [f"pod-{i} failed: OOMKilled" for i in range(20_000)]
    res = pad.call_tool("scratch_write", {"key": "findings", "value": big})
    assert not res.ok and res.error["error"] == "note_too_large", res.text
    assert "no scratch_read could return" in res.error["message"] and len(res.text) < 1000
    assert pad.call_tool("scratch_read", {"key": "findings"}).text.startswith("3 pods failed")  # kept as it was
    near = [f"pod-{i} failed" for i in range(900)]  # under the per-call limit: written and read back whole
    assert pad.call_tool("scratch_write", {"key": "near", "value": near}).ok
    read = pad.call_tool("scratch_read", {"key": "near"})
    assert read.ok and json.loads(read.text.split("\n---")[0]) == near, read.text[-300:]


def test_a_key_with_a_lone_surrogate_is_described_and_readable(pad: Scratchpad) -> None:
    # schema failed as "invalid_argument: TypeError: str is not valid UTF-8" (blaming the caller),
    # and the schema computed at spill time logged a traceback
    h = pad.spill('{"\\udfff": 1, "items": [{"a": 1}]}', tool="t").handle
    res = pad.call_tool("schema", {"handle": h})
    assert res.ok, res.text
    res.text.encode("utf-8")
    path = next(r["path"] for r in res.data["nodes"] if "udfff" in r["path"])
    assert path == '$["\\udfff"]'
    assert pad.call_tool("get_in", {"handle": h, "path": path}).data == 1
    wrong = pad.call_tool("item_schema", {"handle": h, "path": "$"})
    assert wrong.error["message"] == "$ is an object, not an array"
    assert {s["tool"] for s in wrong.error["suggestions"]} == {"item_schema", "schema"}
