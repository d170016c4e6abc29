"""Tab completion for ``%scratch``: subcommands, then what each one's parser takes (handles, note
keys, its own options, an option's choices, model names), and nothing of Python's.

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


def _parser(name: str) -> Any:
    """The argparse parser of subcommand ``name`` (None for ``sql`` and ``write``, parsed by hand)."""
    from . import commands

    module = getattr(commands, f"cmd_{name}", None)
    return getattr(module, "PARSER", None)


def _options(parser: Any) -> dict[str, Any]:
    """Each option string of ``parser`` and its action (``-n`` and ``--lines`` both)."""
    return {flag: action for action in parser._actions for flag in action.option_strings}


def _takes_value(action: Any) -> bool:
    return action is not None and action.nargs != 0


def _values(action: Any) -> list[str]:
    """What may follow an option that takes a value: its choices, models, formats, else nothing."""
    if "--model" in action.option_strings:
        return _models()
    if "--to" in action.option_strings:
        return list(_FORMATS)
    return [str(c) for c in action.choices or ()]


def _first(session: ScratchSession, completes: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for kind in completes:
        out += _names(session, kind) if kind in ("handle", "key", "handle|key") else [kind]
    return out


def _cell_forms() -> list[str]:
    from .commands import COMMANDS

    return [*(name for name, c in COMMANDS.items() if c.cell_form), "--name", "--tool", "--force", "--help"]


def completions(session: ScratchSession, text_until_cursor: str, symbol: str = "") -> list[str]:
    """What may come next at the cursor (IPython keeps those that start with what is typed), from
    the subcommand's own parser: its options, the values an option takes, handles or note keys
    where its arguments are those; never Python's names."""
    from .commands import COMMANDS

    line = text_until_cursor.rpartition("\n")[2]
    cell = line.lstrip().startswith("%%scratch")
    done, current = words_before(line, symbol)
    if not done:
        return _cell_forms() if cell else [*COMMANDS, "--help"]
    command = COMMANDS.get(done[0])
    if command is None:
        if cell and done[-1] in ("--tool", "--name"):
            return []
        return ["--name", "--tool", "--force", "--help"] if cell and done[0].startswith("-") else []
    if done[0] == "sql":  # a relation may come anywhere in a query
        return relations(session) if not current.startswith("-") else ["--limit", "--all", "--as-agent", "--help"]
    parser = _parser(done[0])
    if parser is None:  # (write: KEY VALUE, and --ttl)
        return ["--ttl", "--help"] if current.startswith("-") else []
    options = _options(parser)
    previous = options.get(done[-1])
    if len(done) > 1 and _takes_value(previous):
        return _values(previous)
    if current.startswith("-"):
        return list(options)
    positional = [a for a in parser._actions if not a.option_strings]
    taken = _positionals_done(done[1:], options)
    if taken == 0:
        return [w for w in _first(session, command.completes) if not w.startswith("-")] or _first_choices(positional)
    if taken < len(positional):
        return [str(c) for c in positional[taken].choices or ()]
    return [flag for flag in options if flag.startswith("--")]  # every argument given: the options


def _first_choices(positional: list[Any]) -> list[str]:
    return [str(c) for c in (positional[0].choices or ())] if positional else []


def _positionals_done(words: list[str], options: dict[str, Any]) -> int:
    """How many positional arguments ``words`` (after the subcommand) hold."""
    count, skip = 0, False
    for word in words:
        if skip:
            skip = False
        elif word in options:
            skip = _takes_value(options[word])
        elif not word.startswith("-"):
            count += 1
    return count


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
        self._args_matcher: Any = None

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
            self._args_matcher = self._magic_matcher()
            completer.custom_matchers.append(self._args_matcher)

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

    def _magic_matcher(self) -> Any:
        """The arguments of a ``%scratch`` line: ours alone. IPython's own matchers offered Python's
        keywords and builtins there (``%scratch head H -`` offered ``-n``? no: ``def``, ``abs`` …)."""
        from IPython.core.completer import SimpleCompletion, context_matcher

        @context_matcher()
        def scratch_args(context: Any) -> dict[str, Any]:
            line = context.text_until_cursor.rpartition("\n")[2]
            words = line.split()
            typed = words if line[-1:].isspace() else words[:-1]  # (the word being typed is not the magic)
            if not any(w in _KEYS for w in typed):
                return {"completions": [], "suppress": False}
            if in_sql_cell(context.full_text) and "\n" in context.text_until_cursor:
                return {"completions": [], "suppress": False}  # (the query's body: the sql matcher's)
            token = context.token
            found = [c for c in completions(self.session, context.text_until_cursor, token) if c.startswith(token)]
            # nothing of ours fits (a number, a pattern): the word as typed, so that Tab does nothing
            # (IPython lets a matcher silence the others only when it offers something)
            return {"completions": [SimpleCompletion(c, type="scratch") for c in found or [token]], "suppress": True}

        return scratch_args

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
        for matcher in (self._matcher, self._args_matcher):
            if isinstance(matchers, list) and matcher in matchers:
                matchers.remove(matcher)
        self._matcher = self._args_matcher = None
