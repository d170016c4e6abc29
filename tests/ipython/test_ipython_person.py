"""A person is not rationed like a model: whole results, nothing charged unless --as-agent."""

from __future__ import annotations

import os
import re
import stat
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

from jupyter_scratchpad.ipython import ScratchSession
from jupyter_scratchpad.ipython.commands import cmd_sql

ROWS = 8000


def value(ip: Any, code: str) -> Any:
    return ip.run_cell(code).result


@pytest.fixture
def records(ip: Any, session: ScratchSession) -> str:
    """A spilled array of 8,000 records (one row each in SQL)."""
    rows = [{"id": i, "status": "failed" if i % 9 == 0 else "ok", "meta": {"zone": f"z{i % 4}"}} for i in range(ROWS)]
    return str(session.pad.spill(rows, tool="records").handle)


def test_sql_returns_every_row_and_charges_nothing(ip: Any, records: str, session: ScratchSession) -> None:
    used, extracted = session.pad.budget.used, session.pad.usage()["tokens_extracted"]
    df = value(ip, f"df = %scratch sql SELECT * FROM {records} ORDER BY id\ndf")
    assert type(df) is pd.DataFrame and len(df) == ROWS
    assert list(df["id"]) == list(range(ROWS))
    assert session.pad.budget.used == used and session.pad.usage()["tokens_extracted"] == extracted


def test_sql_limit_says_the_result_was_cut(ip: Any, records: str, capsys: pytest.CaptureFixture[str]) -> None:
    df = value(ip, f"%scratch sql --limit 25 SELECT id FROM {records} ORDER BY id")
    assert list(df["id"]) == list(range(25))
    assert "the first 25 rows" in capsys.readouterr().out
    df = value(ip, f"%scratch sql --limit 25 SELECT id FROM {records} WHERE id < 10")
    assert len(df) == 10 and "the first" not in capsys.readouterr().out  # nothing cut, nothing said


def test_sql_past_the_row_bound_needs_limit_or_all(ip: Any, records: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cmd_sql, "SQL_DF_MAX_ROWS", 1000)
    with pytest.raises(UsageError, match=r"more than 1,000 rows; add --limit N .* or --all"):
        ip.run_cell(f"%scratch sql SELECT * FROM {records}")
    assert len(value(ip, f"%scratch sql --all SELECT * FROM {records}")) == ROWS


def test_sql_as_agent_is_capped_charged_and_says_so(ip: Any, records: str, session: ScratchSession,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # the model's own result: its text with the footer, charged (it was a DataFrame)
    from jupyter_scratchpad.tools import ToolResult

    used = session.pad.budget.used
    r = value(ip, f"%scratch sql --as-agent SELECT id FROM {records} ORDER BY id")
    assert isinstance(r, ToolResult) and len(r.data) == 200 and session.pad.budget.used == used + r.tokens
    assert "cut to the first 200 rows, as the model sees it" in capsys.readouterr().out
    ip.user_ns["h"] = records
    r = value(ip, "%scratch sql --as-agent --max-rows 7 SELECT id FROM {{h}} ORDER BY id")
    assert [row["id"] for row in r.data] == list(range(7))


def test_sql_array_of_the_pods_and_df_agree(ip: Any, spilled: str) -> None:
    by_sql = value(ip, f"%scratch sql SELECT count(*) AS n FROM (SELECT unnest(items) FROM {spilled})")
    frame = value(ip, f"%scratch df {spilled} items")
    assert by_sql["n"][0] == len(frame) == 3000
    assert list(frame.columns) == ["metadata.name", "metadata.namespace", "status.phase"]
    assert frame["metadata.name"][2999] == "pod-2999"


def test_df_of_text_is_its_lines_and_bad_paths_name_the_keys(ip: Any, session: ScratchSession, spilled: str) -> None:
    log = session.pad.spill("\n".join(f"line {i}" for i in range(500)), tool="log").handle
    frame = value(ip, f"%scratch df {log}")
    assert list(frame.columns) == ["line_no", "line"] and frame["line"][499] == "line 499"
    with pytest.raises(UsageError, match=r"%scratch df: path 'itemz' not found.*try: %scratch get .* \$\.items"):
        ip.run_cell(f"%scratch df {spilled} itemz")


def test_reads_are_not_charged_and_budget_reset(ip: Any, spilled: str, session: ScratchSession) -> None:
    initial = session.pad.budget.used
    for line in (f"head {spilled} -n 400", f"grep {spilled} Failed --max 500", f"schema {spilled}",
                 f"items {spilled} items", f"iter {spilled} items --fields metadata.name --limit 500",
                 f"get {spilled} items.5"):
        assert ip.run_cell(f"%scratch {line}").success
    assert session.pad.budget.used == initial
    ip.run_cell(f"%scratch head {spilled} -n 40 --as-agent")
    assert session.pad.budget.used > initial
    report = value(ip, "%scratch budget reset")
    assert report["used"] == initial == session.pad.budget.used


def test_a_person_reads_more_than_the_per_call_cap(ip: Any, spilled: str, session: ScratchSession) -> None:
    result = value(ip, f"%scratch head {spilled} -n 5000")  # ~20,000 tokens: over the 10,000 cap
    assert result.ok and result.data["end"] == 5000
    with pytest.raises(UsageError, match="only this short refusal was charged"):
        ip.run_cell(f"%scratch head {spilled} -n 5000 --as-agent")


def test_list_counts_are_integers(ip: Any, spilled: str, session: ScratchSession) -> None:
    session.pad.scratch_write("note", {"a": 1})
    entries = value(ip, "%scratch list")
    assert all(str(entries[c].dtype) == "Int64" for c in ("size", "lines", "tokens"))
    assert entries["lines"].isna().tolist() == [False, True]  # a note has no lines: <NA>, not NaN
    assert "nan" not in entries.to_string().lower() and ".0 " not in entries.to_string()


# -- what is typed is what runs ------------------------------------------------------------------

LOG = "\n".join(f"GET /api/{i} took {i * 7 % 100000}ms" for i in range(20000))


def test_regex_braces_and_dollars_arrive_as_typed(ip: Any, session: ScratchSession) -> None:
    handle = session.pad.spill(LOG, tool="api_log").handle
    expected = len(re.findall(r"took \d{5}ms", LOG))
    result = value(ip, rf'%scratch grep {handle} "took \d{{5}}ms" --max 1000 -C 0')
    assert result.data["total_matches"] == expected > 10_000
    ip.user_ns["ms"] = "should not be used"
    result = value(ip, rf"%scratch grep {handle} 'took 1$ms|{{x}}' --max 5")
    assert result.arguments["pattern"] == "took 1$ms|{x}"  # neither $ms nor {x} was expanded


def test_sql_struct_literals_are_not_expanded(ip: Any, session: ScratchSession) -> None:
    ip.user_ns["a"] = "oops"
    df = value(ip, "%scratch sql SELECT {'a': 1, 'b': [1, 2]} AS s, 1::VARCHAR AS t, [1, 2, 3][2:3] AS l")
    assert df["s"][0] == {"a": 1, "b": [1, 2]} and df["t"][0] == "1" and list(df["l"][0]) == [2, 3]
    df = value(ip, "%%scratch sql\nSELECT {'k': 'v'} AS s")
    assert df["s"][0] == {"k": "v"}


def test_variables_are_bound_as_sql_parameters_or_inserted_as_names(ip: Any, records: str) -> None:
    ip.user_ns.update(at_least=7990, status="it's ok", h=records)
    df = value(ip, "%scratch sql SELECT id FROM {{h}} WHERE id >= :at_least ORDER BY id")
    assert list(df["id"]) == list(range(7990, ROWS))
    df = value(ip, "%%scratch sql\nSELECT :status AS s, count(*) AS n FROM {{h}} WHERE id < :at_least")
    assert df["s"][0] == "it's ok" and df["n"][0] == 7990  # a quote inside a bound value is just a character
    df = value(ip, "%scratch sql SELECT ':at_least' AS literal -- :at_least in a comment")
    assert df["literal"][0] == ":at_least"


def test_braces_insert_a_variable_into_other_arguments(ip: Any, spilled: str, session: ScratchSession) -> None:
    ip.user_ns.update(pattern="pod-2999\\b", lines=3, payload={"k": [1, 2]})
    assert value(ip, f"%scratch grep {spilled} {{{{pattern}}}} -C 0").data["total_matches"] == 1
    assert value(ip, f"%scratch head {spilled} -n {{{{lines}}}}").data["end"] == 3
    ip.run_cell("%scratch write saved {{payload}}")
    assert session.pad.scratch_read("saved") == {"k": [1, 2]}


def test_an_unknown_variable_is_an_error(ip: Any, spilled: str) -> None:
    with pytest.raises(UsageError, match=r":nowhere names no variable 'nowhere'"):
        ip.run_cell(f"%scratch sql SELECT * FROM {spilled} WHERE kind = :nowhere")
    with pytest.raises(UsageError, match=r"\{\{nowhere\}\} names no variable"):
        ip.run_cell(f"%scratch grep {spilled} {{{{nowhere}}}}")
    ip.user_ns["x"] = 1
    with pytest.raises(UsageError, match="a model's query has no parameters"):
        ip.run_cell(f"%scratch sql --as-agent SELECT :x FROM {spilled}")


# -- completion ----------------------------------------------------------------------------------


def complete(ip: Any, line: str) -> list[str]:
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        return [c.text for c in ip.Completer.completions(line, len(line))]


def test_tab_completes_subcommands_handles_and_models(ip: Any, spilled: str, session: ScratchSession) -> None:
    session.pad.scratch_write("my_note", 1)
    assert {"head", "help", "--help"} & set(complete(ip, "%scratch he")) == {"head"}
    assert spilled in complete(ip, "%scratch head ")
    assert complete(ip, f"%scratch grep {spilled[:6]}") == [spilled]
    assert "my_note" in complete(ip, "%scratch read ") and spilled not in complete(ip, "%scratch read ")
    assert "gpt-4o" in complete(ip, "%scratch budget --model ")
    assert spilled in complete(ip, "%scratch sql SELECT * FROM ")
    assert "parquet" in complete(ip, f"%scratch export {spilled} --to ")
    assert spilled in complete(ip, "%%scratch sql ") or "SELECT" in complete(ip, "%%scratch sql ")
    # the README's form: a line magic's result assigned to a name
    assert complete(ip, f"df = %scratch df {spilled[:6]}") == [spilled]
    assert {"head", "help", "--help"} & set(complete(ip, "r = %scratch he")) == {"head"}


def test_tab_completes_what_each_subcommand_takes_and_no_python(ip: Any, spilled: str,
                                                                  session: ScratchSession) -> None:
    # keywords and builtins at argument positions; --kind offered the wrong words; `head H -`
    # offered builtins; %%scratch offered line-only subcommands; one fixed list after the first word
    assert set(complete(ip, "%scratch list --kind ")) == {"handle", "note"}
    assert {"-n", "--lines", "--as-agent"} <= set(complete(ip, f"%scratch head {spilled} -"))
    assert "abs" not in complete(ip, f"%scratch head {spilled} -")
    assert {"-C", "--max", "-i"} <= set(complete(ip, f"%scratch grep {spilled} x -"))
    assert "-C" not in complete(ip, f"%scratch head {spilled} -")
    assert set(complete(ip, "%%scratch ")) == {"sql", "write", "--name", "--tool", "--force", "--help"}
    assert set(complete(ip, "%scratch policy ")) == {"show", "load"}
    assert set(complete(ip, "%scratch auto ")) == {"on", "off"}
    assert set(complete(ip, f"%scratch export {spilled} --to ")) == {"parquet", "csv", "json", "jsonl"}
    for line in (f"%scratch head {spilled} -n ", f"%scratch grep {spilled} ", f"%scratch head {spilled} -n ab",
                 f"%scratch slice {spilled} 1 "):
        found = complete(ip, line)
        assert not {"abs", "and", "def", "print", "README.md"} & set(found) and len(found) <= 1, (line, found)
    assert "abs" in complete(ip, "x = ab")  # Python's lines stay Python's


def test_tab_completes_relations_in_a_sql_cells_query(ip: Any, spilled: str, session: ScratchSession) -> None:
    # the body of %%scratch sql completed Python's names: magics, keywords, none of the relations
    arrays = session.pad.intercept({"items": [{"n": i} for i in range(5000)]}, tool="t").handle
    for cell in ("%%scratch sql\nSELECT * FROM ", "%%scratch sql --limit 5\nSELECT count(*)\nFROM "):
        found = complete(ip, cell)
        assert {spilled, arrays, f"{arrays}.items", "scratch_notes"} <= set(found), found
        assert not any(c.startswith("%") for c in found)
    assert complete(ip, f"%%scratch sql\nSELECT n\nFROM {arrays[:4]}") == [arrays, f"{arrays}.items"]
    assert complete(ip, f"%scratch sql SELECT n FROM {arrays[:4]}") == [arrays, f"{arrays}.items"]  # the line form
    assert arrays not in complete(ip, f"x = 1\n{arrays[:4]}")  # Python's cells are Python's


def test_unload_removes_the_completer(ip: Any, spilled: str) -> None:
    ip.run_line_magic("unload_ext", "jupyter_scratchpad")
    assert spilled not in complete(ip, "%scratch head ")
    assert spilled not in complete(ip, "df = %scratch df ")
    assert spilled not in complete(ip, "%%scratch sql\nSELECT * FROM ")


# -- typos are errors ----------------------------------------------------------------------------


def test_an_unknown_model_is_warned_about_with_close_matches(ip: Any, session: ScratchSession,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%config ScratchMagics.model = 'gpt4o'")
    err = capsys.readouterr().err
    assert "unknown model 'gpt4o'" in err and "did you mean 'gpt-4o'" in err
    value(ip, "%scratch budget --model claude-sonet-4")
    assert "unknown model" not in capsys.readouterr().err  # any claude-* is known (Claude's window)
    value(ip, "%scratch budget --model gpt-4.1-mini")
    assert capsys.readouterr().err == ""


def test_handle_errors_name_the_magic(ip: Any, spilled: str) -> None:
    with pytest.raises(UsageError) as info:
        ip.run_cell("%scratch head nosuch_handle")
    message = str(info.value)
    assert message.startswith("%scratch head:") and "%scratch list" in message and "scratch_list" not in message
    with pytest.raises(UsageError, match=r"^%scratch df: no live handle 'nosuch'"):
        ip.run_cell("%scratch df nosuch")
    with pytest.raises(UsageError) as info:
        ip.run_cell("%scratch explore {h}")  # not expanded: '{h}' is not a handle
    assert "%scratch list shows the live handles" in str(info.value) and "scratch_list" not in str(info.value)


def test_export_writes_the_file_the_help_promises(ip: Any, records: str, session: ScratchSession, tmp_path: Any,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # %scratch export called session.pad.export, which did not exist: an AttributeError in every cell
    out = tmp_path / "rows.csv"
    ip.run_cell(f"%scratch export {records} --to csv -o {out}").raise_error()
    assert "(8,000 rows" in capsys.readouterr().out
    df = pd.read_csv(out)
    assert len(df) == ROWS and list(df["id"][:3]) == [0, 1, 2]
    with pytest.raises(UsageError, match=r"exists and is kept.*--overwrite"):
        ip.run_cell(f"%scratch export {records} --to parquet -o {out}")
    assert len(pd.read_csv(out)) == ROWS  # the file there is kept
    ip.run_cell(f"%scratch export {records} --to parquet -o {out} --overwrite").raise_error()
    import duckdb

    assert duckdb.sql(f"SELECT count(*) FROM read_parquet('{out}')").fetchall() == [(ROWS,)]
    done = session.pad.export(records, tmp_path / "rows.jsonl")  # the method the help names
    assert done["format"] == "jsonl" and done["rows"] == ROWS and done["bytes"] == (tmp_path / "rows.jsonl").stat().st_size


def test_export_to_a_missing_directory_says_so(ip: Any, records: str, tmp_path: Any) -> None:
    # it made every missing directory (mkdir -p), wherever a typo pointed
    missing = tmp_path / "no_such_dir"
    with pytest.raises(UsageError) as info:
        ip.run_cell(f"%scratch export {records} --to jsonl -o {missing / 'x.jsonl'}")
    said = str(info.value)
    assert said.startswith("%scratch export: ") and f"{missing} does not exist" in said and "mkdir -p" in said, said
    assert not missing.exists()
    (tmp_path / "a_file").write_text("")
    with pytest.raises(UsageError, match="a_file is not a directory"):
        ip.run_cell(f"%scratch export {records} --to csv -o {tmp_path / 'a_file' / 'x.csv'}")


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "parquet"])
def test_every_export_gets_the_umasks_permissions(ip: Any, records: str, tmp_path: Any, fmt: str) -> None:
    # the JSONL (and JSON) file was 0600 (a temporary file's mode), csv and parquet the umask's
    before = os.umask(0o027)
    try:
        ip.run_cell(f"%scratch export {records} --to {fmt} -o {tmp_path / ('out.' + fmt)}")
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / f"out.{fmt}").stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == [f"out.{fmt}"]  # no temporary file left


def test_sql_over_a_handle_duckdb_cannot_read_says_so(ip: Any, session: ScratchSession) -> None:
    # 10,000 levels deep: the person read "Table with name H does not exist", with a suggestion of
    # the very query that failed; the agent's sql tool said DuckDB cannot read it
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(10_000):
        node["k"] = {}
        node = node["k"]
    node["leaf"] = "x" * 30_000
    handle = str(session.pad.intercept(deep, tool="deep").handle)
    with pytest.raises(UsageError, match="cannot read this handle") as info:
        ip.run_cell(f"%scratch sql SELECT count(*) FROM {handle}")
    said = str(info.value)
    assert f"%scratch schema {handle}" in said and "does not exist" not in said, said
    ip.run_cell(f"%scratch schema {handle}")  # the suggestion runs
