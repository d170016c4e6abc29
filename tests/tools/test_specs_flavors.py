"""Strict tool specs in every flavour an agent API wants, with an optional prefix."""

from __future__ import annotations

import jsonschema
import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.tools import SPEC_FLAVORS, TOOL_NAMES, tool_specs


def schema_of(spec: dict, flavor: str) -> dict:
    return {
        "openai": lambda s: s["function"]["parameters"],
        "openai-responses": lambda s: s["parameters"],
        "anthropic": lambda s: s["input_schema"],
        "mcp": lambda s: s["inputSchema"],
    }[flavor](spec)


def name_of(spec: dict, flavor: str) -> str:
    return spec["function"]["name"] if flavor == "openai" else spec["name"]


@pytest.mark.parametrize("flavor", SPEC_FLAVORS)
def test_every_flavor_is_strict_and_complete(flavor: str) -> None:
    specs = tool_specs(flavor, prefix="scratch_")
    assert [name_of(s, flavor) for s in specs] == [f"scratch_{n}" for n in TOOL_NAMES]
    for spec in specs:
        schema = schema_of(spec, flavor)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False and set(schema["required"]) <= set(schema["properties"])


def test_a_call_that_breaks_the_schema_is_told_what_to_fix(pad: Scratchpad) -> None:
    res = pad.call_tool("grep", {"handle": "h_1", "pattern": "x", "colour": "red"})
    assert not res.ok and res.error["error"] == "invalid_argument" and "colour" in res.error["message"]
    missing = pad.call_tool("grep", {"handle": "h_1"})
    assert not missing.ok and "pattern" in missing.error["message"]


def test_bad_flavor_or_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="flavor"):
        tool_specs("gemini")
    with pytest.raises(ValueError, match="prefix"):
        tool_specs("mcp", prefix="1 bad")


def test_null_for_an_optional_argument_means_its_default(pad: Scratchpad) -> None:
    h = pad.spill("\n".join(f"line {i}" for i in range(500)), tool="log").handle
    # what a strict client sends: every property, the unused ones null
    res = pad.call_tool("read_handle", {"handle": h, "start": None, "end": None, "match": "line 42", "window": None})
    assert res.ok, res.text
    grep = pad.call_tool(
        "grep", {"handle": h, "pattern": "line 4", "context": None, "ignore_case": None, "max_matches": None}
    )
    assert grep.ok and grep.data["total_matches"] == 111
    gone = pad.call_tool("scratch_delete", {"key": None, "handle": h})
    assert gone.ok, gone.text
    assert not pad.call_tool("grep", {"handle": None, "pattern": "x"}).ok  # a required one stays required


def test_mcp_specs_carry_hints_only_the_notes_write_and_delete_change_anything() -> None:
    # probe AB: no annotations, so a client asked its person before every read
    from jupyter_scratchpad.mcp._server import our_tools

    hints = {t.name: t.annotations for t in our_tools()}
    assert len(hints) == 16 and all(h is not None and h.open_world_hint is False for h in hints.values())
    changes = {n for n, h in hints.items() if h is not None and not h.read_only_hint}
    assert changes == {"scratch_write", "scratch_delete"}
    assert hints["scratch_delete"].destructive_hint is True and hints["grep"].destructive_hint is False  # type: ignore[union-attr]


def test_the_handle_argument_is_described_in_a_few_words() -> None:
    # the same description in 11 tools was 319 tokens of every turn's tool list
    from jupyter_scratchpad.tokens import count_tokens

    specs = tool_specs("anthropic")
    described = {s["input_schema"]["properties"]["handle"]["description"] for s in specs if "handle" in s["input_schema"]["properties"]}
    (text,) = described
    assert count_tokens(text) <= 8, text
