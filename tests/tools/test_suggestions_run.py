"""Every suggestion runs (issue 11 §3): executed as given, with the same budget, each is ok.

A property test: random bodies (JSON objects and arrays, text, markdown), random per-call caps,
every tool asked for too much; each refusal's suggestions are then executed and must succeed.
"""

from __future__ import annotations

import json
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
        assert f'get_in(handle="{long}", path="$.k")' in pad.call_tool("schema", {"handle": long}).text


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
