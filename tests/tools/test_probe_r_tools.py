"""Probe R: a timed-out grep's literal suggestion is text every match holds (not a repeat count or
an escape's letter) and keeps the call's ignore_case and path."""

from __future__ import annotations

import pytest

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.tools import _literal_part


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        (".{0,1000}INFO.{0,1000}ms", "INFO"),  # was "0,1000"
        (r"\bworker-\d+\b.{0,1000}took.{0,1000}ms", "worker-"),  # was "bworker-"
        (r"(?i)\bTimeoutException\b", "TimeoutException"),  # was "bTimeoutException"
        (r"\sERR\w*:.{0,999}", "ERR"),  # was "0,999"
        ("connection refused", "connection refused"),
        (r"a\.b\.c(longer)?e", "a.b.c"),  # an optional group is not in every match
        ("colou?r names", "r names"),
        ("req-[0-9]+ (failed|timed out) after", "after"),  # nor one side of an alternation
        ("foo|barbaz", None),
        ("x{1,3}ab", None),  # nothing of 3 characters
    ],
)
def test_the_literal_part_is_text_every_match_holds(pattern: str, literal: str | None) -> None:
    assert _literal_part(pattern) == literal


def test_a_timed_out_greps_suggestion_keeps_ignore_case_and_path_and_runs(store: ScratchStore) -> None:
    pad = store.scratchpad("run-1", "agent-1", tool_timeout_s=0.001)
    h = pad.spill({"items": [{"msg": f"line {i} worker-{i % 7} took {i} ms"} for i in range(40_000)]}, "big").handle
    assert h is not None
    res = pad.call_tool(
        "grep", {"handle": h, "pattern": r"(?i)\bWORKER-\d+\b.{0,1000}took.{0,1000}ms", "path": "items", "max_matches": 5}
    )
    assert not res.ok and res.error["error"] == "timeout"
    literal = res.error["suggestions"][0]
    assert literal["arguments"] == {"handle": h, "pattern": "WORKER\\-", "ignore_case": True, "path": "items",
                                    "max_matches": 20}  # fmt: skip
    pad.tool_timeout_s = 10.0
    ran = pad.call_tool(literal["tool"], literal["arguments"])
    assert ran.ok and "worker-" in ran.text, ran.text[:300]


def test_a_note_of_json_text_nested_past_pythons_recursion_limit_is_saved(store: ScratchStore) -> None:
    # json.dumps of the parsed text raised RecursionError: internal_error, no suggestion, a traceback logged
    pad = store.scratchpad("run-1", "agent-1")
    deep = "[" * 3000 + "]" * 3000
    res = pad.call_tool("scratch_write", {"key": "deep", "value": deep})
    assert res.ok, res.text
    read = pad.call_tool("scratch_read", {"key": "deep"})
    assert read.ok and read.text.startswith("[\n  [")
    lone = pad.call_tool("scratch_write", {"key": "lone", "value": '[[{"k\\udc00": 1}]]'})  # a key's surrogate too
    assert not lone.ok and lone.error["error"] == "invalid_argument" and "surrogate" in lone.error["message"]


@pytest.mark.parametrize("ttl", [1e-300, 0.0001, 0.5])
def test_a_note_that_would_expire_before_it_is_read_is_refused(store: ScratchStore, ttl: float) -> None:
    # it was confirmed "saved … expires <now>", and scratch_read then said there was no such note
    pad = store.scratchpad("run-1", "agent-1")
    res = pad.call_tool("scratch_write", {"key": "tiny", "value": "x", "ttl_s": ttl})
    assert not res.ok and res.error["error"] == "invalid_argument" and "'ttl_s' must be number >= 1" in res.error["message"]
    assert pad.call_tool("scratch_write", {"key": "tiny", "value": "x", "ttl_s": 1}).ok
    # the rule is in the schema the model reads (it said exclusiveMinimum 0, and 0.5 was refused)
    from jupyter_scratchpad.tools import input_schema

    assert input_schema("scratch_write")["properties"]["ttl_s"]["minimum"] == 1


def test_a_slow_patterns_first_page_comes_back_when_counting_the_rest_would_time_out(store: ScratchStore) -> None:
    # it counted every match past max_matches: 10 s, then a timeout with nothing shown, though
    # line 1 matched (an 85 MB log, a pattern RE2 runs slowly)
    pad = store.scratchpad("run-1", "agent-1", tool_timeout_s=2.0)
    log = "\n".join(f"2026-12-06T10:00:00Z INFO worker-{i % 9} handled request {i} in {i % 97} ms" for i in range(400_000))
    h = pad.spill(log, "log").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": ".{0,1000}INFO.{0,1000}ms", "max_matches": 5, "context": 0})
    assert res.ok, res.text[:300]
    assert res.data["total_complete"] is False and len(res.data["matches"]) == 5
    assert "counting stopped at half the call's time" in res.text


def test_an_export_that_cannot_be_written_names_the_file_asked_for(store: ScratchStore) -> None:
    # "[Errno 2] No such file or directory: '/proc/.nope.json.f954b6cff027'": its temporary file
    from pathlib import Path

    from jupyter_scratchpad._export import export
    from jupyter_scratchpad.errors import InvalidArgumentError

    pad = store.scratchpad("run-1", "agent-1")
    h = pad.spill({"items": [{"a": i} for i in range(3000)]}, "k").handle
    assert h is not None
    with pytest.raises(InvalidArgumentError, match=r"^cannot write /proc/nope\.json: ") as raised:
        export(pad, h, Path("/proc/nope.json"))
    assert ".nope.json." not in raised.value.message


def test_a_text_schemas_longest_line_of_bytes_that_are_not_utf8_says_it_is_as_shown(store: ScratchStore) -> None:
    # "bytes: 300,004" beside "longest line: 900,000 bytes": each bad byte is shown as U+FFFD
    pad = store.scratchpad("run-1", "agent-1")
    h = pad.intercept(b"\xff" * 300_000 + b"\nok\n", tool="k", force=True).handle
    text = pad.call_tool("schema", {"handle": h}).text
    assert "bytes: 300,004" in text and "longest line: 900,000 bytes as shown" in text, text


def test_a_shrunk_suggestion_says_the_number_it_has(store: ScratchStore) -> None:
    # "'max_rows' at its maximum" came with max_rows 1,250 (the maximum is 10,000): halved to fit, unsaid
    pad = store.scratchpad("run-1", "agent-1")
    wide = pad.spill([{f"c{j}": "x" * 20 for j in range(30)} for _ in range(3000)], tool="wide").handle
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {wide}", "max_rows": 10001})
    [fixed] = [s for s in res.error["suggestions"] if s["tool"] == "sql"]
    rows = fixed["arguments"]["max_rows"]
    assert rows < 10_000 and "at its maximum" not in fixed["why"] and f"'max_rows' {rows:,}, to fit" == fixed["why"]
    assert pad.call_tool("sql", fixed["arguments"]).ok
