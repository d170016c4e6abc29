"""Preview, Schema, Grep and Iterate, driven as a user would: set the inputs, click, read the output."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.widgets import Explorer
from jupyter_scratchpad.widgets._grep import parse_grep_windows


def _shown_lines(html_text: str) -> list[int]:
    """The line numbers of a numbered block, in the order shown."""
    text = re.sub(r"<[^>]+>", "", html_text)
    return [int(m.group(1)) for m in re.finditer(r"^[> ]\s*(\d+)  ", text, re.M)]


# -- Preview -----------------------------------------------------------------------------------


def test_head_next_prev_and_tail(make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.preview
    total = pad.entry(pods_handle).line_count
    assert tab.prev_button.disabled and tab.next_button.disabled  # nothing shown yet
    tab.lines.value = 40
    tab.head_button.click()
    assert _shown_lines(tab.view.body.value) == list(range(1, 41))
    assert f"lines 1-40 of {total:,}" in tab.view.caption.value
    assert tab.prev_button.disabled and not tab.next_button.disabled
    assert '&quot;kind&quot;: &quot;PodList&quot;' in tab.view.body.value

    tab.next_button.click()
    assert _shown_lines(tab.view.body.value) == list(range(41, 81))
    assert explorer.results[-1].tool == "slice" and explorer.results[-1].arguments["start"] == 41
    tab.prev_button.click()
    assert _shown_lines(tab.view.body.value) == list(range(1, 41))

    tab.tail_button.click()
    assert _shown_lines(tab.view.body.value) == list(range(total - 39, total + 1))
    assert tab.next_button.disabled and not tab.prev_button.disabled
    assert tab.start.value == total - 39


def test_range_shows_the_lines_asked_for(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.preview
    tab.start.value, tab.lines.value = 1000, 25
    tab.range_button.click()
    assert _shown_lines(tab.view.body.value) == list(range(1000, 1025))
    assert explorer.results[-1].arguments == {"handle": pods_handle, "start": 1000, "end": 1024}


# -- Schema ------------------------------------------------------------------------------------


def test_schema_offers_array_paths_to_schema_and_iterate(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.schema
    tab.schema_button.click()
    body = tab.view.body.value
    assert "$.items[*].metadata.annotations" in body  # on 1 item in 97: summarised over all items
    assert "array(4000 items)" in body
    assert "tokens:" not in body  # the footer's numbers live in the meter
    assert "$.items" in tab.path.options
    assert tab.path.value == "$.items"
    assert explorer.iterate.path.value == "$.items" and "$.items" in explorer.iterate.path.options


def test_item_schema_table_counts_presence(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.schema
    tab.path.value = "items"
    tab.items_button.click()
    body = tab.view.body.value
    assert "item_schema of $.items: all 4,000 items" in tab.view.caption.value
    assert re.search(r"metadata\.annotations\.deploy/revision</td><td[^>]*>string</td><td[^>]*>42/4,000", body)
    assert re.search(r"status\.phase</td><td[^>]*>string</td><td[^>]*>4,000/4,000", body)

    tab.offset.value, tab.limit.value = 100, 50
    tab.items_button.click()
    assert "items 100-149 of 4,000" in tab.view.caption.value
    assert explorer.results[-1].arguments == {"handle": explorer.handle, "path": "items", "offset": 100, "limit": 50}


def test_get_in_shows_the_value(make_explorer: Callable[..., Explorer], pods_handle: str, pods: dict[str, Any]) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.schema
    tab.path.value = "$.items[3].metadata.name"
    tab.get_button.click()
    assert pods["items"][3]["metadata"]["name"] in tab.view.body.value


# -- Grep --------------------------------------------------------------------------------------


def test_grep_pages_windows_without_new_calls(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, pods: dict[str, Any],
) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.grep
    tab.pattern.value, tab.context.value, tab.max_matches.value = '"Failed"', 1, 200
    tab.search_button.click()
    failed = sum(p["status"]["phase"] == "Failed" for p in pods["items"])
    result = explorer.results[-1]
    assert result.ok and result.data["total_matches"] == failed
    assert f"{failed:,} matching lines" in tab.view.caption.value
    assert tab.view.pages == -(-min(200, failed) // 10) and tab.view.slider.layout.display == "flex"
    first_page = _shown_lines(tab.view.body.value)
    matches = [m["line"] for m in result.data["matches"]]
    assert [n for n in first_page if n in matches] == matches[:10]
    assert tab.view.body.value.count("<span style") == 10  # the matching lines are highlighted

    used, calls = pad.budget.used, len(explorer.results)
    tab.view.slider.value = 3  # click-free paging: no new call, no new tokens
    assert [n for n in _shown_lines(tab.view.body.value) if n in matches] == matches[20:30]
    assert "page 3 of" in tab.view.caption.value
    assert pad.budget.used == used and len(explorer.results) == calls


def test_grep_ignore_case_no_match_and_literal_fallback(make_explorer: Callable[..., Explorer], events_handle: str) -> None:
    explorer = make_explorer(events_handle)
    tab = explorer.grep
    tab.pattern.value, tab.context.value = "warn", 0
    tab.search_button.click()
    assert "No matches for 'warn'" in html.unescape(tab.view.caption.value)
    tab.ignore_case.value = True
    tab.search_button.click()
    assert explorer.results[-1].data["total_matches"] == len(range(0, 6000, 11))

    tab.ignore_case.value = False
    tab.pattern.value = "id=1("
    tab.search_button.click()
    assert "literal text" in explorer.notice.message.value
    assert explorer.results[-1].data["literal_fallback"] is True


def test_grep_text_parser_round_trips_and_refuses_the_unexpected() -> None:
    text = ("Note: not a valid regex: searched for the literal text instead.\n"
            "     4\ta\n>     5\tb(\n     6\tc\n--\n>    20\tb( again\n"
            "--- 2 of 2 matching lines shown · tokens: 30 this call, 100 used, 9 remaining ---")
    note, windows = parse_grep_windows(text, 2)  # type: ignore[misc]
    assert note.startswith("Note: not a valid regex")
    assert windows == [(4, ["a", "b(", "c"]), (20, ["b( again"])]
    assert parse_grep_windows(text, 3) is None
    assert parse_grep_windows("something else entirely", 1) is None


# -- Iterate -----------------------------------------------------------------------------------


def test_iterate_pages_a_table(make_explorer: Callable[..., Explorer], pods_handle: str, pods: dict[str, Any]) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.iterate
    tab.path.value, tab.fields.value, tab.limit.value = "items", "metadata.name,status.phase", 25
    tab.show_button.click()
    body = tab.view.body.value
    assert body.count("<tr>") == 26  # the header and one page
    assert "<th" in body and "metadata.name" in body
    assert pods["items"][24]["metadata"]["name"] in body and pods["items"][25]["metadata"]["name"] not in body
    assert tab.prev_button.disabled and not tab.next_button.disabled

    tab.next_button.click()
    assert explorer.results[-1].arguments["offset"] == 25
    assert pods["items"][25]["metadata"]["name"] in tab.view.body.value
    tab.prev_button.click()
    assert explorer.results[-1].arguments["offset"] == 0

    tab.offset.value = 3990
    tab.show_button.click()
    assert tab.view.body.value.count("<tr>") == 11
    assert tab.next_button.disabled  # a short page is the last


def test_iterate_cuts_long_strings_and_asks_for_fields(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    tab = explorer.iterate
    tab.path.value, tab.fields.value = "$.items", ""
    tab.show_button.click()
    assert "Name the fields" in explorer.notice.message.value and explorer.results == []
    tab.fields.value = "status.lastLog"
    tab.show_button.click()
    assert "more lines: get_in(path=" in tab.view.body.value
