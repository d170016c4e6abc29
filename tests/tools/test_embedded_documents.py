"""Strings that hold documents (issue 11 §5): JSON or markdown inside a JSON string is addressable
by path through the string — schema, get_in, item_schema, iterate_over, grep and SQL — and the stub
and key_path_not_found point at it."""

from __future__ import annotations

import json
import re

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.explore._embedded import find_embedded, is_markdown

PODS = {
    "items": [
        {"metadata": {"name": f"pod-{i}", "ns": "prod" if i % 3 else "dev"}, "restarts": i % 7} for i in range(400)
    ]
}
REPORT = "# Incident\n- version: 3\n- total_groups: 5\n\n## Timeline\n- start: 09:00\n  - nested: no\n" + "\n".join(
    f"line {i}" for i in range(30)
)


def _two_block_result() -> dict:
    # two text blocks and a flag: not the one-block envelope that is unwrapped at spill
    return {"content": [{"type": "text", "text": json.dumps(PODS)}, {"type": "text", "text": REPORT}], "isError": False}


def _spill(pad: Scratchpad) -> str:
    r = pad.intercept(_two_block_result(), "k8s_pods")
    assert r.spilled, r.failure
    return r.handle


def test_the_stub_names_the_documents_and_the_way_through(pad: Scratchpad) -> None:
    r = pad.intercept(_two_block_result(), "k8s_pods")
    assert [e["path"] for e in r.stub["embedded"]] == ["$.content[0].text", "$.content[1].text"]
    assert [e["format"] for e in r.stub["embedded"]] == ["json", "markdown"]
    assert "$.content[0].text: embedded json" in r.content
    assert 'schema path="$.content[0].text"' in r.content
    assert f"sql over {r.handle}.content_0_text__items" in r.content


def test_paths_run_through_a_string_that_holds_json(pad: Scratchpad) -> None:
    h = _spill(pad)
    got = pad.call_tool("get_in", {"handle": h, "path": "content[0].text.items[3].metadata.name"})
    assert got.ok and got.text.startswith('"pod-3"')
    dotted = pad.call_tool("get_in", {"handle": h, "path": "content.0.text.items.-1.restarts"})
    assert dotted.ok and dotted.text.startswith(str(399 % 7))
    keys = pad.call_tool("item_schema", {"handle": h, "path": "$.content[0].text.items"})
    assert keys.ok and "metadata.name" in keys.text and re.search(r"\nmetadata.name +string +all\n", keys.text)
    rows = pad.call_tool(
        "iterate_over",
        {"handle": h, "path": "content[0].text.items", "fields": "metadata.name", "offset": 10, "limit": 2},
    )
    assert rows.ok and '[10,"pod-10"]' in rows.text and "pod-12" not in rows.text


def test_a_string_without_json_is_not_a_path(pad: Scratchpad) -> None:
    h = _spill(pad)
    miss = pad.call_tool("get_in", {"handle": h, "path": "content[1].text.version"})
    assert miss.error["error"] == "key_path_not_found"
    assert "holds no JSON" in miss.error["message"]
    wrong = pad.call_tool("get_in", {"handle": h, "path": "content[0].txt"})
    assert wrong.error["embedded_documents"] == ["$.content[0].text (json)", "$.content[1].text (markdown)"]
    calls = [s["call"] for s in wrong.error["suggestions"]]
    assert f'schema(handle="{h}", path="$.content[0].text")' in calls
    for s in wrong.error["suggestions"]:  # every suggestion runs
        assert pad.call_tool(s["tool"], s["arguments"]).ok, s


def test_schema_describes_the_document_inside_a_string(pad: Scratchpad) -> None:
    h = _spill(pad)
    top = pad.call_tool("schema", {"handle": h})
    assert "documents inside strings" in top.text and "$.content[0].text: json, " in top.text
    inner = pad.call_tool("schema", {"handle": h, "path": "content[0].text"})
    assert inner.ok and "$.content[0].text.items[*].metadata.name" in inner.text
    assert "a string that holds JSON" in inner.text
    md = pad.call_tool("schema", {"handle": h, "path": "$.content[1].text"})
    assert md.ok and "# Incident  lines 1-" in md.text
    assert "(keys: version, total_groups)" in md.text and "(keys: start)" in md.text  # nested items are not keys
    part = pad.call_tool("schema", {"handle": h, "path": "content"})
    assert part.ok and "$.content[*].type" in part.text


def test_grep_by_path_searches_the_documents_own_lines(pad: Scratchpad) -> None:
    h = _spill(pad)
    hit = pad.call_tool("grep", {"handle": h, "pattern": '"pod-17"', "path": "content[0].text"})
    assert hit.ok and hit.data["total_matches"] == 1 and "pretty-printed" in hit.text
    keys = pad.call_tool("grep", {"handle": h, "pattern": "^- ", "path": "content[1].text"})
    assert keys.ok and keys.data["total_matches"] == 3 and [m["line"] for m in keys.data["matches"]] == [2, 3, 6]
    whole = pad.call_tool("grep", {"handle": h, "pattern": "Incident"})
    assert whole.ok and (
        f'note: $.content[1].text holds a markdown document; grep(handle="{h}", path="$.content[1].text", '
        'pattern="Incident") searches its own lines'
    ) in whole.text  # (the matched string, the pattern filled in)


def test_sql_reads_the_document_inside_a_string(pad: Scratchpad) -> None:
    h = _spill(pad)
    res = pad.call_tool(
        "sql",
        {"query": f"SELECT metadata.ns AS ns, count(*) AS n FROM {h}.content_0_text__items GROUP BY ALL ORDER BY ns"},
    )
    assert res.ok and res.data == [{"ns": "dev", "n": 134}, {"ns": "prod", "n": 266}]
    doc = pad.call_tool("sql", {"query": f"SELECT len(items) AS n FROM {h}.content_0_text"})
    assert doc.ok and doc.data == [{"n": 400}]
    names = [r["name"] for r in pad.scratch_list_relations()] if hasattr(pad, "scratch_list_relations") else None
    miss = pad.call_tool("sql", {"query": f"SELECT * FROM {h}.nope"})
    assert f"{h}.content_0_text__items" in miss.error["relations"], names


def test_markdown_detection_follows_aura() -> None:
    assert is_markdown("intro\n   ### Three spaces of indent\n")
    assert is_markdown("#\tTab after the hashes")
    assert not is_markdown("#!/bin/bash\n#include <x>\n#TODO later\n    # four spaces is code")
    assert not is_markdown("\n" * 50 + "# too late")


def test_small_strings_are_not_documents_and_the_walk_is_bounded() -> None:
    small = {"a": json.dumps({"x": 1}), "b": "# Title\nshort"}
    assert find_embedded(small) == []
    many = [json.dumps({"k": "v" * 3000}) for _ in range(50)]
    assert len(find_embedded(many)) == 20


def test_a_value_that_holds_itself_is_walked_once() -> None:
    # a list holding itself was walked round its cycle to the 1,000,000-node cap, checking the
    # same 80 KB string each time (a spill took 28 s); each string is now found once
    from jupyter_scratchpad.explore._embedded import find_embedded, is_markdown

    doc = "# Title\n" + "text line\n" * 10_000
    cyclic: list = [doc]
    cyclic.append(cyclic)
    found = find_embedded(cyclic)
    assert [(f["path"], f["format"]) for f in found] == [("$[0]", "markdown")]
    assert is_markdown("a\n" * 49 + "## late heading") and not is_markdown("a\n" * 50 + "## too late")
    assert not is_markdown("x" * 80_000) and is_markdown("   # three spaces") and not is_markdown("    # four")
