"""``%scratch explore [H]``: the explorer widget over the notebook's scratchpad."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .._args import ScratchArgumentParser
from ._base import Command, require_stub

PARSER = ScratchArgumentParser(
    "explore",
    "Open the explorer (entries, preview, schema, grep, iterate, SQL, "
    "budget meter) on handle H if given. It reads as you (not charged) until "
    'its "as the model would see it" switch is on. In JupyterLab the stub '
    "card's Explore opens the same explorer in a panel beside the notebook.",
)
PARSER.add_argument("handle", metavar="H", nargs="?", default=None)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    try:
        from ...widgets import Explorer
    except ImportError:
        raise UsageError("%scratch explore needs anywidget: pip install 'jupyter-scratchpad[jupyter]'") from None
    if args.handle is not None:
        require_stub(session, "explore", args.handle)
    from IPython.display import display

    display(Explorer(session.pad, handle=args.handle))


COMMAND = Command("explore", "explore [H]", "the explorer widget", run, completes=("handle",))
