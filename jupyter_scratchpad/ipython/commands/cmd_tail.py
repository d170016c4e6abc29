"""``%scratch tail H [-n N] [--as-agent]``: the last N lines of a handle, numbered."""

from __future__ import annotations

from typing import Any

from .._args import AGENT_HELP, ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "tail",
    "The last N lines of handle H, numbered, with a footer of totals. "
    "Returns the ToolResult (.text, .data). Read as you (not charged) unless "
    "--as-agent.",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("-n", "--lines", type=int, default=None, metavar="N", help="how many lines (default 50)")
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    arguments = {"handle": args.handle, "lines": args.lines}
    return session.mark_own(call_tool(session, "tail", "tail", arguments, args.as_agent))


COMMAND = Command("tail", "tail H [-n N]", "the last lines of a handle", run, completes=("handle",))
