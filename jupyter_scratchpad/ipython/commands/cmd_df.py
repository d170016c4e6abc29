"""``%scratch df H [PATH]``: the array at PATH of a handle as a pandas DataFrame (every item)."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from ._base import Command, need_pandas, require_stub

PARSER = ScratchArgumentParser(
    "df",
    "Every item of the array at PATH (default $, the root) of handle H as a pandas DataFrame: "
    "objects are rows with nested keys as dotted columns (metadata.name), scalars one 'value' column. "
    "A text handle gives its lines (line_no, line). Read as you: not charged. Same as "
    "session.pad.dataframe(H, PATH).",
    epilog="example: pods = %scratch df cell_3_ab12 items",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("path", metavar="PATH", nargs="?", default="$")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    need_pandas("df")
    require_stub(session, "df", args.handle)  # an unknown handle names close matches
    return session.mark_own(session.pad.dataframe(args.handle, args.path))


COMMAND = Command("df", "df H [PATH]", "an array as a DataFrame", run, completes=("handle",))
