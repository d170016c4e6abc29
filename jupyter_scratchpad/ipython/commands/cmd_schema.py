"""``%scratch schema H [--depth N]``: the structure of a handle without its content (charged)."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser("schema", "The structure of handle H: JSON paths with kinds and line ranges "
                               "(arrays summarised over all items), a markdown heading tree, or a text "
                               "summary.")
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("--depth", type=int, default=None, metavar="N", help="how deep (default 4)")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    result = call_tool(session, "schema", "schema", {"handle": args.handle, "max_depth": args.depth})
    return session.mark_own(result)


COMMAND = Command("schema", "schema H [--depth N]", "structure of a handle", run)
