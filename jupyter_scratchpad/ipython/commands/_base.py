"""What every subcommand shares: its description, one core call, and errors as one-line ``UsageError``s."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ...errors import InvalidArgumentError, NotFoundError
from ...explore._base import _ago
from ...tools import TOOL_NAMES, ToolResult
from .._args import _MAGIC_FORMS, close_handles, for_a_person, suggestion_as_magic
from .._session import REMOVED, SWITCH, UNLOAD, dropped_with

if TYPE_CHECKING:
    from .._session import ScratchSession

__all__ = ["Command", "call_tool", "error_line", "missing_handle", "need_pandas", "require_stub", "tool_error"]

Runner = Callable[["ScratchSession", str, "str | None"], Any]


@dataclass(frozen=True)
class Command:
    """One subcommand: ``run(session, argument_text, cell_or_None)``."""

    name: str
    usage: str
    summary: str
    run: Runner
    cell_form: bool = False  # ``%%scratch NAME ...`` makes sense (the cell is the last argument)
    # What tab completion offers for the first argument: "handle", "key", "handle|key", or words.
    completes: tuple[str, ...] = ()


def tool_error(command: str, result: ToolResult) -> UsageError:
    """A refused tool call as one line: what went wrong, a close match, what to run instead."""
    return UsageError(error_line(command, result.error or {}))


def error_line(command: str, err: dict[str, Any]) -> str:
    """An error dict (a tool's, or a core error's context) as one line naming ``%scratch`` commands."""
    message = str(err.get("message") or err.get("error") or "failed")
    # The core words its errors for a model; in a notebook the command to run is the magic's.
    message = _flags_named(command, for_a_person(message))
    tool, said, rest = message.partition(": ")
    if said and tool in TOOL_NAMES:  # ("%scratch grep: grep: 'max_matches' ..."): the command says which
        message = rest
    parts = [f"%scratch {command}: {message}"]
    close = err.get("close_matches") or []
    suggestions = err.get("suggestions") or []
    if close:
        parts.append(f"did you mean {' or '.join(map(str, close[:3]))}?")
    keys = err.get("available_keys")
    if keys:
        shown = ", ".join(map(str, keys[:12])) + (" …" if len(keys) > 12 else "")
        parts.append(f"keys there: {shown}")
    relations = err.get("relations")
    if relations and "(relations: " not in message:  # (the sql tool's message may list them already)
        parts.append("relations: " + ", ".join(map(str, relations[:12])) + (" …" if len(relations) > 12 else ""))
    if err.get("array_length") is not None:
        parts.append(f"the array there has {err['array_length']:,} items")
    tries = list(dict.fromkeys(suggestion_as_magic(s) for s in suggestions if isinstance(s, dict)))[:2]  # each once
    if tries:
        parts.append("try: " + "  or  ".join(tries))
    # (a question ends its part: "did you mean h? try: …", not "h?; try: …")
    return "".join(p + ("" if i == len(parts) - 1 else " " if p.endswith("?") else "; ") for i, p in enumerate(parts))


def _flags_named(command: str, message: str) -> str:
    """The core names its arguments (``'max_depth' must be …``); a notebook user typed the magic's
    flags (``--depth``): say those."""
    for _tool, (sub, _positional, options) in _MAGIC_FORMS.items():
        if sub != command:
            continue
        for name, flag in options.items():
            message = message.replace(f"'{name}'", flag)
    return message.replace("pass overwrite=True (--overwrite)", "pass --overwrite")


def call_tool(
    session: ScratchSession, command: str, tool: str, arguments: dict[str, Any], as_agent: bool = False
) -> ToolResult:
    """``pad.call_tool``: for the person (not charged), or ``as_agent``; a refusal is a ``UsageError``."""
    args = {k: v for k, v in arguments.items() if v is not None}
    result = session.pad.call_tool(tool, args, charge=as_agent)
    if not result.ok:
        err = dict(result.error or {})
        if err.get("error") in ("unknown_handle", "expired_handle") and isinstance(args.get("handle"), str):
            err["message"] = missing_handle(session, args["handle"])  # (the same words in every subcommand)
        raise UsageError(error_line(command, err))
    if not as_agent:  # (--as-agent: the text exactly as the model is shown it)
        text = _next_as_magic(_footer_flags(command, result.text))
        if text != result.text:
            result = dataclasses.replace(result, text=text)
    return result


_CALL = re.compile(r"(?<![\w.])([a-z_]+)\(")
_ARGUMENT = re.compile(r"\s*([A-Za-z_]\w*)=")
_SCHEMA_PROSE = ("more nodes: lower max_depth, or item_schema / get_in a path",
                 "more nodes: lower --depth, or %scratch items / %scratch get a path")


def _next_as_magic(text: str) -> str:
    """A read's ``next:`` line names tool calls (``item_schema(handle="h", path="$.items")``), as
    the model is shown it; typed in a notebook they are a NameError: the line names the
    ``%scratch`` commands that do the same (``%scratch items h $.items``)."""
    if "next: " not in text and _SCHEMA_PROSE[0] not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("next: "):
            lines[i] = calls_as_magic(line)
        elif line.endswith(_SCHEMA_PROSE[0]):
            lines[i] = line.replace(*_SCHEMA_PROSE)
    return "\n".join(lines)


def calls_as_magic(text: str) -> str:
    """Each tool call in ``text`` (as ``call_repr`` writes one: ``tool(a=1, b="x")``, each value
    JSON) as the ``%scratch`` command that does the same; a call with no such command stays."""
    out: list[str] = []
    pos = 0
    while (m := _CALL.search(text, pos)) is not None:
        parsed = _parse_call(text, m.end()) if m.group(1) in TOOL_NAMES else None
        if parsed is None:
            out.append(text[pos : m.end()])
            pos = m.end()
            continue
        arguments, end = parsed
        magic = suggestion_as_magic({"tool": m.group(1), "arguments": arguments})
        out.append(text[pos : m.start()])
        out.append(magic if magic.startswith("%") else text[m.start() : end])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _parse_call(text: str, at: int) -> tuple[dict[str, Any], int] | None:
    """The arguments of the call whose ``(`` ends before ``at`` and where its ``)`` ends; None
    when it is not one ``call_repr`` wrote."""
    decoder = json.JSONDecoder()
    arguments: dict[str, Any] = {}
    i = at
    if text.startswith(")", i):
        return arguments, i + 1
    while True:
        m = _ARGUMENT.match(text, i)
        if m is None:
            return None
        try:
            arguments[m.group(1)], i = decoder.raw_decode(text, m.end())
        except ValueError:
            return None
        if text.startswith(", ", i):
            i += 2
        elif text.startswith(")", i):
            return arguments, i + 1
        else:
            return None


def _footer_flags(command: str, text: str) -> str:
    """A read's footer names the tool's arguments (``(max_matches=2)``, ``next: offset=50``); a
    notebook user typed the magic's flags: the footer says those (``(--max 2)``, ``next: --offset 50``),
    and the calls it suggests as commands (``the next ones: %scratch sql SELECT …``, not ``sql(query=…)``)."""
    start = text.rfind("\n") + 1
    footer = text[start:]
    if not footer.startswith("--- "):
        return text
    for _tool, (sub, _positional, options) in _MAGIC_FORMS.items():
        if sub != command:
            continue
        for name, flag in options.items():
            footer = re.sub(rf"(?<![\w-]){name}=(?=[\w-])", f"{flag} ", footer)
    # a call it suggests (grep's "the next ones: sql(query=...)") as the command a person types
    return text[:start] + calls_as_magic(footer)


def _handles(session: ScratchSession) -> list[str]:
    return [e["handle"] for e in session.pad.entries("handle")]


def missing_handle(session: ScratchSession, handle: str) -> str:
    """Why ``handle`` is not live, in the same words whichever subcommand asked: expired (and
    when), or not here — and with the default temporary store, that a kernel restart took it."""
    store, pad = session.store, session.pad
    try:
        gone = store.expired_entry(pad.scope, "handle", handle)
    except Exception:  # (a closed store says so elsewhere)
        gone = None
    if gone is not None:
        ago = max(0.0, store.now() - float(gone.expires_at or 0))
        return (
            f"{handle!r} expired {_ago(ago)} ago (its time to live ran out; ScratchMagics.ttl_s sets it for "
            "new spills) and is gone; spill the output again to read it"
        )
    keep = "set %config ScratchMagics.store_path = '~/scratchpad' to keep spills across reloads and restarts"
    how = dropped_with(handle)
    if how == UNLOAD:
        return (
            f"{handle!r} was spilled before jupyter_scratchpad was unloaded in this kernel (%unload_ext or "
            "%reload_ext), and went with the temporary store it had (unloading deletes it); spill the output "
            f"again to read it ({keep})"
        )
    if how == REMOVED:
        return (
            f"no live handle {handle!r}; if it was spilled before the store's directory was removed while the "
            "kernel ran (by a cleaner of temporary files?), it went with it: spill the output again to read it"
        )
    if how == SWITCH:
        return (
            f"{handle!r} was in the temporary store that a change of ScratchMagics.store_path (or store_url) "
            "replaced, and went with it (the change deletes it); spill the output again to read it"
        )
    said = f"no live handle {handle!r} in this run (expired, deleted, or never spilled here)"
    if session.magics.store_path is None and not getattr(store, "shared", False):
        said += (
            "; if it was spilled before the kernel restarted, it went with the old kernel's temporary "
            "store (set %config ScratchMagics.store_path = '~/scratchpad' to keep spills across restarts)"
        )
    return said


def unknown_handle(session: ScratchSession, command: str, handle: str) -> UsageError:
    close = close_handles(handle, _handles(session))
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return UsageError(f"%scratch {command}: {missing_handle(session, handle)}{hint} (%scratch list shows them)")


def require_stub(session: ScratchSession, command: str, handle: str) -> dict[str, Any]:
    """The stub of a live handle, or a ``UsageError`` naming close matches."""
    try:
        return session.pad.stub(handle)
    except NotFoundError:
        raise unknown_handle(session, command, handle) from None
    except InvalidArgumentError as exc:
        raise UsageError(error_line(command, {"message": exc.message})) from None


def need_pandas(command: str) -> Any:
    try:
        import pandas
    except ImportError:
        raise UsageError(
            f"%scratch {command} returns a pandas DataFrame: pip install 'jupyter-scratchpad[jupyter]'"
        ) from None
    return pandas
