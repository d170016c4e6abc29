"""The ``%scratch`` subcommands: one module each, routed by ``COMMANDS``.

Each ``cmd_*.py`` defines ``COMMAND``: a name, a usage line, and ``run(session, text, cell)`` that
parses its arguments (``--help`` for each), makes one core call and returns or shows the result.
Errors become one-line ``UsageError``s; nothing of ours leaks a traceback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from traitlets import TraitError

from ...errors import ScratchpadError
from .._args import HelpShown, close_match_hint, split_first, strip_comment
from .._params import NAMESPACE
from . import (
    cmd_auto,
    cmd_budget,
    cmd_delete,
    cmd_df,
    cmd_explore,
    cmd_export,
    cmd_get,
    cmd_grep,
    cmd_head,
    cmd_items,
    cmd_iter,
    cmd_list,
    cmd_policy,
    cmd_read,
    cmd_replay,
    cmd_schema,
    cmd_show,
    cmd_slice,
    cmd_sql,
    cmd_tail,
    cmd_write,
)
from ._base import Command, error_line

if TYPE_CHECKING:
    from .._session import ScratchSession

__all__ = ["COMMANDS", "overview", "run_cell_magic", "run_line_magic"]

log = logging.getLogger("jupyter_scratchpad.ipython")

COMMANDS: dict[str, Command] = {
    m.COMMAND.name: m.COMMAND
    for m in (
        cmd_list,
        cmd_show,
        cmd_head,
        cmd_tail,
        cmd_slice,
        cmd_grep,
        cmd_schema,
        cmd_items,
        cmd_get,
        cmd_iter,
        cmd_sql,
        cmd_df,
        cmd_export,
        cmd_write,
        cmd_read,
        cmd_delete,
        cmd_budget,
        cmd_auto,
        cmd_explore,
        cmd_replay,
        cmd_policy,
    )
}

_HELP_WORDS = ("", "help", "-h", "--help")


def overview() -> str:
    """The list of subcommands (``%scratch`` or ``%scratch --help``)."""
    width = max(len(c.usage) for c in COMMANDS.values())
    lines = ["usage: %scratch SUBCOMMAND [ARGS]   (%scratch SUBCOMMAND --help for details)", ""]
    lines += [f"  {c.usage:<{width}}  {c.summary}" for c in COMMANDS.values()]
    lines += [
        "",
        "cell forms:",
        "  %%scratch [--name NAME] [--tool TOOL] [--force]   store the cell's output",
        "  %%scratch sql                                   the cell is the query",
        "  %%scratch write KEY                             the cell is the note's value",
        "",
        "Reads are yours: nothing is charged to the agent's budget unless --as-agent.",
        "Arguments are used as typed ({x} and $x are not expanded); {{name}} inserts a notebook",
        "variable's text, and in SQL :name binds it as a parameter.",
    ]
    return "\n".join(lines)


def _run(session: ScratchSession, command: Command, text: str, cell: str | None) -> Any:
    token = NAMESPACE.set(getattr(session.shell, "user_ns", None))
    try:
        return command.run(session, text, cell)
    except HelpShown:
        return None
    except UsageError:
        raise
    except ScratchpadError as exc:
        raise UsageError(error_line(command.name, {**exc.context, "message": exc.message})) from None
    except TraitError as exc:
        raise UsageError(f"%scratch {command.name}: {exc}") from None
    except Exception as exc:  # a bug of ours: one line here, the traceback in the kernel's log
        log.exception("%%scratch %s failed", command.name)
        raise UsageError(
            f"%scratch {command.name} failed: {type(exc).__name__}: {exc} (a bug in "
            "jupyter-scratchpad; the traceback is in the kernel log)"
        ) from None
    finally:
        NAMESPACE.reset(token)


# the command line's names for the same commands (`jupyter-scratchpad ls`, `rm`): a user of both types them here too
ALIASES = {"ls": "list", "rm": "delete"}


def _lookup(name: str) -> Command:
    command = COMMANDS.get(ALIASES.get(name, name))
    if command is None:
        hint = close_match_hint(name, COMMANDS)
        raise UsageError(f"%scratch: unknown subcommand {name!r}{hint} (%scratch --help lists them)")
    return command


def run_line_magic(session: ScratchSession, line: str) -> Any:
    # a trailing "# comment" is left out here, for every subcommand alike (free text too: a note's
    # value, a query; quote a word that starts with #)
    name, rest = split_first(strip_comment(line))
    if name in _HELP_WORDS:
        print(overview())
        return None
    return _run(session, _lookup(name), rest, None)


def run_cell_magic(session: ScratchSession, line: str, cell: str) -> Any:
    __tracebackhide__ = True  # the user's cell may fail: its traceback shows none of our frames
    line = strip_comment(line)  # (the magic's line; the cell is as typed)
    name, rest = split_first(line)
    if not name or name.startswith("-"):
        from .._capture import run_capture

        try:  # not _run: an exception of the user's own cell must propagate as it is
            return run_capture(session, line, cell)
        except HelpShown:
            return None
    command = _lookup(name)
    if not command.cell_form:
        forms = ", ".join(f"%%scratch {c.name}" for c in COMMANDS.values() if c.cell_form)
        raise UsageError(
            f"%%scratch {name} has no cell form (those are: {forms}, and %%scratch "
            f"[--name NAME] to store a cell's output); use %scratch {name} on one line"
        )
    return _run(session, command, rest, cell)
