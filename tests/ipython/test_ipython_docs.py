"""The README documents every option (with its default) and every subcommand."""

from __future__ import annotations

import json
import re
from pathlib import Path

from jupyter_scratchpad.ipython import ScratchMagics
from jupyter_scratchpad.ipython.commands import ALIASES, COMMANDS

DOC = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_every_option_is_documented_with_its_default() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| `([^`]+)` \|", DOC, re.M))
    traits = ScratchMagics.class_own_traits(config=True)
    assert set(rows) == set(traits)
    for name, trait in traits.items():
        default = trait.default_value
        assert rows[name] == (json.dumps(default) if isinstance(default, str) else repr(default)), name


def test_every_subcommand_is_documented() -> None:
    table = DOC.split("### `%scratch` subcommands")[1].split("Cell forms:")[0]
    first_cells = [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| `")]
    documented = {name for cell in first_cells for name in re.findall(r"`(\w+)", cell)}
    assert documented == set(COMMANDS) | set(ALIASES)  # (ls and rm, the command line's names, beside theirs)
    for cell_form in ("%%scratch sql", "%%scratch write", "%%scratch [--name NAME] [--tool TOOL] [--force]"):
        assert cell_form in DOC
