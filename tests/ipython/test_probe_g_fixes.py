"""Probe G's findings 1, 2, 4, 5 and 10: a loaded Aura policy still spills cell outputs, a trailing
``# comment`` on every subcommand, refusals that say what stayed in force, ``sql --as-agent`` as
the model sees it, and footers that name the magic's flags."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from ipython_helpers import loaded_kernel, message_text
from traitlets import TraitError

from jupyter_scratchpad import SpillPolicy
from jupyter_scratchpad.ipython import STUB_MIME, ScratchSession
from jupyter_scratchpad.ipython._args import comment_at, split_args, strip_comment
from jupyter_scratchpad.ipython._session import for_cells
from jupyter_scratchpad.tools import ToolResult

MINIMAL = "[agent.scratchpad]\nenabled = true\n"  # Aura's smallest file: opt-in, no pattern
PATTERNS = MINIMAL + '\n[agent.scratchpad.patterns]\n"cell_*_stdout" = { min_tokens = 2000 }\n'
AURA = MINIMAL + '\n[mcp.servers.git.scratchpad]\n"git_log" = { min_tokens = 2000 }\n'


def value(ip: Any, code: str) -> Any:
    return ip.run_cell(code).result


def tools(session: ScratchSession) -> list[str]:
    return [e["source_tool"] for e in session.pad.entries("handle")]


# -- 1. a loaded Aura policy still spills cell outputs -------------------------------------------


def test_a_30000_line_print_spills_after_policy_load_in_a_real_kernel(tmp_path: Path) -> None:
    (tmp_path / "minimal.toml").write_text(MINIMAL)
    with loaded_kernel(tmp_path) as k:
        said = k.run("%scratch policy load minimal.toml")
        messages = k.messages("for i in range(30000): print(f'row {i} of output')")
        shown = "".join(message_text(m) for m in messages)
        assert len(shown) < 20_000, len(shown)  # (589 KB went into the notebook whole)
        stubs = [m for m in messages if m["msg_type"] == "display_data" and STUB_MIME in m["content"]["data"]]
        assert len(stubs) == 1 and stubs[0]["content"]["data"][STUB_MIME]["source_tool"].endswith("_stdout")
        assert "cell outputs of at least 5,120 tokens (gpt-4o) are spilled" in said and "opt-in" in said
        assert "auto-spill is on: outputs of at least 5,120 tokens" in k.run("%scratch auto")


def test_an_opt_in_policy_file_still_spills_values_and_streams(ip: Any, session: ScratchSession,
                                                                tmp_path: Path) -> None:
    path = tmp_path / "minimal.toml"
    path.write_text(MINIMAL)
    ip.run_cell(f"%config ScratchMagics.policy_file = {str(path)!r}")
    assert session.policy.opt_in and not session.pad.policy.opt_in  # as read (Aura's) / for cells
    ip.run_cell("%config ScratchMagics.spill_threshold = 100")
    ip.run_cell("'w ' * 400")  # 401 tokens
    ip.run_cell("print('x ' * 400)")
    assert tools(session) == ["cell_3", "cell_4_stdout"]
    decision = session.pad.policy.explain("q " * 9000, tool="cell_20", model=session.pad.model)
    assert decision.spill and decision.rule == "threshold"


def test_patterns_that_name_cells_apply_and_other_cells_take_the_default(ip: Any, session: ScratchSession,
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "patterns.toml"
    path.write_text(PATTERNS)
    ip.run_cell(f"%scratch policy load {path}")
    out = capsys.readouterr().out
    assert "outputs of at least 5,120 tokens (gpt-4o) are spilled; by pattern: cell_*_stdout at 2,000 tokens" in out
    ip.run_cell("print('word ' * 3000)")  # 3,000 tokens: over the pattern's 2,000
    ip.run_cell("print('word ' * 1000)")  # below it
    ip.run_cell("list(range(30000))")  # a value: the default threshold (it was never spilled)
    assert tools(session) == ["cell_2_stdout", "cell_4"]
    ip.run_cell("%scratch auto")
    assert "by pattern: cell_*_stdout at 2,000 tokens" in capsys.readouterr().out


def test_a_file_without_enabled_still_spills_cells_and_says_why(ip: Any, session: ScratchSession, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "off.toml"
    path.write_text('[agent.scratchpad.patterns]\n"cell_*" = { min_tokens = 40 }\n')
    ip.run_cell(f"%scratch policy load {path}")
    assert "no 'enabled = true'" in capsys.readouterr().out
    assert not session.policy.enabled and session.pad.policy.enabled
    ip.run_cell("list(range(100))")  # 300 tokens
    assert "cell_2" in tools(session)  # (the load's own message, over 40 tokens, is cell_1_stdout's)


def test_for_cells_changes_opt_in_and_enabled_alone() -> None:
    read = SpillPolicy.from_toml(
        "[agent.scratchpad]\nmin_bytes = 9000\nmax_extraction_tokens = 4000\n"
        '[agent.scratchpad.patterns]\n"cell_*" = { min_tokens = 7 }\n'
        '[mcp.servers.git.scratchpad]\n"git_log" = { min_tokens = 2000 }\n'
    )
    assert read.opt_in and not read.enabled
    cells = for_cells(read)
    assert dataclasses.is_dataclass(SpillPolicy) and SpillPolicy.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert (cells.opt_in, cells.enabled) == (False, True)
    for field in dataclasses.fields(SpillPolicy):
        if field.name not in ("opt_in", "enabled", "_compiled"):
            assert getattr(cells, field.name) == getattr(read, field.name), field.name
    assert cells.threshold_for("git_log", "git") == 2000 and cells.threshold_for("cell_3") == 7
    assert for_cells(SpillPolicy()) == SpillPolicy()


def test_policy_show_says_what_applies_to_cells_and_stays_aura_toml(ip: Any, session: ScratchSession,
                                                                    tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "aura.toml"
    path.write_text(AURA)
    ip.run_cell(f"%scratch policy load {path}")
    capsys.readouterr()
    ip.run_cell("%scratch policy show")
    shown = capsys.readouterr().out
    assert shown.startswith("# In this notebook: cell outputs of at least 5,120 tokens (gpt-4o) are spilled.")
    assert "apply to the tools of git" in shown
    assert SpillPolicy.from_toml(shown) == SpillPolicy.from_toml(path)  # (as read: ready for Aura)
    ip.run_cell(f"%scratch policy show {path}")
    assert capsys.readouterr().out.startswith("# Loaded in this notebook (%scratch policy load): cell outputs")


def test_a_streams_stub_card_is_not_stored_again_below_a_low_threshold(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%config ScratchMagics.spill_threshold = 100")
    ip.run_cell("for i in range(3000): print(f'row {i} of output')")
    assert tools(session) == ["cell_2_stdout"]  # (its 400-token card was stored as cell_2_display)


# -- 2. a trailing comment, on every subcommand alike --------------------------------------------


def test_the_readmes_list_line_with_its_comment(ip: Any, spilled: str) -> None:
    ip.run_cell("entries = %scratch list                      # a DataFrame")
    entries = ip.user_ns["entries"]
    assert isinstance(entries, pd.DataFrame) and list(entries["handle"]) == [spilled]


@pytest.mark.parametrize("line", [
    "list # c", "list --kind handle # c", "show {h} # c", "head {h} -n 2 # c", "tail {h} # c", "slice {h} 1 3 # c",
    "grep {h} Failed --max 1 # c", "schema {h} # c", "items {h} items # c", "get {h} kind # c",
    "iter {h} items --fields status.phase --limit 2 # c", "df {h} items # c", "budget # c", "auto # c",
    "policy show # c", "read k # c", "sql SELECT count(*) AS n FROM {h}.items # c",
])
def test_every_subcommand_takes_a_trailing_comment(ip: Any, spilled: str, session: ScratchSession,
                                                  line: str) -> None:
    session.pad.scratch_write("k", 1)
    ip.run_cell("%scratch " + line.format(h=spilled))  # (a UsageError fails the test)


def test_a_comment_after_free_text_and_what_is_no_comment(ip: Any, spilled: str, session: ScratchSession) -> None:
    ip.run_cell("%scratch write k hello world   # greeting")
    assert session.pad.scratch_read("k") == "hello world"
    ip.run_cell('%scratch write tag "#tag"')
    assert session.pad.scratch_read("tag") == "#tag"
    frame = value(ip, f"%scratch sql SELECT #2 AS n, count(*) AS c FROM {spilled}.items GROUP BY #1, #2 "
                      "ORDER BY #2 LIMIT 1   # DuckDB's #1 is a column")
    assert list(frame.columns) == ["n", "c"]
    frame = value(ip, "%%scratch sql   # the cell is the query\nSELECT '#' || 'x' AS a -- # in SQL")
    assert frame["a"][0] == "#x"


def test_comment_rules() -> None:
    assert strip_comment("list   # a DataFrame") == "list"
    assert split_args("# only a comment") == []
    assert split_args('grep H "#tag" a#b # c') == ["grep", "H", "#tag", "a#b"]
    assert comment_at("sql SELECT #1 FROM t") is None and comment_at("it's # a note") is None


# -- 4. a refused option says what stayed in force -----------------------------------------------


@pytest.mark.parametrize(("before", "line", "said"), [
    (None, "ScratchMagics.preview_lines = -5", "Kept: ScratchMagics.preview_lines = 20."),
    ("ScratchMagics.spill_threshold = 100", "ScratchMagics.spill_threshold = 'abc'",
     "expected an int, not the str 'abc'. Kept: ScratchMagics.spill_threshold = 100, so cell outputs of at "
     "least 100 tokens (gpt-4o) are spilled."),
    ("ScratchMagics.spill_threshold = 100", "ScratchMagics.spill_threshold = 0",
     "Kept: ScratchMagics.spill_threshold = 100, so cell outputs"),
    (None, "ScratchMagics.ttl_s = 'soon'", "expected a float, not the str 'soon'. Kept: ScratchMagics.ttl_s = 3600.0."),
    (None, "ScratchMagics.auto_spill = 'yes'", "Kept: ScratchMagics.auto_spill = True."),
    (None, "ScratchMagics.model = ''", "Kept: ScratchMagics.model = 'gpt-4o' (gpt-4o's budget: a 128,000-token"),
    (None, "ScratchMagics.policy_file = '/nonexistent/p.toml'", "Kept: ScratchMagics.policy_file = None, so cell"),
    (None, "ScratchMagics.store_path = 5", "Kept: a temporary store at"),
])
def test_a_refusal_says_what_stayed_in_force(ip: Any, session: ScratchSession, caplog: pytest.LogCaptureFixture,
                                             before: str | None, line: str, said: str) -> None:
    if before:
        ip.run_cell(f"%config {before}")
    name = line.split(".")[1].split(" ")[0]
    kept = getattr(session.magics, name)
    with caplog.at_level(logging.ERROR):
        ip.run_cell(f"%config {line}")
    assert said in caplog.text
    assert getattr(session.magics, name) == kept
    with pytest.raises(TraitError, match="Kept: "):
        setattr(session.magics, name, eval(line.split("= ", 1)[1]))


# -- 5. sql --as-agent: what the model would see ------------------------------------------------


def test_sql_as_agent_is_the_models_text_with_its_footer_charged(ip: Any, session: ScratchSession) -> None:
    ip.run_cell('{"items": [{"id": i, "s": "ok"} for i in range(20000)]}')
    [h] = [e["handle"] for e in session.pad.entries("handle")]
    used = session.pad.budget.used
    result = value(ip, f"%scratch sql --as-agent SELECT id FROM {h}.items ORDER BY id")
    assert isinstance(result, ToolResult) and result.ok and result.tool == "sql"
    assert result.tokens > 0 and session.pad.budget.used == used + result.tokens
    assert len(result.data) == 200 and result.meta["truncated"]
    footer = result.text.splitlines()[-1]
    assert footer.startswith("--- 200 of 20,000 rows") and "this call" in footer  # (the charged footer, as the model's)
    bundle = ip.display_formatter.format(result)[0]
    assert bundle["text/plain"] == result.text


# -- 10. footers name the magic's flags ------------------------------------------------------------


def test_a_cut_grep_names_max_and_as_agent_keeps_the_tools_text(ip: Any, spilled: str) -> None:
    mine = value(ip, f"%scratch grep {spilled} Failed --max 2")
    assert "(--max 2)" in mine.text.splitlines()[-1] and "max_matches" not in mine.text
    agents = value(ip, f"%scratch grep {spilled} Failed --max 2 --as-agent")
    assert "(max_matches=2)" in agents.text.splitlines()[-1]
    rows = value(ip, f"%scratch iter {spilled} items --fields status.phase --limit 2")
    assert "next: --offset 2" in rows.text
