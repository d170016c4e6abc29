"""``%scratch sql QUERY`` / ``%%scratch sql``: DuckDB SQL over the spilled handles, as a DataFrame."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .._args import HelpShown, split_first
from ._base import Command, call_tool, need_pandas

HELP = """usage: %scratch sql [--max-rows N] QUERY
       %%scratch sql [--max-rows N]      (the cell is the query)

DuckDB SQL over your spills, in a read-only sandbox: every JSON/JSONL handle is a relation named
by its handle (an object is one row, an array of objects one row per object; nested values are
structs and lists: use UNNEST and dot access), a text handle is (line_no, line), and scratch_notes
holds your notes. The rest of the line is the query, as typed. Returns a pandas DataFrame (at most
--max-rows rows, default 200), charged to the budget.

example: df = %scratch sql SELECT status, count(*) AS n FROM cell_3_ab12 GROUP BY 1
"""


def _parse(text: str) -> tuple[str, int | None]:
    first, rest = split_first(text)
    if first in ("-h", "--help"):
        print(HELP)
        raise HelpShown
    if first == "--max-rows":
        count, rest = split_first(rest)
        if not count.isdigit():
            raise UsageError(f"%scratch sql: --max-rows needs a number, not {count!r}")
        return rest, int(count)
    return text.strip(), None


def run(session: Any, text: str, cell: str | None) -> Any:
    query, max_rows = _parse(text)
    if cell is not None:
        query = f"{query}\n{cell}".strip()
    if not query:
        raise UsageError("%scratch sql: give a query, e.g. %scratch sql SELECT count(*) FROM <handle>")
    pd = need_pandas("sql")
    result = call_tool(session, "sql", "sql", {"query": query, "max_rows": max_rows})
    rows = list(result.data or [])
    frame = pd.DataFrame(rows, columns=result.meta.get("columns") or None)
    return session.mark_own(frame)


COMMAND = Command("sql", "sql QUERY", "SQL over the spills, as a DataFrame", run, cell_form=True)
