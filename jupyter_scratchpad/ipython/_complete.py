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
    if done[0] == "sql":  # a handle may come anywhere in a query
        return [*_names(session, "handle"), "scratch_notes"]
    if len(done) == 1:
        out: list[str] = []
        for kind in command.completes:
            out += _names(session, kind) if kind in ("handle", "key", "handle|key") else [kind]
        return out
    return ["--as-agent", "--help"] if not current or current.startswith("-") else []


class Completer:
    """The ``complete_command`` hook for ``%scratch`` and ``%%scratch`` of one session."""

    def __init__(self, session: ScratchSession) -> None:
        self.session = session
        self._hook: Callable[[Any, Any], list[str]] | None = None

    def install(self, shell: Any) -> None:
        def hook(_shell: Any, event: Any) -> list[str]:
            return completions(self.session, event.text_until_cursor, event.symbol)

        self._hook = hook
        for key in _KEYS:
            shell.set_hook("complete_command", hook, str_key=key)
        shell.set_hook("complete_command", hook, re_key=_ASSIGNED)

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
