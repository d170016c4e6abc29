"""Probe E's findings on the agent tool surface, each held here: the calls a result names run as
they are, a note means the same in every flavor, a mistaken argument is offered the call meant,
the budget's last tokens go to an answer rather than to a longer refusal, and no error speaks
Python."""

from __future__ import annotations

import json
import random
import re
import types
from typing import Any

import jsonschema
import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.explore._base import ToolTimeout
from jupyter_scratchpad.tools import TOOLS, _timeout_error, input_schema, tool_specs

_VALUE = r'"(?:\\.|[^"\\])*"|-?\d+|true|false'
_CALL = re.compile(rf"\b([a-z_]+)\(((?:[a-z_]+=(?:{_VALUE})(?:, )?)+)\)")
_ARG = re.compile(rf"([a-z_]+)=({_VALUE})")


def _next_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    line = next(ln for ln in text.splitlines() if ln.startswith("next: "))
    return [(m.group(1), {k: json.loads(v) for k, v in _ARG.findall(m.group(2))}) for m in _CALL.finditer(line)]


def _runs_within_the_cap(pad: Scratchpad, tool: str, args: dict[str, Any]) -> None:
    res = pad.call_tool(tool, args)
    assert res.ok, (tool, args, res.text[:300])
    assert res.tokens <= pad.budget.max_extraction_tokens


# -- 1. schema's next: grep fits the per-call limit -------------------------------------------------


def _long_line_log(n: int = 3000) -> str:
    rnd = random.Random(0)
    return "\n".join(
        f"2024-05-01T12:00:{i % 60:02d}Z {'ERROR' if i % 5 == 0 else 'INFO'} c.e.Svc - request {i} "
        + " ".join(f"k{j}={rnd.getrandbits(40):x}" for j in range(40))
        for i in range(n)
    )


def _jsonl(n: int = 4000) -> str:
    return "\n".join(
        json.dumps({"i": i, "msg": "中文日志" * 5, "lvl": "ERROR" if i % 7 == 0 else "INFO"}) for i in range(n)
    )


@pytest.mark.parametrize("make", [_long_line_log, _jsonl])
def test_schemas_next_grep_runs_as_it_is_within_the_per_call_limit(pad: Scratchpad, make: Any) -> None:
    # 20 matches with 3 lines of context each over 400-byte lines: 37,000 tokens, refused
    handle = pad.intercept(make(), tool="logs").handle
    text = pad.call_tool("schema", {"handle": handle}).text
    calls = _next_calls(text)
    assert any(tool == "grep" for tool, _ in calls), text
    for tool, args in calls:
        _runs_within_the_cap(pad, tool, args)


def test_schemas_next_grep_keeps_its_context_where_it_fits(pad: Scratchpad) -> None:
    handle = pad.intercept("\n".join(f"l{i} ERROR" for i in range(3000)), tool="logs").handle
    grep = dict(_next_calls(pad.call_tool("schema", {"handle": handle}).text))["grep"]
    assert grep["max_matches"] == 20 and "context" not in grep  # the default, 3
    _runs_within_the_cap(pad, "grep", grep)


# -- 2. a note's JSON text is the object it holds, in every flavor -------------------------------


def test_a_note_sent_as_json_text_is_stored_as_the_object_in_every_flavor(pad: Scratchpad) -> None:
    counts = {"Running": 10, "Failed": 2}
    # what a strict OpenAI model sends (its spec asks for the JSON text), and an Anthropic one
    strict = pad.call_tool("scratch_write", json.dumps({"key": "strict", "value": json.dumps(counts), "ttl_s": None}))
    assert strict.ok and "object" in strict.text, strict.text
    assert pad.call_tool("scratch_write", {"key": "anthropic", "value": counts}).ok
    assert pad.call_tool("scratch_write", {"key": "list", "value": ' [1, {"a": 2}] '}).ok
    assert pad.call_tool("scratch_write", {"key": "text", "value": "{not json}"}).ok
    rows = pad.call_tool(
        "sql", {"query": "SELECT key, value.Running AS r, json_type(value) AS t FROM scratch_notes ORDER BY key"}
    ).data
    by_key = {row["key"]: row for row in rows}
    assert by_key["strict"]["r"] == by_key["anthropic"]["r"] and int(by_key["strict"]["r"]) == 10  # (was: NULL)
    assert by_key["strict"]["t"] == by_key["anthropic"]["t"] == "OBJECT"
    assert by_key["list"]["t"] == "ARRAY"
    assert pad.call_tool("scratch_read", {"key": "strict"}).data == counts
    assert pad.call_tool("scratch_read", {"key": "list"}).data == [1, {"a": 2}]
    assert pad.call_tool("scratch_read", {"key": "text"}).data == "{not json}"  # not JSON: the string


def test_a_notes_json_text_holding_a_lone_surrogate_is_refused_as_the_object_is(pad: Scratchpad) -> None:
    res = pad.call_tool("scratch_write", {"key": "k", "value": '{"a": "\\ud800"}'})
    assert res.error is not None and res.error["error"] == "invalid_argument" and "surrogate" in res.text


def test_every_flavor_says_how_a_notes_json_text_is_stored() -> None:
    canonical = input_schema("scratch_write")["properties"]["value"]["description"]
    strict = next(s for s in tool_specs("openai") if s["function"]["name"] == "scratch_write")
    words = strict["function"]["parameters"]["properties"]["value"]["description"]
    for said in (canonical, words):
        assert "JSON text of an object or array is stored as that" in said


# -- 3. an optional number is offered as the integer meant, or at its bound -----------------------


@pytest.fixture
def handles(pad: Scratchpad) -> dict[str, str]:
    items = {"items": [{"metadata": {"name": f"pod-{i}"}} for i in range(300)]}
    log = "\n".join(f"2024-05-01 line {i} {'ERROR' if i % 10 == 0 else 'INFO'} took {i % 999}ms" for i in range(3000))
    return {
        "json": pad.spill(items, tool="k8s").handle,  # type: ignore[dict-item]
        "log": pad.spill(log, tool="logs").handle,  # type: ignore[dict-item]
    }


@pytest.mark.parametrize(
    ("tool", "args", "fixed"),
    [
        ("iterate_over", {"path": "items", "fields": "metadata.name", "offset": "2e2", "limit": 2}, {"offset": 200}),
        ("head", {"lines": 2.5}, {"lines": 2}),
        ("read_handle", {"start": 10.5, "end": 40}, {"start": 10, "end": 40}),
        ("grep", {"pattern": "ERROR", "max_matches": 2000, "context": 0}, {"max_matches": 1000}),
        ("sql", {"query": "SELECT 1", "max_rows": 20000}, {"max_rows": 10000}),
        ("tail", {"lines": -3}, {"lines": 3}),
    ],
)
def test_an_optional_number_is_offered_as_the_integer_meant_or_at_its_bound(
    pad: Scratchpad, handles: dict[str, str], tool: str, args: dict[str, Any], fixed: dict[str, Any]
) -> None:
    if tool != "sql":
        args = {"handle": handles["json" if tool == "iterate_over" else "log"], **args}
    res = pad.call_tool(tool, args)
    assert res.error is not None and res.error["error"] == "invalid_argument", res.text
    sugg = res.error["suggestions"]
    assert sugg and sugg[0]["tool"] == tool, res.text
    assert sugg[0]["arguments"] == {**args, **fixed}, sugg[0]
    _runs_within_the_cap(pad, tool, sugg[0]["arguments"])


# -- 4. a fixed call that does not fit is shrunk; every bad argument is fixed ------------------------


@pytest.mark.parametrize(
    ("args", "fixed"),
    [
        ({"pattern": "ERROR", "context": 51}, {"context": 50}),
        ({"pattern": "ERROR", "ignore_case": "maybe"}, {}),
        ({"pattern": "ERROR", "max_matches": 0}, {"max_matches": 1}),
    ],
)
def test_a_fixed_grep_that_does_not_fit_is_shrunk_not_dropped(
    pad: Scratchpad, args: dict[str, Any], fixed: dict[str, Any]
) -> None:
    rnd = random.Random(1)
    log = "\n".join(
        f"2024-05-01T12:00:00Z {'ERROR' if i % 3 == 0 else 'INFO'} request {i} "
        + " ".join(f"{rnd.getrandbits(32):x}" for _ in range(12))
        for i in range(4000)
    )
    handle = pad.intercept(log, tool="logs").handle
    # (the call with the bad argument left to its default, 100 matches with 3 lines around each, is over the limit)
    assert pad.call_tool("grep", {"handle": handle, "pattern": "ERROR"}, charge=False).tokens == 0
    assert not pad.call_tool("grep", {"handle": handle, "pattern": "ERROR"}).ok
    res = pad.call_tool("grep", {"handle": handle, **args})
    assert res.error is not None and res.error["error"] == "invalid_argument"
    greps = [s for s in res.error["suggestions"] if s["tool"] == "grep"]
    assert greps, res.text  # (was: schema(max_depth=1) and head(lines=5), nothing to do with it)
    for key, value in fixed.items():
        assert greps[0]["arguments"][key] == value, greps[0]
    assert "ignore_case" not in greps[0]["arguments"] or isinstance(greps[0]["arguments"]["ignore_case"], bool)
    _runs_within_the_cap(pad, "grep", greps[0]["arguments"])


@pytest.mark.parametrize(
    ("args", "call"),
    [
        ({"start": -10, "end": -1}, ("tail", {"lines": 10})),
        ({"start": 1.5, "end": "1e1"}, ("slice", {"start": 1, "end": 10})),
        ({"start": True, "end": 3}, ("slice", {"start": 1, "end": 3})),
    ],
)
def test_every_bad_argument_of_a_slice_is_fixed(
    pad: Scratchpad, handles: dict[str, str], args: dict[str, Any], call: tuple[str, dict[str, Any]]
) -> None:
    handle = handles["log"]
    res = pad.call_tool("slice", {"handle": handle, **args})
    assert res.error is not None and res.error["suggestions"], res.text
    first = res.error["suggestions"][0]
    assert (first["tool"], first["arguments"]) == (call[0], {"handle": handle, **call[1]}), first
    _runs_within_the_cap(pad, first["tool"], first["arguments"])


# -- 5. with the budget spent, an answer no longer than the refusal is the answer -------------------


def test_with_the_budget_spent_a_short_answer_is_returned_and_charged_exactly() -> None:
    with ScratchStore() as store:
        pad = store.scratchpad(run_id="r", agent_id="a", context_window=6000)
        handle = pad.intercept("\n".join(f"line {i} ERROR" for i in range(3000)), tool="logs").handle
        assert pad.call_tool("scratch_write", {"key": "final", "value": "answer is 42"}).ok
        pad.budget.reset(pad.budget.usable)  # spent
        before = pad.budget.used
        res = pad.call_tool("scratch_read", {"key": "final"})
        assert res.ok and res.text == "answer is 42", res.text  # (was: refused, 87 tokens for a 4-token answer)
        assert pad.budget.used - before == res.tokens == pad.tokenizer.count(res.text)
        # a small line read: the footer included, exactly what was shown is charged
        before = pad.budget.used
        one = pad.call_tool("slice", {"handle": handle, "start": 1, "end": 1})
        assert one.ok and pad.budget.used - before == one.tokens == pad.tokenizer.count(one.text)
        # an answer longer than the refusal is still refused, and the refusal charged as it reads
        before = pad.budget.used
        big = pad.call_tool("head", {"handle": handle, "lines": 40})
        assert big.error is not None and big.error["error"] == "budget_exhausted", big.text
        assert pad.budget.used - before == big.tokens == pad.tokenizer.count(big.text)
        assert big.tokens < pad.tokenizer.count(
            pad.call_tool("head", {"handle": handle, "lines": 40}, charge=False).text
        )


# -- 6. read_handle's match: grep's bound, and an echo clipped --------------------------------------


def test_read_handles_match_has_greps_bound_and_its_echo_is_clipped(pad: Scratchpad, handles: dict[str, str]) -> None:
    handle = handles["log"]
    for needle in ("a" * 5000, "a" * 1_000_000):
        res = pad.call_tool("read_handle", {"handle": handle, "match": needle})
        grep = pad.call_tool("grep", {"handle": handle, "pattern": needle})
        assert res.error is not None and res.error["error"] == "invalid_argument", res.text[:300]
        assert res.error["message"] == grep.error["message"].replace("'pattern'", "'match'")  # type: ignore[index]
        assert res.tokens < 100
    needle = "q" * 1000  # within the bound, not in the body
    res = pad.call_tool("read_handle", {"handle": handle, "match": needle})
    assert res.ok and "No occurrence" in res.text and needle not in res.text and "1,000 characters" in res.text
    assert res.tokens < 120


# -- 7. a timeout's EXPLAIN says it may take long too -------------------------------------------------


def test_a_timeouts_explain_suggestion_says_it_may_take_long_too() -> None:
    err = _timeout_error(TOOLS["sql"], {"query": "SELECT list(range(0, 10000000))"}, ToolTimeout(3.0))
    (explain,) = [s for s in err["suggestions"] if s["arguments"]["query"].startswith("EXPLAIN ")]
    assert "may take long too" in explain["why"], explain


# -- 8. the limits the dispatcher enforces are in the specs ----------------------------------------------


def _strict_props(name: str) -> dict[str, Any]:
    spec = next(s for s in tool_specs("openai") if s["function"]["name"] == name)
    return spec["function"]["parameters"]["properties"]  # type: ignore[no-any-return]


def test_strict_specs_say_a_length_limit_in_words_once() -> None:
    key = _strict_props("scratch_write")["key"]["description"]
    assert "at most 1,024 characters" in key.lower() and key.lower().count("non-empty") == 1, key
    assert "at most 1,024 characters" in _strict_props("scratch_read")["key"]["description"].lower()
    for name, prop in (("sql", "query"), ("grep", "pattern"), ("read_handle", "match")):
        assert input_schema(name)["properties"][prop]["minLength"] == 1
        said = _strict_props(name)[prop]
        assert "minLength" not in said and "maxLength" not in said
        assert "non-empty" in said["description"].lower(), said
    assert "20,000 characters" in input_schema("sql")["properties"]["query"]["description"]
    assert "20,000 characters" in _strict_props("sql")["query"]["description"]


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("scratch_write", {"key": "k" * 2000, "value": 1}),
        ("sql", {"query": "SELECT '" + "x" * 25000 + "'"}),
        ("sql", {"query": ""}),
        ("grep", {"pattern": ""}),
        ("read_handle", {"match": ""}),
    ],
)
def test_what_the_dispatcher_refuses_the_published_schema_refuses(
    pad: Scratchpad, handles: dict[str, str], tool: str, args: dict[str, Any]
) -> None:
    if tool in ("grep", "read_handle"):
        args = {"handle": handles["log"], **args}
    assert not jsonschema.Draft202012Validator(input_schema(tool)).is_valid(args)
    res = pad.call_tool(tool, args)
    assert res.error is not None and res.error["error"] == "invalid_argument", res.text[:200]


# -- 9. argument errors never speak Python ----------------------------------------------------------------


def test_arguments_errors_speak_json_not_python(pad: Scratchpad, handles: dict[str, str]) -> None:
    handle = handles["log"]
    huge = pad.call_tool("head", '{"handle": ' + json.dumps(handle) + ', "lines": ' + "9" * 5000 + "}")
    assert huge.error is not None and "sys." not in huge.text and "4,300 digits" in huge.text, huge.text
    assert pad.call_tool("head", "null").text == pad.call_tool("head", {}).text  # JSON null: no arguments
    assert "NoneType" not in pad.call_tool("head", "null").text
    proxied = pad.call_tool("head", types.MappingProxyType({"handle": handle, "lines": 2}))
    assert proxied.ok, proxied.text
    listed = pad.call_tool("head", "[1, 2]")
    assert listed.error is not None and "got an array" in listed.error["message"], listed.text
    assert "list" not in listed.error["message"]
