"""``%scratch write KEY VALUE`` / ``%%scratch write KEY``: save a note."""

from __future__ import annotations

import json
from typing import Any

from IPython.core.error import UsageError

from .._args import HelpShown, split_first
from .._params import NAMESPACE, lookup, whole_reference
from ._base import Command, call_tool

HELP = """usage: %scratch write [--ttl SECONDS] KEY VALUE
       %%scratch write [--ttl SECONDS] KEY      (the cell is the value)

Save a note under KEY for this notebook's run. VALUE (the rest of the line, as typed, but for a
trailing # comment: quote a word that starts with #) is stored as JSON when it parses as JSON (42,
[1, 2], {"a": 1}, "quoted"), else as the text. A VALUE that is exactly {{name}} stores the notebook
variable itself (any JSON-able value).

example: %scratch write failing_pods ["pod-3", "pod-9"]
         %scratch write failing_pods {{failing}}
"""


def _value(text: str) -> Any:
    name = whole_reference(text)
    if name is not None:
        return lookup(NAMESPACE.get(), name, "write", text)
    inside = text.strip()
    if inside.startswith("{{") and inside.endswith("}}") and len(inside) > 4:
        # {{'x' * 5_000_000}} saved its 19 characters of source, silently
        raise UsageError(
            f"%scratch write: {inside[:60]} is an expression; {{{{...}}}} takes a notebook variable's name. "
            "Assign it first (v = ...), then %scratch write KEY {{v}}"
        )
    try:
        return json.loads(text)
    except ValueError:
        return text


def run(session: Any, text: str, cell: str | None) -> Any:
    key, rest = split_first(text)
    ttl_s = None
    if key in ("-h", "--help"):
        print(HELP)
        raise HelpShown
    if key == "--ttl":
        seconds, rest = split_first(rest)
        try:
            ttl_s = float(seconds)
        except ValueError:
            raise UsageError(f"%scratch write: --ttl needs a number of seconds, not {seconds!r}") from None
        key, rest = split_first(rest)
    if not key:
        raise UsageError("%scratch write: give a KEY and a VALUE (see %scratch write --help)")
    raw = cell if cell is not None else rest
    if cell is None and not rest:
        raise UsageError(f"%scratch write: give a VALUE for {key!r} (or use %%scratch write {key})")
    result = call_tool(session, "write", "scratch_write", {"key": key, "value": _value(raw.strip()), "ttl_s": ttl_s})
    print(result.text)


COMMAND = Command("write", "write KEY VALUE [--ttl S]", "save a note", run, cell_form=True)
