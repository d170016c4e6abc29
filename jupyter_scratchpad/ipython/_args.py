"""Argument handling for ``%scratch``: a forgiving tokenizer, parsers that raise ``UsageError``.

>>> split_args('h1 "some pattern" -C 2')
['h1', 'some pattern', '-C', '2']
>>> split_args(r'h1 \\d+ a["dotted.key"]')
['h1', '\\\\d+', 'a["dotted.key"]']
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from IPython.core.error import UsageError

from ..explore._base import close_handles
from ._params import NAMESPACE, expand_word

__all__ = [
    "AGENT_HELP",
    "HelpShown",
    "ScratchArgumentParser",
    "UnbalancedQuote",
    "close_handles",
    "close_match_hint",
    "comment_at",
    "split_args",
    "split_first",
    "strip_comment",
    "suggestion_as_magic",
]

_QUOTES = ("'", '"')
_POSITIONAL = re.compile(r"#\d+(?!\w)")  # DuckDB's #1 (the first column), not a comment


def comment_at(text: str) -> int | None:
    """Where a trailing comment starts in ``text``, or None: at a word that starts with an unquoted
    ``#``, as in a shell (``list   # a DataFrame``). ``#`` inside a word (``a#b``), in quotes
    (``"#tag"``) or followed by digits alone (DuckDB's positional column ``#1``) is kept; after an
    unclosed quote nothing is a comment.

    >>> comment_at("list   # a DataFrame")
    7
    >>> comment_at('grep H "#tag" a#b'), comment_at("sql SELECT #1 FROM t ORDER BY #2")
    (None, None)
    """
    quote: str | None = None
    for i, ch in enumerate(text):
        if quote is not None:
            if ch == quote:
                quote = None
        elif ch in _QUOTES:
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()) and not _POSITIONAL.match(text, i):
            return i
    return None


def strip_comment(text: str) -> str:
    """``text`` without its trailing ``# comment`` (see ``comment_at``): what every subcommand is
    given, so each one takes a comment the same way."""
    at = comment_at(text)
    return text if at is None else text[:at].rstrip()


def split_args(text: str) -> list[str]:
    """Split on whitespace outside quotes; keep backslashes; strip only quotes that wrap a whole word.
    A trailing comment (``# ...``, see ``comment_at``) is left out (quote a word that starts with
    ``#``: ``"#tag"``).

    Regexes (``\\d+``) and paths with quoted keys (``a["b.c"]``) survive as typed, while
    ``"two words"`` is one argument.
    """
    text = strip_comment(text)
    words: list[str] = []
    current: list[str] = []
    quote: str | None = None
    started = False
    quoted_at = 0
    for i, ch in enumerate(text):
        if quote is not None:
            current.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch.isspace():
            if started:
                words.append(_unwrap("".join(current)))
                current, started = [], False
            continue
        started = True
        current.append(ch)
        if ch in _QUOTES:
            quote, quoted_at = ch, i
    if quote is not None:
        raise UnbalancedQuote(quote, "".join(current), len(current) - (len(text) - quoted_at))
    if started:
        words.append(_unwrap("".join(current)))
    return words


class UnbalancedQuote(UsageError):
    """A quote in the arguments that is never closed; ``explained(prog)`` says how to quote."""

    def __init__(self, quote: str, rest: str, at: int) -> None:
        self.quote = quote
        self.word = rest.split(None, 1)[0] if at > 0 else rest  # (a quote inside a word: that word)
        self.inside = at > 0
        super().__init__(self.explained())

    def explained(self, prog: str = "%scratch") -> str:
        q, word = self.quote, self.word if len(self.word) <= 60 else self.word[:60] + "…"
        if not self.inside:
            return f"{prog}: unbalanced {q} quote: close the {q} that opens {word}"
        other, kind = ('"', "double") if q == "'" else ("'", "single")
        return (
            f"{prog}: unbalanced {q} quote in {word}: a word that holds {q} goes in {kind} quotes, {other}{word}{other}"
        )


def _unwrap(word: str) -> str:
    if len(word) >= 2 and word[0] in _QUOTES and word[-1] == word[0] and word[0] not in word[1:-1]:
        return word[1:-1]
    return word


def split_first(text: str) -> tuple[str, str]:
    """``(first word, the rest verbatim)``: for commands whose last argument is free text."""
    stripped = text.strip()
    if not stripped:
        return "", ""
    if stripped[0] in _QUOTES:
        end = stripped.find(stripped[0], 1)
        if end < 0:
            raise UsageError(f"unbalanced {stripped[0]} quote in: {stripped}")
        return stripped[1:end], stripped[end + 1 :].strip()
    parts = stripped.split(None, 1)
    return parts[0], parts[1].strip() if len(parts) > 1 else ""


AGENT_HELP = (
    "read as the model would: apply its per-call cap and charge its context budget (default: read as you, not charged)"
)


def _lower(word: str) -> str:
    return word.lower()


class HelpShown(Exception):
    """``--help`` printed the help; the command does nothing else."""


class ScratchArgumentParser(argparse.ArgumentParser):
    """An argparse parser for one subcommand that raises ``UsageError`` instead of exiting."""

    def __init__(self, command: str, description: str, epilog: str | None = None, prog: str | None = None) -> None:
        super().__init__(
            prog=prog or f"%scratch {command}",
            description=description,
            epilog=epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            add_help=True,
            allow_abbrev=False,
        )
        self.command = command

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """As argparse's; a word among lower-case ``choices`` is read in any case (``auto OFF``)."""
        choices = kwargs.get("choices")
        if (
            choices is not None
            and "type" not in kwargs
            and all(isinstance(c, str) and c == c.lower() for c in choices)
        ):
            kwargs["type"] = _lower
        return super().add_argument(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status:
            raise UsageError(f"{self.prog}: {message or 'bad arguments'}")
        raise HelpShown

    def parse(self, text: str) -> argparse.Namespace:
        """Parse ``text``; each ``{{name}}`` in a word is the notebook variable's ``str``."""
        namespace = NAMESPACE.get()
        try:
            typed = split_args(text)
        except UnbalancedQuote as exc:
            raise UsageError(exc.explained(self.prog)) from None
        words = [expand_word(w, namespace, self.command) for w in typed]
        try:
            return self.parse_args(words)
        except UsageError as exc:
            said = str(exc)
            hint = self._dash_hint(said, words)
            if hint:
                raise UsageError(said.replace(" (see ", f" ({hint}) (see ", 1)) from None
            raise

    def _dash_hint(self, said: str, words: list[str]) -> str:
        """What to say of a word that starts with ``-`` that argparse refused: the flag it is
        close to (``--frce``: did you mean --force?), else how a value that starts with ``-`` is
        passed to this command (after ``--``; never for a command that takes no value)."""
        dashed = [w for w in words if w.startswith("-") and w not in ("-h", "--help")]
        if not dashed or not ("arguments are required" in said or "unrecognized arguments" in said):
            return ""
        if "unrecognized arguments: " in said:
            unknown = said.split("unrecognized arguments: ", 1)[1].split(" (see ", 1)[0].split()
            flags = [o for o in self._option_string_actions if o.startswith("--") and o != "--help"]
            for word in unknown:
                if word.startswith("--"):
                    close = difflib.get_close_matches(word.split("=", 1)[0], flags, n=2, cutoff=0.6)
                    if close:
                        return f"did you mean {' or '.join(close)}?"
        metavars = [str(a.metavar or a.dest).upper() for a in self._positionals._group_actions]
        if not metavars:
            return ""
        # a quoted '-x' is still an option to argparse: the value goes after --
        return f"a value that starts with '-' goes after --: {' '.join([self.prog, *metavars[:-1]])} -- -x"


def for_a_person(message: str) -> str:
    """A core message worded for a model, with the command a person runs in a notebook instead."""
    return message.replace("list live handles with scratch_list", "%scratch list shows the live handles")


def close_match_hint(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` when one of ``choices`` is close to ``word``, else ``""``."""
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.5)
    if not close:
        return ""
    return f"; did you mean {' or '.join(repr(c) for c in close)}?"


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if text and all(c.isalnum() or c in "_-.$[]*,:/" for c in text):
        return text
    return shlex.quote(text)


# How a tool call suggested by the core is typed as a %scratch command: (subcommand, positional
# argument names, {tool argument: option}).
_MAGIC_FORMS: dict[str, tuple[str, Sequence[str], dict[str, str]]] = {
    "head": ("head", ("handle",), {"lines": "-n"}),
    "tail": ("tail", ("handle",), {"lines": "-n"}),
    "slice": ("slice", ("handle", "start", "end"), {}),
    "grep": ("grep", ("handle", "pattern"), {"context": "-C", "max_matches": "--max"}),
    "schema": ("schema", ("handle", "path"), {"max_depth": "--depth"}),
    "item_schema": ("items", ("handle", "path"), {"offset": "--offset", "limit": "--limit"}),
    "get_in": ("get", ("handle", "path"), {"offset": "--offset", "limit": "--limit"}),
    "iterate_over": ("iter", ("handle", "path"), {"fields": "--fields", "offset": "--offset", "limit": "--limit"}),
    "read": ("get", ("handle",), {}),
    "scratch_list": ("list", (), {"kind": "--kind"}),
    "scratch_read": ("read", ("key",), {}),
    "scratch_write": ("write", ("key", "value"), {"ttl_s": "--ttl"}),  # (typed by _write_as_magic)
    "scratch_delete": ("delete", ("key", "handle"), {}),
}
# A line a person types ends at a trailing # comment, and its value is parsed as JSON when it can
# be: a value that does not type back as itself goes in JSON; one too long for a line, in a cell.
_LINE_VALUE_CHARS = 200


def suggestion_as_magic(suggestion: dict[str, Any]) -> str:
    """A core suggestion (a runnable tool call) as the ``%scratch`` command that does the same."""
    tool = suggestion.get("tool")
    args = dict(suggestion.get("arguments") or {})
    if tool == "sql" and "query" in args:
        return f"%scratch sql {args['query']}"
    if tool == "scratch_write" and "key" in args and "value" in args:
        return _write_as_magic(args)
    if tool == "get_in" and args.pop("chars", False):
        # a window of a long string's characters, for a model's cap: a person reads it whole
        args.pop("offset", None)
        args.pop("limit", None)
    form = _MAGIC_FORMS.get(str(tool))
    if form is None:
        return str(suggestion.get("call") or tool)
    sub, positional, options = form
    words = [f"%scratch {sub}"]
    for name in positional:
        if name in args:
            words.append(_quote(args.pop(name)))
    if tool == "grep" and args.pop("ignore_case", False):
        words.append("-i")
    for name, value in args.items():
        flag = options.get(name)
        if flag is None:
            continue
        if isinstance(value, list):
            value = ",".join(map(str, value))
        words.append(f"{flag} {_quote(value)}")
    return " ".join(words)


def _write_as_magic(args: dict[str, Any]) -> str:
    """``scratch_write(key, value, ttl_s)`` as typed: ``%scratch write [--ttl S] KEY VALUE``, the
    value as it reads back (``_typed_value``), or the cell form when it does not fit a line."""
    ttl = args.get("ttl_s")
    head = "write" + (f" --ttl {_quote(ttl)}" if ttl is not None else "") + f" {_typed_key(str(args['key']))}"
    typed = _typed_value(args["value"])
    if typed is None:
        return f"%%scratch {head} (the cell is the value)"
    return f"%scratch {head} {typed}"


def _typed_key(key: str) -> str:
    """KEY as ``%scratch write`` reads its first word: quoted (with a quote it does not hold)
    when it has a space or starts with a quote."""
    if key and not any(c.isspace() for c in key) and key[0] not in _QUOTES:
        return key
    for q in _QUOTES[::-1]:
        if q not in key:
            return f"{q}{key}{q}"
    return key


def _typed_value(value: Any) -> str | None:
    """How ``%scratch write``'s VALUE is typed so that it is saved as ``value``: a string as it
    is when it would not parse as JSON (nor hold a comment, nor a ``{{name}}``), else its JSON;
    None when that does not fit on a line."""
    import json

    if isinstance(value, str) and value and value == value.strip() and "\n" not in value:
        plain = comment_at(value) is None and "{{" not in value
        try:
            json.loads(value)
        except ValueError:
            if plain and len(value) <= _LINE_VALUE_CHARS:
                return value
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return text if "\n" not in text and len(text) <= _LINE_VALUE_CHARS else None
