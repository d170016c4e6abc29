"""Bad input: malformed lines are reported with their numbers and skipped, missing files per row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lab_known import words

from jupyter_scratchpad import InvalidArgumentError, SpillPolicy
from jupyter_scratchpad.lab import TraceFormatError, TraceWarning, compare, replay


def test_malformed_lines_are_numbered_skipped_and_counted(data_dir: Path) -> None:
    with pytest.warns(TraceWarning) as caught:
        df = replay(data_dir / "malformed.jsonl", progress=False)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("malformed.jsonl: skipped 5 malformed line(s) (line 2: not valid JSON")
    for fragment in (
        "line 4: expected a JSON object, got list",
        "line 6: 'tool' is required",
        "line 7: exactly one of 'result' or 'result_path' is required",
        "line 8: 'is_error' must be true or false, not 'yes'",
        "1 result(s) could not be read",
    ):
        assert fragment in message
    assert df.attrs["skipped_lines"] == 5
    assert [m["line"] for m in df.attrs["malformed"]] == [2, 4, 6, 7, 8]
    # nothing else is lost: the good lines and the row of the missing file are all there
    assert df["line"].tolist() == [1, 3, 9]
    assert df["tool"].tolist() == ["k8s_list_pods", "fetch_logs", "search_code"]
    missing = df.iloc[1]
    assert missing["decision"] == "missing"
    assert not missing["spilled"]
    assert "result_path 'results/missing.log' not found" in missing["problem"]
    assert str(data_dir / "results" / "missing.log") in missing["problem"]
    assert missing["tokens"] is not None and str(missing["tokens"]) == "<NA>"
    assert df.loc[[0, 2], "tokens"].notna().all()
    assert df.attrs["missing_results"] == 1


def test_on_error_raise_stops_at_the_first_bad_line(data_dir: Path) -> None:
    with pytest.raises(TraceFormatError, match=r"malformed.jsonl: line 2: not valid JSON") as info:
        replay(data_dir / "malformed.jsonl", on_error="raise", progress=False)
    assert info.value.line == 2
    with pytest.raises(TraceFormatError, match="on_error must be 'skip' or 'raise'"):
        replay(data_dir / "trace.jsonl", on_error="ignore", progress=False)


def test_a_bad_last_line_is_reported_too(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"tool": "a", "result": "x"}) + "\n\n\n{oops", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="line 4"):
        replay(path, on_error="raise", progress=False)
    with pytest.warns(TraceWarning, match=r"skipped 1 malformed line\(s\) \(line 4: "):
        df = replay(path, progress=False)
    assert len(df) == 1  # blank lines are neither calls nor errors


def test_many_bad_lines_are_summarised_and_all_kept_in_attrs(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(["[1]"] * 12 + [json.dumps({"tool": "a", "result": "x"})]), encoding="utf-8")
    with pytest.warns(TraceWarning, match=r"skipped 12 malformed line\(s\) .*; and 7 more"):
        df = replay(path, progress=False)
    assert [m["line"] for m in df.attrs["malformed"]] == list(range(1, 13))
    assert df["line"].tolist() == [13]


def test_unreadable_and_binary_result_files(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "blob.bin").write_bytes(b"\xff\xfe not utf-8 \x80" + words(700).encode())
    lines = [
        {"tool": "a", "result_path": "dir.json"},
        {"tool": "b", "result_path": "blob.bin"},
        {"tool": "c", "result_path": str(tmp_path / "blob.bin")},  # absolute paths are read as they are
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.warns(TraceWarning, match=r"1 result\(s\) could not be read"):
        df = replay(path, SpillPolicy(min_tokens=500), progress=False)
    assert "cannot be read" in df.loc[0, "problem"]
    assert df["decision"].tolist() == ["missing", "spill", "spill"]
    assert df.loc[1, "tokens"] == df.loc[2, "tokens"] > 700


def test_records_in_memory_are_checked_the_same_way() -> None:
    records = [{"tool": "a", "result": "x"}, {"tool": "", "result": "y"}, {"tool": "b", "metadata": [1], "result": 1}]
    with pytest.warns(TraceWarning, match="line 2: 'tool' is required.*line 3: 'metadata' must be an object"):
        df = replay(records, progress=False)
    assert df["tool"].tolist() == ["a"]


def test_a_comparison_warns_once_and_counts_calls_not_rows(data_dir: Path) -> None:
    policies = {"a": SpillPolicy(), "b": SpillPolicy(min_tokens=10), "c": SpillPolicy(min_tokens=100)}
    with pytest.warns(TraceWarning) as caught:
        result = compare(data_dir / "malformed.jsonl", policies, progress=False)
    assert len(caught) == 1
    assert "1 result(s) could not be read" in str(caught[0].message)
    assert result.rows.attrs["missing_results"] == 1
    assert result.table["calls"].tolist() == [3, 3, 3]


def test_bad_policies() -> None:
    with pytest.raises(InvalidArgumentError, match="a SpillPolicy or Aura TOML"):
        replay([], policy=512)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="cannot read policy file"):
        replay([], policy="no-such-policy.toml")
    with pytest.raises(InvalidArgumentError, match="not valid TOML"):
        replay([], policy="[agent.scratchpad\nmin_tokens = 1")


def test_a_line_with_an_unknown_result_class_is_decided_never_and_says_why() -> None:
    # the core now refuses an unknown result_class (a typo let a flood through): a replay of a trace
    # holding one stopped at that line; it is a row, never spilled, with the reason
    rows = replay(
        [
            {"tool": "a", "result_class": "memory", "result": "x " * 9000},
            {"tool": "b", "result_class": "QUERY", "result": "y " * 9000},
        ],
        SpillPolicy(),
        progress=False,
    )
    assert list(rows["rule"]) == ["result_class", "threshold"], rows[["tool", "rule"]]
    assert "unknown result_class 'memory'" in rows["detail"][0]
