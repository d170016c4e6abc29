"""Explicit interpolation for ``%scratch``: IPython's own ``{x}``/``$x`` expansion is off.

``%scratch`` is ``no_var_expand``: what is typed reaches the command as typed, so a regex like
``took \\d{5}ms`` or a SQL ``$1`` is never mangled. Python values come in only when asked for:

- ``{{name}}`` is replaced by ``str(name)``: in an argument (one argument, spaces and all), and
  in SQL as text (a relation name: ``FROM {{h}}``), as jupysql does;
- in SQL, ``:name`` is a DuckDB parameter bound to the value, never text pasted into the query
  (so a string with quotes is just a string).

>>> bind_sql("SELECT * FROM {{h}} WHERE n > :low AND tag = :tag", {"h": "t_1", "low": 3, "tag": "a'b"}, "sql")
('SELECT * FROM t_1 WHERE n > $low AND tag = $tag', {'low': 3, 'tag': "a'b"})
>>> expand_word("pod-{{n}}", {"n": 7}, "grep")
'pod-7'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from IPython.core.error import UsageError

__all__ = ["NAMESPACE", "bind_sql", "expand_word", "lookup", "whole_reference"]

# The user's namespace while a %scratch command runs (set by the router).
NAMESPACE: ContextVar[Mapping[str, Any] | None] = ContextVar("scratch_namespace", default=None)

_BRACES = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")
_NAME = re.compile(r"[A-Za-z_]\w*")
# What may stand right before ``:name`` for it to be a parameter: not a cast (``::``), a slice
# (``[a:b]``, ``[:b]``), a struct key (``{'k':v}``, ``{k:v}``) or part of a word.
_NOT_BEFORE_PARAM = set(":[]'\")}_") | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def lookup(namespace: Mapping[str, Any] | None, name: str, command: str, form: str) -> Any:
    """``namespace[name]``, or a ``UsageError`` that says which reference has no variable."""
    if namespace is None or name not in namespace:
        raise UsageError(
            f"%scratch {command}: {form} names no variable {name!r} in the notebook; define it "
            "first (IPython's {x} and $x are not expanded in %scratch)"
        )
    return namespace[name]


def whole_reference(text: str) -> str | None:
    """``name`` when ``text`` is exactly ``{{name}}``, else None."""
    found = _BRACES.fullmatch(text.strip())
    return found.group(1) if found else None


def expand_word(word: str, namespace: Mapping[str, Any] | None, command: str) -> str:
    """``word`` with each ``{{name}}`` replaced by ``str`` of the variable."""
    if "{{" not in word:
        return word
    return _BRACES.sub(lambda m: str(lookup(namespace, m.group(1), command, m.group(0))), word)


def _skip_quoted(query: str, i: int) -> int:
    """The index after the string, quoted identifier or comment that starts at ``i`` (else ``i``)."""
    ch = query[i]
    if ch in ("'", '"'):
        j = i + 1
        while j < len(query):
            if query[j] == ch:
                if j + 1 < len(query) and query[j + 1] == ch:  # a doubled quote inside
                    j += 2
                    continue
                return j + 1
            j += 1
        return len(query)
    if query.startswith("--", i):
        end = query.find("\n", i)
        return len(query) if end < 0 else end
    if query.startswith("/*", i):
        end = query.find("*/", i + 2)
        return len(query) if end < 0 else end + 2
    return i


def bind_sql(query: str, namespace: Mapping[str, Any] | None, command: str) -> tuple[str, dict[str, Any]]:
    """``query`` with ``{{name}}`` as text and ``:name`` as ``$name``, and the values to bind."""
    out: list[str] = []
    params: dict[str, Any] = {}
    i = 0
    while i < len(query):
        skipped = _skip_quoted(query, i)
        if skipped != i:
            out.append(query[i:skipped])
            i = skipped
            continue
        braces = _BRACES.match(query, i) if query.startswith("{{", i) else None
        named = None
        if braces is None and query[i] == ":" and (i == 0 or query[i - 1] not in _NOT_BEFORE_PARAM):
            named = _NAME.match(query, i + 1)
        found = braces or named
        if found is None:
            out.append(query[i])
            i += 1
            continue
        if braces:
            out.append(str(lookup(namespace, braces.group(1), command, braces.group(0))))
        else:
            name = found.group(0)
            params[name] = lookup(namespace, name, command, f":{name}")
            out.append(f"${name}")
        i = found.end()
    return "".join(out), params
