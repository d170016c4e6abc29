"""``replay`` on a generated trace whose answers are known by construction, and ``summary``."""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd
import pytest
from lab_known import KNOWN_POLICY_TOML, KnownTrace, words

from jupyter_scratchpad import ScratchStore, SpillPolicy
from jupyter_scratchpad.lab import COLUMNS, TraceWarning, read_trace, replay, summary
from jupyter_scratchpad.spill import bound_error_text
from jupyter_scratchpad.store import as_text
from jupyter_scratchpad.tokens import count_tokens, load_encoding


@pytest.fixture
def policy() -> SpillPolicy:
    return SpillPolicy.from_toml(KNOWN_POLICY_TOML)


def real_stub_tokens(record: dict, tmp_path: Path, model: str = "gpt-4o") -> int:
    """The tokens of the stub a real Scratchpad puts in the context for this result."""
    result = record.get("result")
    if result is None:
        result = (tmp_path / record["result_path"]).read_text(encoding="utf-8")
    with ScratchStore(tmp_path / "reference-store") as store:
        # a run of its own: the stub of a first spill (a repeat in one run reuses the entry)
        pad = store.scratchpad(run_id=f"ref-{uuid.uuid4().hex}", agent_id="ref", model=model)
        spilled = pad.spill(result, tool=record["tool"], server=record.get("server"))
        return count_tokens(spilled.content, model)


def test_the_construction_is_right() -> None:
    # "data data ..." is one token a word in both encodings, counted by tiktoken itself.
    for encoding in ("o200k_base", "cl100k_base"):
        assert len(load_encoding(encoding).encode_ordinary(words(5120, "node"))) == 5120


def test_each_row_has_the_known_decision_and_exact_tokens(known_trace: KnownTrace, policy: SpillPolicy) -> None:
    df = replay(known_trace.path, policy, model="gpt-4o", progress=False)
    assert list(df.columns) == COLUMNS
    assert len(df) == len(known_trace.calls)
    for (_, row), known in zip(df.iterrows(), known_trace.calls, strict=True):
        assert row["tool"] == known.record["tool"]
        assert row["spilled"] == known.spill, known.record["tool"]
        assert row["decision"] == ("spill" if known.spill else "keep")
        assert row["rule"] == known.rule
        assert row["tokens"] == known.tokens
        if known.threshold is None:
            assert pd.isna(row["threshold"])
        else:
            assert row["threshold"] == known.threshold
    assert list(df["line"]) == list(range(1, len(known_trace.calls) + 1))


def test_stub_tokens_are_those_of_a_real_spill(known_trace: KnownTrace, policy: SpillPolicy) -> None:
    df = replay(known_trace.path, policy, progress=False)
    for (_, row), known in zip(df.iterrows(), known_trace.calls, strict=True):
        if known.spill:
            expected = real_stub_tokens(known.record, known_trace.path.parent)
            assert row["stub_tokens"] == expected
            assert row["context_tokens"] == expected
            assert row["tokens_saved"] == known.tokens - expected
            assert 50 < expected < 1000
        else:
            assert pd.isna(row["stub_tokens"])


def test_what_enters_the_context_when_nothing_spills(known_trace: KnownTrace, policy: SpillPolicy) -> None:
    df = replay(known_trace.path, policy, progress=False)
    by_rule = {row["rule"]: row for _, row in df.iterrows()}
    bounded = count_tokens(bound_error_text(words(9000)))
    assert bounded < 9000 / 4  # 8 KiB of a 44 KB error
    assert by_rule["is_error"]["context_tokens"] == bounded
    assert by_rule["is_error"]["tokens_saved"] == 9000 - bounded
    for rule in ("oob_metadata", "internal_tool", "result_class", "below_threshold"):
        assert by_rule[rule]["tokens_saved"] == 0
        assert by_rule[rule]["context_tokens"] == by_rule[rule]["tokens"]


def test_summary_gives_exact_tokens_per_server_and_tool(known_trace: KnownTrace, policy: SpillPolicy) -> None:
    df = replay(known_trace.path, policy, progress=False)
    table = summary(df)
    expected = known_trace.tokens_by_tool()
    got = {(None if s == "(none)" else s, t): int(v) for (s, t), v in table["tokens"].items()}
    assert got == expected
    pods = table.loc[("k8s", "k8s_list_pods")]
    assert pods["calls"] == 4
    assert pods["spills"] == 3
    assert pods["max_tokens"] == 6000
    assert pods["thresholds"] == "512"
    assert table.loc[("docs", "search")]["thresholds"] == "5,120"
    assert list(table["tokens"]) == sorted(table["tokens"], reverse=True)
    totals = summary(df, totals=True)
    assert totals.loc[("(all)", "(all)")]["tokens"] == sum(expected.values())
    assert totals.loc[("(all)", "(all)")]["tokens_saved"] == df["tokens_saved"].sum()
    assert totals.loc[("(all)", "(all)")]["thresholds"] == "512, 2,000, 5,120"


def test_identical_results_are_counted_once(known_trace: KnownTrace, policy: SpillPolicy) -> None:
    df = replay(known_trace.path, policy, progress=False)
    distinct = len({str(c.record.get("result", c.record.get("result_path"))) for c in known_trace.calls})
    assert df.attrs["tokens_counted"] <= distinct
    assert df.attrs["calls"] == len(known_trace.calls)
    assert df.attrs["skipped_lines"] == 0
    assert df.attrs["policy"] == policy


def test_claude_counts_are_the_documented_estimate(known_trace: KnownTrace, policy: SpillPolicy) -> None:
    df = replay(known_trace.path, policy, model="claude-sonnet-4-5", progress=False)
    for (_, row), known in zip(df.iterrows(), known_trace.calls, strict=True):
        assert row["tokens"] == -(-known.tokens * 11 // 10)  # ceil(n × 1.1), in exact integers
    # 466 words are 513 estimated tokens: a k8s listing that spills for Claude and not for gpt-4o
    trace = [{"server": "k8s", "tool": "k8s_list_pods", "result": words(466)}]
    assert replay(trace, policy, model="claude-sonnet-4-5", progress=False)["spilled"].tolist() == [True]
    assert replay(trace, policy, model="gpt-4o", progress=False)["spilled"].tolist() == [False]


def test_policy_may_be_aura_toml_text_or_file(known_trace: KnownTrace, policy: SpillPolicy, tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(KNOWN_POLICY_TOML, encoding="utf-8")
    expected = replay(known_trace.path, policy, progress=False)
    for source in (KNOWN_POLICY_TOML, path, str(path)):
        got = replay(known_trace.path, source, progress=False)
        pd.testing.assert_frame_equal(got, expected)


def test_default_policy_and_byte_threshold(known_trace: KnownTrace) -> None:
    df = replay(known_trace.path, progress=False)  # SpillPolicy(): 5,120 for every tool
    assert set(df.loc[df["spilled"], "tokens"]) == {6000, 5120, 7000}
    by_bytes = replay(known_trace.path, SpillPolicy(min_bytes=8 * 1024), progress=False)
    spilled = by_bytes[by_bytes["spilled"]]
    assert set(spilled["rule"]) == {"bytes_threshold"}
    assert (spilled["size_bytes"] >= 8 * 1024).all()
    assert (spilled["tokens"] > 0).all()  # exact counts even when bytes decided


def test_in_memory_records_and_an_empty_trace() -> None:
    records = [
        {"tool": "a", "result": {"items": list(range(3000))}},
        {"tool": "b", "result": "small"},
    ]
    df = replay(records, SpillPolicy(min_tokens=1000), progress=False)
    assert df["spilled"].tolist() == [True, False]
    assert df["tokens"].tolist() == [count_tokens(as_text(records[0]["result"])), 1]
    with pytest.warns(TraceWarning, match="no tool calls were read"):  # an empty replay is said
        empty = replay([], progress=False)
    assert list(empty.columns) == COLUMNS
    assert len(empty) == 0
    assert len(summary(empty)) == 0


@pytest.mark.parametrize("trace_name", ["known", "sample"])
def test_every_decision_is_the_cores_explain(
    trace_name: str, known_trace: KnownTrace, policy: SpillPolicy, data_dir: Path
) -> None:
    path = known_trace.path if trace_name == "known" else data_dir / "trace.jsonl"
    df = replay(path, policy, progress=False)
    for (_, row), call in zip(df.iterrows(), read_trace(path), strict=True):
        core = policy.explain(call.result, tool=call.tool, server=call.server, result_class=call.result_class,
                              metadata=call.metadata, is_error=call.is_error)  # fmt: skip
        assert (row["spilled"], row["rule"]) == (core.spill, core.rule)
        assert (None if pd.isna(row["threshold"]) else row["threshold"]) == core.threshold
        assert (None if pd.isna(row["pattern"]) else row["pattern"]) == core.pattern
