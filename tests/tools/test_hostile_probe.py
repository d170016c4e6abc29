"""A hostile-input probe's findings: each result fits, and each call a result names runs and fits."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.spill._stub import STUB_MAX_TOKENS


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    return backend_store


def _runs_and_fits(pad: Scratchpad, tool: str, args: dict[str, Any]) -> Any:
    res = pad.call_tool(tool, args)
    assert res.ok, (tool, args, res.text[:600])
    assert res.tokens <= pad.budget.max_extraction_tokens
    return res


# -- 1. a stub is bounded whatever the keys and names hold ---------------------------------------


@pytest.mark.parametrize(
    ("result", "tool"),
    [
        ({"k" * 100_000: 1, "items": [1] * 2000}, "t"),
        ({"e" * 500: 1, "items": list(range(3000))}, "t"),
        ({"items": [{f"k{j}" + "q" * 3000: 1 for j in range(40)} for _ in range(30)]}, "t"),
        ({"x": 1, "data": {"a" * 3000: {"b" * 3000: 1}}, "items": list(range(3000))}, "t"),
        ({"😀" * 5000 + str(i): [{"😀" * 300 + str(j): 1 for j in range(20)}] for i in range(30)}, "😀" * 500),
        ([{"\u0b95\u0bcd" * 400 + str(j): 1 for j in range(20)} for _ in range(100)], "x" * 10_000),
        ({"😀" * 3000: json.dumps({"rows": [{"x": i} for i in range(2000)]})}, "t"),
    ],
    ids=["huge_key", "long_key", "long_item_keys", "nested_long_keys", "emoji_keys_and_tool", "dense_keys", "emb"],
)
def test_a_stub_fits_whatever_its_keys_and_tool_name(pad: Scratchpad, result: Any, tool: str) -> None:
    r = pad.intercept(json.dumps(result), tool=tool, force=True)
    assert r.spilled and pad.tokenizer.count(r.content) <= STUB_MAX_TOKENS, len(r.content)
    assert r.handle in r.content
    assert all(len(line) <= 400 for line in r.content.splitlines())


def test_a_huge_key_is_clipped_with_a_marker(pad: Scratchpad) -> None:
    r = pad.intercept(json.dumps({"k" * 100_000: 1, "items": [1] * 2000}), tool="t")
    assert '$["' + "k" * 40 + '…"]: 1' in r.content
    assert 'item_schema path="$.items"' in r.content  # the array the clipped key sits beside


def test_the_cli_show_prints_a_bounded_stub(tmp_path: Path) -> None:
    body = json.dumps({"k" * 100_000: 1, "items": [1] * 2000}).encode()
    store = str(tmp_path / "cli_store")
    cmd = [sys.executable, "-m", "jupyter_scratchpad.cli", "--store", store]
    out = subprocess.run([*cmd, "spill", "--tool", "lk"], input=body, capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout) < 2_000
    handle = out.stdout.decode().split('handle "')[1].split('"')[0]
    shown = subprocess.run([*cmd, "show", handle], capture_output=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert 0 < len(shown.stdout) < 2_000


# -- 2. an iterate_over cut mark names a call that fits ------------------------------------------


def _deep(n: int) -> str:
    return "[" * n + "1" + "]" * n


@pytest.mark.parametrize(
    ("body", "path", "fields"),
    [
        (json.dumps({"items": [{f"f{j}": j for j in range(3000)} for _ in range(20)]}), "$.items", "*"),
        (json.dumps({"items": [{"s": "word " * 72_000, "id": i} for i in range(5)]}), "$.items", "s"),
        (json.dumps({"items": [{"s": "".join(map(str, range(100_000)))}]}), "$.items", "s"),
        (json.dumps({"items": [{"o": {f"k{j}": j for j in range(5000)}} for _ in range(5)]}), "$.items", "o"),
        (json.dumps({"items": [{"s": "\n".join(["x" * 2000] * 400)} for _ in range(3)]}), "$.items", "s"),
        ("[" + _deep(5000) + "]", "$", "*"),
    ],
    ids=["wide_items", "long_string", "digit_string", "wide_object", "long_lines", "deep"],
)
def test_a_cut_cell_names_a_call_that_runs_and_fits(pad: Scratchpad, body: str, path: str, fields: str) -> None:
    from tests.tools.test_hints_run import calls_in

    h = pad.spill(body, tool="w").handle
    res = _runs_and_fits(pad, "iterate_over", {"handle": h, "path": path, "fields": fields, "limit": 3})
    cells = [v for row in res.data for v in row.values() if isinstance(v, str) and "… [" in v]
    assert cells, res.text[:300]
    for cell in cells:
        [(tool, args)] = calls_in(cell[cell.rindex("… [") :])
        assert args["handle"] == h
        _runs_and_fits(pad, tool, args)


# -- 3. a one-line string of megabytes is read a window of characters at a time ------------------


@pytest.mark.parametrize("value", ["word " * 400_000, "b" * 2_000_000, "\n".join(["word " * 3000] * 100)])
def test_schema_of_a_huge_string_names_a_window_that_fits(pad: Scratchpad, value: str) -> None:
    from tests.tools.test_hints_run import calls_in

    h = pad.spill(json.dumps({"v": value}), tool="s").handle
    res = _runs_and_fits(pad, "schema", {"handle": h, "path": "$.v"})
    [(tool, args)] = calls_in(next(line for line in res.text.splitlines() if line.startswith("next:")))
    page = _runs_and_fits(pad, tool, args)
    assert page.text.startswith(("word", "b", "1\tword"))


def test_a_refused_string_page_offers_a_window_of_characters(pad: Scratchpad) -> None:
    value = "word " * 400_000
    h = pad.spill(json.dumps({"v": value}), tool="s").handle
    for args in (
        {"path": "$.v"},
        {"path": "$.v", "offset": 0, "limit": 50},
        {"path": "$.v", "chars": True, "limit": 500_000},
    ):
        refused = pad.call_tool("get_in", {"handle": h, **args})
        assert not refused.ok and refused.error["error"] == "get_in_too_large"
        windows = [s for s in refused.error["suggestions"] if s["arguments"].get("chars")]
        assert windows, refused.text
        page = _runs_and_fits(pad, "get_in", windows[0]["arguments"])
        assert page.data["text"] == value[: windows[0]["arguments"]["limit"]]
    nxt = _runs_and_fits(pad, "get_in", {"handle": h, "path": "$.v", "chars": True, "offset": 10, "limit": 7})
    assert nxt.data["text"] == value[10:17] and nxt.data["total_chars"] == len(value)


# -- 4. schema of text whose first line is over the limit offers a window that fits --------------


def test_schema_of_one_line_of_digits_offers_what_fits(pad: Scratchpad) -> None:
    from tests.tools.test_hints_run import calls_in

    h = pad.spill("x" + json.dumps(list(range(3000))), tool="n").handle
    res = _runs_and_fits(pad, "schema", {"handle": h})
    calls = calls_in(next(line for line in res.text.splitlines() if line.startswith("next:")))
    assert calls and all(tool != "head" for tool, _ in calls)
    for tool, args in calls:
        _runs_and_fits(pad, tool, args)


# -- 5. a key with a lone surrogate is named in a form that reads back ---------------------------


def test_a_lone_surrogate_key_is_named_as_it_reads_back(pad: Scratchpad) -> None:
    h = pad.spill("[" + ",".join(['{"\\ud800": 1, "ok": 2}'] * 30) + "]", tool="sur").handle
    keys = [k["key"] for k in _runs_and_fits(pad, "item_schema", {"handle": h, "path": "$"}).data["keys"]]
    assert '$["\\ud800"]' in keys  # the escape, as the document wrote it
    for key in keys:
        row = _runs_and_fits(pad, "iterate_over", {"handle": h, "path": "$", "fields": key, "limit": 1})
        assert row.data[0][key] is not None
    bare = pad.call_tool("iterate_over", {"handle": h, "path": "$", "fields": "\\ud800", "limit": 1})
    assert not bare.ok and '$["\\ud800"]' in bare.error["available_keys"]
    assert any(s["tool"] == "iterate_over" for s in bare.error["suggestions"])
    lines = _runs_and_fits(pad, "head", {"handle": h, "lines": 3})
    assert '"\\ud800": 1' in lines.text  # the pretty body keeps the escape (no U+FFFD)
    assert _runs_and_fits(pad, "grep", {"handle": h, "pattern": "ud800", "max_matches": 1}).data


# -- 6. JSON after a UTF-8 byte order mark is JSON -----------------------------------------------


@pytest.mark.parametrize("bom", ["\ufeff", b"\xef\xbb\xbf"], ids=["str", "bytes"])
def test_json_after_a_byte_order_mark_is_json(pad: Scratchpad, bom: str | bytes) -> None:
    doc = json.dumps({"items": [{"id": i} for i in range(500)]})
    r = pad.spill(bom + (doc if isinstance(bom, str) else doc.encode()), tool="bom")  # type: ignore[operator]
    assert r.stub["format"] == "json"
    assert _runs_and_fits(pad, "item_schema", {"handle": r.handle, "path": "$.items"}).data["total_items"] == 500
    assert _runs_and_fits(pad, "get_in", {"handle": r.handle, "path": "$.items[7].id"}).data == 7
    assert "500" in _runs_and_fits(pad, "sql", {"query": f"SELECT count(*) FROM {r.handle}.items"}).text
    raw = _runs_and_fits(pad, "read_handle", {"handle": r.handle, "start": 0, "end": 5})
    assert raw.data["text"].startswith("\ufeff{")  # the bytes as given


# -- 7. bare CRs (a progress bar) end lines ------------------------------------------------------


def test_bare_carriage_returns_end_lines(pad: Scratchpad) -> None:
    r = pad.spill("step 1/3\rstep 2/3\rstep 3/3\r" * 3000, tool="cr")
    h = r.handle
    assert r.stub["lines"] == 9000 and "bare CR" in r.content
    assert _runs_and_fits(pad, "slice", {"handle": h, "start": 2, "end": 3}).data["lines"] == ["step 2/3", "step 3/3"]
    assert "bare CR" in _runs_and_fits(pad, "schema", {"handle": h}).text
    grep = _runs_and_fits(pad, "grep", {"handle": h, "pattern": "3/3", "max_matches": 2, "context": 0})
    assert "3\tstep 3/3" in grep.text
    sql = _runs_and_fits(pad, "sql", {"query": f"SELECT line_no FROM {h} WHERE line = 'step 2/3' ORDER BY 1 LIMIT 1"})
    assert "| 2 |" in sql.text
    raw = _runs_and_fits(pad, "read_handle", {"handle": h, "start": 0, "end": 9})
    assert raw.data["text"] == "step 1/3\r"
    crlf = pad.spill("a\r\nb\r\n" * 3000, tool="crlf")
    assert crlf.stub["lines"] == 6000 and "bare CR" not in crlf.content


# -- 8. schema's next: names calls with real arguments -------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"items": [{"metadata": {"name": f"p{i}"}, "status": {"phase": "R"}} for i in range(3000)]}),
        json.dumps({"items": [{"id": i, "a.b": i, "o": {"x": 1}} for i in range(3000)]}),
        json.dumps({"data": {f"k{i}": {"id": i, "v": "x"} for i in range(3000)}}),
        "".join(f"# S{s}\n\n" + "text line\n" * 30 for s in range(300)),
        "\n".join(f"line {i} ERROR x" for i in range(5000)),
    ],
    ids=["nested_fields", "flat_fields", "map", "markdown", "log"],
)
def test_schema_next_has_no_placeholders(pad: Scratchpad, body: str) -> None:
    from tests.tools.test_hints_run import _CALL

    h = pad.spill(body, tool="t").handle
    nxt = next(
        line for line in _runs_and_fits(pad, "schema", {"handle": h}).text.splitlines() if line.startswith("next:")
    )
    assert "…" not in nxt, nxt
    calls = list(_CALL.finditer(nxt))
    assert len(calls) == nxt.count("(handle="), nxt  # every call in it is complete
    for m in calls:
        args = {k: json.loads(v) for k, v in re.findall(r'([a-z_]+)=("(?:\\.|[^"\\])*"|-?\d+|true|false)', m.group(2))}
        _runs_and_fits(pad, m.group(1), args)


def test_a_markdown_string_schema_names_its_first_section(pad: Scratchpad) -> None:
    h = pad.spill(json.dumps({"doc": "".join(f"# S{s}\n\ntext\n" for s in range(300))}), tool="t").handle
    res = _runs_and_fits(pad, "schema", {"handle": h, "path": "$.doc"})
    nxt = next(line for line in res.text.splitlines() if line.startswith("next:"))
    assert "<" not in nxt and "offset=0, limit=3" in nxt


# -- 9. NaN and Infinity read as the document wrote them -----------------------------------------


def test_nan_and_infinity_read_as_written(pad: Scratchpad) -> None:
    h = pad.spill(
        '{"items":[' + ",".join(['{"x": NaN, "y": Infinity, "z": -Infinity}'] * 300) + "]}", tool="nan"
    ).handle
    one = _runs_and_fits(pad, "get_in", {"handle": h, "path": "$.items[0]"})
    assert '{"x":NaN,"y":Infinity,"z":-Infinity}' in one.text  # (a short object: one line)
    row = _runs_and_fits(pad, "iterate_over", {"handle": h, "path": "$.items", "fields": "x,y,z", "limit": 1})
    assert "[0,NaN,Infinity,-Infinity]" in row.text
    assert '"x": NaN' in _runs_and_fits(pad, "head", {"handle": h, "lines": 4}).text
    assert (
        "| NaN | Infinity | -Infinity |"
        in _runs_and_fits(pad, "sql", {"query": f"SELECT x, y, z FROM {h}.items LIMIT 1"}).text
    )


# -- 10. small mistakes get a corrected call; an estimate is not below its own part's -----------


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        ({"start": 1.5, "end": 10}, {"start": 1, "end": 10}),
        ({"start": "1e3", "end": 1010}, {"start": 1000, "end": 1010}),
        ({"start": 1, "end": 2.5}, {"start": 1, "end": 3}),
    ],
)
def test_a_fractional_line_number_is_offered_as_an_integer(
    pad: Scratchpad, args: dict[str, Any], fixed: dict[str, Any]
) -> None:
    h = pad.spill("\n".join(f"line {i}" for i in range(5000)), tool="log").handle
    res = pad.call_tool("slice", {"handle": h, **args})
    assert not res.ok and res.error["suggestions"][0]["arguments"] == {"handle": h, **fixed}
    _runs_and_fits(pad, "slice", res.error["suggestions"][0]["arguments"])


@pytest.mark.parametrize("tool", ["get_in", "item_schema", "iterate_over", "schema"])
@pytest.mark.parametrize("path", ["$..", "..", "$.items."])
def test_a_path_ending_in_dots_gets_a_call_that_runs(pad: Scratchpad, tool: str, path: str) -> None:
    h = pad.spill(json.dumps({"items": [{"id": i} for i in range(50)]}), tool="j").handle
    res = pad.call_tool(tool, {"handle": h, "path": path, **({"fields": "id"} if tool == "iterate_over" else {})})
    assert not res.ok and res.error["suggestions"], res.text
    for s in res.error["suggestions"]:
        _runs_and_fits(pad, s["tool"], s["arguments"])


def test_an_items_estimate_counts_its_long_strings(pad: Scratchpad) -> None:
    item = {"s": "word0 " * 60_000, "d": {f"k{j}": j for j in range(5000)}}
    h = pad.spill(json.dumps({"items": [item, item]}), tool="big").handle
    whole = pad.call_tool("get_in", {"handle": h, "path": "$.items[0]"}).error["estimated_tokens"]
    part = pad.call_tool("get_in", {"handle": h, "path": "$.items[0].s"}).error["estimated_tokens"]
    assert whole > part
