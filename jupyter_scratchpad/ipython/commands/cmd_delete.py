"""``%scratch delete KEY|H``: delete a spilled output (by handle) or a note (by key)."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from ._base import Command, call_tool

PARSER = ScratchArgumentParser("delete", "Delete the spilled output with handle H, or else the note KEY.")
PARSER.add_argument("name", metavar="KEY|H")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    name = args.name
    is_handle = session.store.get_entry(session.pad.scope, "handle", name) is not None
    arguments = {"handle": name} if is_handle else {"key": name}
    print(call_tool(session, "delete", "scratch_delete", arguments).text)


COMMAND = Command("delete", "delete KEY|H", "delete a handle or a note", run, completes=("handle|key",))
