"""``%scratch slice H START END [--as-agent]``: lines START..END of a handle (1-indexed, inclusive)."""

from __future__ import annotations

from typing import Any

from .._args import AGENT_HELP, ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "slice",
    "Lines START to END of handle H (1-indexed, inclusive), numbered; "
    "an END past the last line is clamped. Read as you (not charged) unless "
    "--as-agent.",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("start", type=int, metavar="START")
PARSER.add_argument("end", type=int, metavar="END")
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    arguments = {"handle": args.handle, "start": args.start, "end": args.end}
    return session.mark_own(call_tool(session, "slice", "slice", arguments, args.as_agent))


COMMAND = Command("slice", "slice H START END", "a line range of a handle", run, completes=("handle",))
