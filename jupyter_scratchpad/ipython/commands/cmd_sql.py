"""``%scratch sql [--limit N | --all] [--as-agent] QUERY`` / ``%%scratch sql``: SQL over the spills, a DataFrame."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from ..._person import SQL_DF_MAX_ROWS
from ...errors import ScratchpadError
from .._args import HelpShown, split_first
from .._params import NAMESPACE, bind_sql
from ._base import Command, call_tool, missing_handle, need_pandas

HELP = f"""usage: %scratch sql [--limit N | --all] [--as-agent [--max-rows N]] QUERY
       %%scratch sql [options]      (the cell is the query)

DuckDB SQL over your spills, in a read-only sandbox (one SELECT-like statement): every JSON/JSONL
handle is a relation named by its handle (an object is one row, an array of objects one row per
object), and each array of records inside a document is a relation of its own: h.items is one row
per element of $.items, h.data__results of $.data.results (nested values are structs: dot access).
A text handle is (line_no, line), and scratch_notes holds your notes. The rest of the line is the
query, exactly as typed, but for a trailing # comment (DuckDB's #1, a column number, stays; -- too).

Returns every row as a pandas DataFrame, read as you: nothing is charged to the agent's budget.
  --limit N     keep the first N rows (says so when there were more)
  --all         no bound; without it a result of more than {SQL_DF_MAX_ROWS:,} rows is refused
  --as-agent    run it as the model's `sql` tool: its row cap (--max-rows, default 200), charged;
                returns the tool's result, shown exactly as the model sees it (its text and
                footer; .data holds the rows), not a DataFrame
Python values: :name is bound as a DuckDB parameter (a value, never pasted text), and {{{{name}}}}
is replaced by the variable's text (a relation name):
  %scratch sql SELECT * FROM {{{{h}}}} WHERE restarts > :at_least

example: df = %scratch sql SELECT status.phase, count(*) AS n FROM cell_3_ab12.items GROUP BY 1
"""

_COUNT_OPTIONS = ("--limit", "--max-rows")


@dataclass
class _Options:
    query: str = ""
    limit: int | None = None
    all_rows: bool = False
    as_agent: bool = False
    max_rows: int | None = None


def _parse(text: str) -> _Options:
    options = _Options()
    rest = text.strip()
    while rest.startswith("-"):
        word, after = split_first(rest)
        if word in ("-h", "--help"):
            print(HELP)
            raise HelpShown
        if word in _COUNT_OPTIONS:
            count, after = split_first(after)
            if not count.isdigit():
                raise UsageError(f"%scratch sql: {word} needs a number, not {count!r}")
            setattr(options, "limit" if word == "--limit" else "max_rows", int(count))
        elif word == "--all":
            options.all_rows = True
        elif word == "--as-agent":
            options.as_agent = True
        else:
            break  # a query may start with "-" (a comment): the rest is the query
        rest = after
    options.query = rest
    return options


def _note(text: str) -> None:
    print(f"%scratch sql: {text}")


def _as_agent(session: Any, options: _Options) -> Any:
    """The model's own ``sql`` call: its ``ToolResult``, shown as the model is shown it (the text
    and its footer), charged; ``.data`` holds the rows."""
    if options.limit is not None or options.all_rows:
        raise UsageError("%scratch sql: --limit and --all are for reading as you; --as-agent takes --max-rows")
    result = call_tool(session, "sql", "sql", {"query": options.query, "max_rows": options.max_rows}, True)
    if result.meta.get("truncated"):
        rows = result.meta.get("rows", len(result.data or []))
        _note(
            f"cut to the first {rows:,} rows, as the model sees it ({result.tokens:,} tokens charged); "
            "without --as-agent you get every row as a DataFrame"
        )
    return result


_SINGLE_BRACES = re.compile(r"(?<!\{)\{([A-Za-z_]\w*)\}(?!\})")


def _brace_hint(query: str) -> str | None:
    """How to put in a variable written ``{h}`` (the query is passed as typed; ``{{h}}`` is ours)."""
    namespace = NAMESPACE.get() or {}
    names = [m.group(1) for m in _SINGLE_BRACES.finditer(query) if m.group(1) in namespace]
    if not names:
        return None
    return f"to put the variable {names[0]}'s text in the query, write {{{{{names[0]}}}}}"


_NO_TABLE = re.compile(r'Table with name "?([A-Za-z0-9_]+)')
_HANDLE_LIKE = re.compile(r"[a-z0-9_]+_[0-9a-f]{12}")  # (as spills name their handles: cell_3_5be1c0b7d3e2)


def _missing_relation(session: Any, message: str) -> str | None:
    """The handle a failed query names that is not live (expired, or spilled before a restart)."""
    found = _NO_TABLE.search(message)
    if not found:
        return None
    name = found.group(1)
    try:
        expired = session.store.expired_entry(session.pad.scope, "handle", name) is not None
    except Exception:
        expired = False
    return name if expired or _HANDLE_LIKE.fullmatch(name) else None


def run(session: Any, text: str, cell: str | None) -> Any:
    options = _parse(text)
    if cell is not None:
        options.query = f"{options.query}\n{cell}".strip()
    if not options.query:
        raise UsageError("%scratch sql: give a query, e.g. %scratch sql SELECT count(*) FROM <handle>")
    query, params = bind_sql(options.query, NAMESPACE.get(), "sql")
    options.query = query
    if options.as_agent:
        if params:
            raise UsageError(
                "%scratch sql: a model's query has no parameters; write the values in the query to run it --as-agent"
            )
        return session.mark_own(_as_agent(session, options))
    need_pandas("sql")
    if options.max_rows is not None and options.limit is None:
        options.limit = options.max_rows  # --max-rows, read as you, is a --limit
    if options.limit is not None and options.all_rows:
        raise UsageError("%scratch sql: --limit N or --all, not both")
    try:
        frame = session.pad.sql_df(
            query, options.limit, params=params or None, max_rows=None if options.all_rows else SQL_DF_MAX_ROWS
        )
    except ScratchpadError as exc:
        rows_over = getattr(exc, "rows_over", None)
        if rows_over is not None:
            raise UsageError(
                f"%scratch sql: the query returns more than {rows_over:,} rows; add --limit N (or "
                "a LIMIT) for some, or --all for every one"
            ) from None
        gone = _missing_relation(session, exc.message)
        if gone:  # an expired handle, or one of a kernel before a restart: said as every subcommand says it
            exc.message = f"{missing_handle(session, gone)} (DuckDB: no relation {gone})"
        hint = _brace_hint(options.query)
        if hint:  # {h}, IPython's way elsewhere, reached DuckDB as it was written
            exc.message = f"{exc.message} ({hint})"
        raise
    if frame.attrs.get("truncated"):
        _note(f"the first {len(frame):,} rows (--limit {options.limit:,}); the query has more: --all for every row")
    return session.mark_own(frame)


COMMAND = Command(
    "sql",
    "sql QUERY",
    "SQL over the spills, as a DataFrame",
    run,
    cell_form=True,
    completes=("--limit", "--all", "--as-agent", "SELECT", "DESCRIBE", "SUMMARIZE"),
)
