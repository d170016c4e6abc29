"""``%scratch read KEY``: the value of a note."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser("read", "The value of the note saved under KEY (as Python data).")
PARSER.add_argument("key", metavar="KEY")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    result = call_tool(session, "read", "scratch_read", {"key": args.key})
    return session.mark_own(result.data, store_if_large=True)


COMMAND = Command("read", "read KEY", "the value of a note", run, completes=("key",))
