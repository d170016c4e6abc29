"""head, tail, slice, grep, read_handle, read: Aura's semantics with the gaps closed."""

from __future__ import annotations

import json
import re

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """Every tool works unchanged on both backends (embedded DuckDB, shared PostgreSQL)."""
    return backend_store


LINE_RE = re.compile(r"^ {0,5}\d{1,6}\t")


def body_lines(text: str) -> list[str]:
    return [ln for ln in text.split("\n") if not ln.startswith("---")]


def test_head_numbers_lines_and_ends_with_a_footer(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("head", {"handle": log_handle})
    assert res.ok
    lines = body_lines(res.text)
    assert len(lines) == 50
    assert lines[0] == "1\t2026-12-02T10:00:00Z ERROR svc=api req=0 msg=handled"
    footer = res.text.split("\n")[-1]
    assert footer.startswith("--- lines 1-50 of 5,000")
    assert f"{res.tokens:,} this call" in footer
    assert f"{pad.budget.used:,} used" in footer and f"{pad.budget.remaining:,} remaining" in footer
    assert res.data["lines"][1].endswith("req=1 msg=handled") and res.data["total_lines"] == 5000


def test_tail_and_file_alias(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("tail", {"file": log_handle, "lines": 3})
    assert res.ok and [ln.split("\t")[0].strip() for ln in body_lines(res.text)] == ["4998", "4999", "5000"]
    small = pad.intercept("a\nb\nc\n", tool="t", force=True).handle
    assert pad.call_tool("tail", {"handle": small, "lines": 9999}).data["lines"] == ["a", "b", "c"]
    too_many = pad.call_tool("tail", {"handle": log_handle, "lines": 5000})
    assert too_many.error["error"] == "tail_too_large"


def test_a_handle_and_its_alias_saying_different_things_are_refused(pad: Scratchpad, log_handle: str) -> None:
    # head with both 'handle' and Aura's 'file' read the handle and dropped the file silently
    other = pad.intercept("x\ny\n", tool="t", force=True).handle
    both = pad.call_tool("head", {"handle": log_handle, "file": other, "lines": 1})
    assert not both.ok and both.error["error"] == "invalid_argument"
    assert "'handle'" in both.error["message"] and "'file'" in both.error["message"]
    same = pad.call_tool("head", {"file": other, "handle": other, "lines": 1})  # the same value twice: fine
    assert same.ok and same.data["lines"] == ["x"]


def test_a_refused_tail_is_offered_the_end_not_the_start(pad: Scratchpad, log_handle: str) -> None:
    # tail H 5000 suggested slice 1..N and head N: the start of the body, not what tail asked for
    refused = pad.call_tool("tail", {"handle": log_handle, "lines": 5000})
    calls = [s for s in refused.error["suggestions"] if s["tool"] in ("tail", "slice", "head")]
    assert [s["tool"] for s in calls] == ["tail"]  # (not also a slice of the same last lines)
    for s in calls:
        res = pad.call_tool(s["tool"], s["arguments"])
        assert res.ok and res.data["lines"][-1].endswith("req=4999 msg=handled")


def test_slice_is_one_indexed_inclusive_and_clamps(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("slice", {"handle": log_handle, "start": 10, "end": 12})
    assert [d.split(" req=")[1].split(" ")[0] for d in res.data["lines"]] == ["9", "10", "11"]
    clamped = pad.call_tool("slice", {"handle": log_handle, "start": 4990, "end": 6000})
    assert clamped.ok and clamped.data["end"] == 5000
    assert "lines 4,990-5,000 of 5,000 (end 6,000 clamped to 5,000)" in clamped.text
    for args in (
        {"start": 0, "end": 5},
        {"start": 10, "end": 9},
        {"start": -3, "end": 2},
        {"start": 6000, "end": 6001},
    ):
        bad = pad.call_tool("slice", {"handle": log_handle, **args})
        assert not bad.ok and bad.error["error"] == "invalid_argument" and 0 < bad.tokens < 200


def test_grep_marks_matches_merges_windows(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("grep", {"handle": log_handle, "pattern": r"req=10[01] ", "context": 2})
    assert res.ok
    rows = [ln for ln in res.text.split("\n") if ln and not ln.startswith("---")]
    assert [r.split("\t")[0] for r in rows] == [str(n) if n not in (101, 102) else f">{n}" for n in range(99, 105)]
    assert res.data["windows"] == [[99, 104]]  # two overlapping windows merged
    assert [m["line"] for m in res.data["matches"]] == [101, 102]
    two = pad.call_tool("grep", {"handle": log_handle, "pattern": "req=(100|300) ", "context": 1})
    assert two.data["windows"] == [[100, 102], [300, 302]] and "\n--\n" in two.text


def test_grep_options(pad: Scratchpad, log_handle: str) -> None:
    assert pad.call_tool("grep", {"handle": log_handle, "pattern": "error"}).data["matches"] == []
    res = pad.call_tool(
        "grep", {"handle": log_handle, "pattern": "error", "ignore_case": True, "max_matches": 5, "context": 0}
    )
    assert len(res.data["matches"]) == 5 and res.data["total_matches"] == 100
    assert "5 of 100 matching lines shown (max_matches=5)" in res.text
    # grep has no offset: its footer names the SQL of the next ones, and it runs
    rest = json.loads(res.text.split("the next ones: sql(query=")[1].split(") · ")[0])
    page = pad.call_tool("sql", {"query": rest})
    assert page.ok and len(page.data) == 95, page.text[:300]
    assert page.data[0]["line_no"] > res.data["matches"][-1]["line"]
    assert all("error" in r["line"].lower() for r in page.data)


def test_grep_no_match_and_literal_fallback(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("grep", {"handle": log_handle, "pattern": "zebra"})
    assert res.ok and "No matches for 'zebra' in 5,000 lines" in res.text
    lit = pad.call_tool("grep", {"handle": log_handle, "pattern": "req=1 msg=handled("})
    assert lit.ok and lit.data["literal_fallback"] and "literal" in lit.text
    assert pad.call_tool("grep", {"handle": log_handle, "pattern": "(a)\\1"}).data["literal_fallback"]


def test_grep_refuses_huge_patterns_and_survives_redos(pad: Scratchpad) -> None:
    r = pad.intercept("a" * 50_000 + "!\n" + "ok\n" * 3000, tool="t", force=True)
    assert pad.call_tool("grep", {"handle": r.handle, "pattern": "x" * 1025}).error["error"] == "invalid_argument"
    res = pad.call_tool("grep", {"handle": r.handle, "pattern": "(a+)+$", "max_matches": 1})
    assert res.ok  # RE2: linear time, no catastrophic backtracking


def test_grep_clips_long_lines_around_the_match(pad: Scratchpad) -> None:
    r = pad.intercept("x" * 5000 + "NEEDLE" + "y" * 5000 + "\nshort\n" * 2000, tool="t", force=True)
    res = pad.call_tool("grep", {"handle": r.handle, "pattern": "NEEDLE", "context": 0})
    line = res.data["matches"][0]["text"]
    assert "NEEDLE" in line and len(line) < 1200 and "chars clipped" in line


def test_grep_and_slices_do_not_span_lines(pad: Scratchpad) -> None:
    r = pad.intercept("alpha\nbeta\n" * 3000, tool="t", force=True)
    assert pad.call_tool("grep", {"handle": r.handle, "pattern": r"alpha\sbeta"}).data["matches"] == []


def test_read_handle_byte_range_and_match_windows(pad: Scratchpad, pods_handle: str) -> None:
    raw = pad.store.reader(pad.entry(pods_handle)).read_raw(0, 10**9)
    res = pad.call_tool("read_handle", {"handle": pods_handle, "start": 10, "end": 50})
    assert res.ok and res.data["text"].encode() == raw[10:50]
    m = pad.call_tool("read_handle", {"handle": pods_handle, "match": '"pod-2999"', "window": 10})
    (w,) = m.data["windows"]
    assert raw[w["start"] : w["end"]].decode() == w["text"] and '"pod-2999"' in w["text"]
    many = pad.call_tool("read_handle", {"handle": pods_handle, "match": "Failed", "window": 5})
    assert many.data["occurrences"] == 1000 and len(many.data["windows"]) <= 21
    close = pad.intercept("..key=1..key=2" + "-" * 100 + "key=3" + "-" * 1000, tool="t", force=True).handle
    near = pad.call_tool("read_handle", {"handle": close, "match": "key=", "window": 6})
    assert [(w["start"], w["end"]) for w in near.data["windows"]] == [(0, 19), (108, 124)]  # overlaps merged
    assert near.data["occurrences"] == 3
    for bad in (
        {"start": 50, "end": 10},
        {"start": -1, "end": 5},
        {"start": 0, "end": 5, "match": "x"},
        {"start": 10**9, "end": 10**9 + 5},
    ):
        assert pad.call_tool("read_handle", {"handle": pods_handle, **bad}).error["error"] == "invalid_argument"


def test_read_whole_body_when_it_fits(pad: Scratchpad) -> None:
    r = pad.intercept("small but spilled\n" * 10, tool="t", force=True)
    res = pad.call_tool("read", {"handle": r.handle})
    assert res.ok and res.data["text"] == "small but spilled\n" * 10


def test_read_refuses_before_loading(pad: Scratchpad, pods_handle: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import inspect

    from jupyter_scratchpad.store._bodies import BodyReader

    real = BodyReader.read_raw
    loaded_by_read: list[bool] = []

    def watched(self: BodyReader, *a: object, **k: object) -> bytes:
        # the suggestions are dry-run (schema, item_schema…): only `read` itself must not load it
        loaded_by_read.append(any(f.function == "read" and f.filename.endswith("_text.py") for f in inspect.stack()))
        return real(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(BodyReader, "read_raw", watched)
    res = pad.call_tool("read", {"handle": pods_handle})
    assert not res.ok and res.error["error"] == "read_too_large" and 0 < res.tokens < 1000
    assert not any(loaded_by_read), "read loaded the body before refusing"
    assert res.error["estimated_tokens"] == pad.entry(pods_handle).tokens
    assert res.error["per_call_limit"] == 10_000
    tools = [s["tool"] for s in res.error["suggestions"]]
    assert tools[0] == "schema" and "item_schema" in tools


def test_unknown_and_hostile_handles(pad: Scratchpad, pods_handle: str) -> None:
    near = pods_handle[:-1] + ("0" if pods_handle[-1] != "0" else "1")
    res = pad.call_tool("head", {"handle": near})
    assert res.error["error"] == "unknown_handle" and pods_handle in res.error["close_matches"]
    assert res.error["suggestions"][0]["arguments"]["handle"] == pods_handle
    for hostile in ("../../etc/passwd", "x'; DROP TABLE scratch_entries; --", "A" * 10_000, "", 42, None):
        bad = pad.call_tool("head", {"handle": hostile})
        assert not bad.ok and bad.error["error"] in ("invalid_handle", "invalid_argument"), hostile
    assert pad.call_tool("head", {"handle": pods_handle, "lines": 1}).ok


def test_grep_data_has_every_shown_line(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("grep", {"handle": log_handle, "pattern": "req=100 ", "context": 1})
    assert [(r["line"], r["match"]) for r in res.data["lines"]] == [(100, False), (101, True), (102, False)]


def test_grep_numbers_far_matches_from_the_index(pad: Scratchpad) -> None:
    lines = [f"row {i:06d} " + "." * 40 for i in range(40_000)]
    lines[31_337] = "row NEEDLE here"
    lines[2] = "row NEEDLE early"
    h = pad.intercept("\n".join(lines), tool="t", force=True).handle
    for pattern in ("NEEDLE", "NEE+DLE"):  # the literal fast path and RE2
        res = pad.call_tool("grep", {"handle": h, "pattern": pattern, "context": 0})
        assert [m["line"] for m in res.data["matches"]] == [3, 31_338]


def test_read_handle_match_windows_hold_whole_characters(pad: Scratchpad) -> None:
    # a window was cut at byte bounds: 'é' (2 bytes), '€' (3), '𝄞' (4) were halved into U+FFFD
    for ch in ("é", "€", "𝄞"):
        handle = pad.intercept(ch * 500 + "NEEDLE" + ch * 500, tool="t", force=True).handle
        for window in range(1, 9):
            res = pad.call_tool("read_handle", {"handle": handle, "match": "NEEDLE", "window": window})
            (w,) = res.data["windows"]
            raw = pad.store.reader(pad.entry(handle)).read_raw(w["start"], w["end"])
            assert w["valid_utf8"] and "\ufffd" not in w["text"] and raw.decode() == w["text"], (ch, window)
            assert w["text"].strip(ch) == "NEEDLE" and w["end"] - w["start"] - 6 >= 2 * window


def test_grep_without_context_shows_no_separators_and_takes_limit(pad: Scratchpad, log_handle: str) -> None:
    # every line shown is a match when context is 0: a "--" between them said nothing (probe M);
    # limit, the word iterate_over and scratch_list use, was an error with no suggestion
    slip = pad.call_tool("grep", {"handle": log_handle, "pattern": "ERROR", "context": 0, "limit": 4})
    (fix,) = slip.error["suggestions"]
    assert fix["tool"] == "grep" and fix["arguments"]["max_matches"] == 4 and "limit" not in fix["arguments"]
    res = pad.call_tool("grep", fix["arguments"])
    assert res.ok and len(res.data["matches"]) == 4, res.error
    body = res.text.rsplit("\n---", 1)[0]
    assert "\n--\n" not in body and len(body.splitlines()) == 4
    wide = pad.call_tool("grep", {"handle": log_handle, "pattern": "ERROR", "context": 1, "max_matches": 4})
    assert "\n--\n" in wide.text  # windows of context are still set apart
