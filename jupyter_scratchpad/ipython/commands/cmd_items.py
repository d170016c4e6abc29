"""``%scratch items H [PATH] [--offset N] [--limit N] [--as-agent]``: the keys across an array's items."""

from __future__ import annotations

from typing import Any

from .._args import AGENT_HELP, ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "items",
    "item_schema: the keys across the items of the array at PATH "
    "(default $, the root), their types and how many items have each (c/n). "
    "Read as you (not charged) unless --as-agent.",
    epilog="example: %scratch items cell_3_ab12 items --limit 1000",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("path", metavar="PATH", nargs="?", default=None)
PARSER.add_argument("--offset", type=int, default=None, metavar="N", help="first item (default 0)")
PARSER.add_argument("--limit", type=int, default=None, metavar="N", help="number of items (default all)")
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    arguments = {"handle": args.handle, "path": args.path, "offset": args.offset, "limit": args.limit}
    return session.mark_own(call_tool(session, "items", "item_schema", arguments, args.as_agent))


COMMAND = Command(
    "items",
    "items H [PATH] [--offset N] [--limit N]",
    "keys and types across an array's items",
    run,
    completes=("handle",),
)
