"""Each explorer action: what the page gets, what is charged (nothing, unless as the model)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from widget_helpers import ask

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.widgets import Explorer
from jupyter_scratchpad.widgets._actions import MAX_PAGE_CHARS


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """The explorer and the lab bridge work unchanged on both backends (embedded, shared PostgreSQL)."""
    return backend_store


def test_preview_pages_lines_as_the_person(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str
) -> None:
    explorer = make_explorer(pods_handle)
    used = pad.budget.used
    head = ask(explorer, "preview", tool="head", lines=5)["view"]
    assert head["kind"] == "lines" and head["first"] == 1 and len(head["lines"]) == 5
    page = ask(explorer, "preview", tool="slice", start=1000, lines=1500)["view"]  # over the model's cap
    assert (page["start"], page["end"]) == (1000, 2499) and page["total"] == pad.entry(pods_handle).line_count
    tail = ask(explorer, "preview", tool="tail", lines=3)["view"]
    assert tail["end"] == tail["total"]
    assert pad.budget.used == used  # a person reading is not charged


def test_as_the_model_would_see_it(make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    explorer.as_agent = True
    used = pad.budget.used
    reply = ask(explorer, "preview", tool="head", lines=5)
    view = reply["view"]
    expected = pad.call_tool("head", {"handle": pods_handle, "lines": 5}, charge=False).data["lines"]
    assert view["kind"] == "text" and all(line in view["text"] for line in expected)
    assert (
        f"{view['tokens']} tokens, " in view["text"] and view["tokens"] > 0 and pad.budget.used == used + view["tokens"]
    )
    assert explorer.budget["used"] == pad.budget.used  # the meter follows
    refused = ask(explorer, "preview", tool="slice", start=1, lines=2000)
    assert not refused["ok"] and refused["error"]["error"] == "slice_too_large"
    assert refused["error"]["suggestions"][0]["tool"] == "slice"


def test_grep_defaults_a_person_would_choose_and_more(
    make_explorer: Callable[..., Explorer], pods_handle: str, pods: dict[str, Any]
) -> None:
    explorer = make_explorer(pods_handle)
    failed = sum(1 for p in pods["items"] if p["status"]["phase"] == "Failed")
    view = ask(explorer, "grep", pattern='"Failed"')["view"]
    assert view["kind"] == "windows" and len(view["marked"]) == 20 and view["more"] is True
    assert all(len(w["lines"]) == 3 for w in view["windows"])  # one line of context either side
    assert view["summary"].startswith(f"20 of {failed:,} matching lines shown")
    more = ask(explorer, "grep", pattern='"Failed"', max_matches=40)["view"]
    assert len(more["marked"]) == 40 and more["marked"][:20] == view["marked"]
    every = ask(explorer, "grep", pattern='"Failed"', max_matches=1000, context=0)["view"]
    assert len(every["marked"]) == failed and every["more"] is False


def test_grep_says_where_each_match_is_and_the_path_reads_back(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str
) -> None:
    explorer = make_explorer(pods_handle)
    view = ask(explorer, "grep", pattern='"Failed"', max_matches=5)["view"]
    assert sorted(map(int, view["paths"])) == view["marked"]  # every match of a JSON entry has one
    for line, path in view["paths"].items():
        assert re.fullmatch(r"\$\.items\[\d+\]\.status\.phase", path), path
        got = ask(explorer, "get_in", path=path)
        assert got["ok"] and "Failed" in json.dumps(got["view"]), (line, path)
    # a path too long to show whole shows its item's; a page of a text entry has none
    key = "k" * 200
    long_key = pad.intercept({"items": [{"x": {key: "needle"}} for _ in range(300)]}, tool="t").handle
    long = ask(make_explorer(long_key), "grep", pattern="needle", max_matches=3)["view"]
    assert set(long["paths"].values()) <= {"$.items[0]", "$.items[1]", "$.items[2]"} and len(long["paths"]) == 3
    text = pad.intercept("\n".join(f"line {i} needle" for i in range(20_000)), tool="log").handle
    assert ask(make_explorer(text), "grep", pattern="needle", max_matches=3)["view"]["paths"] == {}


def test_a_grep_window_larger_than_a_page_is_cut_not_dropped(
    make_explorer: Callable[..., Explorer], pad: Scratchpad
) -> None:
    # with wide context every match merged into one window over a page: it was dropped whole,
    # the page showed nothing, and the summary said "1,000 of 10,000 matching lines shown"
    items = [{"id": i, "msg": "m" * 300, "s": "failed" if i % 3 == 0 else "ok"} for i in range(30_000)]
    explorer = make_explorer(pad.intercept({"items": items}, tool="big").handle)
    view = ask(explorer, "grep", pattern="failed", max_matches=100_000, context=50)["view"]
    lines = [line for w in view["windows"] for line in w["lines"]]
    assert lines and sum(map(len, lines)) <= MAX_PAGE_CHARS
    first = view["windows"][0]["first"]
    on_page = [n for n in view["marked"] if first <= n < first + len(lines)]
    assert 100 < len(on_page) < 1000 and sum('"failed"' in line for line in lines) == len(on_page)
    assert view["summary"].startswith(f"{len(on_page):,} of 10,000 matching lines shown")
    assert f"with {1000 - len(on_page):,} more matches, did not fit" in view["summary"]


def test_schema_offers_the_array_paths_then_items_and_values(
    make_explorer: Callable[..., Explorer], pods_handle: str
) -> None:
    explorer = make_explorer(pods_handle)
    schema = ask(explorer, "schema")["view"]
    assert schema["kind"] == "text" and "$.items" in schema["text"] and schema["paths"][0] == "$.items"
    keys = ask(explorer, "item_schema", path="$.items")["view"]
    assert keys["kind"] == "table" and keys["columns"] == ["key", "type", "present"]
    annotations = [r for r in keys["rows"] if r[0] == "metadata.annotations.deploy/revision"]
    assert annotations and annotations[0][2] == "42/4,000"  # every 97th pod: the late keys are seen
    value = ask(explorer, "get_in", path="$.items[0].metadata.namespace")["view"]
    assert value["kind"] == "text" and value["text"].startswith('"')


def test_iterate_rows_and_missing_fields(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    explorer = make_explorer(pods_handle)
    view = ask(explorer, "iterate", path="items", fields="metadata.name,status.phase", offset=10, limit=5)["view"]
    assert view["columns"] == ["_index", "metadata.name", "status.phase"] and len(view["rows"]) == 5
    assert view["rows"][0][0] == "10" and view["summary"] == "items 10-14"
    reply = ask(explorer, "iterate", path="items", fields="")
    assert not reply["ok"] and "name the fields" in reply["error"]["message"]


def test_sql_pages_counts_and_describes(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str
) -> None:
    explorer = make_explorer(pods_handle)
    used = pad.budget.used
    query = f"SELECT i.metadata.name AS name FROM (SELECT unnest(items) AS i FROM {pods_handle}) -- a comment"
    first = ask(explorer, "sql", query=query, page_size=25)["view"]
    assert first["total"] == 4000 and len(first["rows"]) == 25 and first["summary"] == "rows 1-25 of 4,000"
    last = ask(explorer, "sql", query=query, page_size=25, offset=3990)["view"]
    assert len(last["rows"]) == 10 and last["summary"] == "rows 3,991-4,000 of 4,000"
    columns = ask(explorer, "describe", relation=pods_handle)["view"]
    assert columns["columns"][:2] == ["column_name", "column_type"]
    assert "items" in [r[0] for r in columns["rows"]]
    assert pad.budget.used == used


def test_columns_of_every_relation_the_list_offers(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str
) -> None:
    # an array relation (h.items) was quoted whole, "h.items": a relation DuckDB does not have
    explorer = make_explorer(pods_handle)
    for relation in [r["name"] for r in pad.sql_relations()]:
        reply = ask(explorer, "describe", relation=relation)
        assert reply["ok"], reply
        assert reply["view"]["columns"][:2] == ["column_name", "column_type"] and reply["view"]["rows"], relation
    columns = ask(explorer, "describe", relation=f"{pods_handle}.items")["view"]
    assert {"metadata", "spec", "status"} <= {r[0] for r in columns["rows"]}


def test_a_failed_query_says_each_thing_once(make_explorer: Callable[..., Explorer], pods_handle: str) -> None:
    # the relations were listed twice (the core's message and ours) and the DESCRIBE suggested twice
    explorer = make_explorer(pods_handle)
    reply = ask(explorer, "sql", query=f'DESCRIBE "{pods_handle}.items"')
    assert not reply["ok"] and reply["error"]["message"].count("(relations: ") == 1, reply
    queries = [s["arguments"]["query"] for s in reply["error"]["suggestions"]]
    assert f"DESCRIBE {pods_handle}.items" in queries and len(queries) == len(set(queries)), queries


def test_a_failed_query_names_the_relations_and_a_next_step(
    make_explorer: Callable[..., Explorer], pods_handle: str, events_handle: str
) -> None:
    explorer = make_explorer(pods_handle)
    reply = ask(explorer, "sql", query="SELECT * FROM nowhere")
    assert not reply["ok"] and "nowhere" in reply["error"]["message"]
    assert pods_handle in reply["error"]["message"] and events_handle in reply["error"]["message"]
    assert reply["error"]["suggestions"][0]["arguments"]["query"].startswith("DESCRIBE ")
    forbidden = ask(explorer, "sql", query="SELECT * FROM read_text('/etc/passwd')")
    assert not forbidden["ok"] and "sandbox" in forbidden["error"]["message"]


def test_values_are_plain_text_cells(make_explorer: Callable[..., Explorer], pad: Scratchpad) -> None:
    handle = pad.spill([{"id": i, "tags": ["a", "b"], "n": None, "x": 1.5} for i in range(50)], tool="t").handle
    explorer = make_explorer(handle)
    view = ask(explorer, "sql", query=f"SELECT * FROM {handle} ORDER BY id", page_size=2)["view"]
    assert view["rows"][0] == ["0", '["a", "b"]', "NULL", "1.5"]


def test_a_page_is_bounded_whatever_the_entry(make_explorer: Callable[..., Explorer], pad: Scratchpad) -> None:
    handle = pad.spill("\n".join("x" * 50_000 for _ in range(300)), tool="wide").handle
    explorer = make_explorer(handle)
    reply = ask(explorer, "preview", tool="head", lines=300)
    size = len(json.dumps(reply))
    assert size < MAX_PAGE_CHARS + 10_000
    assert "chars not shown" in reply["view"]["lines"][0] and "did not fit one page" in reply["view"]["summary"]


def test_a_person_asking_for_a_huge_value_gets_a_refusal_not_a_frozen_kernel(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, monkeypatch: pytest.MonkeyPatch
) -> None:
    # get_in of the root of a large document is refused from a sample of its items (nothing is
    # rendered, nothing charged) with the model's suggestions; a value that fits a page is shown
    from jupyter_scratchpad.explore import _json

    doc = {"kind": "List", "meta": {"n": 1}, "items": [{"name": f"pod-{i}", "spec": {"x": "y" * 40}} for i in range(20_000)]}
    handle = pad.spill(doc, tool="kubectl").handle
    explorer = make_explorer(handle)
    rendered: list[int] = []
    real = _json.lean_json  # (what get_in writes, and measures a sample with)

    def spy(value: Any) -> str:
        out = real(value)
        rendered.append(len(out))
        return out

    monkeypatch.setattr("jupyter_scratchpad.explore._json.lean_json", spy)
    used = pad.budget.used
    reply = ask(explorer, "get_in", path="$")
    assert not reply["ok"] and reply["error"]["error"] == "get_in_too_large"
    assert "nothing was charged" in reply["error"]["message"] and reply["error"]["page_tokens"] > 0
    assert {s["tool"] for s in reply["error"]["suggestions"]} >= {"schema", "get_in"}
    assert max(rendered) < 100_000  # the 64-item sample, never the 2 MB document
    assert pad.budget.used == used
    shown = ask(explorer, "get_in", path="$.meta")
    assert shown["ok"] and '{"n":1}' in shown["view"]["text"]


def test_spilled_content_is_data_never_markup(make_explorer: Callable[..., Explorer], pad: Scratchpad) -> None:
    handle = pad.spill("<script>alert(1)</script>\n" * 600, tool="xss").handle
    explorer = make_explorer(handle)
    view = ask(explorer, "preview", tool="head", lines=1)["view"]
    assert view["lines"] == ["<script>alert(1)</script>"]  # the page puts it in as text (explorer.js: textContent)
    data, _ = explorer._repr_mimebundle_()
    assert "<script>" not in data["text/html"]


def test_a_bug_of_ours_is_a_reply_not_a_raise(
    make_explorer: Callable[..., Explorer], pods_handle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_scratchpad.widgets import _actions

    explorer = make_explorer(pods_handle)

    def broken(*args: Any) -> Any:
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(_actions.ACTIONS, "schema", (broken, True))
    reply = ask(explorer, "schema")
    assert not reply["ok"] and re.search(r"ZeroDivisionError: boom.*keep working", reply["error"]["message"])
    assert ask(explorer, "nonsense")["error"]["error"] == "unknown_action"


def test_a_line_count_out_of_range_is_said_not_silently_changed(
    make_explorer: Callable[..., Explorer], pad: Scratchpad
) -> None:
    # probe L: head lines=99,999,999 said "lines 1-1,941 of 4,000 (59 more lines did not fit one
    # page)", as if 59 were all that was left; lines=0 and -5 read one line and said nothing
    handle = pad.spill("\n".join(f"line {i} " + "y" * 40 for i in range(4000)), tool="t").handle
    explorer = make_explorer(handle)
    for asked, read in ((0, 1), (-5, 1), (99_999_999, 2000)):
        summary = ask(explorer, "preview", tool="head", lines=asked)["view"]["summary"]
        assert f"(lines is 1-2,000 a page: {read:,} read)" in summary, summary
    plain = ask(explorer, "preview", tool="head", lines=20)["view"]["summary"]
    assert plain == "lines 1-20 of 4,000", plain
    big = ask(explorer, "preview", tool="head", lines=2000)["view"]["summary"]
    assert "more of the lines asked for did not fit one page" in big or big == "lines 1-2,000 of 4,000", big


def _pages(explorer: Explorer, action: str, **args: Any) -> list[dict[str, Any]]:
    """Every page from the first, each asked for at the ``next_offset`` the one before gave (what
    the page's Next sends)."""
    views = [ask(explorer, action, **args)["view"]]
    while views[-1]["next_offset"] is not None and len(views) < 20:
        views.append(ask(explorer, action, **{**args, "offset": views[-1]["next_offset"]})["view"])
    return views


def test_sql_next_goes_on_after_the_last_row_that_fit(make_explorer: Callable[..., Explorer], pad: Scratchpad) -> None:
    # probe P: 500 rows asked for, 274 fitted one reply; the summary said "rows 1-500 of 600 (226
    # more rows did not fit one page)" and Next asked for offset 500: rows 275-500 were never shown
    handle = pad.intercept({"rows": [{"i": i, "blob": "z" * 5000} for i in range(600)]}, tool="wide").handle
    explorer = make_explorer(handle)
    used = pad.budget.used
    query = f'SELECT i, blob FROM "{handle}"."rows" ORDER BY i'
    first = ask(explorer, "sql", query=query, page_size=500)["view"]
    n = len(first["rows"])
    assert 0 < n < 500 and [row[0] for row in first["rows"]] == [str(i) for i in range(n)]
    assert first["summary"] == (
        f"rows 1-{n} of 600 (the other {500 - n} of the 500 rows asked for did not fit one page: Next starts with them)"
    )
    assert (first["offset"], first["next_offset"], first["total"]) == (0, n, 600)
    views = _pages(explorer, "sql", query=query, page_size=500)
    assert [int(row[0]) for view in views for row in view["rows"]] == list(range(600))  # each row once, in order
    assert all(v["summary"].startswith(f"rows {v['offset'] + 1}-{v['offset'] + len(v['rows'])} of 600") for v in views)
    assert views[-1]["next_offset"] is None and len(views) > 2
    assert pad.budget.used == used


def test_iterate_next_goes_on_after_the_last_row_that_fit(
    make_explorer: Callable[..., Explorer], pad: Scratchpad
) -> None:
    # probe P: "items 0-499 (207 more rows did not fit one page)" with 293 rows sent, count 500
    handle = pad.intercept({"rows": [{"i": i, "blob": "z" * 5000} for i in range(600)]}, tool="wide").handle
    explorer = make_explorer(handle)
    first = ask(explorer, "iterate", path="$.rows", fields="i,blob", limit=500)["view"]
    n = len(first["rows"])
    assert 0 < n < 500 and first["count"] == n and first["next_offset"] == n
    assert first["summary"] == (
        f"items 0-{n - 1} (the other {500 - n} of the 500 rows asked for did not fit one page: Next starts with them)"
    )
    views = _pages(explorer, "iterate", path="$.rows", fields="i,blob", limit=500)
    assert [int(row[0]) for view in views for row in view["rows"]] == list(range(600))
    assert views[-1]["next_offset"] is None and views[-1]["summary"].startswith(f"items {views[-1]['offset']}-599")


def test_sql_as_the_model_pages_and_charges_each_page_once(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str
) -> None:
    # probe P: with "as the model would see it" Next showed page 1 again (the offset was ignored)
    # and charged it again
    explorer = make_explorer(pods_handle)
    query = f'SELECT metadata.name AS name FROM "{pods_handle}"."items" ORDER BY name'
    names = [[row[0] for row in ask(explorer, "sql", query=query, offset=o)["view"]["rows"]] for o in (0, 20)]
    explorer.as_agent = True
    used = pad.budget.used
    first = ask(explorer, "sql", query=query)["view"]
    second = ask(explorer, "sql", query=query, offset=20)["view"]
    assert all(f"| {name} |" in first["text"] for name in names[0])
    assert not any(f"| {name} |" in second["text"] for name in names[0])
    assert all(f"| {name} |" in second["text"] for name in names[1])
    assert pad.budget.used == used + first["tokens"] + second["tokens"]  # each page charged once
    assert (first["offset"], first["next_offset"], first["total"]) == (0, 20, 4000)
    assert (second["offset"], second["next_offset"], second["total"]) == (20, 40, 4000)
    assert "rows 21-40 of 4,000" in second["summary"] and "LIMIT 20 OFFSET 20" in second["summary"]
    # a statement that cannot be paged is shown once, and says so: no Next to charge it again
    once = ask(explorer, "sql", query="EXPLAIN SELECT 1")["view"]
    assert once["next_offset"] is None and once["total"] is None and "not paged" in once["summary"]


def test_a_query_ending_in_a_semicolon_and_a_comment_is_paged(make_explorer: Callable[..., Explorer]) -> None:
    # probe P: "SELECT 1 AS a; -- note" was "1 rows (not paged: the statement cannot be wrapped)"
    explorer = make_explorer()
    view = ask(explorer, "sql", query="SELECT 1 AS a; -- note")["view"]
    assert view["summary"] == "rows 1-1 of 1" and view["total"] == 1
    view = ask(explorer, "sql", query="SELECT range AS i FROM range(30); /* x */ -- note", page_size=20, offset=20)
    assert view["view"]["summary"] == "rows 21-30 of 30" and view["view"]["rows"][0] == ["20"]


def test_a_statement_that_cannot_be_paged_counts_one_row_as_one_row(make_explorer: Callable[..., Explorer]) -> None:
    # probe P: "1 rows (not paged: the statement cannot be wrapped)"
    plain = ask(make_explorer(), "sql", query="EXPLAIN SELECT 1")["view"]
    assert plain["summary"] == "1 row (not paged: the statement cannot be wrapped)"


def test_every_reply_is_bounded_as_sent(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, store: ScratchStore
) -> None:
    # probe P: the content was bounded, and the JSON sent came to 200,270-206,481 characters (up
    # to twice the bound for text full of quotes, backslashes, newlines and accents)
    odd = 'é"\n\\'
    wide = pad.intercept("\n".join(f"L{i} " + "abcdefghij" * 300 for i in range(5000)), tool="wide").handle
    rows = pad.intercept(
        {"rows": [{"i": i, "blob": odd * 1200, "o": {"k": "q" * 3000}} for i in range(600)]}, tool="odd"
    )
    accents = pad.intercept({"name": "x", "notes": ["é" * 1000] * 40}, tool="accents").handle
    explorer = make_explorer(wide)
    requests: list[tuple[str, dict[str, Any]]] = [
        ("preview", {"tool": "head", "lines": 2000}),
        ("grep", {"pattern": "abc", "context": 50, "max_matches": 1000}),
    ]
    replies = [ask(explorer, action, **args) for action, args in requests]
    ask(explorer, "select", handle=rows.handle)
    for action, args in [
        ("preview", {"tool": "head", "lines": 2000}),
        ("grep", {"pattern": "i", "context": 50, "max_matches": 1000}),
        ("iterate", {"path": "$.rows", "fields": "*", "limit": 500}),
        ("sql", {"query": f'SELECT * FROM "{rows.handle}"."rows"', "page_size": 500}),
    ]:
        replies.append(ask(explorer, action, **args))
    ask(explorer, "select", handle=accents)
    replies.append(ask(explorer, "get_in", path="$.notes"))
    big = store.scratchpad(run_id="run-big", agent_id="a", context_window=4_000_000, max_extraction_tokens=1_000_000)
    model = make_explorer(big.intercept("\n".join('"é\\' * 500 for _ in range(3000)), tool="odd").handle, target=big)
    model.as_agent = True
    replies.append(ask(model, "preview", tool="head", lines=150))
    assert all(reply["ok"] for reply in replies), [reply.get("error") for reply in replies]
    sizes = [(reply["action"], len(json.dumps(reply))) for reply in replies]
    assert [s for s in sizes if s[1] > MAX_PAGE_CHARS] == []
    assert all(len(json.dumps(reply, ensure_ascii=False).encode()) <= MAX_PAGE_CHARS for reply in replies)
    assert all(size > MAX_PAGE_CHARS * 0.9 for _, size in sizes), sizes  # a page still fills its reply


SLOW = "SELECT sum(hash(a.i * b.i)) AS s FROM range(200000) a(i), range(200000) b(i)"


def test_a_slow_query_in_the_explorer_is_stopped_at_its_time_limit(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # probe Z: the explorer's query ran in the kernel's comm handler, where Interrupt never
    # arrives, for six minutes: no cell ran, no tab or sidebar answered meanwhile
    import time

    from jupyter_scratchpad.widgets import _actions

    monkeypatch.setattr(_actions, "EXPLORER_SQL_LIMIT_S", 1.0)
    explorer = make_explorer(pods_handle)
    started = time.monotonic()
    reply = ask(explorer, "sql", query=SLOW, page_size=5)
    took = time.monotonic() - started
    assert not reply["ok"] and reply["error"]["error"] == "timeout", reply
    assert "longer than 1 s" in reply["error"]["message"] and "%%scratch sql" in reply["error"]["message"]
    assert took < 15, took  # (1 s, and the interrupted query's stop; it ran on for minutes)
    after = ask(explorer, "sql", query="SELECT 42 AS n")
    assert after["ok"] and after["view"]["summary"] == "rows 1-1 of 1"  # (the explorer answers on)


def test_a_cell_query_has_no_time_limit_unless_given(pad: Scratchpad, pods_handle: str) -> None:
    from jupyter_scratchpad._person import QueryTimeout

    with pytest.raises(QueryTimeout, match=r"longer than 0\.5 s"):
        pad.sql_df(SLOW, time_limit_s=0.5)
    assert pad.sql_df("SELECT 1 AS n")["n"][0] == 1


def test_a_page_that_tells_its_total_runs_the_query_once(
    make_explorer: Callable[..., Explorer], pad: Scratchpad, pods_handle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each query ran twice (its count(*) first): a slow one took twice its time before a row showed
    ran: list[str] = []
    real = Scratchpad.sql_df

    def counted(self: Scratchpad, query: str, *args: Any, **kwargs: Any) -> Any:
        ran.append(query)
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(Scratchpad, "sql_df", counted)
    explorer = make_explorer(pods_handle)
    view = ask(explorer, "sql", query="SELECT 1 AS a UNION ALL SELECT 2", page_size=20)["view"]
    assert view["total"] == 2 and view["summary"] == "rows 1-2 of 2"
    assert len(ran) == 1 and not any("count(*)" in q for q in ran), ran
    ran.clear()
    full = ask(explorer, "sql", query=f"SELECT unnest(items) AS i FROM {pods_handle}", page_size=20)["view"]
    assert full["total"] == 4000 and len(ran) == 2  # (a full page: the total is counted)
