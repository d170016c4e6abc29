"""The README's agent loops run as written against the SDKs' own response types (OpenAI Chat
Completions, the Responses API, Anthropic Messages), built offline from the wire format."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad

README = Path(__file__).resolve().parents[2] / "README.md"


def _block(first_line: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if b.startswith(first_line)]
    assert len(found) == 1, f"README has no single block starting {first_line!r}"
    return found[0]


def _run(block: str, **names: Any) -> dict[str, Any]:
    scope = dict(names)
    exec(compile(block, "README.md", "exec"), scope)  # our own README
    return scope


@pytest.fixture
def handle(pad: Scratchpad) -> str:
    items = [{"metadata": {"name": f"pod-{i}"}, "status": {"phase": "Running"}} for i in range(2000)]
    return pad.spill({"items": items}, tool="k8s_list_pods").handle


def test_openai_chat_completions_loop(pad: Scratchpad, handle: str) -> None:
    from openai.types.chat import ChatCompletion

    resp = ChatCompletion.model_validate(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "t1",
                                "type": "function",
                                "function": {
                                    "name": "item_schema",
                                    "arguments": json.dumps(
                                        {"handle": handle, "path": "items", "offset": None, "limit": None}
                                    ),
                                },
                            },
                            {"id": "t2", "type": "function", "function": {"name": "nope", "arguments": "{}"}},
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 30_000, "completion_tokens": 120, "total_tokens": 30_120},
        }
    )
    messages: list[Any] = []
    _run(_block("# OpenAI Chat Completions"), resp=resp, pad=pad, messages=messages)
    tool_msgs = [m for m in messages if m.get("role") == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["t1", "t2"]
    assert "metadata.name" in tool_msgs[0]["content"] and "unknown_tool" in tool_msgs[1]["content"]
    assert pad.budget.used >= 30_120


def test_openai_responses_loop(pad: Scratchpad, handle: str) -> None:
    from openai.types.responses import Response

    resp = Response.model_validate(
        {
            "id": "r1",
            "object": "response",
            "created_at": 0,
            "model": "gpt-4o",
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": [
                {"type": "reasoning", "id": "rs1", "summary": []},
                {
                    "type": "function_call",
                    "id": "fc1",
                    "call_id": "call_1",
                    "name": "sql",
                    "status": "completed",
                    "arguments": json.dumps({"query": f"SELECT count(*) AS n FROM {handle}.items", "max_rows": None}),
                },
            ],
            "usage": {
                "input_tokens": 41_000,
                "output_tokens": 50,
                "total_tokens": 41_050,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
    )
    items: list[Any] = []
    _run(_block("# OpenAI Responses API"), resp=resp, pad=pad, items=items)
    assert items == [{"type": "function_call_output", "call_id": "call_1", "output": items[0]["output"]}]
    assert "2000" in items[0]["output"]
    assert pad.budget.used >= 41_050


def test_anthropic_messages_loop(pad: Scratchpad, handle: str) -> None:
    from anthropic.types import Message

    resp = Message.model_validate(
        {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "content": [
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "tu1",
                    "name": "get_in",
                    "input": {"handle": handle, "path": "items[7].metadata.name"},
                },
                {"type": "tool_use", "id": "tu2", "name": "get_in", "input": {"handle": handle, "path": "items[9].x"}},
            ],
            "usage": {
                "input_tokens": 1_000,
                "output_tokens": 80,
                "cache_read_input_tokens": 50_000,
                "cache_creation_input_tokens": 2_000,
            },
        }
    )
    messages: list[Any] = []
    _run(_block("# Anthropic Messages"), resp=resp, pad=pad, messages=messages)
    results = messages[-1]["content"]
    assert [r["tool_use_id"] for r in results] == ["tu1", "tu2"]
    assert results[0]["content"].startswith('"pod-7"') and results[0]["is_error"] is False
    assert results[1]["is_error"] is True and "key_path_not_found" in results[1]["content"]
    assert pad.budget.used >= 53_080  # cached input is context too


def test_usage_objects_and_dicts_are_read_the_same(pad: Scratchpad) -> None:
    pad.record_llm_usage({"prompt_tokens": 7, "completion_tokens": 3})
    assert pad.budget.used >= 10
    with pytest.raises(ValueError, match="prompt_tokens / input_tokens"):
        pad.record_llm_usage({"tokens": 5})
