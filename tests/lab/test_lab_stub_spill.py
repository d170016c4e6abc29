"""``replay``'s ``stub_tokens`` is the count of the stub ``Scratchpad.intercept`` really returns,
``tokens`` the count its decision made: documents inside JSON strings, MCP envelopes, spills by bytes."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from jupyter_scratchpad import ScratchStore, SpillPolicy
from jupyter_scratchpad.lab import compare, render_stub, replay, sweep
from jupyter_scratchpad.store import as_text
from jupyter_scratchpad.tokens import count_tokens


def issues(n: int = 40) -> list[dict[str, Any]]:
    body = "\n".join(["## Steps", "", "1. open the page", "2. click pay", "", "## Expected", "paid", "",
                      "```json", '{"status": "failed"}', "```", "thanks"])  # fmt: skip
    return [
        {"number": i, "title": f"checkout fails #{i}", "state": "open", "body": body, "labels": [{"name": "bug"}]}
        for i in range(n)
    ]


def envelope(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


CASES = {
    "markdown inside JSON strings": json.dumps(issues(), indent=2),
    "JSON inside JSON strings": {"items": [{"id": i, "payload": json.dumps({"a": i, "b": [1, 2, 3]})} for i in range(80)]},
    "MCP envelope of JSON": envelope(json.dumps(issues(), indent=2)),
    "MCP envelope of text": envelope("\n".join(f"line {i}: something happened" for i in range(400))),
    "MCP envelope as text": json.dumps(envelope(json.dumps(issues(), indent=2))),
}


def intercepted(policy: SpillPolicy, result: Any, tool: str, model: str = "gpt-4o") -> tuple[int, Any]:
    store = ScratchStore()
    try:
        pad = store.scratchpad(run_id=f"r-{uuid.uuid4().hex}", agent_id="a", model=model, policy=policy)
        out = pad.intercept(result, tool=tool)
        assert out.spilled, out.decision
        return pad.tokenizer.count(out.content), out.decision
    finally:
        store.close()


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4-5"])
def test_stub_tokens_are_those_of_the_real_stub(name: str, model: str) -> None:
    result = CASES[name]
    policy = SpillPolicy(min_tokens=256)
    df = replay([{"tool": "gh_list_issues", "result": result}], policy, model=model, progress=False)
    expected, decision = intercepted(policy, result, "gh_list_issues", model)
    assert df.loc[0, "decision"] == "spill"
    assert df.loc[0, "stub_tokens"] == expected
    assert df.loc[0, "context_tokens"] == expected
    # the count the pad decides on is the one the lab reports (the envelope's JSON, as the pad reads it)
    assert df.loc[0, "tokens"] == count_tokens(as_text(result), model)
    assert decision.size_bytes == df.loc[0, "size_bytes"]


def test_the_stub_names_the_embedded_documents_and_the_envelope() -> None:
    text = render_stub(CASES["markdown inside JSON strings"], tool="gh", tokens=5000, threshold=256)
    assert "embedded markdown" in text
    text = render_stub(CASES["MCP envelope of JSON"], tool="gh", tokens=5000, threshold=256)
    assert "unwrapped from an MCP CallToolResult" in text
    assert "embedded markdown" in text


def test_a_large_result_spilled_by_bytes_or_tokens_states_the_pads_bound() -> None:
    big = envelope(json.dumps(issues(400), indent=2))  # over EXACT_INLINE_BYTES: the stub shows a bound
    for policy in (
        SpillPolicy(min_tokens=300),
        SpillPolicy(min_tokens=100_000, min_bytes=1000),
        SpillPolicy(min_tokens=300, min_bytes=1000, patterns={"gh_*": 200}),
    ):
        df = replay([{"tool": "gh_list", "result": big}], policy, progress=False)
        assert df.loc[0, "stub_tokens"] == intercepted(policy, big, "gh_list")[0], policy


def test_compare_and_sweep_give_each_policy_the_real_stub() -> None:
    result = CASES["MCP envelope of JSON"]
    records = [{"tool": "gh", "result": result}]
    policies = {"a": SpillPolicy(min_tokens=256), "b": SpillPolicy(min_tokens=512)}
    rows = compare(records, policies, progress=False).rows
    for name, policy in policies.items():
        assert rows[rows["policy"] == name]["stub_tokens"].iloc[0] == intercepted(policy, result, "gh")[0]
    swept = sweep(records, [128, 256, 1024], progress=False).rows
    assert set(swept["stub_tokens"]) == {intercepted(SpillPolicy(min_tokens=128), result, "gh")[0]}
