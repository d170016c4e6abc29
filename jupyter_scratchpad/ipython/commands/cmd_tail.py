"""``%scratch tail H [-n N]``: the last N lines of a handle, numbered (charged to the budget)."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser("tail", "The last N lines of handle H, numbered, with a footer of totals "
                               "and tokens. Returns the ToolResult (.text, .data, .tokens).")
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("-n", "--lines", type=int, default=None, metavar="N", help="how many lines (default 50)")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    return session.mark_own(call_tool(session, "tail", "tail", {"handle": args.handle, "lines": args.lines}))


COMMAND = Command("tail", "tail H [-n N]", "the last lines of a handle", run)
