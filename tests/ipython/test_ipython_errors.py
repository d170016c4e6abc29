"""Bad input: one-line UsageErrors that name what to do; nothing stored is lost."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_scratchpad.ipython import ScratchSession
from jupyter_scratchpad.ipython._args import split_args, split_first, suggestion_as_magic


def usage_error(ip: Any, code: str) -> str:
    with pytest.raises(UsageError) as info:
        ip.run_cell(code)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.parametrize(("code", "expected"), [
    ("%scratch hed x", "unknown subcommand 'hed'; did you mean 'head'"),
    ("%scratch zzz", "unknown subcommand 'zzz' (%scratch --help lists them)"),
    ("%scratch head", "the following arguments are required: H"),
    ("%scratch head h -n many", "argument -n/--lines: invalid int value: 'many'"),
    ("%scratch slice h 1", "required: END"),
    ("%scratch grep h 'unclosed", "unbalanced ' quote"),
    ("%scratch auto maybe", "invalid choice: 'maybe'"),
    ("%scratch policy load", "give the TOML FILE"),
    ("%scratch sql", "give a query"),
    ("%scratch sql --max-rows lots SELECT 1", "--max-rows needs a number"),
    ("%scratch write onlykey", "give a VALUE for 'onlykey'"),
    ("%scratch write --ttl soon k v", "--ttl needs a number of seconds"),
    ("%%scratch head\nx", "%%scratch head has no cell form"),
    ("%%scratch --name Not-Valid\n1", "invalid handle 'Not-Valid'"),
    ("%%scratch --name Not-Valid\n1", "%scratch list shows the live handles"),  # (it named scratch_list)
    ("%scratch grep h '-x'", "a value that starts with '-' goes after --: %scratch grep H -- -x"),
])
def test_bad_usage(ip: Any, code: str, expected: str) -> None:
    said = usage_error(ip, code)
    assert expected in said
    if code == "%scratch head":  # no dash among the words: no hint about --
        assert "goes after --" not in said


def test_the_command_lines_names_ls_and_rm_work_here_too(ip: Any, session: ScratchSession, spilled: str) -> None:
    # `%scratch ls` was "unknown subcommand 'ls'; did you mean 'list'?" (the CLI's name for it)
    listed = ip.run_line_magic("scratch", "ls")
    assert list(listed["handle"]) == [spilled], listed  # (the same frame %scratch list returns)
    ip.run_line_magic("scratch", f"rm {spilled}")
    assert [e["handle"] for e in session.pad.entries("handle")] == []


def test_an_unbalanced_quote_names_the_command_and_how_to_quote(ip: Any, spilled: str) -> None:
    # "UsageError: unbalanced ' quote in: {{H}} don't --max 1 -C 0": no command, the {{H}} as typed,
    # nothing on how to quote
    ip.user_ns["H"] = spilled
    said = usage_error(ip, "%scratch grep {{H}} don't --max 1 -C 0")
    assert said.startswith("%scratch grep: unbalanced ' quote in don't") and "\"don't\"" in said, said
    assert "{{H}}" not in said and "--max" not in said, said
    ip.run_cell('%scratch grep {{H}} "don\'t" --max 1 -C 0')  # quoted as it says: runs
    said = usage_error(ip, '%scratch head {{H}} -n "5')
    assert said.startswith('%scratch head: unbalanced " quote: close the " that opens "5'), said


def test_a_tools_refusal_names_the_command_once(ip: Any, spilled: str) -> None:
    said = usage_error(ip, f"%scratch grep {spilled} pod --max 1000000")
    assert said.startswith("%scratch grep: --max must be") and "grep: grep:" not in said, said


@pytest.mark.parametrize(("line", "expected"), [
    ("schema {h} --depth -1", "%scratch schema: --depth must be"),
    ("grep {h} x -C -1", "%scratch grep: -C must be"),
    ("grep {h} x --max 0", "%scratch grep: --max must be"),
    ("items {h} items --limit -1", "%scratch items: --limit must be"),
])
def test_errors_name_the_flags_typed_not_the_tools_arguments(ip: Any, spilled: str, line: str,
                                                               expected: str) -> None:
    # "'max_depth' must be …" named the tool's argument; the notebook user typed --depth
    said = usage_error(ip, "%scratch " + line.format(h=spilled))
    assert said.startswith(expected) and "max_depth" not in said and "'context'" not in said, said


def test_export_over_a_file_names_the_flag(ip: Any, spilled: str, tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_text("kept")
    said = usage_error(ip, f"%scratch export {spilled} items --to csv -o {target}")
    assert "pass --overwrite" in said and "overwrite=True" not in said, said


def test_an_unknown_handle_is_not_matched_by_the_cell_n_shape_alone(ip: Any, spilled: str) -> None:
    # an expired cell_14_… was offered "did you mean cell_5_…": only the cell_N_ shape was alike
    stem = spilled.rpartition("_")[0]
    other = f"{stem}4_d867ec0de1f3"
    for code in (f"%scratch head {other} -n 2", f"%scratch show {other}", f"%scratch grep {other} x"):
        said = usage_error(ip, code)
        assert "no live handle" in said and "%scratch list" in said, said
        assert "did you mean" not in said and spilled not in said, said
    said = usage_error(ip, f"%scratch head {stem}4_{spilled.rpartition('_')[2]}")  # the id it had: that one
    assert f"did you mean {spilled}" in said and f"%scratch head {spilled}" in said, said
    assert "?;" not in said  # (was "did you mean h?; try: …")


def test_an_expired_handle_is_explained_by_every_subcommand(ip: Any, session: ScratchSession) -> None:
    # only `head` said "expired … ago"; get and explore said "no live handle", sql a raw Catalog Error
    handle = session.pad.spill({"items": [{"id": i} for i in range(50)]}, tool="t", ttl_s=0.2).handle
    time.sleep(0.4)
    codes = ["head", "get", "explore", "show", "df", "schema", "grep {h} x", "iter {h} items --fields id"]
    for code in [f"%scratch {c} {handle}" if "{h}" not in c else f"%scratch {c.format(h=handle)}" for c in codes]:
        said = usage_error(ip, code)
        assert f"'{handle}' expired " in said and " s ago" in said and "spill the output again" in said, (code, said)
    for query in (f"SELECT count(*) FROM {handle}", f"SELECT * FROM {handle}.items"):
        said = usage_error(ip, f"%scratch sql {query}")
        assert f"'{handle}' expired " in said and "Catalog Error" not in said, said


def test_a_handle_of_a_kernel_before_a_restart_is_explained(ip: Any, tmp_path: Path) -> None:
    # with the default temporary store the spills went with the old kernel: say so, and how to keep them
    old = "cell_3_5be1c0b7d3e2"
    for code in (f"%scratch head {old}", f"%scratch get {old}", f"%scratch explore {old}",
                 f"%scratch sql SELECT count(*) FROM {old}"):
        said = usage_error(ip, code)
        assert f"no live handle '{old}'" in said and "the old kernel's temporary store" in said, said
        assert "ScratchMagics.store_path" in said, said
    ip.run_line_magic("config", f"ScratchMagics.store_path = {str(tmp_path / 'kept')!r}")
    said = usage_error(ip, f"%scratch get {old}")  # a kept store: a restart is not why
    assert f"no live handle '{old}'" in said and "temporary store" not in said, said


def test_unknown_handle_names_the_close_match(ip: Any, spilled: str) -> None:
    message = usage_error(ip, f"%scratch grep {spilled[:-1]}0 x")
    assert "no live handle" in message and "%scratch list" in message
    message = usage_error(ip, f"%scratch show {spilled[:-1]}0")
    assert f"did you mean '{spilled}'" in message
    message = usage_error(ip, f"%scratch get {spilled}x")
    assert f"did you mean '{spilled}'" in message


def test_bad_path_lists_the_keys_and_a_command_to_run(ip: Any, spilled: str) -> None:
    message = usage_error(ip, f"%scratch get {spilled} itemz.0")
    assert "no key 'itemz'" in message and "keys there: kind, items" in message
    assert f"try: %scratch get {spilled} $.items" in message


def test_bad_sql_suggests_describe(ip: Any, spilled: str) -> None:
    message = usage_error(ip, "%scratch sql SELECT * FROM nowhere")
    assert "nowhere" in message and f"%scratch sql DESCRIBE {spilled}" in message


def test_sandbox_refusal_is_one_line(ip: Any, spilled: str) -> None:
    message = usage_error(ip, "%scratch sql SELECT * FROM read_text('/etc/passwd')")
    assert "sandbox" in message


def test_too_large_refusal_suggests_a_magic_that_fits(ip: Any, spilled: str, session: ScratchSession) -> None:
    used = session.pad.budget.used
    message = usage_error(ip, f"%scratch head {spilled} -n 20000 --as-agent")
    assert "head_too_large" not in message and "only this short refusal was charged" in message
    assert f"try: %scratch head {spilled} -n " in message  # (the refused head, fewer lines; not also a slice of them)
    assert used < session.pad.budget.used < used + 500
    suggested = message.split("try: ")[1].split("  or  ")[0]
    assert ip.run_cell(suggested + " --as-agent").result.ok  # the suggestion runs as typed, and fits
    assert session.pad.entries()[0]["handle"] == spilled  # nothing stored is lost


def test_a_bug_of_ours_is_one_line_and_logged(ip: Any, spilled: str, monkeypatch: pytest.MonkeyPatch,
                                              caplog: pytest.LogCaptureFixture) -> None:
    from jupyter_scratchpad.ipython.commands import cmd_show

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(cmd_show, "StubView", broken)
    message = usage_error(ip, f"%scratch show {spilled}")
    assert "ZeroDivisionError: boom" in message and "kernel log" in message
    assert "Traceback" in caplog.text
    assert ip.run_cell("1 + 1").result == 2  # the shell keeps working


def test_the_kernel_keeps_working_after_errors(ip: Any, spilled: str) -> None:
    for code in ("%scratch nope", f"%scratch get {spilled} zzz", "%scratch sql !!"):
        with pytest.raises(UsageError):
            ip.run_cell(code)
    assert ip.run_cell(f"%scratch get {spilled} kind").result == "PodList"


@pytest.mark.parametrize(("text", "words"), [
    ('h "two words" -C 2', ["h", "two words", "-C", "2"]),
    (r"h \d+\s", ["h", r"\d+\s"]),
    ('h a["b.c"][0]', ["h", 'a["b.c"][0]']),
    ("h '$.items[0]'", ["h", "$.items[0]"]),
    ("  ", []),
    ("df H items          # every item as a DataFrame", ["df", "H", "items"]),
    ('grep H "#tag" a#b', ["grep", "H", "#tag", "a#b"]),
])
def test_split_args(text: str, words: list[str]) -> None:
    assert split_args(text) == words


def test_split_first_keeps_the_rest_verbatim() -> None:
    assert split_first("key  {\"a\": [1, 2]} ") == ("key", '{"a": [1, 2]}')
    assert split_first('"a key" rest') == ("a key", "rest")
    assert split_first("") == ("", "")


@pytest.mark.parametrize(("suggestion", "magic"), [
    ({"tool": "head", "arguments": {"handle": "h", "lines": 40}}, "%scratch head h -n 40"),
    ({"tool": "get_in", "arguments": {"handle": "h", "path": "$.a b"}}, "%scratch get h '$.a b'"),
    ({"tool": "iterate_over", "arguments": {"handle": "h", "path": "items", "fields": ["a", "b"], "limit": 5}},
     "%scratch iter h items --fields a,b --limit 5"),
    ({"tool": "grep", "arguments": {"handle": "h", "pattern": "x", "ignore_case": True, "context": 1}},
     "%scratch grep h x -i -C 1"),
    ({"tool": "sql", "arguments": {"query": "SELECT 1"}}, "%scratch sql SELECT 1"),
    ({"tool": "read_handle", "arguments": {"handle": "h"}, "call": 'read_handle(handle="h")'},
     'read_handle(handle="h")'),
])
def test_suggestions_become_magics(suggestion: dict[str, Any], magic: str) -> None:
    assert suggestion_as_magic(suggestion) == magic


def test_our_log_lines_go_to_the_kernel_log_not_the_cell(bare_shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # with no logging set up, Python's last-resort handler printed our warnings and tracebacks to
    # sys.stderr: in a kernel, the running cell (an internal error's traceback landed in the notebook)
    import io
    import logging
    import sys

    ours = logging.getLogger("jupyter_scratchpad")
    monkeypatch.setattr(ours, "handlers", [])
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    cell, kernel_log = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", cell)
    monkeypatch.setattr(sys, "__stderr__", kernel_log)
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    logging.getLogger("jupyter_scratchpad.ipython").error("a hook failed")
    assert "[jupyter-scratchpad] ERROR jupyter_scratchpad.ipython: a hook failed" in kernel_log.getvalue()
    assert "a hook failed" not in cell.getvalue()
