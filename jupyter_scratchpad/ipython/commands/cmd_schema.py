"""``%scratch schema H [PATH] [--depth N] [--as-agent]``: the structure of a handle (or of the part of
a JSON handle at PATH) without its content."""

from __future__ import annotations

from typing import Any

from .._args import AGENT_HELP, ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "schema",
    "The structure of handle H: JSON paths with kinds and line ranges "
    "(arrays summarised over all items), a markdown heading tree, or a text "
    "summary. With PATH, only that part of a JSON handle (a string there that holds JSON or markdown "
    "is described as that document). Read as you (not charged) unless --as-agent.",
    epilog="example: %scratch schema cell_3_ab12 '$.items[0].spec' --depth 6",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("path", metavar="PATH", nargs="?", default=None)
PARSER.add_argument("--depth", type=int, default=None, metavar="N", help="how deep (default 4)")
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    arguments = {"handle": args.handle, "path": args.path, "max_depth": args.depth}
    return session.mark_own(call_tool(session, "schema", "schema", arguments, args.as_agent))


COMMAND = Command("schema", "schema H [PATH] [--depth N]", "structure of a handle", run, completes=("handle",))
