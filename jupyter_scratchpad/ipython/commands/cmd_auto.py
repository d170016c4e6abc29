"""``%scratch auto [on|off]``: turn automatic spilling of large outputs on or off."""

from __future__ import annotations

from typing import Any

from .._args import ScratchArgumentParser
from .._session import cell_rule
from ._base import Command

PARSER = ScratchArgumentParser(
    "auto",
    "Automatic spill of large outputs (on by default); without an "
    "argument, say whether it is on. Same as %config ScratchMagics.auto_spill.",
)
PARSER.add_argument("state", nargs="?", choices=("on", "off"))


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    if args.state is not None:
        session.auto_spill = args.state == "on"
    rule = cell_rule(session.pad.policy, session.pad.model)  # (what the pad decides cell outputs by)
    print(f"auto-spill is {'on: ' + rule if session.auto_spill else 'off'}")


COMMAND = Command("auto", "auto [on|off]", "automatic spill on or off", run, completes=("on", "off"))
