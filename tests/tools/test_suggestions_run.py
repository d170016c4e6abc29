"""Every suggestion runs (issue 11 §3): executed as given, with the same budget, each is ok.

A property test: random bodies (JSON objects and arrays, text, markdown), random per-call caps,
every tool asked for too much; each refusal's suggestions are then executed and must succeed.
"""

from __future__ import annotations

import json
import re
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_scratchpad import ScratchStore

words = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=40)
records = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.integers(0, 10**6),
            "name": words,
            "tags": st.lists(words, max_size=4),
            "meta": st.fixed_dictionaries({"zone": words, "n": st.integers()}),
        }
    ),
    min_size=30,
    max_size=400,
)
bodies = st.one_of(
    records.map(lambda r: json.dumps({"kind": "List", "items": r})),
    records.map(json.dumps),
    st.lists(words, min_size=200, max_size=3000).map(lambda ls: "\n".join(f"{i} INFO {w}" for i, w in enumerate(ls))),
    st.lists(st.tuples(words, st.lists(words, min_size=5, max_size=40)), min_size=3, max_size=20).map(
        lambda secs: "\n".join(f"# {t}\n" + "\n".join(f"- {x}" for x in body) for t, body in secs)
    ),
)

CALLS = [
    ("read", {}),
    ("head", {"lines": 5000}),
    ("tail", {"lines": 5000}),
    ("slice", {"start": 1, "end": 5000}),
    ("grep", {"pattern": "a", "context": 5, "max_matches": 1000}),
    ("schema", {}),
    ("item_schema", {"path": "$.items"}),
    ("iterate_over", {"path": "$.items", "fields": "id,name,tags,meta", "limit": 400}),
    ("get_in", {"path": "$"}),
    ("read_handle", {"start": 0, "end": 400000}),
    ("sql", {"query": "SELECT * FROM {h}"}),
]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(body=bodies, cap=st.sampled_from([200, 400, 800, 1500]))
def test_every_suggestion_of_every_refusal_runs(tmp_path_factory, body: str, cap: int) -> None:  # type: ignore[no-untyped-def]
    with ScratchStore(tmp_path_factory.mktemp("s"), sweep_interval_s=None) as store:
        pad = store.scratchpad(f"r-{uuid.uuid4().hex}", "a", max_extraction_tokens=cap)
        h = pad.spill(body, tool="payload").handle
        for tool, extra in CALLS:
            args = {k: (v.format(h=h) if isinstance(v, str) else v) for k, v in extra.items()}
            if tool != "sql":
                args["handle"] = h
            res = pad.call_tool(tool, args)
            if res.ok or not res.error["error"].endswith("_too_large"):
                continue
            for s in res.error["suggestions"]:
                follow = pad.call_tool(s["tool"], s["arguments"])
                assert follow.ok, (tool, args, s["call"], follow.text[:400])


def test_no_suggestion_carries_a_placeholder_for_a_value(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # iterate_over without fields over items with no scalar keys suggested fields="…" (which ran,
    # and showed a column named "…"); grep with a path on a text handle suggested pattern="…"
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        nested = pad.intercept(json.dumps([[i, [i]] for i in range(3000)]), tool="nested").handle
        log = pad.intercept("\n".join(f"line {i} ERROR" for i in range(3000)), tool="log").handle
        long = pad.intercept(json.dumps({"k": "y" * 300_000}), tool="long").handle
        no_fields = pad.call_tool("iterate_over", {"handle": nested, "path": "$"})
        grep_path = pad.call_tool("grep", {"handle": log, "pattern": "ERROR", "path": "$.x"})
        for res in (no_fields, grep_path):
            assert not res.ok and res.error["suggestions"], res.text
            for s in res.error["suggestions"]:
                assert "…" not in json.dumps(s["arguments"], ensure_ascii=False), s
                assert pad.call_tool(s["tool"], s["arguments"], charge=False).ok, s
        assert grep_path.error["suggestions"][0]["arguments"]["pattern"] == "ERROR"
        # (get_in of the 300 KB string would be refused: its bytes, a window that fits, are offered)
        assert f'read_handle(handle="{long}", start=0, end=' in pad.call_tool("schema", {"handle": long}).text


def test_a_string_of_one_line_over_the_limit_has_a_way_in(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # get_in refused it, paging it by lines (one line) was too large too, and schema pointed back
    # at get_in: a dead end. Its bytes as stored are one read_handle away.
    text = "BEGIN " + " ".join(f"w{i}" for i in range(60_000))
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept(json.dumps({"k": text, "n": 1}), tool="long").handle
        res = pad.call_tool("get_in", {"handle": h, "path": "$.k"})
        assert res.error is not None and res.error["error"] == "get_in_too_large"
        way_in = [s for s in res.error["suggestions"] if s["tool"] == "read_handle"]
        assert way_in, res.error["suggestions"]
        read = pad.call_tool("read_handle", way_in[0]["arguments"])
        assert read.ok and "BEGIN w0 w1 w2" in read.text, read.text[:300]


def test_suggestions_carry_the_prefix_the_tools_were_published_with(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # with tool_specs(prefix="sp_") (or `mcp serve --prefix`), a refusal suggested scratch_list()
    # and head(...): names nobody offered, answered unknown_tool
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        log = pad.intercept("\n".join(f"line {i} ERROR " + "w " * 30 for i in range(20_000)), tool="log").handle
        names = {s["function"]["name"] for s in pad.tool_specs("openai", prefix="sp_")}
        for name, args in [("sp_scratch_read", {"key": "missing"}), ("sp_head", {"handle": log, "lines": 20_000})]:
            res = pad.call_tool(name, args, prefix="sp_")
            assert not res.ok and res.error["suggestions"], res.text
            for s in res.error["suggestions"]:
                assert s["tool"] in names and s["call"].startswith("sp_"), s
                again = pad.call_tool(s["tool"], s["arguments"], prefix="sp_")
                assert again.ok, (s["call"], again.text[:300])


def test_a_misspelt_tool_name_suggests_the_call_meant_with_its_arguments(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # "heads" suggested head(), read() and schema() with no arguments: each failed (needs 'handle')
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept("\n".join(f"l{i}" for i in range(50_000)), tool="t").handle
        res = pad.call_tool("heads", {"handle": h, "lines": 5})
        assert res.error is not None and res.error["error"] == "unknown_tool"
        calls = [s["call"] for s in res.error["suggestions"]]
        assert f'head(handle="{h}", lines=5)' in calls, calls
        for s in res.error["suggestions"]:  # read(handle) of 50,000 lines would be refused: not offered
            assert pad.call_tool(s["tool"], s["arguments"]).ok, s["call"]
        bare = pad.call_tool("heads", {})
        assert bare.error is not None and bare.error["suggestions"] == [] and "head" in bare.error["close_matches"]


def test_iterate_over_says_when_it_cannot_show_every_field(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # 60 fields asked for, 50 shown, and nothing said so
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept({"items": [{f"k{c}": c for c in range(60)} for _ in range(300)]}, tool="wide").handle
        fields = ",".join(f"k{c}" for c in range(60))
        res = pad.call_tool("iterate_over", {"handle": h, "path": "items", "fields": fields, "limit": 2})
        assert res.error is not None and "at most 50 fields" in res.error["message"] and "60" in res.error["message"]
        shown = set()
        for s in res.error["suggestions"]:
            again = pad.call_tool(s["tool"], s["arguments"])
            assert again.ok, s["call"]
            shown |= set(json.loads(again.text.split("\n")[0].removeprefix("columns: "))) - {"_index"}
        assert shown == {f"k{c}" for c in range(60)}


def test_a_shrunk_suggestion_says_its_own_number(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # "about 689 lines fit" beside head(lines=172); an iterate_over with limit=1e9 over 5,000 items
    # lost its window suggestion (halving from 1e9 ran out of checks)
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        log = pad.intercept("\n".join(f"line {i} ERROR {'z' * (i % 200)}" for i in range(20_000)), tool="logs").handle
        items = pad.intercept({"items": [{"name": f"pod-{i}", "labels": "x" * 40} for i in range(5_000)]}, tool="p")
        calls = [
            ("head", {"handle": log, "lines": 100_000}),
            ("iterate_over", {"handle": items.handle, "path": "items", "fields": "name,labels", "limit": 10**9}),
        ]
        for tool, args in calls:
            res = pad.call_tool(tool, args)
            assert res.error is not None, res.text[:200]
            sugg = res.error["suggestions"]
            for s in sugg:
                found = re.search(r"about ([\d,]+) (lines|items) fit", s["why"])
                if found:
                    n = int(found.group(1).replace(",", ""))
                    a = s["arguments"]
                    assert n == a.get("lines", a.get("limit", (a.get("end") or 0) - (a.get("start") or 0) + 1)), s
            if tool == "iterate_over":
                assert any(s["tool"] == "iterate_over" for s in sugg), sugg


def test_an_errors_suggestions_fit_what_is_left_once_it_is_charged() -> None:
    # near the end of the budget, a key_path_not_found's sql/grep suggestions were checked against
    # what was left before the error was charged, and refused when called as given
    doc = {"items": [{"id": i, "name": f"pod-{i}", "desc": "lorem ipsum dolor sit amet " * 20,
                     "status": {"phase": "Running" if i % 3 else "Failed"}} for i in range(5000)]}
    with ScratchStore() as store:
        pad = store.scratchpad(run_id="r", agent_id="a", context_window=200_000)
        handle = pad.intercept(json.dumps(doc), tool="k8s").handle
        offered = 0
        for used in range(pad.budget.usable - 2_000, pad.budget.usable - 500, 250):
            for name, args in (("sql", {"query": f"SELECT * FROM {handle}_items"}),
                               ("get_in", {"handle": handle, "path": "$.items[?(@.status.phase=='Failed')]"}),
                               ("get_in", {"handle": handle, "path": "$..name"})):
                pad.budget.reset(used)
                refused = pad.call_tool(name, args)
                assert refused.error is not None
                after = pad.budget.used
                for s in refused.error["suggestions"]:
                    pad.budget.reset(after)
                    ran = pad.call_tool(s["tool"], s["arguments"])
                    assert ran.ok, (used, name, s, ran.error)
                    offered += 1
        assert offered > 10


def test_an_argument_out_of_range_is_offered_the_call_that_runs(pad) -> None:  # type: ignore[no-untyped-def]
    # head(lines=0), grep(context=-1), slice(start=0): "must be integer >= 1" and no suggestion
    h = pad.intercept("\n".join(f"line {i} ERROR" for i in range(3000)), tool="log").handle
    for tool, args in [
        ("head", {"lines": 0}),
        ("tail", {"lines": -3}),
        ("grep", {"pattern": "ERROR", "context": -1}),
        ("slice", {"start": 0, "end": 5}),
    ]:
        res = pad.call_tool(tool, {"handle": h, **args})
        assert res.error["error"] == "invalid_argument" and res.error["suggestions"], (tool, res.text)
        for s in res.error["suggestions"]:
            assert pad.call_tool(s["tool"], s["arguments"]).ok, s
