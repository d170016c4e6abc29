"""JSON paths as models write them: ``results.0.title``, ``$.results[0].title``,
``["a.b"]["200"]``, ``items[-1]``; ``""`` and ``$`` are the root.
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._bounded import sendable

__all__ = ["LazyArray", "PathError", "PathMiss", "Step", "format_path", "key_step", "parse_path", "resolve"]

_NAME = re.compile(r"[^.\[\]]+")
_INT = re.compile(r"-?\d+")
_FAR = 10**30  # an index of more digits than this is past any array (int() refuses 4,300 digits)


def _index(digits: str) -> int:
    """The index ``digits`` (``-?\\d+``) says, or one as far past any array, never a ValueError."""
    sign = -1 if digits.startswith("-") else 1
    significant = digits.lstrip("-").lstrip("0")
    return sign * (_FAR if len(significant) > 30 else int(significant or "0"))


class LazyArray(Sequence[Any]):
    """An array whose items are read only when indexed (a streamed spill's big array): paths
    step into it as into a list, and it is an ``array`` to ``kind_of``."""

    @abstractmethod
    def pick(self, indices: list[int]) -> list[Any]:
        """The items at ``indices`` (ascending), read once each without keeping what was read."""


class PathError(ValueError):
    """The path text itself is malformed."""


@dataclass(frozen=True)
class Step:
    value: str | int
    quoted: bool = False  # a bracket-quoted key: never an index

    def __str__(self) -> str:
        return str(self.value)


@dataclass
class PathMiss(Exception):
    """A well-formed path that leads nowhere in this value."""

    requested: str
    valid_prefix: list[Step]
    node: Any  # the value at valid_prefix
    failed: Step
    reason: str


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _unescape(text: str, at: int) -> tuple[str, int]:
    """The character escaped at ``text[at]`` (after a backslash) and where reading goes on:
    JSON's ``\\n``, ``\\t`` … and ``\\uXXXX`` (a surrogate pair as one character); any other
    character stands for itself (``\\"``, ``\\\\``, ``\\'``)."""
    ch = text[at]
    if ch == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[at + 1 : at + 5]):
        code = int(text[at + 1 : at + 5], 16)
        low = text[at + 7 : at + 11] if text[at + 5 : at + 7] == "\\u" else ""
        if 0xD800 <= code < 0xDC00 and re.fullmatch(r"[dD][c-fC-F][0-9a-fA-F]{2}", low):
            return chr(0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)), at + 11
        return chr(code), at + 5
    return _ESCAPES.get(ch, ch), at + 1


def parse_path(path: object) -> list[Step]:
    if path is None:
        return []
    if not isinstance(path, str):
        if isinstance(path, int) and not isinstance(path, bool):
            return [Step(path)]
        raise PathError(f"a path must be a string, got {type(path).__name__}")
    text = path.strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[Step] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == ".":
            i += 1
            if i >= n:
                raise PathError(f"path {path!r} ends with '.'")
            if text[i] == "." and text[i:].strip("."):  # $..name: JSONPath's recursive descent
                raise PathError(
                    f"recursive descent ('..') is not a path: {path!r} names every match at any depth, and a "
                    "path names one value; grep the key (each match shows its path) or read schema"
                )
            continue
        if ch == "[":
            j = i + 1
            while j < n and text[j] == " ":
                j += 1
            if j < n and text[j] in "\"'":
                quote = text[j]
                k = j + 1
                buf: list[str] = []
                while k < n and text[k] != quote:
                    if text[k] == "\\" and k + 1 < n:  # JSON's escapes: schema writes a key so
                        char, k = _unescape(text, k + 1)
                        buf.append(char)
                        continue
                    buf.append(text[k])
                    k += 1
                if k >= n:
                    raise PathError(f"unterminated quoted key in path {path!r}")
                close = text.find("]", k + 1)
                if close < 0 or text[k + 1 : close].strip():
                    raise PathError(f"expected ']' after the quoted key in path {path!r}")
                steps.append(Step("".join(buf), quoted=True))
                i = close + 1
                continue
            close = text.find("]", j)
            if close < 0:
                raise PathError(f"unclosed '[' in path {path!r}")
            inner = text[j:close].strip()
            if inner in ("*", ""):
                raise PathError(f"wildcards are not paths: use iterate_over or item_schema for {path!r}")
            if not _INT.fullmatch(inner):
                steps.append(Step(inner, quoted=True))
            else:
                steps.append(Step(_index(inner)))
            i = close + 1
            continue
        m = _NAME.match(text, i)
        if m is None:  # pragma: no cover - _NAME matches any other character
            raise PathError(f"cannot read path {path!r} at {i}")
        name = m.group(0)
        steps.append(Step(_index(name)) if _INT.fullmatch(name) else Step(name))
        i = m.end()
    return steps


def key_step(key: str) -> str:
    """One key of a path: ``.name``, else ``["b.c"]`` (a lone surrogate as its escape, the
    document's own spelling, which ``parse_path`` reads back)."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", key):
        return f".{key}"
    return f"[{sendable(json.dumps(key, ensure_ascii=False))}]"


def format_path(steps: list[Step]) -> str:
    """The canonical ``$``-form: ``$.a[0]["b.c"]``."""
    return "$" + "".join(f"[{s.value}]" if isinstance(s.value, int) else key_step(s.value) for s in steps)


def resolve(value: Any, steps: list[Step], requested: str = "") -> Any:
    """Walk ``steps`` into ``value``; raises ``PathMiss`` with where and why it stopped.

    A string that holds JSON (an MCP text block, an API's ``"body": "{…}"``) is stepped through
    as if it were parsed in place: ``content[0].text.items[3]``.
    """
    node = value
    for i, step in enumerate(steps):
        if isinstance(node, str):  # a string that holds JSON is walked as if parsed in place
            from ._embedded import embedded_json

            inner = embedded_json(node)
            if inner is None:
                raise PathMiss(requested, steps[:i], node, step, "cannot step into a string (it holds no JSON)")
            node = inner
        if isinstance(node, dict):
            key = str(step.value)
            if key in node:
                node = node[key]
                continue
            raise PathMiss(requested, steps[:i], node, step, f"no key {key!r}")
        if isinstance(node, (list, LazyArray)):
            if isinstance(step.value, int) and not step.quoted:
                idx = step.value
                if -len(node) <= idx < len(node):
                    node = node[idx]
                    continue
                raise PathMiss(requested, steps[:i], node, step, f"index {idx} out of range")
            raise PathMiss(requested, steps[:i], node, step, f"{step.value!r} is not an index of an array")
        raise PathMiss(requested, steps[:i], node, step, f"cannot step into a {kind_of(node)}")
    return node


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, LazyArray)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
