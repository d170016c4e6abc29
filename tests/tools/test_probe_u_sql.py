"""Hostile SQL found by a probe (report U): what the calling process does before the worker runs
a query is bounded too. A nested simple CASE, and a CUBE behind a comment, made DuckDB's parser
expand the query in the kernel (3.7 GB, 35 s from 715 characters); an error message of a million
spaces held the GIL for minutes in a regex; read_csv's rejects options wrote tables that the next
query read instead of the notes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from jupyter_scratchpad import Scratchpad


def _simple_case(depth: int) -> str:
    expr = "1"
    for _ in range(depth):
        expr = f"CASE ({expr}) WHEN 1 THEN 1 WHEN 2 THEN 2 END"
    return expr


def _runs(pad: Scratchpad, suggestions: list[dict]) -> None:
    for s in suggestions:
        assert pad.call_tool(s["tool"], s["arguments"]).ok, s


def test_a_simple_case_nested_deep_is_refused_before_it_is_parsed(pad: Scratchpad) -> None:
    bomb = pad.call_tool("sql", {"query": f"SELECT {_simple_case(18)} AS v"})  # (715 characters: 35 s, 3.7 GB)
    assert not bomb.ok and bomb.error["error"] == "sql_error", bomb.error
    assert "simple CASE" in bomb.error["message"] and "searched CASE" in bomb.error["message"]
    _runs(pad, bomb.error["suggestions"])
    hidden = pad.call_tool("sql", {"query": f"SELECT {_simple_case(18).replace('WHEN', '/* c */ WHEN')}"})
    assert not hidden.ok and "simple CASE" in hidden.error["message"]  # (comments are not WHENs, nor hide them)
    # what real queries do is untouched: a few levels, and many simple CASEs side by side
    nested = pad.call_tool("sql", {"query": f"SELECT {_simple_case(6)} AS v"})
    assert nested.ok and nested.data[0]["v"] == 1
    many = ", ".join(f"CASE r % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' WHEN 2 THEN 'c' END AS c{i}" for i in range(250))
    wide = pad.call_tool("sql", {"query": f"SELECT {many} FROM (SELECT 4 AS r)", "max_rows": 1})
    assert wide.ok and wide.data[0]["c249"] == "b"
    searched = "1"
    for _ in range(30):
        searched = f"CASE WHEN ({searched}) = 1 THEN 1 ELSE 2 END"
    assert pad.call_tool("sql", {"query": f"SELECT {searched} AS v"}).data[0]["v"] == 1


@pytest.mark.parametrize("gap", [" /* x */ ", "\n-- x\n"])
def test_a_comment_does_not_hide_a_cube_from_the_count(pad: Scratchpad, gap: str) -> None:
    items = ", ".join(f"x{i}" for i in range(12))  # 4,096 grouping sets
    for group in (f"CUBE{gap}({items})", f"GROUPING{gap}SETS{gap}(({items}), " + ", ".join(f"(x{i})" for i in range(300)) + ")"):
        res = pad.call_tool("sql", {"query": f"SELECT 1 FROM range(1) GROUP BY {group}"})
        assert not res.ok and "grouping sets" in res.error["message"], (group[:40], res.error)


def test_a_huge_error_message_is_read_in_bounded_time_and_size(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # error(repeat(' ', n)): the caller's regex was O(n²) on the spaces (97 s at n=200,000, the GIL
    # held: every other agent of an MCP server waited). Run apart, so the old code fails by timing out.
    script = textwrap.dedent(f"""
        from jupyter_scratchpad import ScratchStore
        with ScratchStore({str(tmp_path / "s")!r}) as store:
            pad = store.scratchpad("r", "a")
            res = pad.call_tool("sql", {{"query": "SELECT error(repeat(' ', 1000000) || 'x')"}})
            assert not res.ok and len(res.error["message"]) < 1_000, res.error
            assert pad.call_tool("sql", {{"query": "SELECT 1 AS one"}}).ok
            print("ok", res.tokens)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("ok"), done.stderr[-2000:]
    from jupyter_scratchpad.explore._sql import error_text

    said = error_text('Parser Error: too deep. Use "SET max_expression_depth TO x" to increase it.\nLINE 1')
    assert said == "Parser Error: too deep. (the sandbox's settings are fixed: make the query simpler)"


def test_read_csvs_rejects_options_are_refused_as_writes(pad: Scratchpad) -> None:
    csv = pad.intercept("a,b\n" + "".join(f"{i},x{i}\n" for i in range(3000)), tool="csv", force=True).handle
    assert pad.call_tool("scratch_write", {"key": "mine", "value": "real note"}).ok
    path = str(pad.store.reader(pad.store.get_entry(pad.scope, "handle", csv)).body_path)
    query = (f"SELECT count(*) AS n FROM read_csv('{path}', header=true, store_rejects=true, "
             f"rejects_table='scratch_notes'), (SELECT count(*) FROM {csv}) c")  # fmt: skip
    res = pad.call_tool("sql", {"query": query})
    assert not res.ok and res.error["error"] == "sql_not_read_only" and "rejects" in res.error["message"], res.error
    notes = pad.call_tool("sql", {"query": f"SELECT key FROM scratch_notes, (SELECT count(*) FROM {csv}) c"})
    assert notes.ok and [r["key"] for r in notes.data] == ["mine"]
