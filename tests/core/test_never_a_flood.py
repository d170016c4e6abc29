"""Whatever ``intercept`` returns is bounded, on every input: fail closed, any depth, exact numbers,
odd Python values, MCP envelopes, stubs within 250 tokens (issues 11 and 12)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.spill._stub import render_stub_text
from jupyter_scratchpad.spill._withheld import POINTER_MAX_BYTES
from jupyter_scratchpad.store._jsontext import ExactNumber, dumps_pretty, loads
from jupyter_scratchpad.tokens import count_tokens

DEPTHS = [100, 300, 1_000, 10_000, 100_000]


def nested_list(depth: int, leaf: Any = 1) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    node.append(leaf)
    return root


def nested_text(depth: int) -> str:
    return '{"a":' * depth + '"leaf"' + "}" * depth


# -- 1. fail closed ------------------------------------------------------------------------------


def test_a_failed_spill_returns_a_bounded_pointer_not_the_flood(pad: Scratchpad, monkeypatch, caplog) -> None:
    from jupyter_scratchpad.store import _store

    def broken(*a: object, **k: object) -> None:
        raise RuntimeError("the disk is on fire")

    monkeypatch.setattr(_store, "write_body_dir", broken)
    caplog.set_level(logging.ERROR, logger="jupyter_scratchpad")
    payload = "\n".join(f"row {i} " + "x" * 90 for i in range(20_000))  # ~2 MB, ~600k tokens
    r = pad.intercept(payload, tool="list_everything")
    assert not r.spilled and r.stub is None and r.handle is None
    assert "RuntimeError: the disk is on fire" in r.failure
    assert isinstance(r.content, str) and len(r.content.encode()) <= POINTER_MAX_BYTES
    assert "list_everything" in r.content and "row 0 " in r.content and "row 19999 " in r.content
    assert f"{len(payload.encode()):,} bytes" in r.content
    assert pad.usage()["tokens_intercepted"] == 0
    assert [rec for rec in caplog.records if rec.levelno == logging.ERROR and rec.exc_info]


def test_the_decision_failing_also_fails_closed(pad: Scratchpad, monkeypatch) -> None:
    def broken(*a: object, **k: object) -> None:
        raise MemoryError

    monkeypatch.setattr(pad.policy.__class__, "explain", broken)
    r = pad.intercept("y" * 100_000, tool="t")
    assert r.failure and len(r.content.encode()) <= POINTER_MAX_BYTES and r.content != "y" * 100_000


def test_the_old_full_result_sentence_is_gone_from_the_docs() -> None:
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert "returns the full result" not in readme


# -- 2. any depth --------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_json_text_spills_as_json_with_exact_raw_bytes(pad: Scratchpad, depth: int) -> None:
    text = nested_text(depth)
    r = pad.spill(text, tool="deep")
    assert r.spilled, r.failure
    assert r.stub["format"] == "json"
    entry = pad.entry(r.handle)
    reader = pad.store.reader(entry)
    assert reader.read_raw(0, reader.raw_size) == text.encode()
    assert reader.body_bytes < 40 * len(text)  # no quadratic indentation
    assert count_tokens(r.content) <= 250


@pytest.mark.parametrize("depth", DEPTHS)
def test_deep_python_values_spill(pad: Scratchpad, depth: int) -> None:
    value = {"deep": nested_list(depth), "pad": "z" * 30_000}
    r = pad.intercept(value, tool="deep_value")
    assert r.spilled, r.failure
    raw = pad.store.reader(pad.entry(r.handle)).read_raw(0, 10**9)
    assert json.loads(raw.decode()) if depth < 900 else raw.startswith(b'{"deep": [[[')
    assert raw.count(b"[") == depth


@pytest.mark.parametrize("depth", DEPTHS)
def test_loads_and_pretty_round_trip_at_any_depth(depth: int) -> None:
    text = nested_text(depth)
    value = loads(text)
    again = loads(dumps_pretty(value))
    node_a, node_b = value, again
    for _ in range(depth):
        node_a, node_b = node_a["a"], node_b["a"]
    assert node_a == node_b == "leaf"


# -- exact numbers -------------------------------------------------------------------------------


def test_big_integers_and_long_decimals_survive_normalisation(pad: Scratchpad) -> None:
    text = '{"id": 1000000000000000000000, "neg": -98765432109876543210987, "x": 0.1000000000000000000001, "ok": 1.5}'
    r = pad.spill(text, tool="numbers")
    body = pad.store.reader(pad.entry(r.handle)).body_text()
    for token in ("1000000000000000000000", "-98765432109876543210987", "0.1000000000000000000001", "1.5"):
        assert token in body
    assert "e+21" not in body
    value = loads(text)
    assert value["id"] == 10**21 and isinstance(value["x"], ExactNumber) and value["x"].text.endswith("0001")
    found = pad.call_tool("grep", {"handle": r.handle, "pattern": "1000000000000000000000"})
    assert found.ok and found.data["total_matches"] == 1


def test_a_thousand_digit_integer_is_kept(pad: Scratchpad) -> None:
    digits = "7" * 5000
    r = pad.spill(f'{{"n": {digits}, "pad": "{"p" * 100}"}}', tool="huge_number")
    assert r.spilled and digits in pad.store.reader(pad.entry(r.handle)).body_text()


# -- odd inputs: intercept never raises ----------------------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def odd_values() -> list[Any]:
    cyclic: list[Any] = ["x" * 80_000]
    cyclic.append(cyclic)
    return [
        {(1, 2): "x" * 80_000},  # a tuple key
        {"set": set(range(10)), "pad": "x" * 80_000, "nan": float("nan")},
        {"obj": Unprintable(), "pad": "x" * 80_000},
        cyclic,
        ("tuple", "x" * 80_000),
        "lone \ud800 surrogates " * 10 + "\udfff" * 200_000,
    ]


@pytest.mark.parametrize("value", odd_values(), ids=["tuple_key", "set_nan", "unprintable", "cycle", "tuple", "surr"])
def test_odd_values_spill_and_never_raise(pad: Scratchpad, value: Any) -> None:
    r = pad.spill(value, tool="odd")
    assert r.spilled, r.failure
    assert count_tokens(r.content) <= 250


def test_lone_surrogates_keep_their_bytes(pad: Scratchpad) -> None:
    text = "head \ud800 tail " + "\udc00" * 100_000
    r = pad.intercept(text, tool="surrogates")
    assert r.spilled, r.failure
    reader = pad.store.reader(pad.entry(r.handle))
    assert reader.read_raw(0, reader.raw_size) == text.encode("utf-8", "surrogatepass")
    assert pad.get(r.handle) == text  # came back with three U+FFFD for each surrogate


def test_bytes_that_are_not_text_come_back_as_the_bytes(pad: Scratchpad) -> None:
    value = b"\x00\xff" * 1_000_000  # came back as text with U+FFFD: not the value spilled
    r = pad.intercept(value, tool="blob")
    assert r.spilled, r.failure
    assert pad.get(r.handle) == value
    text = pad.intercept(b"caf\xc3\xa9 " * 100_000, tool="utf8_bytes")  # UTF-8 bytes: the text
    assert pad.get(text.handle) == "café " * 100_000


# -- MCP envelopes -------------------------------------------------------------------------------


def envelope(inner: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": inner}]}


def test_a_call_tool_result_with_one_text_block_is_unwrapped(pad: Scratchpad) -> None:
    inner = json.dumps({"items": [{"id": i, "name": f"n{i}"} for i in range(3000)]})
    for result in (envelope(inner), json.dumps(envelope(inner))):
        r = pad.intercept(result, tool="mcp_list")
        assert r.spilled and r.stub["format"] == "json" and r.stub["unwrapped"]
        assert "unwrapped from an MCP CallToolResult" in r.content
        got = pad.call_tool("get_in", {"handle": r.handle, "path": "items.2999.name"})
        assert got.ok and got.data == "n2999"


@pytest.mark.parametrize(
    "result",
    [
        {"content": [{"type": "text", "text": "x" * 60_000}], "isError": True},
        {"content": [{"type": "text", "text": "x" * 60_000}, {"type": "text", "text": "y"}]},
        {"content": [{"type": "text", "text": "x" * 60_000}], "structuredContent": {"a": 1}},
        {"content": [{"type": "image", "data": "x" * 60_000, "mimeType": "image/png"}]},
    ],
)
def test_other_envelopes_are_stored_as_they_are(pad: Scratchpad, result: dict[str, Any]) -> None:
    r = pad.spill(result, tool="mcp")
    assert r.spilled and not r.stub.get("unwrapped") and r.stub["format"] == "json"


# -- 8. stubs: both ends, lean -------------------------------------------------------------------


def test_a_text_stub_shows_the_first_and_the_last_lines(pad: Scratchpad) -> None:
    text = "\n".join(f"line {i}" for i in range(1, 10_001))
    r = pad.spill(text, tool="log")
    assert "1\tline 1\n" in r.content and "10000\tline 10000" in r.content
    assert "lines omitted" in r.content
    assert r.stub["preview_head"][0] == "line 1" and r.stub["preview_tail"][-1] == "line 10000"


@pytest.mark.parametrize(
    "result",
    [
        "\n".join("2024-01-01T00:00:00Z ERROR " + "detail " * 60 + str(i) for i in range(5000)),  # long lines
        {"items": [{f"key_{k}": "v" * 30 for k in range(60)} for _ in range(500)]},  # many keys
        {f"{'k' * 300}{i}": i for i in range(2000)},  # long keys
        "x" * 1_000_000,  # one enormous line
        "日本語のテキスト " * 100_000,
    ],
    ids=["long_lines", "many_keys", "long_keys", "one_line", "cjk"],
)
def test_any_stub_fits_250_tokens(pad: Scratchpad, result: Any) -> None:
    r = pad.spill(result, tool="some_tool_with_a_rather_long_name_indeed")
    assert r.spilled and count_tokens(r.content) <= 250
    assert r.handle in r.content


def _cut_one_at_a_time(stub: dict[str, Any], count: Any) -> str:
    """The rule the stub follows, the slow way: drop one thing, count the whole stub, repeat."""
    from jupyter_scratchpad.spill._stub import STUB_MAX_TOKENS

    stub = dict(stub)
    lines_shown = not stub.get("schema")
    for _ in range(10_000):
        text = render_stub_text(stub)  # without a counter: nothing is cut
        if count(text) <= STUB_MAX_TOKENS:
            return text
        head, tail = list(stub.get("preview_head") or []), list(stub.get("preview_tail") or [])
        sketch, extras = list(stub.get("schema") or []), list(stub.get("embedded") or [])[:3]
        if lines_shown and tail and len(tail) * 2 >= len(head):
            stub["preview_tail"], stub["preview_tail_start"] = tail[1:], stub["preview_tail_start"] + 1
        elif lines_shown and head:
            stub["preview_head"] = head[:-1]
        elif extras:
            stub["embedded"] = extras[:-1]
        elif len(sketch) > 2:
            stub["schema"] = sketch[:-1]
        else:
            return text
    raise AssertionError("never settled")


@pytest.mark.parametrize(
    "result",
    [
        "\n".join("2024-01-01T00:00:00Z ERROR " + "detail " * 60 + str(i) for i in range(5000)),
        "\n".join(f"{i} " + "word " * (i % 40) for i in range(3000)),  # lines of every length
        {"items": [{f"key_{k}": "v" * 30 for k in range(60)} for _ in range(500)]},
        {f"{'k' * 300}{i}": i for i in range(2000)},
        {"a": json.dumps({"rows": [{"x": i} for i in range(2000)]}), "b": "# Title\n\n" + "text " * 4000},
    ],
    ids=["long_lines", "mixed_lines", "many_keys", "long_keys", "embedded"],
)
def test_the_stub_is_cut_as_little_as_the_bound_allows(pad: Scratchpad, result: Any) -> None:
    # the stub is fitted by a binary search over its cuts: the same text as cutting one line at a
    # time and recounting, and no count more than a handful
    r = pad.spill(result, tool="some_tool_with_a_rather_long_name_indeed")
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return count_tokens(text)

    assert render_stub_text(r.stub, count) == _cut_one_at_a_time(r.stub, count_tokens) == r.content
    assert len(calls) <= 8


def test_preview_lines_stays_configurable(store: ScratchStore) -> None:
    pad = store.scratchpad("r", "a", preview_lines=3)
    r = pad.spill("\n".join(f"l{i}" for i in range(100)), tool="t")
    assert r.stub["preview_lines"] == 3 and r.stub["preview_head"] == ["l0", "l1"] and r.stub["preview_tail"] == ["l99"]


def test_a_handle_with_a_trailing_newline_is_not_a_handle(pad: Scratchpad) -> None:
    from jupyter_scratchpad import InvalidArgumentError

    h = pad.spill("x" * 100, tool="t").handle
    res = pad.call_tool("head", {"handle": h + "\n"})
    assert not res.ok and res.error["error"] == "invalid_handle"
    with pytest.raises(InvalidArgumentError):
        pad.spill("y", tool="t", handle="named\n")


def test_generated_handles_start_with_a_letter_and_notes_name_is_reserved(pad: Scratchpad) -> None:
    from jupyter_scratchpad import InvalidArgumentError

    assert pad.spill("z" * 100, tool="2fa_codes").handle.startswith("h_2fa_codes_")
    with pytest.raises(InvalidArgumentError, match="reserved"):
        pad.spill("z", tool="t", handle="scratch_notes")


def test_an_envelope_whose_structured_content_repeats_the_text_is_unwrapped(pad: Scratchpad) -> None:
    payload = {"items": [{"id": i} for i in range(3000)]}
    import json as _json

    env = {
        "content": [{"type": "text", "text": _json.dumps(payload)}],
        "structuredContent": payload,
        "isError": False,
        "resultType": "complete",
    }
    r = pad.intercept(env, tool="list_items")
    assert r.spilled and "unwrapped from an MCP CallToolResult" in r.content
    assert pad.call_tool("get_in", {"handle": r.handle, "path": "$.items[2999].id"}).data == 2999


def test_a_tool_name_that_is_not_a_string_is_the_callers_mistake(pad: Scratchpad) -> None:
    from jupyter_scratchpad.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="intercept\\(result, tool='name'\\)"):
        pad.intercept("x" * 100_000, {"not": "a name"})  # type: ignore[arg-type]


def test_the_failure_log_line_is_bounded_too(pad: Scratchpad, monkeypatch, caplog) -> None:
    def broken(*_a: Any, **_k: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(pad, "_spill", broken)
    with caplog.at_level(logging.ERROR):
        r = pad.intercept("y" * 200_000, "t" * 10_000)
    assert r.failure and len(r.content.encode()) <= POINTER_MAX_BYTES
    assert all(len(rec.getMessage()) < 1_000 for rec in caplog.records)


def test_a_persons_page_bounds_every_tool_even_those_that_cannot_estimate(pad: Scratchpad) -> None:
    # the CLI's --max-tokens (page_tokens): tools refused early only what they could estimate;
    # head of 50,000 lines printed 1.3M tokens, sql 840K, a long string by lines 790K
    text = pad.spill("\n".join(f"line {i} ERROR " + "word " * 20 for i in range(50_000)), tool="t").handle
    doc = pad.spill(
        {
            "doc": "\n".join(f"para {i} " + "w " * 30 for i in range(20_000)),
            "items": [{"name": f"n{i}", "s": "x" * 50, "k": i} for i in range(5_000)],
        },
        tool="j",
    ).handle
    page = 25_000
    for tool, args in [
        ("head", {"handle": text, "lines": 50_000}),
        ("grep", {"handle": text, "pattern": "ERROR", "max_matches": 1000, "context": 50}),
        ("sql", {"query": f"SELECT * FROM {doc}.items", "max_rows": 10_000}),
        ("get_in", {"handle": doc, "path": "doc", "limit": 20_000}),
        ("iterate_over", {"handle": doc, "path": "items", "fields": "name,s", "limit": 5_000}),
    ]:
        res = pad.call_tool(tool, args, charge=False, page_tokens=page)
        assert not res.ok and res.error["error"] == f"{tool}_too_large", (tool, res.text[:300])
        assert res.error["estimated_tokens"] > page and count_tokens(res.text) < 2_000
        assert res.error["suggestions"], tool
        for s in res.error["suggestions"]:  # each runs within the page
            again = pad.call_tool(s["tool"], s["arguments"], charge=False, page_tokens=page)
            assert again.ok and count_tokens(again.text) <= page, (s["call"], again.text[:300])
    assert pad.usage()["tokens_extracted"] == 0  # a person's page charges nothing
    small = pad.call_tool("head", {"handle": text, "lines": 100}, charge=False, page_tokens=page)
    assert small.ok and "line 99 ERROR" in small.text
