"""``%scratch schema H [--depth N] [--as-agent]``: the structure of a handle without its content."""

from __future__ import annotations

from typing import Any

from .._args import AGENT_HELP, ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "schema",
    "The structure of handle H: JSON paths with kinds and line ranges "
    "(arrays summarised over all items), a markdown heading tree, or a text "
    "summary. Read as you (not charged) unless --as-agent.",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("--depth", type=int, default=None, metavar="N", help="how deep (default 4)")
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    arguments = {"handle": args.handle, "max_depth": args.depth}
    return session.mark_own(call_tool(session, "schema", "schema", arguments, args.as_agent))


COMMAND = Command("schema", "schema H [--depth N]", "structure of a handle", run, completes=("handle",))
