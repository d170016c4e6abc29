"""The stub the lab renders in memory is, character for character, the stub of a real spill."""

from __future__ import annotations

import json
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.lab import render_stub
from jupyter_scratchpad.store import as_text
from jupyter_scratchpad.tokens import count_tokens

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=10), inner, max_size=6),
    max_leaves=60,
)
lines_of_text = st.lists(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=400), max_size=40)
results = st.one_of(
    json_values.filter(lambda v: isinstance(v, (dict, list))),
    lines_of_text.map("\n".join),
    lines_of_text.map(lambda lines: "\n".join(lines) + "\n"),
    json_values.map(lambda v: json.dumps(v, indent=2)),  # JSON given as text
    st.lists(st.dictionaries(st.sampled_from("abc"), st.integers(), min_size=1), min_size=2, max_size=8).map(
        lambda rows: "\n".join(json.dumps(r) for r in rows)
    ),  # JSON Lines
    st.lists(st.sampled_from(["# Title", "## Part", "- item", "text", "```", ""]), max_size=30).map("\n".join),
    st.binary(max_size=300),  # maybe not UTF-8
    st.lists(st.sampled_from(["step 1/3\r", "done\n", "x\r\n", "é\r"]), max_size=30).map("".join),  # progress bars
)


def real_stub_text(store: ScratchStore, result: object, tool: str, server: str | None, model: str, lines: int) -> str:
    # a run of its own: the stub of a first spill (the same bytes again in one run reuse the entry)
    pad = store.scratchpad(run_id=f"r-{uuid.uuid4().hex}", agent_id="a", model=model, preview_lines=lines)
    return pad.spill(result, tool=tool, server=server).content


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    result=results,
    tool=st.sampled_from(["k8s_list_pods", "fetch", "Search Code!", ""]),
    server=st.sampled_from([None, "k8s"]),
    preview_lines=st.sampled_from([0, 1, 3, 20]),
)
def test_rendered_stub_equals_the_real_one(
    store: ScratchStore, result: object, tool: str, server: str | None, preview_lines: int
) -> None:
    tokens = count_tokens(as_text(result))
    expected = real_stub_text(store, result, tool or "output", server, "gpt-4o", preview_lines)
    got = render_stub(result, tool=tool or "output", server=server, tokens=tokens, preview_lines=preview_lines)
    assert got == expected


def test_long_lines_many_lines_and_claude_estimates(store: ScratchStore) -> None:
    text = "\n".join(f"{i} " + "x" * (i * 37 % 700) for i in range(5000))
    for model in ("gpt-4o", "claude-sonnet-4-5"):
        expected = real_stub_text(store, text, "fetch_logs", None, model, 20)
        got = render_stub(text, tool="fetch_logs", tokens=count_tokens(text, model), model=model)
        assert got == expected
    assert "(estimate)" in got


def test_a_pretty_json_listing(store: ScratchStore) -> None:
    value = {"items": [{"name": f"pod-{i}", "labels": {"app": "api"}, "ready": i % 3 != 0} for i in range(2000)]}
    expected = real_stub_text(store, value, "k8s_list_pods", "k8s", "gpt-4o", 20)
    got = render_stub(value, tool="k8s_list_pods", server="k8s", tokens=count_tokens(as_text(value)))
    assert got == expected
    assert "Schema:" in got
    assert count_tokens(got) < 600
