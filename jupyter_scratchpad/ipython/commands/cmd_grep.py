"""``%scratch grep H PATTERN [-C N] [-i] [--max N] [--as-agent]``: regex search in a handle."""

from __future__ import annotations

from typing import Any

from .._args import AGENT_HELP, ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "grep",
    "Lines of handle H matching PATTERN (RE2 regex; an invalid regex is searched literally), "
    "marked '>' with context lines. Quote a pattern with spaces; the pattern is used as typed "
    "(backslashes, {5}, $ kept; {{name}} inserts a notebook variable). Read as you (not charged) "
    "unless --as-agent.",
    epilog="example: %scratch grep cell_3_ab12 'took \\d{5}ms' -C 0 --max 50",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("pattern", metavar="PATTERN")
PARSER.add_argument("-C", "--context", type=int, default=None, metavar="N", help="context lines (default 3)")
PARSER.add_argument("-i", "--ignore-case", action="store_true", help="case-insensitive")
PARSER.add_argument(
    "--max", type=int, default=None, metavar="N", dest="max_matches", help="matching lines to show (default 100)"
)
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    result = call_tool(
        session,
        "grep",
        "grep",
        {
            "handle": args.handle,
            "pattern": args.pattern,
            "context": args.context,
            "ignore_case": args.ignore_case or None,
            "max_matches": args.max_matches,
        },
        args.as_agent,
    )
    return session.mark_own(result)


COMMAND = Command(
    "grep", "grep H PATTERN [-C N] [-i] [--max N]", "regex search with context", run, completes=("handle",)
)
