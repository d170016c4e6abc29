"""``compare`` and ``sweep``: the same answers as ``replay``, each result tokenized once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd
import pytest
from lab_known import KNOWN_POLICY_TOML, KnownTrace, words

from jupyter_scratchpad import InvalidArgumentError, SpillPolicy
from jupyter_scratchpad.lab import compare, decide_with_count, read_trace, replay, sweep
from jupyter_scratchpad.store import as_text
from jupyter_scratchpad.tokens import Tokenizer, count_tokens

POLICIES = {
    "known": SpillPolicy.from_toml(KNOWN_POLICY_TOML),
    "default": SpillPolicy(),
    "tight": SpillPolicy(min_tokens=600, patterns={"k8s_*": 100, "k8s_list_*": 5000}),
    "bytes": SpillPolicy(min_bytes=10_000),
    "zero": SpillPolicy(min_tokens=0),
    "effects too": SpillPolicy(spill_classes=frozenset({"query", "effect"})),
}


def test_decide_with_count_is_the_cores_decision(known_trace: KnownTrace) -> None:
    for call in read_trace(known_trace.path):
        text = as_text(call.result)
        size = len(text.encode())
        tokens = count_tokens(text)
        for policy in POLICIES.values():
            core = policy.explain(call.result, tool=call.tool, server=call.server, result_class=call.result_class,
                                  metadata=call.metadata, is_error=call.is_error)  # fmt: skip
            ours = decide_with_count(policy, call, size, tokens, "gpt-4o")
            assert (ours.spill, ours.rule, ours.threshold, ours.pattern) == (
                core.spill, core.rule, core.threshold, core.pattern,
            )  # fmt: skip
            if core.tokens_exact:
                assert ours.tokens == core.tokens


def test_each_policys_rows_equal_its_replay(known_trace: KnownTrace) -> None:
    result = compare(known_trace.path, POLICIES, progress=False)
    assert list(result.table.index) == list(POLICIES)
    for name, policy in POLICIES.items():
        alone = replay(known_trace.path, policy, progress=False)
        ours = result.replay(name)
        pd.testing.assert_frame_equal(ours, alone)
        row = result.table.loc[name]
        assert row["spills"] == alone["spilled"].sum()
        assert row["tokens_saved"] == alone["tokens_saved"].sum()
        assert row["context_tokens"] + row["tokens_saved"] == row["tokens"]
    assert result.table.loc["effects too", "spills"] == result.table.loc["default", "spills"] + 1


def test_a_sweep_tokenizes_each_result_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Characters handed to the tokenizer: the trace once (plus stubs), not once per threshold."""
    tokenized = [0]
    original = Tokenizer._raw_chunk

    def counting(self: Tokenizer, chunk: str) -> int:
        tokenized[0] += len(chunk)
        return original(self, chunk)

    monkeypatch.setattr(Tokenizer, "_raw_chunk", counting)
    fresh = uuid.uuid4().hex  # texts no tokenizer cache has seen
    records = [{"tool": f"t{n}", "result": f"{fresh} {words(n)}"} for n in (10, 300, 3000, 9000, 30000, 60000)]
    records.append({"tool": "again", "result": records[-1]["result"]})  # the same text: counted once
    trace_chars = sum(len(r["result"]) for r in records[:-1])
    thresholds = [0, 100, 511, 512, 1000, 2000, 4000, 5120, 6000, 8000, 16000, 64000]
    result = sweep(records, thresholds, progress=False)
    stubs = result.rows.loc[result.rows["spilled"], ["tool"]].drop_duplicates()
    # besides the results, only the stubs are counted: once per distinct (result, tool), ~2 KB each
    assert trace_chars <= tokenized[0] <= trace_chars + 2_600 * len(stubs)
    assert tokenized[0] < 1.2 * trace_chars  # against 12 × trace_chars for a count per policy
    assert result.rows.attrs["tokens_counted"] == len(records) - 1


def test_sweep_table_is_monotone_in_the_threshold(known_trace: KnownTrace) -> None:
    thresholds = [8000, 100, 512, 5120, 2000, 100]  # out of order, with a repeat
    result = sweep(known_trace.path, thresholds, progress=False)
    table = result.table
    assert list(table["threshold"]) == [8000, 100, 512, 5120, 2000]
    ordered = table.sort_values("threshold")
    assert ordered["spills"].is_monotonic_decreasing
    # at 512: 512, 1999, 2000 (twice), 5120, 6000 (twice) and 7000; the rest is below or ruled out
    assert table.set_index("threshold").loc[512, "spills"] == 8
    assert table.set_index("threshold").loc[8000, "spills"] == 0
    assert set(result.rows["policy"]) == {"min_tokens=8,000", "min_tokens=100", "min_tokens=512", "min_tokens=5,120",
                                         "min_tokens=2,000"}  # fmt: skip


def test_sweep_keeps_the_base_policys_patterns(known_trace: KnownTrace) -> None:
    base = SpillPolicy.from_toml(KNOWN_POLICY_TOML)
    result = sweep(known_trace.path, [100_000], policy=base, progress=False)
    spilled = result.replay("min_tokens=100,000").query("spilled")
    assert set(spilled["tool"]) == {"k8s_list_pods", "search"}  # their patterns still apply
    assert set(spilled["server"]) == {"k8s", "web"}


def test_negative_savings_are_reported_not_hidden() -> None:
    trace = [{"tool": "tiny", "result": "ok"}]
    result = compare(trace, {"everything": SpillPolicy(min_tokens=0)}, progress=False)
    row = result.replay("everything").iloc[0]
    assert row["spilled"]
    assert row["tokens_saved"] == 1 - row["stub_tokens"] < 0


def test_bad_arguments(tmp_path: Path) -> None:
    trace = [{"tool": "t", "result": words(10)}]
    with pytest.raises(InvalidArgumentError, match="at least one policy"):
        compare(trace, {})
    with pytest.raises(InvalidArgumentError, match="at least one threshold"):
        sweep(trace, [])
    for bad in (-1, 1.5, True, "512"):
        with pytest.raises(InvalidArgumentError, match="non-negative integer"):
            sweep(trace, [bad])
    with pytest.raises(InvalidArgumentError, match="a SpillPolicy or Aura TOML"):
        compare(trace, {"x": {"min_tokens": 5}})
    with pytest.raises(InvalidArgumentError, match="no policy"):
        compare(trace, {"a": SpillPolicy()}, progress=False).replay("b")
