"""``%scratch replay TRACE [--policy FILE.toml] [--model M]`` in a real IPython shell."""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # debugpy's notice on stderr otherwise

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from jupyter_scratchpad import SpillPolicy
from jupyter_scratchpad.ipython import get_session
from jupyter_scratchpad.lab import TraceWarning, replay


class LabShell(InteractiveShell):
    """``run_cell`` re-raises the cell's error, so that a failing magic fails the test."""

    def run_cell(self, raw_cell: str, store_history: bool = True, *args: Any, **kwargs: Any) -> Any:
        result = super().run_cell(raw_cell, store_history, *args, **kwargs)
        result.raise_error()
        return result


@pytest.fixture
def ip() -> Iterator[LabShell]:
    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = LabShell.instance(config=config)
    shell.run_line_magic("load_ext", "jupyter_scratchpad")
    yield shell
    if get_session(shell) is not None:
        shell.run_line_magic("unload_ext", "jupyter_scratchpad")
    atexit.unregister(shell.atexit_operations)  # (each shell's kept it alive to a gc.collect at exit)
    LabShell.clear_instance()
    InteractiveShell.clear_instance()


def test_replay_returns_the_per_call_frame_and_shows_the_summary(
    ip: LabShell, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, policy_file = data_dir / "trace.jsonl", data_dir / "aura.toml"
    ip.run_cell(f"df = %scratch replay {trace} --policy {policy_file} --model gpt-4o")
    df = ip.user_ns["df"]
    expected = replay(trace, SpillPolicy.from_toml(policy_file), model="gpt-4o", progress=False)
    pd.testing.assert_frame_equal(df, expected)
    out = capsys.readouterr().out
    for text in ("k8s_list_pods", "fetch_logs", "calls", "spills"):
        assert text in out  # the summary per server/tool was displayed


def test_the_notebooks_policy_and_model_are_the_defaults(ip: LabShell, data_dir: Path) -> None:
    trace = data_dir / "trace.jsonl"
    ip.run_cell("%config ScratchMagics.spill_threshold = 300")
    ip.run_cell(f"df = %scratch replay {trace}")
    df = ip.user_ns["df"]
    size_rows = df[df["rule"].isin(["threshold", "below_threshold"])]
    assert set(size_rows["threshold"]) == {300}
    session = get_session(ip)
    assert session is not None
    pd.testing.assert_frame_equal(df, replay(trace, session.pad.policy, model=session.pad.model, progress=False))


def test_model_option_counts_that_models_tokens(ip: LabShell, data_dir: Path) -> None:
    trace = data_dir / "trace.jsonl"
    ip.run_cell(f"df = %scratch replay {trace} --model claude-sonnet-4-5")
    claude = ip.user_ns["df"]
    gpt = replay(trace, SpillPolicy(), model="gpt-4o", progress=False)
    assert (claude["tokens"] != gpt["tokens"]).all()
    pd.testing.assert_frame_equal(claude, replay(trace, SpillPolicy(), model="claude-sonnet-4-5", progress=False))


def test_a_conversation_log_replays_too(ip: LabShell, data_dir: Path) -> None:
    ip.run_cell(f"df = %scratch replay {data_dir / 'openai_responses.json'}")
    df = ip.user_ns["df"]
    assert df["tool"].tolist() == ["k8s_list_pods", "run_sql", "get_forecast", "get_alerts"]
    assert df.attrs["format"] == "openai-responses"


def test_the_returned_frame_is_not_spilled_itself(ip: LabShell, data_dir: Path) -> None:
    ip.run_cell("%config ScratchMagics.spill_threshold = 50")  # the frame's repr is far larger
    ip.run_cell(f"%scratch replay {data_dir / 'trace.jsonl'}")
    session = get_session(ip)
    assert session is not None
    # Out[n] (the per-call frame) is not stored; the displayed summary may be (reported to the lead)
    assert [e["source_tool"] for e in session.pad.entries("handle") if not e["source_tool"].endswith("_display")] == []
    assert isinstance(ip.user_ns["_"], pd.DataFrame)


def test_malformed_lines_are_reported_and_the_rest_replayed(ip: LabShell, data_dir: Path) -> None:
    with pytest.warns(TraceWarning, match=r"skipped 5 malformed line\(s\) \(line 2: "):
        ip.run_cell(f"df = %scratch replay {data_dir / 'malformed.jsonl'}")
    df = ip.user_ns["df"]
    assert df["line"].tolist() == [1, 3, 9]
    assert df["decision"].tolist()[1] == "missing"


def test_bad_usage_is_a_usage_error(ip: LabShell, data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found"):
        ip.run_cell(f"%scratch replay {tmp_path / 'nope.jsonl'}")
    with pytest.raises(UsageError, match="cannot read policy file"):
        ip.run_cell(f"%scratch replay {data_dir / 'trace.jsonl'} --policy {tmp_path / 'missing.toml'}")
    bad = tmp_path / "bad.toml"
    bad.write_text("[agent.scratchpad]\nmin_tokens = 'many'\n", encoding="utf-8")
    with pytest.raises(UsageError, match="min_tokens must be int"):
        ip.run_cell(f"%scratch replay {data_dir / 'trace.jsonl'} --policy {bad}")
    notes = tmp_path / "notes.txt"
    notes.write_text("not a trace\n", encoding="utf-8")
    with pytest.raises(UsageError, match="neither a JSONL trace"):
        ip.run_cell(f"%scratch replay {notes}")
    with pytest.raises(UsageError):
        ip.run_cell("%scratch replay")  # TRACE is required
    with pytest.raises(UsageError):
        ip.run_cell(f"%scratch replay {data_dir / 'trace.jsonl'} --threshold 5")
