"""``%scratch explore [H]``: the interactive explorer widget over the notebook's scratchpad."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .._args import ScratchArgumentParser
from ._base import Command, require_stub

PARSER = ScratchArgumentParser("explore", "Open the ipywidgets explorer (entries, preview, schema, grep, "
                               "iterate, SQL, budget meter), on handle H if given.")
PARSER.add_argument("handle", metavar="H", nargs="?", default=None)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    try:
        from ...widgets import Explorer
    except ImportError:
        raise UsageError("%scratch explore needs ipywidgets: pip install 'jupyter-scratchpad[jupyter]'") from None
    if args.handle is not None:
        require_stub(session, "explore", args.handle)
    from IPython.display import display

    display(Explorer(session.pad, handle=args.handle))


COMMAND = Command("explore", "explore [H]", "the widget explorer", run)
