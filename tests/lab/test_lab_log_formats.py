"""Logs the lab reads besides traces and plain transcripts (Claude Code sessions, MCP JSON-RPC),
files with a byte order mark or a lone surrogate, and the mistakes it refuses in words."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from jupyter_scratchpad import SpillPolicy
from jupyter_scratchpad.cli._main import main
from jupyter_scratchpad.errors import InvalidArgumentError
from jupyter_scratchpad.lab import TraceFormatError, TraceWarning, compare, read_trace, replay

BIG = json.dumps([{"name": f"pod-{i}", "phase": "Running", "node": f"node-{i % 7}"} for i in range(300)], indent=2)


def write_lines(path: Path, records: list[Any], *, bom: bool = False) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def claude_code_session(path: Path) -> Path:
    """The layout of ``~/.claude/projects/<project>/<session>.jsonl``: one event a line, the message nested."""
    head = {"sessionId": "s1", "cwd": "/repo", "version": "1.0.0", "timestamp": "2024-05-02T10:00:00Z"}
    return write_lines(path, [
        {"type": "summary", "summary": "checkout failing", "leafUuid": "u3"},
        {**head, "type": "user", "uuid": "u0", "parentUuid": None, "message": {"role": "user", "content": "why?"}},
        {**head, "type": "assistant", "uuid": "u1", "parentUuid": "u0", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Let me look."},
                        {"type": "tool_use", "id": "toolu_1", "name": "mcp__k8s__list_pods", "input": {}},
                        {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "git status"}}]}},
        {**head, "type": "user", "uuid": "u2", "parentUuid": "u1", "toolUseResult": {"stdout": "..."}, "message": {
            "role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": BIG},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "clean"}]}]}},
    ])  # fmt: skip


def test_a_claude_code_session_is_read_as_anthropic(tmp_path: Path) -> None:
    path = claude_code_session(tmp_path / "session.jsonl")
    df = replay(path, SpillPolicy(min_tokens=1000), progress=False)
    assert df.attrs["format"] == "anthropic"
    assert list(df["tool"]) == ["list_pods", "Bash"]
    assert list(df["server"].fillna("-")) == ["k8s", "-"]
    assert list(df["decision"]) == ["spill", "keep"]
    assert df.attrs["skipped_lines"] == 0


def mcp_log(path: Path) -> Path:
    envelope = {"content": [{"type": "text", "text": BIG}], "isError": False}
    return write_lines(path, [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_pods", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"},
                                                           {"type": "image", "data": "AAAA", "mimeType": "image/png"}]}},
        {"jsonrpc": "2.0", "id": 1, "result": envelope},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "boom", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "failed"}], "isError": True}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "gone", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "unknown tool: gone"}},
    ])  # fmt: skip


def test_an_mcp_jsonrpc_log_pairs_tools_call_with_its_response(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing skipped, nothing to warn about
        df = replay(mcp_log(tmp_path / "mcp.jsonl"), SpillPolicy(min_tokens=1000), progress=False)
    assert df.attrs["format"] == "mcp-jsonrpc"
    assert list(df["tool"]) == ["status", "list_pods", "boom", "gone"]  # in the order of the responses
    assert list(df["call_id"]) == ["2", "1", "3", "4"]
    assert list(df["decision"]) == ["keep", "spill", "keep", "keep"]
    assert list(df["is_error"]) == [False, False, True, True]
    assert "image" in df.loc[0, "problem"]  # not measured, and said
    # the envelope is what the proxy hands Scratchpad.intercept: its stub says it was unwrapped
    assert df.loc[1, "stub_tokens"] < 400


def test_the_cli_reads_an_mcp_log_and_says_an_empty_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    assert main(["--store", store, "replay", str(mcp_log(tmp_path / "mcp.jsonl"))]) == 0
    assert "list_pods" in capsys.readouterr().out
    # every line skipped: one line on stderr (no Python warning with its source line), exit 1
    bad = write_lines(tmp_path / "bad.jsonl", [{"x": 1}, {"y": 2}])
    assert main(["--store", store, "replay", str(bad)]) == 1
    captured = capsys.readouterr()
    assert "Empty DataFrame" not in captured.out
    assert "no tool calls were read" in captured.err
    assert "warnings.warn" not in captured.err and "Warning" not in captured.err
    assert "replay(" not in captured.err
    assert captured.err.count("\n") == 1
    # a format given by hand
    log = mcp_log(tmp_path / "mcp2.jsonl")
    assert main(["--store", store, "replay", str(log), "--format", "anthropic"]) == 1
    assert "looks like 'mcp-jsonrpc'" in capsys.readouterr().err


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    calls = [{"tool": "a", "result": "x" * 30000}, {"tool": "b", "result": "y"}]
    two = write_lines(tmp_path / "two.jsonl", calls, bom=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = replay(two, progress=False)
        assert list(df["tool"]) == ["a", "b"]
        one = write_lines(tmp_path / "one.jsonl", calls[:1], bom=True)
        assert list(replay(one, progress=False)["tool"]) == ["a"]
        session = claude_code_session(tmp_path / "s.jsonl")
        session.write_bytes(b"\xef\xbb\xbf" + session.read_bytes())
        assert list(replay(session, progress=False)["tool"]) == ["list_pods", "Bash"]


def test_a_lone_surrogate_escape_is_read_whatever_the_file_size(tmp_path: Path) -> None:
    line = '{"tool": "fetch", "result": "cut emoji \\ud83d then ' + "x" * 3000 + '"}\n'
    one = tmp_path / "one.jsonl"
    one.write_text(line)
    two = tmp_path / "two.jsonl"
    two.write_text(line + '{"tool": "b", "result": "y"}\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(replay(one, progress=False)["tool"]) == ["fetch"]
        assert list(replay(two, progress=False)["tool"]) == ["fetch", "b"]


@pytest.mark.parametrize("content", [b"", b"\n\n  \n", b"\xef\xbb\xbf\n"])
def test_an_empty_file_is_said_to_be_empty(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    with pytest.raises(TraceFormatError, match="is empty"):
        read_trace(path)


def test_a_forced_format_that_finds_nothing_says_what_the_file_looks_like(tmp_path: Path) -> None:
    path = claude_code_session(tmp_path / "session.jsonl")
    with pytest.warns(TraceWarning, match=r"format='openai-chat' found no tool results.*looks like 'anthropic'"):
        df = replay(path, format="openai-chat", progress=False)
    assert len(df) == 0


def test_compare_takes_a_list_of_policies_and_refuses_other_things(tmp_path: Path) -> None:
    path = claude_code_session(tmp_path / "session.jsonl")
    result = compare(path, [SpillPolicy(), SpillPolicy(min_tokens=100)], progress=False)
    assert list(result.table.index) == ["p0", "p1"]
    with pytest.raises(InvalidArgumentError, match=r"policies is a dict \{name: policy\}"):
        compare(path, SpillPolicy(), progress=False)  # type: ignore[arg-type]


def test_a_typo_in_the_model_and_a_negative_preview_are_refused(tmp_path: Path) -> None:
    path = claude_code_session(tmp_path / "session.jsonl")
    with pytest.raises(InvalidArgumentError, match=r"unknown model 'gpt4o'.*did you mean 'gpt-4o'"):
        replay(path, model="gpt4o", progress=False)
    with pytest.raises(InvalidArgumentError, match="unknown model"):
        compare(path, {"a": SpillPolicy()}, model="gpt4o", progress=False)
    for bad in (-1, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="preview_lines"):
            replay(path, preview_lines=bad, progress=False)  # type: ignore[arg-type]
    assert len(replay(path, model="gpt-4o-2024-08-06", progress=False)) == 2  # a dated name is known
    with pytest.warns(UserWarning, match="unknown model 'llama3-70b'.*o200k_base"):  # no typo: counted, said
        assert len(replay(path, model="llama3-70b", progress=False)) == 2


def test_the_magic_takes_a_format(tmp_path: Path) -> None:
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    from IPython.core.error import UsageError

    from jupyter_scratchpad.ipython.commands.cmd_replay import PARSER

    args = PARSER.parse(f"{tmp_path / 'x.json'} --format anthropic")
    assert args.format == "anthropic"
    with pytest.raises(UsageError) as info:
        PARSER.parse(f"{tmp_path / 'x.json'} --formt anthropic")
    assert "goes after --" not in str(info.value)
