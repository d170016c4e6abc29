"""Probe Y: a model's words for our arguments (another tool's, or its own habit) are answered with
the same call in ours, and every such suggestion runs."""

from __future__ import annotations

import pytest

from jupyter_scratchpad import Scratchpad


@pytest.mark.parametrize(
    ("tool", "given", "expected"),
    [
        ("slice", {"start_line": 3, "end_line": 5}, {"start": 3, "end": 5}),
        ("slice", {"from": 3, "to": 5}, {"start": 3, "end": 5}),
        ("head", {"count": 3}, {"lines": 3}),
        ("head", {"num_lines": 3}, {"lines": 3}),
        ("grep", {"query": "ERROR"}, {"pattern": "ERROR"}),
        ("grep", {"regex": "ERROR", "case_insensitive": True}, {"pattern": "ERROR", "ignore_case": True}),
        ("schema", {"depth": 2}, {"max_depth": 2}),
    ],
)
def test_other_words_for_our_arguments_get_the_call_in_ours(
    pad: Scratchpad, log_handle: str, tool: str, given: dict, expected: dict
) -> None:
    refused = pad.call_tool(tool, {"handle": log_handle, **given})
    assert not refused.ok and refused.error is not None and refused.error["error"] == "invalid_argument"
    [sugg] = refused.error["suggestions"]
    assert sugg["tool"] == tool and {"handle": log_handle, **expected}.items() <= sugg["arguments"].items()
    assert set(sugg["arguments"]) - {"handle", *expected} <= {"max_matches"}  # (grep's sized to fit)
    assert "in its words" in sugg["why"]
    followed = pad.call_tool(sugg["tool"], sugg["arguments"])
    assert followed.ok, followed.text


def test_a_word_that_is_no_synonym_still_gets_no_guess(pad: Scratchpad, log_handle: str) -> None:
    refused = pad.call_tool("head", {"handle": log_handle, "colour": "red"})
    assert not refused.ok and refused.error is not None and refused.error["suggestions"] == []


@pytest.mark.parametrize(("word", "found"), [("yes", True), ("YES", True), ("on", True), ("1", True), ("no", False)])
def test_a_boolean_said_in_words_is_read_as_meant(pad: Scratchpad, log_handle: str, word: str, found: bool) -> None:
    # "yes" was refused and its one suggestion dropped the flag: a case-sensitive search found nothing
    small = {"handle": log_handle, "pattern": "error", "max_matches": 3, "context": 0}
    lower = pad.call_tool("grep", {**small, "ignore_case": word})
    assert lower.ok, lower.text
    exact = pad.call_tool("grep", {**small, "ignore_case": found})
    assert lower.data["total_matches"] == exact.data["total_matches"]


def test_read_handle_offset_and_length_become_the_bytes_asked_for(pad: Scratchpad, log_handle: str) -> None:
    refused = pad.call_tool("read_handle", {"handle": log_handle, "offset": 10, "length": 100})
    assert refused.error is not None
    [sugg] = refused.error["suggestions"]
    assert sugg["arguments"] == {"handle": log_handle, "start": 10, "end": 110}  # (it said end=4,106)
    assert pad.call_tool("read_handle", sugg["arguments"]).ok


def test_delete_given_a_key_and_a_handle_suggests_each_alone(pad: Scratchpad, log_handle: str) -> None:
    pad.scratch_write("plan", "step one")
    refused = pad.call_tool("scratch_delete", {"key": "plan", "handle": log_handle})
    assert refused.error is not None
    calls = [(s["tool"], s["arguments"]) for s in refused.error["suggestions"]]
    assert calls == [("scratch_delete", {"key": "plan"}), ("scratch_delete", {"handle": log_handle})]
    assert pad.call_tool(*calls[0]).ok and pad.call_tool(*calls[1]).ok
