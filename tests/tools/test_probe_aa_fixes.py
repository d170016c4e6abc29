"""Probe AA (a hostile agent's arguments): what it found, each fixed and tested here."""

from __future__ import annotations

import json

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
