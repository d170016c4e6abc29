"""The calls a successful result offers run too, not only a refusal's suggestions.

schema's ``next:``, iterate_over's ``[… get_in(…)]`` cut marks, the markdown outline's "more
headings" line and item_schema's key names (as iterate_over fields) are read by a model and called
as written: each is parsed here the way a model would read it and executed with the same budget.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore

# tool(handle="h", path="$.a[\"b.c\"]", limit=20): each value as JSON (call_repr writes them so)
_VALUE = r'"(?:\\.|[^"\\])*"|-?\d+|true|false'
_CALL = re.compile(rf"\b([a-z_]+)\(((?:[a-z_]+=(?:{_VALUE})(?:, )?)+)\)")
_ARG = re.compile(rf"([a-z_]+)=({_VALUE})")


def calls_in(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Every complete call written in ``text`` (one with a placeholder, ``fields="…"``, is a
    template the model fills in: left out)."""
    out = []
    for m in _CALL.finditer(text):
        args = {k: json.loads(v) for k, v in _ARG.findall(m.group(2))}
        if any(isinstance(v, str) and "…" in v for v in args.values()):
            continue
        out.append((m.group(1), args))
    return out


def pods(n: int = 4000) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": "1"},
        "items": [
            {
                "metadata": {
                    "name": f"pod-{i}",
                    "labels": {"app.kubernetes.io/name": f"svc-{i % 7}", "tier": "web"},
                },
                "spec": {"args": [f"--flag-{j}=on" for j in range(60)]},
                "status": {"phase": "Running", "message": "\n".join(f"event {j} of pod {i}" for j in range(9))},
            }
            for i in range(n)
        ],
    }


def orders(n: int = 6000) -> dict[str, Any]:
    notes = [" ".join(f"w{j}" for j in range(k, 40)) for k in range(7)]
    rows = [{"id": i, "status": ["paid", "shipped"][i % 2], "notes": notes[i % 7]} for i in range(n)]
    return {"data": {"orders": rows, "page": {"n": 1}}, "meta": {"request_id": "r"}}


@pytest.fixture
def big(pad: Scratchpad) -> dict[str, str]:
    return {
        "pods": pad.intercept(pods(), tool="k8s").handle,  # type: ignore[dict-item]
        "orders": pad.intercept(orders(), tool="api").handle,  # type: ignore[dict-item]
    }


@pytest.mark.parametrize("which", ["pods", "orders"])
@pytest.mark.parametrize("depth", [0, 1, 2, 3, 4])
def test_every_next_step_of_schema_runs(pad: Scratchpad, big: dict[str, str], which: str, depth: int) -> None:
    # schema(max_depth=0) of a 5 MB PodList offered get_in(path="$"): refused, ~2.4M tokens
    res = pad.call_tool("schema", {"handle": big[which], "max_depth": depth})
    nxt = next(line for line in res.text.splitlines() if line.startswith("next:"))
    calls = calls_in(nxt)
    assert calls, nxt
    for tool, args in calls:
        follow = pad.call_tool(tool, args)
        assert follow.ok, (depth, tool, args, follow.text[:300])


def test_a_schema_cut_by_depth_points_deeper_not_at_the_whole_node(pad: Scratchpad, big: dict[str, str]) -> None:
    shallow = pad.call_tool("schema", {"handle": big["orders"], "max_depth": 1})
    [(tool, args)] = calls_in(next(ln for ln in shallow.text.splitlines() if ln.startswith("next:")))
    assert (tool, args) == ("schema", {"handle": big["orders"], "path": "$.data", "max_depth": 4})
    deeper = pad.call_tool(tool, args)
    assert "$.data.orders" in deeper.text and "array(6000 items)" in deeper.text


def test_item_schema_names_every_key_as_a_field_iterate_over_reads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # item_schema wrote a label key with dots as metadata.labels.app.kubernetes.io/name: as an
    # iterate_over field it was null for every item
    items = [
        {
            "a.b": i,
            "first name": "n",
            "a,b": "comma",
            "12": "digits",
            "q\"uote": "q",
            "m": {"app.kubernetes.io/name": f"svc-{i}", "k": {"x y": 1}},
        }
        for i in range(3000)
    ]
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept(json.dumps(items), tool="t").handle
        keys = [k["key"] for k in pad.call_tool("item_schema", {"handle": h}).data["keys"]]
        assert 'm["app.kubernetes.io/name"]' in keys and '$["a.b"]' in keys and "m.k" in keys
        for key in keys:
            row = pad.call_tool("iterate_over", {"handle": h, "fields": key, "offset": 5, "limit": 1})
            assert row.ok and row.data[0][key] is not None, (key, row.text)
            assert "no item here has" not in row.text, key
        both = pad.call_tool("iterate_over", {"handle": h, "fields": '$["a,b"], m["app.kubernetes.io/name"]', "limit": 1})
        assert both.data == [{"_index": 0, '$["a,b"]': "comma", 'm["app.kubernetes.io/name"]': "svc-0"}]


def test_iterate_over_cut_marks_are_calls_that_run(pad: Scratchpad, big: dict[str, str]) -> None:
    # fields="*" ended each row with get_in(path="$.items[0].*") (key_path_not_found), and no
    # cut mark named the handle
    h = big["pods"]
    for fields in ("*", "status.message", "metadata.*", 'metadata.labels["app.kubernetes.io/name"],spec'):
        res = pad.call_tool("iterate_over", {"handle": h, "path": "$.items", "fields": fields, "limit": 2})
        cells = [v for row in res.data for v in row.values() if isinstance(v, str) and "… [" in v]
        if fields != "metadata.*":
            assert cells, (fields, res.text[:300])
        for cell in cells:
            [(tool, args)] = calls_in(cell[cell.index("… [") :])
            assert args["handle"] == h
            follow = pad.call_tool(tool, args)
            assert follow.ok, (fields, args, follow.text[:300])
    message = pad.call_tool("iterate_over", {"handle": h, "path": "$.items", "fields": "status.message", "limit": 1})
    [(_, args)] = calls_in(message.data[0]["status.message"])
    rest = pad.call_tool("get_in", args)
    assert rest.data["lines"] == [f"event {j} of pod 0" for j in range(5, 9)]  # on from the cut


def test_markdown_schema_keeps_to_max_depth_and_its_more_line_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    doc = "".join(f"# S{s}\n\n## A{s}\n\ntext\n\n### B{s}\n\n- k: v\n\n" for s in range(300))
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a", context_window=1_000_000)
        h = pad.intercept(doc, tool="doc").handle
        top = pad.call_tool("schema", {"handle": h, "max_depth": 1})
        assert len(top.data["headings"]) == 300 and "## A0" not in top.text
        assert "600 headings deeper than level 1" in top.text
        two = pad.call_tool("schema", {"handle": h, "max_depth": 2})
        assert "## A0" in two.text and "### B0" not in two.text
        full = pad.call_tool("schema", {"handle": h})  # 900 headings: more than one call shows
        more = next(line for line in full.text.splitlines() if "more headings" in line)
        [(tool, args)] = calls_in(more)
        follow = pad.call_tool(tool, args)
        assert follow.ok and "more headings" not in follow.text and "# S299" in follow.text


def test_a_sql_refusal_fits_the_rows_the_result_holds(pad: Scratchpad, big: dict[str, str]) -> None:
    # "about 15 rows fit" for a 1,000-row result: the estimate assumed the default 200 rows
    q = f"SELECT * FROM {big['orders']}.data__orders"
    res = pad.call_tool("sql", {"query": q, "max_rows": 5000})
    assert res.error["error"] == "sql_too_large"
    first = res.error["suggestions"][0]
    fit = int(first["arguments"]["query"].rsplit("LIMIT", 1)[1])
    per_row = res.error["estimated_tokens"] / 5000
    assert fit >= 0.5 * res.error["per_call_limit"] / per_row, (fit, per_row)
    assert pad.call_tool("sql", first["arguments"]).ok


@pytest.mark.parametrize("tail", [" -- every order", "; -- every order\n", " /* all */ ;", ";"])
def test_a_sql_refusal_of_a_query_that_ends_in_a_comment_has_suggestions_that_run(
    pad: Scratchpad, big: dict[str, str], tail: str
) -> None:
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {big['orders']}.data__orders{tail}"})
    assert res.error["error"] == "sql_too_large" and res.error["suggestions"]
    for s in res.error["suggestions"]:
        assert pad.call_tool(s["tool"], s["arguments"]).ok, s["call"]


def test_sql_errors_name_the_relations_once(pad: Scratchpad, big: dict[str, str]) -> None:
    typo = pad.call_tool("sql", {"query": f"SELECT statuz FROM {big['orders']}.data__orders"})
    assert "Candidate bindings" in typo.error["message"] and "relations" not in typo.error  # DuckDB names them
    missing = pad.call_tool("sql", {"query": "SELECT * FROM nope"})
    assert "(relations:" not in missing.error["message"] and f"{big['orders']}.data__orders" in missing.error["relations"]
    assert missing.text.count(f"{big['orders']}.data__orders") == 1


def test_a_read_refusal_never_offers_the_same_lines_twice(pad: Scratchpad, big: dict[str, str]) -> None:
    res = pad.call_tool("read", {"handle": big["pods"]})
    reads = [s for s in res.error["suggestions"] if s["tool"] in ("head", "slice")]
    assert [s["tool"] for s in reads] == ["head"]  # slice(start=1, end=N) is the same call


def test_a_schema_refused_at_a_small_cap_still_offers_a_way_in(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # JSONL events at a 300-token cap: schema refused with no suggestion at all (a shallower
    # schema and its sample lines did not fit either); the records' keys do
    events = "\n".join(
        json.dumps({"ts": i, "type": "click", "user": {"id": i, "k.v": i}, "props": {"x": i}, "list": [0, 1, 2]})
        for i in range(3000)
    )
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a", max_extraction_tokens=300)
        h = pad.intercept(events, tool="ev").handle
        res = pad.call_tool("schema", {"handle": h})
        assert not res.ok and res.error["suggestions"], res.text
        assert all(pad.call_tool(s["tool"], s["arguments"]).ok for s in res.error["suggestions"])


def test_keys_written_as_they_are_are_found_and_read_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # "a.b" and "a,b" typed as they are got only item_schema; a key with a newline, written as
    # schema writes it ($.rows[*]["new\nline"]), read as "newnline"; ['a,b'] was split at its comma
    items = [{"id": i, "a.b": i, "a,b": i, "new\nline": i, "n": {"a,b": {"c": i}}} for i in range(3000)]
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept(json.dumps(items), tool="t").handle
        for typed, meant in (("a.b", '$["a.b"]'), ("a,b", '$["a,b"]'), ('"a,b"', '$["a,b"]')):
            err = pad.call_tool("iterate_over", {"handle": h, "fields": typed, "limit": 2}).error
            assert err["error"] == "field_not_found" and err["suggestions"][0]["arguments"]["fields"] == meant
            assert pad.call_tool("iterate_over", err["suggestions"][0]["arguments"]).data[1][meant] == 1
        schema = pad.call_tool("schema", {"handle": h}).text
        assert '$[*]["new\\nline"]' in schema
        assert pad.call_tool("get_in", {"handle": h, "path": '$[7]["new\\nline"]'}).data == 7
        assert pad.call_tool("get_in", {"handle": h, "path": '$[7]["new\\u000aline"]'}).data == 7
        keys = pad.call_tool("item_schema", {"handle": h}).data["keys"]
        assert '$["new\\nline"]' in [k["key"] for k in keys]  # one line of its table, read back as it is
        rows = pad.call_tool("iterate_over", {"handle": h, "fields": "['a,b'],id", "limit": 1})
        assert rows.data == [{"_index": 0, "['a,b']": 0, "id": 0}]


def test_a_tail_refusal_offers_one_way_to_the_same_lines(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a", max_extraction_tokens=1000)
        h = pad.intercept("\n".join(f"2024-05-01 INFO request {i} served in {i % 97} ms" for i in range(20_000)),
                          tool="log").handle  # fmt: skip
        res = pad.call_tool("tail", {"handle": h, "lines": 5000})
        reads = [s["tool"] for s in res.error["suggestions"] if s["tool"] in ("tail", "slice", "head")]
        assert reads == ["tail"]  # (tail and a slice of the same last lines were two ways to one read)


@pytest.mark.parametrize("cap", [300, 1000, 10_000])
def test_a_text_schemas_head_hint_fits_the_cap(tmp_path, cap: int) -> None:  # type: ignore[no-untyped-def]
    # next: head(lines=50) whatever the limit: at 1,000 tokens, a log of long lines refused it
    log = "\n".join(f"2024-05-01T12:00:00.{i % 1000:03d}Z INFO [svc-{i % 9}] req_id={i:09d} "
                    f"path=/api/v1/orders/{i} took {i % 997}ms" for i in range(20_000))  # fmt: skip
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a", max_extraction_tokens=cap)
        h = pad.intercept(log, tool="log").handle
        nxt = next(line for line in pad.call_tool("schema", {"handle": h}).text.splitlines() if line.startswith("next:"))
        [(tool, args)] = [c for c in calls_in(nxt) if c[0] == "head"]
        assert pad.call_tool(tool, args).ok, (cap, args)


def test_a_long_outline_refused_at_a_small_cap_offers_its_headings_by_grep(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # 2,000 headings at a 300-token cap: even max_depth=1 refused, offered only head(lines=5)
    doc = "".join(f"# Section {s}\n\n## Part {s}\n\ntext\n\n" for s in range(2000))
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a", max_extraction_tokens=300)
        h = pad.intercept(doc, tool="doc").handle
        res = pad.call_tool("schema", {"handle": h, "max_depth": 1})
        [grep] = [s for s in res.error["suggestions"] if s["tool"] == "grep"]
        found = pad.call_tool("grep", grep["arguments"])
        assert found.ok and found.data["matches"][0]["text"] == "# Section 0"


@pytest.mark.parametrize(
    "output",
    [
        "x y z " * 500_000,  # one 3 MB line: head(lines=1) was offered, then refused
        json.dumps({f"key{i}": i for i in range(60_000)}),  # get_in(path="$") offered, refused
        json.dumps({"k": "word " * 400_000}),  # get_in(path="$.k") of a 2 MB string, refused
        # a token a byte: "2 bytes a token, at worst" offered a window, then refused it
        json.dumps({"s": "".join(chr(0x13000 + (i * 7919) % 1070) for i in range(300_000))}, ensure_ascii=False),
    ],
    ids=["one-long-line", "map-of-60k-keys", "one-huge-string", "hieroglyphs"],
)
def test_schema_of_what_no_line_or_node_read_fits_offers_a_byte_window_that_runs(pad: Scratchpad, output: str) -> None:
    handle = pad.intercept(output, tool="t").handle
    res = pad.call_tool("schema", {"handle": handle})
    nxt = next(line for line in res.text.splitlines() if line.startswith("next:"))
    calls = calls_in(nxt)
    assert [tool for tool, _ in calls] == ["read_handle"], nxt
    for tool, args in calls:
        follow = pad.call_tool(tool, args)
        assert follow.ok, (tool, args, follow.text[:300])


def test_a_line_over_the_limit_is_offered_its_bytes(pad: Scratchpad) -> None:
    # head/tail/slice of one 3 MB line offered grep "error" and schema only: the model looped
    lines = ["short first", "y " * 1_500_000, "z " * 1_500_000]
    handle = pad.intercept("\n".join(lines), tool="t").handle
    first_long = pad.intercept("\n".join(lines[1:]), tool="u").handle
    for h, tool, args, start in [
        (handle, "slice", {"start": 2, "end": 2}, len(lines[0]) + 1),
        (handle, "tail", {"lines": 1}, len(lines[0]) + len(lines[1]) + 2),
        (first_long, "head", {"lines": 1}, 0),
    ]:
        res = pad.call_tool(tool, {"handle": h, **args})
        first = res.error["suggestions"][0]
        assert first["tool"] == "read_handle" and first["arguments"]["start"] == start, (tool, first)
        window = pad.call_tool("read_handle", first["arguments"])
        assert window.ok and window.data["text"].startswith(lines[1 if tool != "tail" else 2][:100]), window.text[:200]


def test_a_refusal_whose_suggestions_all_name_a_huge_key_still_offers_one_that_runs(pad: Scratchpad) -> None:
    # get_in("$") of {"K"*500000: 1}: the suggestions' own cost (the key, repeated) was charged
    # against the budget, and the model was told the budget was spent ("budget_exhausted")
    handle = pad.intercept(json.dumps({"K" * 500_000: 1, "b": list(range(3000))}), tool="t").handle
    for tool, args in [("get_in", {"path": "$"}), ("schema", {})]:
        res = pad.call_tool(tool, {"handle": handle, **args})
        assert res.error["error"] == f"{tool}_too_large", res.text[:300]
        short = [s for s in res.error["suggestions"] if len(json.dumps(s)) < 700]
        assert short and all(pad.call_tool(s["tool"], s["arguments"]).ok for s in short), res.text[:600]
