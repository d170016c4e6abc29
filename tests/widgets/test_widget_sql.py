"""The SQL tab: relations and their columns, paged results, the sandbox's refusals."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.widgets import Explorer
from jupyter_scratchpad.widgets._sql_tab import count_query, page_query


def test_relations_list_every_handle_and_the_notes(
    make_explorer: Callable[..., Explorer], pods_handle: str, events_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.sql
    names = [value for _, value in tab.relations.options]
    assert set(names) == {pods_handle, events_handle, "scratch_notes"}
    assert tab.relations.value == pods_handle  # the explored entry is pre-selected
    assert tab.query.value == f'SELECT * FROM "{pods_handle}"'
    assert explorer.results == []  # listing relations costs nothing; columns are asked for


def test_columns_are_described_once_per_relation(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, events_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.sql
    tab.describe_button.click()
    assert explorer.results[-1].arguments["query"] == f'DESCRIBE "{pods_handle}"'
    assert ">items<" in tab.columns.value and "STRUCT" in tab.columns.value
    tab.relations.value = events_handle
    assert "press Columns" in tab.columns.value
    tab.describe_button.click()
    assert ">line_no<" in tab.columns.value and ">line<" in tab.columns.value
    calls, used = len(explorer.results), pad.budget.used
    tab.relations.value = pods_handle  # cached: shown again for free
    tab.describe_button.click()
    assert ">items<" in tab.columns.value
    assert len(explorer.results) == calls and pad.budget.used == used


def test_query_results_are_paged(make_explorer: Callable[..., Explorer], pods_handle: str, pods: dict[str, Any]) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.sql
    tab.query.value = (f"SELECT p.metadata.name AS name, p.status.phase AS phase\n"
                       f"FROM (SELECT unnest(items) AS p FROM {pods_handle}) ORDER BY name  -- all pods;")
    tab.page_rows.value = 30
    tab.run_button.click()
    names = sorted(p["metadata"]["name"] for p in pods["items"])
    assert tab.total == len(names)
    assert "rows 1-30 of 4,000 · page 1 of 134" in tab.status.value
    body = tab.view.body.value
    assert body.count("<tr>") == 31 and names[0] in body and names[30] not in body
    assert tab.prev_button.disabled and not tab.next_button.disabled
    # Each page is one call that returns one page: the count, then the page.
    assert [r.arguments.get("max_rows") for r in explorer.results] == [None, 30]
    assert len(explorer.results[-1].data) == 30

    tab.next_button.click()
    assert names[30] in tab.view.body.value and "page 2 of 134" in tab.status.value
    tab.prev_button.click()
    assert names[0] in tab.view.body.value


def test_a_statement_that_cannot_be_wrapped_runs_as_typed(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.sql
    tab.query.value = "SELECT 1 AS a; SELECT 2 AS b"
    tab.run_button.click()
    # The wrapped count is refused quietly; the statement as typed shows its own result or error.
    assert explorer.results[0].ok is False and explorer.results[1].arguments["query"] == tab.query.value
    assert tab.prev_button.disabled and tab.next_button.disabled


def test_sandbox_and_syntax_errors_are_shown_with_suggestions(
    make_explorer: Callable[..., Explorer], pods_handle: str,
) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.sql
    tab.query.value = "SELECT * FROM read_text('/etc/passwd')"
    tab.run_button.click()
    message = html.unescape(explorer.notice.message.value)
    assert "sql_forbidden" in message and "sandbox" in message
    assert "root:" not in tab.view.body.value
    tab.query.value = "SELEC nonsense"
    tab.run_button.click()
    assert "sql_error" in explorer.notice.message.value
    describe = [b for b in explorer.notice.buttons if b.suggestion["tool"] == "sql"]
    assert describe and not describe[0].disabled
    describe[0].click()
    assert tab.query.value.startswith("DESCRIBE ")


def test_wrapping_keeps_comments_and_semicolons_harmless(pad: Scratchpad) -> None:
    typed = "SELECT * FROM range(95) AS t(i) -- every i;\n ;; "
    counted = pad.call_tool("sql", {"query": count_query(typed)})
    assert counted.ok, counted.error
    assert counted.data == [{"n": 95}]
    page = pad.call_tool("sql", {"query": page_query(typed, 20, 80), "max_rows": 20})
    assert page.ok and [r["i"] for r in page.data] == list(range(80, 95))
