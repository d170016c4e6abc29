"""A line tool asked for lines the way another tool takes them (offset/limit, a start with no end,
a negative start) answers with the call it takes, verified to run."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad


@pytest.fixture
def log(pad: Scratchpad) -> str:
    return pad.spill("\n".join(f"line {i}" for i in range(1, 1001)), tool="export").handle  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("tool", "args", "call", "first", "last"),
    [
        ("slice", {"offset": 10, "limit": 3}, ("slice", {"start": 11, "end": 13}), 11, 13),
        ("slice", {"start": 990}, ("slice", {"start": 990, "end": 1039}), 990, 1000),
        ("slice", {"start": -20}, ("tail", {"lines": 20}), 981, 1000),
        ("head", {"offset": 0, "limit": 3}, ("head", {"lines": 3}), 1, 3),
        ("tail", {"limit": 4}, ("tail", {"lines": 4}), 997, 1000),
    ],
)
def test_the_lines_meant_come_back_as_the_call_that_reads_them(
    pad: Scratchpad, log: str, tool: str, args: dict[str, Any], call: tuple[str, dict[str, Any]], first: int, last: int
) -> None:
    res = pad.call_tool(tool, {"handle": log, **args})
    assert res.error is not None and res.error["error"] == "invalid_argument"
    s = res.error["suggestions"][0]
    assert (s["tool"], {k: v for k, v in s["arguments"].items() if k != "handle"}) == call
    lines = pad.call_tool(s["tool"], s["arguments"])
    assert lines.ok, lines.error
    assert f"line {first}" in lines.text and f"line {last}\n" in lines.text + "\n"
    assert f"line {first - 1}\n" not in lines.text and f"line {last + 1}\n" not in lines.text + "\n"


def test_read_handle_takes_an_offset_and_limit_as_its_byte_range(pad: Scratchpad, log: str) -> None:
    res = pad.call_tool("read_handle", {"handle": log, "offset": 7, "limit": 12})
    assert res.error is not None
    s = res.error["suggestions"][0]
    assert s["tool"] == "read_handle" and s["arguments"] == {"handle": log, "start": 7, "end": 19}
    assert pad.call_tool("read_handle", s["arguments"]).text.split("\n--- ")[0] == "line 2\nline "  # 12 bytes
