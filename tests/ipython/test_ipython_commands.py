"""Each %scratch subcommand: what it returns, what it shows, what it charges."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError

from jupyter_scratchpad import SpillPolicy
from jupyter_scratchpad.ipython import STUB_MIME, ScratchSession
from jupyter_scratchpad.ipython._results import BudgetReport, Rows, StubView
from jupyter_scratchpad.ipython.commands import COMMANDS
from jupyter_scratchpad.tools import ToolResult


def value(ip: Any, code: str) -> Any:
    """The value of a one-cell expression (a magic call as written in a notebook)."""
    return ip.run_cell(code).result


def test_list_is_a_dataframe_of_live_entries(ip: Any, spilled: str, session: ScratchSession) -> None:
    session.pad.scratch_write("k", 1)
    assert session.pad.wait_for_counts(60)  # (the exact count lands off the critical path; under load, late)
    entries = value(ip, "%scratch list")
    assert isinstance(entries, pd.DataFrame)
    assert {"handle", "kind", "source_tool", "size", "tokens", "created_at", "expires_at"} <= set(entries.columns)
    assert list(entries["kind"]) == ["handle", "note"]
    assert entries["handle"][0] == spilled and entries["source_tool"][0] == "cell_1"
    assert entries["tokens"][0] > 5120
    only_notes = value(ip, "%scratch list --kind note")
    assert list(only_notes["key"]) == ["k"]


def test_list_is_oldest_first_as_its_help_and_the_readme_say(ip: Any, spilled: str, session: ScratchSession) -> None:
    # probe X: the README's example took iloc[0] for the spill just made (it is the oldest)
    newest = session.pad.intercept({"rows": list(range(20_000))}, tool="later", force=True).handle
    entries = value(ip, "%scratch list --kind handle")
    assert list(entries["handle"]) == [spilled, newest]
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert 'h = entries["handle"].iloc[-1]' in readme and "oldest first" in readme
    from jupyter_scratchpad.ipython.commands.cmd_list import PARSER

    assert "oldest first" in " ".join(PARSER.format_help().split())


def test_list_of_nothing_has_the_columns(ip: Any) -> None:
    entries = value(ip, "entries = %scratch list\nentries")
    assert entries.empty and "handle" in entries.columns and ip.user_ns["entries"] is entries


def test_list_and_show_are_not_charged(ip: Any, spilled: str, session: ScratchSession) -> None:
    used = session.pad.budget.used
    value(ip, "%scratch list")
    value(ip, f"%scratch show {spilled}")
    value(ip, "%scratch budget")
    assert session.pad.budget.used == used


def test_show_returns_the_stub_and_displays_the_card(ip: Any, spilled: str) -> None:
    stub = value(ip, f"%scratch show {spilled}")
    assert isinstance(stub, StubView) and isinstance(stub, dict)
    assert stub["handle"] == spilled and stub["format"] == "json" and stub["run_id"] == "notebook"
    data, _ = ip.display_formatter.format(stub)
    assert data[STUB_MIME]["handle"] == spilled
    assert spilled in data["text/html"] and data["text/plain"].startswith("[scratchpad]")



def test_the_cards_sql_suggestion_counts_the_items_not_the_document(ip: Any, spilled: str) -> None:
    from jupyter_scratchpad.ipython._render import next_commands

    stub = value(ip, f"%scratch show {spilled}")
    [query] = [c for c in next_commands(stub) if c.startswith("%scratch sql")]
    assert f"FROM {spilled}.items" in query  # FROM {spilled} counted 1: the document
    items = len(value(ip, f"%scratch get {spilled} items"))
    assert value(ip, query)["count_star()"].tolist() == [items] and items > 1


def test_a_lower_bound_on_the_card_says_it_is_still_counting(ip: Any, session: ScratchSession) -> None:
    # "≥ 5,120 tokens" stayed on the card for good, where the README promised exact tokens
    from jupyter_scratchpad.ipython._render import stub_html, stub_text

    handle = session.pad.spill("word " * 100_000, tool="t").handle
    session.pad.wait_for_counts()
    exact = value(ip, f"%scratch show {handle}")
    assert exact["tokens_exact"] is not False and "≥" not in stub_text(exact) and "counting" not in stub_text(exact)
    pending = {**exact, "tokens_exact": False, "tokens": 5120}  # as the card is first drawn
    for text in (stub_text(pending), stub_html(pending)):
        assert f"≥ 5,120 tokens for gpt-4o (still counting; %scratch show {handle} has the exact count)" in text


def test_the_card_counts_one_line_as_one_line(ip: Any, session: ScratchSession) -> None:
    from jupyter_scratchpad.ipython._render import stub_text

    handle = session.pad.spill("word " * 10_000, tool="t").handle  # one long line
    stub = value(ip, f"%scratch show {handle}")
    assert ", 1 line, " in stub_text(stub) and "1 lines" not in stub_text(stub)  # (it said "1 lines")
    assert ", 2 lines, " in stub_text({**stub, "lines": 2})


def test_every_command_the_card_suggests_runs(ip: Any, session: ScratchSession) -> None:
    # the card suggested `iter H $.items --fields a,b`, which failed (the keys there: id, status)
    from jupyter_scratchpad.ipython._render import next_commands

    ip.run_cell("{'items': [{'id': i, 'status': 'failed' if i % 9 == 0 else 'ok'} for i in range(20_000)]}")
    [entry] = session.pad.entries("handle")
    stub = session.pad.stub(entry["handle"])
    [iterate] = [c for c in next_commands(stub) if c.startswith("%scratch iter")]
    assert iterate == f"%scratch iter {entry['handle']} $.items --fields id,status --limit 20"
    rows = value(ip, iterate)
    assert rows[1] == {"_index": 1, "id": 1, "status": "ok"} and len(rows) == 20
    for command in next_commands(stub):
        if "PATTERN" not in command and "explore" not in command:
            value(ip, command)  # (a failing one raises)
    assert not [c for c in next_commands(session.pad.spill(list(range(20_000))).stub) if "--fields" in c]


@pytest.mark.parametrize(("line", "first", "last"), [
    ("head {h} -n 3", 1, 3), ("tail {h} -n 2", None, None), ("slice {h} 5 9", 5, 9),
])
def test_line_tools_read_as_the_person_and_charge_only_as_agent(ip: Any, spilled: str, session: ScratchSession,
                                                                 line: str, first: int | None,
                                                                 last: int | None) -> None:
    used = session.pad.budget.used
    result = value(ip, "%scratch " + line.format(h=spilled))
    assert isinstance(result, ToolResult) and result.ok
    assert result.tokens == 0 and session.pad.budget.used == used and "not charged" in result.text
    agent = value(ip, "%scratch " + line.format(h=spilled) + " --as-agent")
    assert agent.data == result.data
    assert agent.tokens > 0 and session.pad.budget.used == used + agent.tokens and f"{agent.tokens} tokens, " in agent.text
    if first is not None:
        assert (result.data["start"], result.data["end"]) == (first, last)
    else:
        total = result.data["total_lines"]
        assert (result.data["start"], result.data["end"]) == (total - 1, total)


def test_head_shows_numbered_lines_as_text_and_html(ip: Any, spilled: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = value(ip, f"%scratch head {spilled} -n 2")
    out = capsys.readouterr().out
    assert any(line.startswith("1\t{") for line in out.splitlines()) and "read as you: not charged" in out
    data, _ = ip.display_formatter.format(result)
    assert data["text/html"].startswith("<pre") and "\n2\t" in data["text/html"]


def test_grep_passes_every_option(ip: Any, spilled: str) -> None:
    result = value(ip, f"%scratch grep {spilled} 'FAILED' -i -C 0 --max 2")
    assert result.ok and result.arguments == {"handle": spilled, "pattern": "FAILED", "context": 0,
                                             "ignore_case": True, "max_matches": 2}
    assert result.text.count('"phase": "Failed"') == 2


def test_grep_keeps_backslashes_of_a_regex(ip: Any, spilled: str) -> None:
    result = value(ip, rf"%scratch grep {spilled} pod-\d\d\d9\b --max 1")
    assert result.arguments["pattern"] == r"pod-\d\d\d9\b" and '"pod-1009"' in result.text


def test_schema_and_items(ip: Any, spilled: str) -> None:
    schema = value(ip, f"%scratch schema {spilled} --depth 2")
    assert schema.ok and schema.arguments["max_depth"] == 2 and "$.items" in schema.text
    items = value(ip, f"%scratch items {spilled} items --limit 10")
    assert items.ok and "metadata" in items.text and items.arguments["limit"] == 10


def test_get_without_path_returns_the_whole_value_uncharged(ip: Any, spilled: str, session: ScratchSession) -> None:
    used = session.pad.budget.used
    got = value(ip, f"x = %scratch get {spilled}\nx")
    assert got == ip.user_ns["pods"]() and session.pad.budget.used == used


@pytest.mark.parametrize("path", ["items.3.metadata", "$.items[3].metadata", "items[-2997].metadata"])
def test_get_with_a_path_is_get_in(ip: Any, spilled: str, path: str, session: ScratchSession) -> None:
    used = session.pad.budget.used
    assert value(ip, f"%scratch get {spilled} {path}") == {"name": "pod-3", "namespace": "ns-a"}
    assert session.pad.budget.used == used
    assert value(ip, f"%scratch get {spilled} {path} --as-agent") == {"name": "pod-3", "namespace": "ns-a"}
    assert session.pad.budget.used > used


def test_get_offset_and_limit_page_a_list(ip: Any, spilled: str) -> None:
    """They were applied to long strings only and silently ignored on a list (all items back)."""
    items = value(ip, f"%scratch get {spilled} items")
    assert value(ip, f"%scratch get {spilled} items --offset 2 --limit 2") == items[2:4]
    assert value(ip, f"%scratch get {spilled} items --limit 1") == items[:1]
    with pytest.raises(UsageError, match="holds an object"):
        ip.run_cell(f"%scratch get {spilled} items.0 --limit 1")


def test_list_says_which_token_counts_are_still_bounds(ip: Any, session: ScratchSession,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after a large spill its tokens are the decision's bound (5,120); the list showed it
    as a plain integer, as exact as the count that lands seconds later."""
    import threading

    release = threading.Event()
    real = session.store.set_tokens

    def held(*args: Any, **kw: Any) -> Any:
        release.wait(30)
        return real(*args, **kw)

    monkeypatch.setattr(session.store, "set_tokens", held)
    ip.run_cell("%scratch write k 1")
    ip.run_cell("{'items': [{'id': i, 'status': 'failed' if i % 9 == 0 else 'ok'} for i in range(20_000)]}")
    frame = value(ip, "%scratch list")
    [row] = frame[frame["kind"] == "handle"].to_dict("records")
    assert row["tokens_exact"] is False and row["tokens"] == session.pad.policy.min_tokens
    assert frame[frame["kind"] == "note"]["tokens_exact"].isna().all()
    release.set()
    assert session.pad.wait_for_counts(30)
    [row] = value(ip, "%scratch list --kind handle").to_dict("records")
    assert row["tokens_exact"] is True and row["tokens"] > session.pad.policy.min_tokens


def test_get_a_quoted_key(ip: Any, session: ScratchSession) -> None:
    r = session.pad.spill({"a.b": {"200": "ok"}}, tool="t")
    assert value(ip, f'%scratch get {r.handle} ["a.b"]["200"]') == "ok"


def test_iter_returns_rows(ip: Any, spilled: str) -> None:
    rows = value(ip, f"rows = %scratch iter {spilled} items --fields metadata.name,status.phase --offset 7 --limit 3\nrows")
    assert isinstance(rows, Rows) and isinstance(rows, list) and len(rows) == 3
    assert rows[0] == {"_index": 7, "metadata.name": "pod-7", "status.phase": "Failed"}
    assert "<table>" in rows._repr_html_() and "pod-8" in rows._repr_html_()


def test_iter_needs_fields(ip: Any, spilled: str) -> None:
    with pytest.raises(UsageError, match="--fields"):
        value(ip, f"%scratch iter {spilled} items")


def test_sql_returns_a_real_dataframe(ip: Any, spilled: str) -> None:
    df = value(ip, f"df = %scratch sql SELECT i.status.phase AS phase, count(*) AS n FROM "
                   f"(SELECT unnest(items) AS i FROM {spilled}) GROUP BY 1 ORDER BY 1\ndf")
    assert type(df) is pd.DataFrame
    assert df.to_dict("records") == [{"phase": "Failed", "n": 429}, {"phase": "Running", "n": 2571}]


def test_sql_cell_form_and_max_rows(ip: Any, spilled: str) -> None:
    df = value(ip, f"%%scratch sql --max-rows 5\nSELECT unnest(items).metadata.name AS name\nFROM {spilled}")
    assert list(df["name"]) == [f"pod-{i}" for i in range(5)]


def test_sql_with_a_variable_in_single_braces_says_how_to_put_it_in(ip: Any, spilled: str) -> None:
    # the query is passed as typed ({{h}} is replaced, {h} reaches DuckDB): a parser error alone
    # left the person guessing
    ip.run_cell(f"h = {spilled!r}")
    with pytest.raises(UsageError) as info:
        value(ip, "%scratch sql SELECT count(*) FROM {h}")
    assert "Parser Error" in str(info.value) and "write {{h}}" in str(info.value)
    assert value(ip, "%scratch sql SELECT count(*) AS n FROM {{h}}")["n"].tolist() == [1]
    with pytest.raises(UsageError) as other:  # a brace that names no variable: no such hint
        value(ip, "%scratch sql SELECT count(*) FROM {nothing_here}")
    assert "write {{" not in str(other.value)


def test_sql_over_a_misspelt_relation_offers_the_query_that_runs(ip: Any, spilled: str) -> None:
    with pytest.raises(UsageError) as info:
        value(ip, f"%scratch sql SELECT count(*) AS n FROM {spilled}_items")
    line = str(info.value)
    assert f"try: %scratch sql SELECT count(*) AS n FROM {spilled}.items" in line
    assert line.count(f"{spilled}.items, scratch_notes") == 1  # the relations are listed once
    assert value(ip, f"%scratch sql SELECT count(*) AS n FROM {spilled}.items")["n"].tolist() == [3000]


def test_sql_with_no_rows_keeps_its_columns(ip: Any, spilled: str) -> None:
    df = value(ip, f"%scratch sql SELECT kind, 1 AS \"a|b\" FROM {spilled} WHERE false")
    assert df.empty and list(df.columns) == ["kind", "a|b"]


def test_write_read_delete_notes(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell('%scratch write failing ["pod-0", "pod-7"]')
    ip.run_cell("%scratch write --ttl 30 plain some words here")
    ip.run_cell("%%scratch write multi\nline one\nline two")
    assert "saved note 'failing'" in capsys.readouterr().out
    assert value(ip, "%scratch read failing") == ["pod-0", "pod-7"]
    assert value(ip, "%scratch read plain") == "some words here"
    assert value(ip, "%scratch read multi") == "line one\nline two"
    ip.run_cell("%scratch delete plain")
    assert "deleted note 'plain'" in capsys.readouterr().out
    assert [e["key"] for e in session.pad.entries("note")] == ["failing", "multi"]
    # an expression in {{...}} saved its source text ("saved note 'big' (19 bytes)"), silently
    with pytest.raises(UsageError, match="is an expression") as info:
        ip.run_cell("%scratch write big {{'x' * 5_000_000}}")
    assert "then %scratch write KEY {{v}}" in str(info.value)
    ip.user_ns["v"] = "x" * 5_000
    ip.run_cell("%scratch write big {{v}}")
    assert session.pad.scratch_read("big") == "x" * 5_000


def test_delete_a_handle(ip: Any, spilled: str, session: ScratchSession) -> None:
    ip.run_cell(f"%scratch delete {spilled}")
    assert session.pad.entries() == []


def test_budget_reports_window_usage_and_can_switch_model(ip: Any, spilled: str, session: ScratchSession) -> None:
    value(ip, f"%scratch head {spilled} --as-agent")
    report = value(ip, "%scratch budget")
    assert isinstance(report, BudgetReport)
    assert report["context_window"] == 128_000 and report["usable"] == 102_400
    assert report["remaining"] == report["usable"] - report["used"]
    assert report["tokens_intercepted"] > 5120 and report["tokens_extracted"] > 0
    used = report["used"]
    switched = value(ip, "%scratch budget --model claude-sonnet-4 --window 50000")
    assert switched["model"] == "claude-sonnet-4" and switched["context_window"] == 50_000
    assert switched["used"] == used and switched["tokens_extracted"] == report["tokens_extracted"]
    assert session.pad.model == "claude-sonnet-4" and session.magics.context_window == 50_000
    assert "remaining" in ip.display_formatter.format(switched)[0]["text/html"]


def test_auto_on_off(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%scratch auto off")
    assert session.auto_spill is False and session.magics.auto_spill is False
    ip.run_cell("%scratch auto")
    assert "auto-spill is off" in capsys.readouterr().out
    ip.run_cell("%scratch auto on")
    assert session.auto_spill is True and "5,120 tokens" in capsys.readouterr().out


def test_explore_displays_the_widget_explorer(ip: Any, spilled: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import jupyter_scratchpad.widgets as widgets

    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: shown.extend(objs))
    ip.run_cell(f"%scratch explore {spilled}")
    assert len(shown) == 1 and isinstance(shown[0], widgets.Explorer)


def test_explore_without_the_widgets_says_what_to_install(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jupyter_scratchpad.widgets", None)
    with pytest.raises(UsageError, match=r"pip install 'jupyter-scratchpad\[jupyter\]'"):
        ip.run_cell("%scratch explore")


def test_explore_an_unknown_handle(ip: Any, spilled: str) -> None:
    with pytest.raises(UsageError, match=f"did you mean '{spilled}'"):
        ip.run_cell(f"%scratch explore {spilled[:-1]}x")


def test_replay_without_the_lab_says_what_to_install(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jupyter_scratchpad.lab", None)
    with pytest.raises(UsageError, match=r"jupyter-scratchpad\[lab\]"):
        ip.run_cell("%scratch replay trace.jsonl")


POLICY = """
[agent.scratchpad]
enabled = true
opt_in = false
max_extraction_tokens = 4000
min_tokens = 900

[mcp.servers.k8s.scratchpad]
"k8s_list_*" = { min_tokens = 512 }

[agent.scratchpad.patterns]
"cell_*_stdout" = { min_tokens = 300 }
"""


def test_policy_show_prints_aura_toml(ip: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ip.run_cell("%scratch policy show")
    shown = capsys.readouterr().out
    assert SpillPolicy.from_toml(shown) == SpillPolicy()
    path = tmp_path / "aura.toml"
    path.write_text(POLICY)
    ip.run_cell(f"%scratch policy show {path}")
    assert SpillPolicy.from_toml(capsys.readouterr().out) == SpillPolicy.from_toml(path)


def test_policy_load_sets_the_notebook_policy(ip: Any, session: ScratchSession, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "aura.toml"
    path.write_text(POLICY)
    ip.run_cell(f"%scratch policy load {path}")
    assert "loaded" in capsys.readouterr().out
    policy = session.pad.policy
    assert policy == SpillPolicy.from_toml(path) and session.magics.policy_file == str(path)
    assert policy.threshold_for("cell_3_stdout") == 300 and policy.threshold_for("cell_3") == 900
    assert session.pad.budget.max_extraction_tokens == 4000
    ip.run_cell("print('word ' * 400)")  # 400 tokens: over the file's stdout threshold
    assert [e["source_tool"] for e in session.pad.entries()] == ["cell_2_stdout"]
    path.write_text(POLICY.replace("min_tokens = 900", "min_tokens = 901"))
    ip.run_cell(f"%scratch policy load {path}")  # the same path again re-reads the file
    assert session.pad.policy.min_tokens == 901


def test_policy_load_of_a_bad_file_changes_nothing(ip: Any, session: ScratchSession, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[agent.scratchpad]\nmin_tokens = 'many'\n")
    with pytest.raises(UsageError, match="min_tokens must be int"):
        ip.run_cell(f"%scratch policy load {path}")
    with pytest.raises(UsageError, match="cannot read policy file"):
        ip.run_cell(f"%scratch policy load {tmp_path / 'missing.toml'}")
    path.write_text("agent = 5\n")  # a shape older cores misread (AttributeError inside)
    with pytest.raises(UsageError, match=r"must be a table|is not a valid policy"):
        ip.run_cell(f"%scratch policy load {path}")
    assert session.pad.policy == SpillPolicy() and session.magics.policy_file is None


def test_every_subcommand_has_help(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    for name in COMMANDS:
        assert value(ip, f"%scratch {name} --help") is None
        out = capsys.readouterr().out
        assert f"%scratch {name}" in out and len(out.splitlines()) >= 3, name
    ip.run_cell("%%scratch --help\n1")
    assert "--force" in capsys.readouterr().out


def test_the_overview_lists_every_subcommand(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%scratch")
    out = capsys.readouterr().out
    assert all(f"  {c.usage}" in out for c in COMMANDS.values())
