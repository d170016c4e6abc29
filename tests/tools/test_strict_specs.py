"""Strict tool specs: the published schema is what the dispatcher validates, in every flavour."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
from agents.strict_schema import ensure_strict_json_schema
from anthropic.lib._parse._transform import transform_schema
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.tools import FLAVORS, TOOL_NAMES, _is_key_list, input_schema, tool_specs


def _params(spec: dict[str, Any], flavor: str) -> dict[str, Any]:
    return {
        "openai": lambda: spec["function"]["parameters"],
        "openai-responses": lambda: spec["parameters"],
        "anthropic": lambda: spec["input_schema"],
        "mcp": lambda: spec["inputSchema"],
    }[flavor]()


def _name(spec: dict[str, Any]) -> str:
    return spec["function"]["name"] if "function" in spec else spec["name"]


@pytest.mark.parametrize("flavor", FLAVORS)
def test_every_flavour_lists_every_tool_with_a_closed_schema(flavor: str) -> None:
    specs = tool_specs(flavor)
    assert [_name(s) for s in specs] == list(TOOL_NAMES)
    for spec in specs:
        params = _params(spec, flavor)
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
        for prop in params["properties"].values():  # a type on every property (strict transforms need one)
            assert "type" in prop or all("type" in branch for branch in prop["anyOf"])


def test_openai_flavours_are_strict_as_the_agents_sdk_checks_them() -> None:
    for flavor in ("openai", "openai-responses"):
        for spec in tool_specs(flavor):
            params = _params(spec, flavor)
            assert params["required"] == list(params["properties"])  # every property required
            assert "minLength" not in json.dumps(params)  # not a keyword strict mode accepts
            # the Agents SDK's own strict conversion leaves an already-strict schema unchanged
            assert ensure_strict_json_schema(copy.deepcopy(params), _reject_open_objects=True) == params
            strict = spec["function"]["strict"] if flavor == "openai" else spec["strict"]
            assert strict is True
    responses = tool_specs("openai-responses")[0]
    assert set(responses) == {"type", "name", "description", "parameters", "strict"}


def test_optional_properties_are_nullable_in_strict_flavours() -> None:
    by_name = {_name(s): _params(s, "openai") for s in tool_specs("openai")}
    assert by_name["head"]["properties"]["lines"]["type"] == ["integer", "null"]
    assert by_name["head"]["properties"]["handle"]["type"] == "string"
    assert {"type": "null"} not in by_name["iterate_over"]["properties"]["fields"]["anyOf"]  # required
    assert None in by_name["scratch_list"]["properties"]["kind"]["enum"]


def test_every_description_says_what_its_strict_schema_accepts() -> None:
    # scratch_write's value was described as "Any JSON value." where strict mode refuses objects
    for flavor in ("openai", "openai-responses"):
        for spec in tool_specs(flavor):
            for name, prop in _params(spec, flavor)["properties"].items():
                kinds = json.dumps([b.get("type") for b in prop.get("anyOf", [prop])])
                if '"object"' not in kinds:
                    assert "any json" not in prop.get("description", "").lower(), (_name(spec), name)
    value = _params(tool_specs("openai")[TOOL_NAMES.index("scratch_write")], "openai")["properties"]["value"]
    assert "JSON text" in value["description"]
    assert "Any JSON value" in input_schema("scratch_write")["properties"]["value"]["description"]


@pytest.mark.parametrize("flavor", ["anthropic", "mcp"])
def test_anthropic_strict_transform_accepts_every_schema(flavor: str) -> None:
    for spec in tool_specs(flavor):
        out = transform_schema(_params(spec, flavor))
        assert out["additionalProperties"] is False


def test_prefix_names_and_dispatch(pad: Scratchpad, log_handle: str) -> None:
    names = [_name(s) for s in tool_specs("mcp", prefix="scratch_")]
    assert names[0] == "scratch_schema" and all(n.startswith("scratch_") for n in names)
    assert pad.call_tool("scratch_head", {"handle": log_handle, "lines": 2}, prefix="scratch_").ok
    res = pad.call_tool("head", {"handle": log_handle}, prefix="scratch_")
    assert res.error["error"] == "unknown_tool" and "scratch_head" in res.error["close_matches"]
    with pytest.raises(ValueError, match="flavor"):
        tool_specs("gemini")


def test_null_for_an_optional_argument_means_its_default(pad: Scratchpad, log_handle: str) -> None:
    # what a strict client sends: every property, the unused ones null
    args = {"handle": log_handle, "start": None, "end": None, "match": None, "window": None}
    res = pad.call_tool("read_handle", args)
    assert res.ok, res.text
    assert res.data == pad.call_tool("read_handle", {"handle": log_handle}).data
    pad.call_tool("scratch_write", {"key": "k", "value": 1, "ttl_s": None})
    res = pad.call_tool("scratch_delete", {"key": "k", "handle": None})
    assert res.ok, res.text
    res = pad.call_tool("scratch_write", {"key": "k", "value": None})
    assert res.error["error"] == "invalid_argument" and "value" in res.error["message"]


@pytest.mark.parametrize(
    ("tool", "args", "words"),
    [
        ("iterate_over", {"fields": 3}, ["'fields'", "string or array of strings", "int 3"]),
        ("head", {"lines": 0}, ["'lines'", "integer >= 1"]),
        ("grep", {"pattern": "x", "context": 99}, ["'context'", "<= 50"]),
        ("scratch_list", {"kind": "file"}, ["'kind'", "one of 'handle', 'note'"]),
        ("grep", {"pattern": "x", "ignore_case": "maybe"}, ["'ignore_case'", "boolean"]),
    ],
)
def test_an_invalid_argument_says_what_to_fix(
    pad: Scratchpad, log_handle: str, tool: str, args: dict[str, Any], words: list[str]
) -> None:
    res = pad.call_tool(tool, {"handle": log_handle, **args} if tool != "scratch_list" else args)
    assert res.error["error"] == "invalid_argument"
    for word in words:
        assert word in res.error["message"], res.error["message"]
    assert res.error["argument"] == words[0].strip("'")


# -- differential: the published schema and the runtime agree ---------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 60),
    st.floats(-2.5, 2.5).filter(lambda f: not f.is_integer()),
    st.sampled_from(["abc", "ERROR", "$", "items", ""]),
    st.lists(st.sampled_from(["a", "b"]), max_size=2),
    st.dictionaries(st.sampled_from(["a"]), st.integers(0, 2), max_size=1),
)


# Rules across arguments that a strict schema cannot say (no oneOf at a strict root); each tool's
# description says them, and they are the only runtime checks beyond the schema.
def _cross_argument_rule_broken(name: str, args: dict[str, Any]) -> bool:
    given = {k for k, v in args.items() if v is not None}
    if name == "scratch_delete":
        return len(given & {"key", "handle"}) != 1
    return False


def _explained_by_the_tool(name: str, args: dict[str, Any]) -> bool:
    """iterate_over without fields: invalid per the schema, answered by the tool with fields to try."""
    return name == "iterate_over" and args.get("fields") is None


@st.composite
def _calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from([n for n in TOOL_NAMES if n not in ("sql", "read")]))
    props = list(input_schema(name)["properties"]) + ["bogus"]
    keys = draw(st.lists(st.sampled_from(props), unique=True, max_size=len(props)))
    return name, {k: draw(_VALUES) for k in keys}


_RAW: dict[str, bytes] = {}  # the handle's bytes, to spill again when an example deleted it


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(call=_calls())
@example(call=("schema", {"path": ["a"], "handle": "abc"}))  # found by CI: a key list is forgiven
@example(call=("schema", {"handle": "abc", "max_depth": 33}))  # found by CI: the schema now says at most 32
@example(call=("scratch_delete", {"handle": "abc"}))  # found by CI: a later example met the handle deleted
@example(call=("iterate_over", {"handle": "abc"}))
def test_runtime_validation_agrees_with_the_published_schema(
    pad: Scratchpad, pods_handle: str, call: tuple[str, dict[str, Any]]
) -> None:
    name, args = call
    schema = input_schema(name)
    if "handle" in args and isinstance(args["handle"], str):
        args["handle"] = pods_handle
        entry = pad.store.get_entry(pad.scope, "handle", pods_handle)
        if entry is not None:
            _RAW.setdefault(pods_handle, pad.store.reader(entry).read_raw(0, entry.size_bytes))
        else:  # an example before deleted it: the same bytes, the same handle
            again = pad.intercept(_RAW[pods_handle].decode(), tool="k8s_list_pods", server="k8s")
            assert again.handle == pods_handle
    # null for an optional argument means its default: the schema judges what is left
    judged = {k: v for k, v in args.items() if not (v is None and k not in schema["required"])}
    if _is_key_list(judged.get("path")):  # ["items", 0]: forgiven as the path $.items[0], by design
        judged["path"] = "$"
    valid = jsonschema.Draft202012Validator(schema).is_valid(judged) and not _cross_argument_rule_broken(name, judged)
    res = pad.call_tool(name, copy.deepcopy(args))
    code = None if res.ok else res.error["error"]
    if valid:
        assert code != "invalid_argument", (name, args, res.text)
    else:
        assert code == "invalid_argument", (name, args, res.text)
        if _explained_by_the_tool(name, judged):
            # valid but for the missing fields: the tool itself answers, with fields to try
            with_fields = {**judged, "fields": "a"}
            if jsonschema.Draft202012Validator(schema).is_valid(with_fields):
                assert "fields" in res.error["message"], (args, res.text)
    json.loads(res.text) if not res.ok else None
