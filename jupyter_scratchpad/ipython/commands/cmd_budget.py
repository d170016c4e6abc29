"""``%scratch budget [reset] [--model M] [--window N]``: the notebook's context budget and usage."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from .._results import BudgetReport
from ._base import Command

PARSER = ScratchArgumentParser(
    "budget",
    "The notebook's context budget, as a model would have it: window, usable (after the safety "
    "margin), used, remaining, the per-call cap, and the tokens spilled (intercepted) and read back "
    '(extracted). Only --as-agent reads and the explorer\'s "as the model would see it" mode are '
    "charged. `reset` starts it again (used = the tool definitions alone). --model/--window first "
    "switch the notebook to that model/window (the same as %config ScratchMagics.model / "
    ".context_window); the tokens already used are kept.",
)
PARSER.add_argument("action", nargs="?", choices=("reset",), help="start the budget again")
PARSER.add_argument("--model", default=None, metavar="M", help="e.g. gpt-4.1, claude-sonnet-4")
PARSER.add_argument("--window", type=int, default=None, metavar="N", help="context window in tokens")


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    if args.model is not None:
        session.magics.model = args.model  # an unknown model is warned about by the magics
    if args.window is not None:
        session.magics.context_window = args.window
    pad = session.pad
    if args.action == "reset":
        pad.reset_budget()
    report = BudgetReport(model=pad.model, **pad.budget.as_dict(), **pad.usage(), spills=pad.spill_count)
    return session.mark_own(report)


COMMAND = Command(
    "budget",
    "budget [reset] [--model M] [--window N]",
    "window, used, remaining, usage",
    run,
    completes=("reset", "--model", "--window"),
)
