"""``%scratch iter H PATH --fields a,b [--offset N] [--limit N] [--as-agent]``: fields of an array's items."""

from __future__ import annotations

from typing import Any

from .._args import AGENT_HELP, ScratchArgumentParser
from .._results import Rows
from ._base import Command, call_tool

PARSER = ScratchArgumentParser(
    "iter",
    "iterate_over: one row per item of the array at PATH with the chosen fields (dot paths into "
    "each item); missing fields are null. Returns a list of dicts ({'_index': i, field: value}), shown "
    "as a table. Read as you (not charged) unless --as-agent; %scratch df H PATH gives every item as a "
    "DataFrame.",
    epilog="example: rows = %scratch iter cell_3_ab12 items --fields metadata.name,status.phase",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("path", metavar="PATH")
PARSER.add_argument("--fields", required=True, metavar="a,b", help="comma-separated fields or dot paths")
PARSER.add_argument("--offset", type=int, default=None, metavar="N", help="first item (default 0)")
PARSER.add_argument("--limit", type=int, default=None, metavar="N", help="number of items (default 50)")
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    arguments = {
        "handle": args.handle,
        "path": args.path,
        "fields": args.fields,
        "offset": args.offset,
        "limit": args.limit,
    }
    result = call_tool(session, "iter", "iterate_over", arguments, args.as_agent)
    return session.mark_own(Rows(list(result.data or []), text=result.text))


COMMAND = Command("iter", "iter H PATH --fields a,b", "rows of chosen fields", run, completes=("handle",))
