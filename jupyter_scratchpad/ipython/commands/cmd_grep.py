"""``%scratch grep H PATTERN [-C N] [-i] [--max N]``: regex search in a handle (charged)."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "grep", "Lines of handle H matching PATTERN (RE2 regex; an invalid regex is searched literally), "
    "marked '>' with context lines. Quote a pattern with spaces; backslashes are kept as typed.",
    epilog="example: %scratch grep cell_3_ab12 'status.*Failed' -C 1 -i")
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("pattern", metavar="PATTERN")
PARSER.add_argument("-C", "--context", type=int, default=None, metavar="N", help="context lines (default 3)")
PARSER.add_argument("-i", "--ignore-case", action="store_true", help="case-insensitive")
PARSER.add_argument("--max", type=int, default=None, metavar="N", dest="max_matches",
                    help="matching lines to show (default 100)")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    result = call_tool(session, "grep", "grep", {
        "handle": args.handle, "pattern": args.pattern, "context": args.context,
        "ignore_case": args.ignore_case or None, "max_matches": args.max_matches})
    return session.mark_own(result)


COMMAND = Command("grep", "grep H PATTERN [-C N] [-i] [--max N]", "regex search with context", run)
