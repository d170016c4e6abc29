"""``%scratch get H [PATH] [--as-agent]``: the value itself (parsed JSON or the text), or the value at PATH."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...errors import InvalidArgumentError, NotFoundError
from .._args import AGENT_HELP, ScratchArgumentParser
from ._base import Command, call_tool, error_line, unknown_handle

PARSER = ScratchArgumentParser(
    "get",
    "Without PATH: the whole spilled value as Python data (parsed JSON, or the text), read from "
    "the store (displaying a large value shows its stub). With PATH: get_in, the value at PATH (a.b.0, "
    '$.a[0], a["dotted.key"], [-1]). Read as you (not charged) unless --as-agent (then without PATH it '
    "is the model's `read`, refused when too large).",
    epilog="example: x = %scratch get cell_3_ab12 items.0.metadata",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("path", metavar="PATH", nargs="?", default=None)
PARSER.add_argument("--offset", type=int, default=None, metavar="N", help="a list: first item; a string: first line")
PARSER.add_argument("--limit", type=int, default=None, metavar="N", help="a list: how many items; a string: lines")
PARSER.add_argument("--as-agent", action="store_true", help=AGENT_HELP)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    if args.path is None and args.as_agent:
        result = call_tool(session, "get", "read", {"handle": args.handle}, as_agent=True)
        return session.mark_own(result)
    if args.path is None:
        try:
            value = session.pad.get(args.handle)
        except NotFoundError:
            raise unknown_handle(session, "get", args.handle) from None
        except InvalidArgumentError as exc:
            raise UsageError(error_line("get", {"message": exc.message})) from None
        return session.mark_own(value, args.handle)
    arguments = {"handle": args.handle, "path": args.path, "offset": args.offset, "limit": args.limit}
    result = call_tool(session, "get", "get_in", arguments, args.as_agent)
    value = result.data
    if (args.offset is not None or args.limit is not None) and not isinstance(value, str) and not args.as_agent:
        if not isinstance(value, list):  # (a long string was paged by get_in itself)
            raise UsageError(f"%scratch get: --offset/--limit page a list or a string; {args.path} holds an object")
        start = max(0, args.offset or 0)
        value = value[start : None if args.limit is None else start + max(0, args.limit)]  # items, as a slice
    return session.mark_own(value, store_if_large=True)


COMMAND = Command("get", "get H [PATH]", "the value (or the value at a path)", run, completes=("handle",))
