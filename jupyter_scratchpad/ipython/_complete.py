"""Tab completion for ``%scratch``: subcommands, then handles, note keys, options and model names.

>>> words_before("%scratch head cell_3", "cell_3")
(['head'], 'cell_3')
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._session import ScratchSession

__all__ = ["Completer", "completions", "words_before"]

_KEYS = ("%scratch", "%%scratch")
_ASSIGNED = r"[\w\s,.()\[\]*]+=\s*%scratch\s"  # a line magic's result assigned: df = %scratch df H items
_FORMATS = ("parquet", "csv", "json", "jsonl")


def words_before(text_until_cursor: str, symbol: str) -> tuple[list[str], str]:
    """``(complete words after the magic's name, the word being typed)``."""
    words = text_until_cursor.split()
    current = "" if not words or text_until_cursor[-1:].isspace() else words.pop()
    if symbol and not current:
        current = symbol
    magic = next((i for i, w in enumerate(words) if w in _KEYS), 0)  # "df = %scratch df …" too
    return words[magic + 1 :], current


def _models() -> list[str]:
    from ..budget import CONTEXT_WINDOWS

    return sorted(CONTEXT_WINDOWS)


def _names(session: ScratchSession, kind: str) -> list[str]:
    try:
        entries = session.pad.entries({"handle": "handle", "key": "note"}.get(kind))
    except Exception:  # a closed store completes nothing rather than raising into the completer
        return []
    names = [e["handle"] or e["key"] for e in reversed(entries)]  # newest first
    return [str(n) for n in names if n]


def completions(session: ScratchSession, text_until_cursor: str, symbol: str = "") -> list[str]:
    """What may come next at the cursor (IPython keeps those that start with what is typed)."""
    from .commands import COMMANDS

    done, current = words_before(text_until_cursor, symbol)
    if not done:
        return [*COMMANDS, "--help"]
    command = COMMANDS.get(done[0])
    if command is None:
        return []
    previous = done[-1]
    if previous == "--model":
        return _models()
    if previous == "--to":
        return list(_FORMATS)
    if done[0] == "sql":  # a relation may come anywhere in a query
        return relations(session)
    if len(done) == 1:
        out: list[str] = []
        for kind in command.completes:
            out += _names(session, kind) if kind in ("handle", "key", "handle|key") else [kind]
        return out
    return ["--as-agent", "--help"] if not current or current.startswith("-") else []


def relations(session: ScratchSession) -> list[str]:
    """The relations a query can name, newest handle first: ``h``, ``h.items`` …, ``scratch_notes``."""
    out: list[str] = []
    try:
        for handle in _names(session, "handle"):
            out.append(handle)
            out += [f"{handle}.{name}" for name, _keys in session.pad.entry(handle).meta.get("sql_arrays") or []]
    except Exception:  # (an entry gone meanwhile, a closed store: what was found so far)
        pass
    return [*out, "scratch_notes"]


def in_sql_cell(full_text: str) -> bool:
    """Whether the cursor is in the body of a ``%%scratch sql`` cell (its query)."""
    first, newline, _ = full_text.lstrip().partition("\n")
    return bool(newline) and first.split()[:2] == ["%%scratch", "sql"]


class Completer:
    """The ``complete_command`` hook for ``%scratch`` and ``%%scratch`` of one session, and a
    matcher for the query in a ``%%scratch sql`` cell's body (its relations)."""

    def __init__(self, session: ScratchSession) -> None:
        self.session = session
        self._hook: Callable[[Any, Any], list[str]] | None = None
        self._matcher: Any = None

    def install(self, shell: Any) -> None:
        def hook(_shell: Any, event: Any) -> list[str]:
            return completions(self.session, event.text_until_cursor, event.symbol)

        self._hook = hook
        for key in _KEYS:
            shell.set_hook("complete_command", hook, str_key=key)
        shell.set_hook("complete_command", hook, re_key=_ASSIGNED)
        completer = getattr(shell, "Completer", None)
        if completer is not None and isinstance(getattr(completer, "custom_matchers", None), list):
            self._matcher = self._sql_matcher()
            completer.custom_matchers.append(self._matcher)

    def _sql_matcher(self) -> Any:
        from IPython.core.completer import SimpleCompletion, context_matcher

        @context_matcher()
        def sql_body(context: Any) -> dict[str, Any]:
            if not in_sql_cell(context.full_text):
                return {"completions": [], "suppress": False}
            token = context.token
            found = [SimpleCompletion(r, type="relation") for r in relations(self.session) if r.startswith(token)]
            return {"completions": found, "suppress": bool(found)}  # (not Python's names in a query)

        return sql_body

    def uninstall(self, shell: Any) -> None:
        dispatcher = getattr(shell, "strdispatchers", {}).get("complete_command")
        if dispatcher is None or self._hook is None:
            return
        ours = [(dispatcher.strs, key) for key in _KEYS]
        ours += [(dispatcher.regexs, rx) for rx in dispatcher.regexs if rx.pattern == _ASSIGNED]
        for table, key in ours:
            chain = table.get(key)
            if chain is None:
                continue
            chain.chain = [(p, f) for p, f in chain.chain if getattr(f, "__func__", None) is not self._hook]
            if not chain.chain:
                del table[key]
        self._hook = None
        matchers = getattr(getattr(shell, "Completer", None), "custom_matchers", None)
        if isinstance(matchers, list) and self._matcher in matchers:
            matchers.remove(self._matcher)
        self._matcher = None
