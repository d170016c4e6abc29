"""Probe AA (a hostile agent's arguments): what it found, each fixed and tested here."""

from __future__ import annotations

import json
import random
import re

import pytest

from jupyter_scratchpad import Scratchpad


def test_forty_thousand_unknown_argument_names_are_refused_in_a_few_words(pad: Scratchpad) -> None:
    # the refusal named every one of them (cut only at the error bound), and finding them other
    # tools' words for ours compared each with a list of all the others: 40,000 took 16 s
    args: dict[str, object] = {f"k{i}": i for i in range(40_000)}
    args["handle"] = "abc"
    res = pad.call_tool("head", args)
    assert not res.ok and res.error is not None and res.error["error"] == "invalid_argument"
    message = res.error["message"]
    assert "'k0'" in message and "and 39,992 more" in message and len(message) < 400, message
    assert res.tokens < 200


def test_a_few_unknown_names_are_all_named_and_other_tools_words_still_suggested(pad: Scratchpad) -> None:
    handle = pad.spill("\n".join(f"line {i}" for i in range(500)), tool="t").handle
    res = pad.call_tool("slice", {"handle": handle, "start_line": 10, "end_line": 12})
    assert not res.ok and res.error is not None
    assert "'end_line', 'start_line'" in res.error["message"]
    (fix,) = res.error["suggestions"]
    assert fix["arguments"] == {"handle": handle, "start": 10, "end": 12}
    assert pad.call_tool(fix["tool"], fix["arguments"]).ok
    assert json.loads(res.text)["suggestions"][0]["tool"] == "slice"


def test_a_resource_page_of_dense_text_is_cut_at_the_cap_charged_and_says_where_the_rest_is(pad: Scratchpad) -> None:
    # a 64 KiB page of CJK text was 41,870 tokens (the per-call cap is 10,000), and no page was
    # charged: a client that attaches a resource puts it in the model's context
    from jupyter_scratchpad.mcp._server import read_page

    rare = random.Random(7)  # (CJK extension A: 2 or more tokens a character)
    text = "\n".join("".join(chr(rare.randrange(0x3400, 0x4DB5)) for _ in range(60)) for _ in range(3000))
    handle = pad.intercept(text, tool="zh", force=True).handle
    before = pad.budget.used
    page = read_page(pad, f"scratchpad://{handle}?page=2").contents[0].text
    cap = pad.budget.max_extraction_tokens
    assert pad.tokenizer.count(page) <= cap
    charged = pad.budget.used - before
    assert charged == pad.tokenizer.count(page) and pad.usage()["tokens_extracted"] >= charged
    m = re.search(rf'read_handle\(handle="{handle}", start=(\d+), end=(\d+)\)', page)
    assert m is not None and f"scratchpad://{handle}?page=3" in page, page[-400:]
    start, end = int(m.group(1)), int(m.group(2))
    rest = pad.call_tool("read_handle", {"handle": handle, "start": start, "end": end})
    assert rest.ok, rest.text[:300]  # (the part it names fits, and goes on where the page stopped)
    shown, data = page.rpartition("\n[page 2 of ")[0], text.encode()
    first = 16 * 1024
    while data[first] & 0xC0 == 0x80:  # (a page starts at a character's first byte)
        first -= 1
    assert data[first:start].decode() == shown  # (the page's text, whole characters, up to where the rest starts)


def test_a_resource_page_of_json_fits_whole(pad: Scratchpad) -> None:
    from jupyter_scratchpad.mcp._server import PAGE_BYTES, read_page

    value = {"items": [{"name": f"pod-{i}", "phase": "Running", "ip": f"10.0.{i % 250}.{i % 200}"} for i in range(5000)]}
    handle = pad.intercept(value, tool="k8s").handle
    page = read_page(pad, f"scratchpad://{handle}?page=1").contents[0].text
    assert "cut at" not in page and len(page.encode()) > PAGE_BYTES - 8


def test_a_ttl_of_nan_as_a_string_is_refused_with_the_write_at_its_default(pad: Scratchpad) -> None:
    # "NaN" was read as nan, passed the schema's bounds and was refused by the store with no suggestion
    res = pad.call_tool("scratch_write", {"key": "k", "value": "v", "ttl_s": "NaN"})
    assert not res.ok and res.error is not None
    (fix,) = res.error["suggestions"]
    assert fix["arguments"] == {"key": "k", "value": "v"} and pad.call_tool(fix["tool"], fix["arguments"]).ok
    assert pad.call_tool("scratch_write", {"key": "k", "value": "v", "ttl_s": "90"}).ok  # (a number as text still is one)


def test_a_sql_refusal_sized_past_the_default_rows_asks_for_them(pad: Scratchpad) -> None:
    # "about 1630 rows fit" suggested LIMIT 1630 alone: run as written it showed 200 (max_rows's
    # default), and the CLI's command line for it showed 200 too
    res = pad.call_tool("sql", {"query": "SELECT * FROM range(1000000)", "max_rows": 10000})
    assert not res.ok and res.error is not None and res.error["error"] == "sql_too_large"
    first = res.error["suggestions"][0]
    fit = first["arguments"]["max_rows"]
    assert fit > 200 and first["arguments"]["query"].endswith(f"LIMIT {fit}")
    got = pad.call_tool("sql", first["arguments"])
    assert got.ok and got.meta["rows"] == fit and not got.meta["truncated"], got.text[-300:]


def test_a_csv_line_that_is_not_a_row_is_named_with_the_slice_that_shows_it(pad: Scratchpad) -> None:
    # a cut last line made every aggregate over h.rows fail, and the only suggestion was a DESCRIBE
    # (its columns were fine)
    csv = "a,b\n" + "".join(f"{i},{i}\n" for i in range(60_000)) + 'xyz,"unterminated\n'
    handle = pad.intercept(csv, tool="export").handle
    res = pad.call_tool("sql", {"query": f"SELECT sum(a) FROM {handle}.rows"})
    assert not res.ok and res.error is not None
    assert f"line 60,002 of {handle} is not a row of its CSV" in res.error["message"]
    assert f"{handle}(line_no, line) holds every line" in res.error["message"]
    (shown,) = res.error["suggestions"]
    got = pad.call_tool(shown["tool"], shown["arguments"])
    assert got.ok and 'xyz,"unterminated' in got.text
    lines = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle}"})  # (the lines still are)
    assert lines.ok and lines.data == [{"n": 60_002}]


def test_schemas_next_iterate_over_is_sized_to_fit(pad: Scratchpad) -> None:
    # it always said limit=20: 20 items of three 2,000-character CJK fields were ~37,000 tokens,
    # and the call it named was refused
    rng = random.Random(2)
    zh = "我们的系统在处理大量数据时出现了错误请检查日志文件并重新启动服务器以恢复正常运行状态"
    items = [{"title": "".join(rng.choice(zh) for _ in range(2000)), "body": "".join(rng.choice(zh) for _ in range(2000)),
              "tag": "".join(rng.choice(zh) for _ in range(800))} for _ in range(300)]  # fmt: skip
    handle = pad.intercept({"items": items}, tool="zh").handle
    nxt = next(line for line in pad.call_tool("schema", {"handle": handle}).text.splitlines() if line.startswith("next:"))
    m = re.search(r'iterate_over\(handle="[^"]+", path="([^"]+)", fields="([^"]+)", limit=(\d+)\)', nxt)
    assert m is not None, nxt
    limit = int(m.group(3))
    assert 1 <= limit < 20
    got = pad.call_tool("iterate_over", {"handle": handle, "path": m.group(1), "fields": m.group(2), "limit": limit})
    assert got.ok, got.text[:300]
    small = pad.intercept({"items": [{"name": f"pod-{i}", "phase": "Running"} for i in range(3000)]}, tool="k8s").handle
    assert "limit=20)" in pad.call_tool("schema", {"handle": small}).text  # (a page that fits stays 20)


def test_a_json_tool_on_a_csv_names_its_rows_relation(pad: Scratchpad) -> None:
    # probe AB: item_schema / iterate_over on a CSV said "use the text tools" with a grep for
    # "error" (nothing, in an orders export), not the relation that reads its rows
    csv = "order_id,status,total\n" + "\n".join(f"{i},{'paid' if i % 4 else 'refunded'},{i * 3}" for i in range(20_000))
    handle = pad.intercept(csv, tool="export").handle
    for tool, more in (("item_schema", {}), ("iterate_over", {"fields": "status"})):
        res = pad.call_tool(tool, {"handle": handle, "path": "$", **more})
        assert not res.ok and res.error is not None and res.error["error"] == "not_json"
        assert f"{handle}.rows (order_id, status, total)" in res.error["message"]
        first = res.error["suggestions"][0]
        got = pad.call_tool(first["tool"], first["arguments"])
        assert got.ok and "refunded" in got.text


def test_a_cold_schema_call_does_not_parse_the_body_for_its_next_line(
    pad: Scratchpad, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fields and page size of schema's next: were found by parsing the whole body (3 MB of
    # records: 1 ms became 40-90 ms for another process, whose schema is read from the saved file)
    from jupyter_scratchpad.explore import _base, _json, _schema

    records = [{"order_id": i, "kind": "order", "status": ["paid", "open"][i % 2], "total": i * 3} for i in range(20_000)]
    handle = pad.intercept(json.dumps(records), tool="orders").handle  # (an API's text, as the benchmark's)
    pad.wait_for_counts()
    assert _schema.wait_for_schema(pad.store.get_entry(pad.scope, "handle", handle).body_id, 30)
    for cache in (_schema._SCHEMAS, _schema._ITEM_SHAPES, _json._ITEM_COUNTS):
        cache.clear()
    _base.VALUE_CACHE.clear()
    parsed: list[int] = []
    real = _base.parse_json_bytes
    monkeypatch.setattr(_base, "parse_json_bytes", lambda data: parsed.append(len(data)) or real(data))
    res = pad.call_tool("schema", {"handle": handle})
    assert res.ok and parsed == [], parsed
    nxt = next(line for line in res.text.splitlines() if line.startswith("next:"))
    assert "iterate_over(" in nxt and "kind" not in nxt.split("fields=")[1]  # (a field that never changes, left out)
