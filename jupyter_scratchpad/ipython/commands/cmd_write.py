"""``%scratch write KEY VALUE`` / ``%%scratch write KEY``: save a note."""

from __future__ import annotations

import json
import re
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
variable itself (any JSON-able value). Quotes in VALUE are kept as typed ('a b' is saved with its
quotes; "a b" is JSON, saved as a b); KEY is one word, or quoted ('a b' is the key a b).
--ttl goes before KEY: after VALUE it would be part of the value (refused: quote the VALUE as
JSON to save such a text). In the cell form it may also follow KEY: %%scratch write KEY --ttl 60.

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


# a line's VALUE that ends in --ttl N: the TTL typed after the value (it would be saved as text)
_TRAILING_TTL = re.compile(r"(?:^|\s)--ttl(?:=|\s+)([^\s\"']+)\s*$")


def _seconds(seconds: str) -> float:
    try:
        return float(seconds)
    except ValueError:
        raise UsageError(f"%scratch write: --ttl needs a number of seconds, not {seconds!r}") from None


def _ttl_first(text: str) -> tuple[float | None, str]:
    """``(the seconds of a leading --ttl S or --ttl=S, the rest)``."""
    word, rest = split_first(text)
    if word == "--ttl":
        seconds, rest = split_first(rest)
        return _seconds(seconds), rest
    if word.startswith("--ttl="):
        return _seconds(word[len("--ttl=") :]), rest
    return None, text


def run(session: Any, text: str, cell: str | None) -> Any:
    key, _ = split_first(text)
    if key in ("-h", "--help"):
        print(HELP)
        raise HelpShown
    ttl_s, text = _ttl_first(text)
    key, rest = split_first(text)
    if not key:
        raise UsageError("%scratch write: give a KEY and a VALUE (see %scratch write --help)")
    if cell is not None and rest:  # %%scratch write KEY --ttl S: the cell is the value, so it is the TTL
        after, rest = _ttl_first(rest)
        if after is None or rest or ttl_s is not None:
            raise UsageError(
                f"%%scratch write: only --ttl SECONDS may follow KEY {key!r} (the cell is the value), not {text!r}"
            )
        ttl_s = after
    raw = cell if cell is not None else rest
    if cell is None and not rest:
        raise UsageError(f"%scratch write: give a VALUE for {key!r} (or use %%scratch write {key})")
    trailing = _TRAILING_TTL.search(rest) if cell is None else None
    if trailing is not None:
        value = rest[: trailing.start()].strip()
        raise UsageError(
            f"%scratch write: --ttl goes before KEY: %scratch write --ttl {trailing.group(1)} {key} {value} "
            f"(after VALUE it would be saved as part of the value; to save that text, type it as JSON: "
            f"{json.dumps(rest.strip())})"
        )
    result = call_tool(session, "write", "scratch_write", {"key": key, "value": _value(raw.strip()), "ttl_s": ttl_s})
    print(result.text)


COMMAND = Command("write", "write [--ttl S] KEY VALUE", "save a note", run, cell_form=True)
