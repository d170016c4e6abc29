"""Readers of OpenAI Chat Completions, OpenAI Responses and Anthropic Messages logs, and of traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_scratchpad import SpillPolicy
from jupyter_scratchpad.lab import (
    TraceCall,
    TraceFormatError,
    TraceWarning,
    detect_transcript_format,
    read_anthropic,
    read_openai_chat,
    read_openai_responses,
    read_trace,
    replay,
    split_mcp_name,
    write_trace,
)


def load(data_dir: Path, name: str) -> object:
    return json.loads((data_dir / name).read_text(encoding="utf-8"))


def shape(calls: list[TraceCall]) -> list[tuple[str | None, str, bool, str | None]]:
    return [(c.server, c.tool, c.is_error, c.call_id) for c in calls]


def test_openai_chat_completions(data_dir: Path) -> None:
    doc = load(data_dir, "openai_chat.json")
    calls = read_openai_chat(doc, name="chat")
    assert shape(calls) == [
        (None, "k8s_list_pods", False, "call_Kq2u8YbW1xV0"),
        ("logs", "fetch_logs", False, "call_9fTzLr3aPp4c"),  # mcp__logs__fetch_logs
        (None, "get_weather", False, "call_Ww3nHc7Qe2Zs"),
        (None, "unknown", False, "call_unmatched01"),
        (None, "legacy_lookup", False, None),  # role "function" names itself
    ]
    pods = json.loads((data_dir / "results" / "pods.json").read_text())
    assert json.loads(calls[0].result) == pods
    assert calls[1].result == (data_dir / "results" / "api.log").read_text()  # the text of the parts
    assert "no tool call with id 'call_unmatched01'" in (calls[3].problem or "")
    assert [c.problem for c in calls if c.tool != "unknown"] == [None] * 4
    assert calls[2].source == "chat#messages[6]"
    # the list of messages alone reads the same
    assert shape(read_openai_chat(doc["messages"])) == shape(calls)  # type: ignore[index]


def test_openai_responses(data_dir: Path) -> None:
    calls = read_openai_responses(load(data_dir, "openai_responses.json"))
    assert shape(calls) == [
        (None, "k8s_list_pods", False, "call_Aa1bB2cC3dD4"),
        (None, "run_sql", False, "call_Cu5tOm6Tool"),
        ("weather", "get_forecast", False, "mcp_01aa"),
        ("weather", "get_alerts", True, "mcp_02bb"),  # an mcp_call with an error
    ]
    assert calls[1].result == "count\n60"
    assert calls[1].problem == "not counted: 1 input_image part(s) of the content"
    assert json.loads(calls[2].result) == {"city": "Paris", "temp_c": 7.5, "conditions": "light rain"}
    assert calls[3].result == "upstream 503: service unavailable"


def test_anthropic_messages(data_dir: Path) -> None:
    calls = read_anthropic(load(data_dir, "anthropic_messages.json"))
    assert shape(calls) == [
        (None, "k8s_list_pods", False, "toolu_01A09q90qw90lq917835lq9"),
        (None, "fetch_logs", True, "toolu_01B7rK2mNpQx4tYvZ8sW3e"),
        (None, "web_search", False, "srvtoolu_01WebSearch"),  # a server tool's result block
        (None, "render_dashboard", False, "toolu_01C3dashboardPng"),
        ("ledger", "get_balance", False, "mcptoolu_01Ledger"),  # mcp_tool_use names its server
    ]
    assert calls[1].result == "Error: log backend unavailable (timeout after 30s)"
    assert json.loads(calls[2].result)[0]["title"] == "Registry degraded"  # counted as its JSON
    assert calls[3].result == "Dashboard 'errors' rendered."
    assert calls[3].problem == "not counted: 1 image part(s) of the content"
    assert calls[4].result == '{"account": "ops", "balance": 1200}'


@pytest.mark.parametrize(
    ("name", "fmt", "count"),
    [
        ("openai_chat.json", "openai-chat", 5),
        ("openai_responses.json", "openai-responses", 4),
        ("anthropic_messages.json", "anthropic", 5),
        ("openai_chat_messages.jsonl", "openai-chat", 2),  # one message a line
        ("trace.jsonl", "trace", 8),
    ],
)
def test_files_are_recognised_by_content(data_dir: Path, name: str, fmt: str, count: int) -> None:
    trace = read_trace(data_dir / name)
    assert trace.format == fmt
    assert len(list(trace)) == count
    assert trace.malformed == []


def test_replay_of_a_transcript_spills_the_big_results(data_dir: Path) -> None:
    df = replay(data_dir / "anthropic_messages.json", SpillPolicy(min_tokens=1000), progress=False)
    assert df.loc[df["spilled"], "tool"].tolist() == ["k8s_list_pods"]
    assert df.loc[df["tool"] == "fetch_logs", "rule"].item() == "is_error"
    assert df["problem"].notna().sum() == 1
    assert df.attrs["format"] == "anthropic"
    # forcing the wrong reader finds no tool results rather than inventing some, and says so
    with pytest.warns(TraceWarning, match="found no tool results; the content looks like 'anthropic'"):
        assert len(replay(data_dir / "anthropic_messages.json", format="openai-chat", progress=False)) == 0


def test_detection_and_its_errors() -> None:
    assert detect_transcript_format({"object": "response", "output": []}) == "openai-responses"
    assert detect_transcript_format({"input": [{"type": "function_call_output", "call_id": "c"}]}) == (
        "openai-responses"
    )
    assert detect_transcript_format([{"role": "user", "content": "hi"}]) == "openai-chat"
    assert detect_transcript_format({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}) == (
        "anthropic"
    )
    for bad in ({"hello": 1}, [1, 2, 3], "text"):
        with pytest.raises(TraceFormatError, match="not a conversation log"):
            detect_transcript_format(bad)
    with pytest.raises(TraceFormatError, match="unknown trace format 'csv'"):
        read_trace([], format="csv")
    with pytest.raises(TraceFormatError, match="cannot replay a int"):
        read_trace(42)


def test_a_file_that_is_nothing_we_read(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\nnot json at all\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="neither a JSONL trace"):
        read_trace(path)
    with pytest.raises(TraceFormatError, match="not found"):
        read_trace(tmp_path / "nope.jsonl")
    with pytest.raises(TraceFormatError, match="is a JSONL trace, not a anthropic transcript"):
        read_trace(Path(__file__).parent / "data" / "trace.jsonl", format="anthropic")


def test_mcp_names() -> None:
    assert split_mcp_name("mcp__k8s__list_pods") == ("k8s", "list_pods")
    assert split_mcp_name("mcp__github__search__code") == ("github", "search__code")
    assert split_mcp_name("mcp__broken") == (None, "mcp__broken")
    assert split_mcp_name("mcp__k8s__list_pods", server="given") == ("given", "mcp__k8s__list_pods")
    assert split_mcp_name("list_pods") == (None, "list_pods")


def test_a_transcript_written_as_a_trace_replays_the_same(data_dir: Path, tmp_path: Path) -> None:
    source = data_dir / "openai_responses.json"
    path = write_trace(read_trace(source), tmp_path / "converted.jsonl")
    assert read_trace(path).format == "trace"
    policy = SpillPolicy(min_tokens=20)
    before = replay(source, policy, progress=False)
    after = replay(path, policy, progress=False)
    columns = ["server", "tool", "is_error", "call_id", "decision", "rule", "tokens", "stub_tokens"]
    assert before[columns].equals(after[columns])


def test_write_trace_refuses_a_call_without_result(tmp_path: Path) -> None:
    missing = TraceCall(tool="t", problem="result_path 'x' not found")
    with pytest.raises(TraceFormatError, match="not found"):
        write_trace([missing], tmp_path / "out.jsonl")
