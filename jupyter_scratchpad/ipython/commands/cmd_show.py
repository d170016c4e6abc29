"""``%scratch show H``: a handle's stub and its entry's metadata (not charged)."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from .._results import StubView
from ._base import Command, require_stub

PARSER = ScratchArgumentParser(
    "show",
    "The stub of handle H (preview, schema sketch, next steps) and its "
    "metadata, displayed as the stub card and returned as a dict.",
)
PARSER.add_argument("handle", metavar="H")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    stub = require_stub(session, "show", args.handle)
    entry = session.pad.entry(args.handle)
    view = StubView(stub, created_at=entry.created_at, run_id=entry.run_id, agent_id=entry.agent_id)
    return session.mark_own(view)


COMMAND = Command("show", "show H", "a handle's stub and metadata", run, completes=("handle",))
