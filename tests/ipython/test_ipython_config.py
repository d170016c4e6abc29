"""%config ScratchMagics.<option>: every option takes effect on the live session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ipython_helpers import pods
from traitlets import TraitError

from jupyter_scratchpad.ipython import ScratchMagics, ScratchSession


def test_config_lists_the_magics_options(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%config ScratchMagics")
    out = capsys.readouterr().out
    for name in ScratchMagics.class_own_traits(config=True):
        assert f"ScratchMagics.{name}" in out


def test_spill_threshold_changes_what_spills(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%config ScratchMagics.spill_threshold = 50")
    assert session.pad.policy.min_tokens == 50
    ip.run_cell("list(range(100))")
    assert len(session.pad.entries()) == 1
    ip.run_cell("%config ScratchMagics.spill_threshold = None")
    assert session.pad.policy.min_tokens == 5120


def test_spill_bytes_adds_a_byte_rule(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%config ScratchMagics.spill_bytes = 2000")
    assert session.pad.policy.min_bytes == 2000
    ip.run_cell("'é' * 1500")  # 3,000 bytes, few tokens
    [entry] = session.pad.entries()
    assert entry["size"] == 3000


def test_model_and_window_retarget_the_budget_keeping_usage(ip: Any, session: ScratchSession) -> None:
    ip.user_ns["pods"] = pods
    ip.run_cell("pods()")
    handle = session.pad.entries()[0]["handle"]
    ip.run_cell(f"%scratch head {handle} -n 5 --as-agent")
    used, pad = session.pad.budget.used, session.pad
    ip.run_cell("%config ScratchMagics.model = 'claude-opus-4'")
    assert session.pad is pad and pad.model == "claude-opus-4" and pad.tokens_are_estimates
    assert pad.budget.context_window == 200_000 and pad.budget.used == used
    ip.run_cell("%config ScratchMagics.context_window = 32000")
    assert pad.budget.usable == 25_600 and pad.budget.used == used
    result = ip.run_cell(f"%scratch head {handle} -n 5 --as-agent").result
    assert result.tokens == pad.tokenizer.count(result.text)  # counted for the new model


def test_max_extraction_tokens(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%config ScratchMagics.max_extraction_tokens = 1234")
    assert session.pad.budget.max_extraction_tokens == 1234


def test_preview_lines(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%config ScratchMagics.preview_lines = 4")
    ip.user_ns["pods"] = pods
    ip.run_cell("pods()")
    stub = session.pad.stub(session.pad.entries()[0]["handle"])
    assert stub["preview_lines"] == 4 and len(stub["preview_head"]) == 3 and len(stub["preview_tail"]) == 1


def test_ttl(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%config ScratchMagics.ttl_s = 120.0")
    ip.run_cell("%scratch write k 1")
    [note] = session.pad.entries("note")
    assert (note["expires_at"] - note["created_at"]).total_seconds() == pytest.approx(120.0)


def test_auto_spill_option(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%config ScratchMagics.auto_spill = False")
    assert session.auto_spill is False
    ip.run_cell("list(range(30000))")
    assert session.pad.entries() == []


def test_run_and_agent_ids_switch_the_scratchpad(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%scratch write k 1")
    ip.run_cell("%config ScratchMagics.run_id = 'second-run'")
    assert session.pad.run_id == "second-run" and session.pad.entries() == []
    ip.run_cell("%config ScratchMagics.run_id = 'notebook'")
    assert [e["key"] for e in session.pad.entries()] == ["k"]
    ip.run_cell("%config ScratchMagics.agent_id = 'other'")  # another agent cannot own run 'notebook'
    assert session.pad.agent_id == "notebook"


def test_store_path_reopens_the_store(ip: Any, session: ScratchSession, tmp_path: Path) -> None:
    old = session.store
    ip.run_cell(f"%config ScratchMagics.store_path = {str(tmp_path / 'kept')!r}")
    assert old.closed and session.store.path == tmp_path / "kept" and session.pad.store is session.store
    ip.run_cell("%scratch write k 1")
    assert (tmp_path / "kept" / "catalog.duckdb").exists()


def test_policy_file_option(ip: Any, session: ScratchSession, tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[agent.scratchpad.patterns]\n"cell_*" = { min_tokens = 40 }\n')
    ip.run_cell(f"%config ScratchMagics.policy_file = {str(path)!r}")
    assert session.pad.policy.threshold_for("cell_7") == 40
    ip.run_cell("%config ScratchMagics.spill_threshold = 9999")  # applies on top of the file
    assert session.pad.policy.min_tokens == 9999 and session.pad.policy.threshold_for("cell_7") == 40


@pytest.mark.parametrize(("line", "message"), [
    ("ScratchMagics.spill_threshold = 0", "must be a positive integer or None"),
    ("ScratchMagics.context_window = -5", "must be a positive integer or None"),
    ("ScratchMagics.preview_lines = -1", "must be >= 0"),
    ("ScratchMagics.ttl_s = 0.0", "positive number of seconds"),
    ("ScratchMagics.model = ''", "must not be empty"),
    ("ScratchMagics.policy_file = '/nonexistent/p.toml'", "cannot read policy file"),
])
def test_bad_values_are_refused_and_change_nothing(ip: Any, session: ScratchSession, line: str,
                                                   message: str, caplog: pytest.LogCaptureFixture) -> None:
    before = (session.pad.policy, session.pad.budget.as_dict(), session.pad.preview_lines, session.store.ttl_s)
    ip.run_cell(f"%config {line}")  # %config reports the TraitError as one logged line
    assert message in caplog.text
    name = line.split(".")[1].split(" ")[0]
    with pytest.raises(TraitError, match=message):
        setattr(session.magics, name, eval(line.split("= ", 1)[1]))
    assert before == (session.pad.policy, session.pad.budget.as_dict(), session.pad.preview_lines,
                      session.store.ttl_s)
