"""``%scratch list [--kind handle|note]``: the live entries, as a pandas DataFrame."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from ._base import Command, need_pandas

COLUMNS = (
    "handle",
    "key",
    "kind",
    "source_tool",
    "server",
    "format",
    "size",
    "lines",
    "tokens",
    "tokens_exact",  # False: a large output's count is still being computed, tokens is "at least"
    "created_at",
    "expires_at",
)
# Counts stay integers when some rows have none (a note has no lines): pandas' nullable Int64,
# shown as <NA>, never as 1234.0 or NaN.
COUNTS = ("size", "lines", "tokens")
TEXTS = ("handle", "key", "kind", "source_tool", "server", "format")

PARSER = ScratchArgumentParser(
    "list",
    "The live entries of the notebook's scratchpad, oldest first (the newest is the last row: "
    "entries['handle'].iloc[-1]); metadata only, not charged to the budget.",
)
PARSER.add_argument("--kind", choices=("handle", "note"), help="only spilled outputs, or only notes")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    pd = need_pandas("list")
    rows = session.pad.entries(args.kind)
    frame = pd.DataFrame([[row[c] for c in COLUMNS] for row in rows], columns=list(COLUMNS))
    frame = frame.astype(
        {**dict.fromkeys(COUNTS, "Int64"), **dict.fromkeys(TEXTS, "string"), "tokens_exact": "boolean"}
    )
    return session.mark_own(frame)


COMMAND = Command("list", "list [--kind handle|note]", "live entries as a DataFrame", run, completes=("--kind",))
