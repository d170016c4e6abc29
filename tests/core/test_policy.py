"""SpillPolicy: decision order, thresholds by glob, explanations, intercept and its stub."""

from __future__ import annotations

import logging
import re

import pytest

from jupyter_scratchpad import InvalidArgumentError, SpillPolicy, count_tokens
from jupyter_scratchpad.spill import bound_error_text, glob_matches
from jupyter_scratchpad.tokens import tokenizer_for


def text_of_tokens(n: int) -> str:
    """A text of exactly n o200k tokens ("hello" and " hello" are one token each)."""
    text = "hello" + " hello" * (n - 1)
    assert count_tokens(text) == n
    return text


BIG = text_of_tokens(6000)


def test_threshold_is_inclusive() -> None:
    policy = SpillPolicy(min_tokens=100)
    assert policy.explain(text_of_tokens(100), tool="t").spill
    d = policy.explain(text_of_tokens(99), tool="t")
    assert (d.spill, d.rule, d.tokens, d.threshold) == (False, "below_threshold", 99, 100)


def test_default_threshold_is_5120() -> None:
    assert SpillPolicy().threshold_for("anything") == 5120
    assert SpillPolicy().explain(text_of_tokens(5120), tool="x").spill
    assert not SpillPolicy().explain(text_of_tokens(5119), tool="x").spill


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("k8s_*", "k8s_list", True),
        ("k8s_*", "xk8s_list", False),
        ("k8s_?", "k8s_a", True),
        ("k8s_?", "k8s_ab", False),
        ("*", "", True),
        ("a.b", "axb", False),
        ("a[b]", "a[b]", True),
        ("a[b]", "ab", False),
        ("*_list_*", "k8s_list_pods", True),
    ],
)
def test_globs_are_anchored_with_only_star_and_question(pattern: str, name: str, matches: bool) -> None:
    assert glob_matches(pattern, name) is matches


def test_longest_pattern_wins_ties_go_to_the_smallest() -> None:
    policy = SpillPolicy(
        patterns={"k8s_*": 512, "k8s_list_*": 2048, "*": 9000, "k8s_list_po*": 100, "k8s_list_?ods": 50}
    )
    assert policy.threshold_for("k8s_list_pods") == 50  # "k8s_list_po*" and "k8s_list_?ods": 12 vs 13 chars
    assert policy.threshold_for("k8s_list_nodes") == 2048
    assert policy.threshold_for("k8s_get") == 512
    assert policy.threshold_for("other") == 9000
    tie = SpillPolicy(patterns={"ab*": 700, "a*c": 300})
    assert tie.threshold_for("abc") == 300
    assert tie.resolve("abc") == (300, "a*c")


def test_server_patterns_apply_only_within_their_server() -> None:
    policy = SpillPolicy(patterns={"list_*": 4000}, server_patterns={"k8s": {"list_*": 256}})
    assert policy.threshold_for("list_pods", server="k8s") == 256
    assert policy.threshold_for("list_pods", server="github") == 4000
    assert policy.threshold_for("list_pods") == 4000


@pytest.mark.parametrize(
    ("kwargs", "rule"),
    [
        ({"is_error": True, "metadata": {"artifact_id": 1}, "tool": "scratch_write"}, "is_error"),
        ({"metadata": {"artifact_id": "a1"}, "tool": "scratch_write", "result_class": "effect"}, "oob_metadata"),
        ({"metadata": {"persisted": True}}, "oob_metadata"),
        ({"metadata": {"mutation_complete": True}}, "oob_metadata"),
        ({"metadata": {"memory_entry_id": 7}}, "oob_metadata"),
        ({"tool": "report_progress"}, "internal_tool"),
        ({"tool": "tool_search"}, "internal_tool"),
        ({"tool": "memory_store"}, "internal_tool"),
        ({"tool": "scratch_read"}, "internal_tool"),
        ({"tool": "grep"}, "internal_tool"),
        ({"tool": "iterate_over"}, "internal_tool"),
        ({"result_class": "effect"}, "result_class"),
        ({"metadata": {"unrelated": 1}}, "threshold"),
        ({"result_class": "workspace"}, "threshold"),
        ({"result_class": "browser"}, "threshold"),
    ],
)
def test_decision_order(kwargs: dict, rule: str) -> None:
    args = {"tool": "big_tool", **kwargs}
    d = SpillPolicy().explain(BIG, **args)
    assert d.rule == rule
    assert d.spill is (rule == "threshold")


def test_our_tool_names_from_another_server_are_not_internal() -> None:
    assert SpillPolicy().explain(BIG, tool="read", server="filesystem").spill


def test_metadata_inside_the_result_still_spills() -> None:
    payload = {"metadata": {"artifact_id": "x", "persisted": True}, "items": [{"n": i} for i in range(3000)]}
    assert SpillPolicy().explain(payload, tool="api_call").spill


def test_min_bytes_spills_by_size() -> None:
    policy = SpillPolicy(min_bytes=8192)
    small_tokens_big_bytes = " " * 9000  # few tokens, many bytes
    d = policy.explain(small_tokens_big_bytes, tool="t")
    assert (d.spill, d.rule) == (True, "bytes_threshold")
    assert not policy.explain("x" * 100, tool="t").spill


def test_decisions_do_not_tokenize_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    tok = tokenizer_for("gpt-4o")
    counted: list[int] = []
    original = tok._raw_chunk
    monkeypatch.setattr(tok, "_raw_chunk", lambda c, b: counted.append(len(c)) or original(c, b))
    d = SpillPolicy().explain("log line with words\n" * 500_000, tool="t")  # 10 MB
    assert d.spill and not d.tokens_exact
    assert sum(counted) < 500_000


def test_bad_thresholds_are_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        SpillPolicy(min_tokens=-1)
    with pytest.raises(InvalidArgumentError):
        SpillPolicy(patterns={"x": "big"})  # type: ignore[dict-item]


def test_errors_are_bounded_to_8_kib_head_and_tail() -> None:
    text = "HEAD" + "e" * 20_000 + "TAIL"
    out = bound_error_text(text)
    assert len(out.encode()) <= 8192
    assert out.startswith("HEAD") and out.endswith("TAIL")
    assert "bytes of this error cut" in out
    head, _, tail = out.partition("\n[...")
    assert len(head) > 2.5 * len(tail.split("\n", 1)[1])  # ~75 % head, ~25 % tail
    assert bound_error_text("short") == "short"
    multibyte = "é" * 10_000
    assert len(bound_error_text(multibyte).encode()) <= 8192


def test_intercept_error_is_bounded_not_spilled(pad) -> None:  # type: ignore[no-untyped-def]
    r = pad.intercept("boom " * 10_000, tool="t", is_error=True)
    assert not r.spilled and r.stub is None
    assert len(r.content.encode()) <= 8192
    small = {"error": "nope"}
    assert pad.intercept(small, tool="t", is_error=True).content is small


def test_intercept_passes_small_results_through_unchanged(pad) -> None:  # type: ignore[no-untyped-def]
    obj = {"a": [1, 2, 3]}
    r = pad.intercept(obj, tool="t")
    assert not r.spilled and r.content is obj and r.handle is None
    assert pad.usage()["tokens_intercepted"] == 0


def test_intercept_spills_with_an_honest_stub(pad) -> None:  # type: ignore[no-untyped-def]
    data = {"kind": "PodList", "items": [{"metadata": {"name": f"pod-{i}"}, "status": "ok"} for i in range(4000)]}
    r = pad.intercept(data, tool="k8s_list_pods", server="k8s")
    assert r.spilled and r.decision.rule == "threshold"
    stub = r.stub
    assert set(stub) >= {"handle", "preview", "size", "tokens", "format", "note", "schema"}
    assert stub["format"] == "json" and stub["handle"].startswith("k8s_list_pods_")
    from jupyter_scratchpad.store._format import as_text

    # a large output: the stub gives the decision's bound at once, the exact count lands later
    assert (stub["tokens"], stub["tokens_exact"]) == (5120, False) and "≥ 5,120 tokens" in r.content
    exact = count_tokens(as_text(data))
    assert pad.usage()["tokens_intercepted"] == exact
    assert (pad.stub(r.handle)["tokens"], pad.stub(r.handle)["tokens_exact"]) == (exact, True)
    assert stub["size"] == len(as_text(data).encode())
    assert "preview: lines 1-" in stub["note"] and f"of {stub['lines']:,}" in stub["note"]
    assert any("items" in line for line in stub["schema"])
    text = r.content
    assert text.count(stub["handle"]) <= 2 and "item_schema" in text and '"$.items"' in text
    assert count_tokens(text) <= 250
    assert pad.usage() == {"agent_id": "agent-1", "tokens_intercepted": exact, "tokens_extracted": 0}
    assert pad.spill_count == 1
    again = pad.intercept(data, tool="k8s_list_pods", server="k8s")  # the same bytes: one entry, counted once
    assert again.handle == r.handle and "already stored (same bytes)" in again.content
    assert pad.usage()["tokens_intercepted"] == exact and pad.spill_count == 2
    one = pad.intercept({"meta": {"v": 1}, "items": [{"x": [1]}] + [{"x": i} for i in range(5000)]}, tool="t").stub
    assert "$.meta: object(1 key)" in one["schema"]  # (was "object(1 keys)")


def test_an_exact_count_the_store_cannot_record_is_one_warning(pad, store, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    # the count lands after the stub; a shared store's database gone by then logged a traceback
    # ("recording an exact token count failed") with every spill
    from jupyter_scratchpad import StoreUnavailableError

    def away(*args: object) -> None:
        raise StoreUnavailableError("the shared store's PostgreSQL (postgresql://h/db) is unavailable")

    monkeypatch.setattr(store, "set_tokens", away)
    heard: list[tuple[str, int]] = []
    pad.token_listeners.append(lambda handle, tokens: heard.append((handle, tokens)))
    with caplog.at_level(logging.WARNING, logger="jupyter_scratchpad"):
        r = pad.intercept("log line with words\n" * 20_000, tool="t")
        assert pad.wait_for_counts(30)
    said = [rec for rec in caplog.records if rec.name == "jupyter_scratchpad"]
    assert [rec.levelname for rec in said] == ["WARNING"] and said[0].exc_info is None
    assert r.handle in said[0].getMessage() and "unavailable" in said[0].getMessage()
    exact = count_tokens("log line with words\n" * 20_000)
    assert heard == [(r.handle, exact)] and pad.usage()["tokens_intercepted"] == exact  # known in-process


def test_claude_stub_says_estimate(store) -> None:  # type: ignore[no-untyped-def]
    pad = store.scratchpad("r", "a", model="claude-sonnet-4-5")
    r = pad.intercept(BIG, tool="t")
    assert r.stub["tokens_estimate"] is True and "(estimate)" in r.content


def test_failed_spill_withholds_the_result_and_logs(pad, store, caplog) -> None:  # type: ignore[no-untyped-def]
    store.close()
    caplog.set_level(logging.ERROR, logger="jupyter_scratchpad")
    r = pad.intercept(BIG, tool="t")
    assert not r.spilled and r.failure and "StoreClosedError" in r.failure
    assert isinstance(r.content, str) and len(r.content.encode()) <= 2048 and "withheld" in r.content
    assert str(store.path) not in r.content  # the model never sees host paths
    assert any(
        rec.levelno == logging.ERROR and "withheld" in rec.getMessage() and rec.exc_info for rec in caplog.records
    )


def test_disk_full_never_fails_the_caller(pad, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from jupyter_scratchpad.store import _store

    def full(*a, **k):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_store, "write_body_dir", full)
    before = pad.usage()["tokens_intercepted"]
    r = pad.intercept(BIG, tool="t")
    assert not r.spilled and "No space left" in r.failure and len(r.content.encode()) <= 2048
    assert pad.usage()["tokens_intercepted"] == before
    assert list((pad.store.path / "tmp").iterdir()) == []


def test_policy_defaults_configure_the_pad(store) -> None:  # type: ignore[no-untyped-def]
    policy = SpillPolicy(max_extraction_tokens=1234, context_safety_margin=0.5, min_tokens=10)
    pad = store.scratchpad("rp", "a", policy=policy, context_window=10_000)
    assert pad.budget.max_extraction_tokens == 1234
    assert pad.budget.usable == 5000
    assert pad.intercept(text_of_tokens(10), tool="t").spilled


def test_same_content_spilled_by_another_model_carries_that_models_count(store) -> None:  # type: ignore[no-untyped-def]
    text = "data " * 20_000
    pad_a = store.scratchpad("r", "a", model="gpt-4o")
    a = pad_a.intercept(text, tool="t")
    assert pad_a.usage()["tokens_intercepted"] == count_tokens(text)
    pad_b = store.scratchpad("r", "a", model="claude-sonnet-4-5")
    b = pad_b.intercept(text, tool="t")
    assert a.handle == b.handle
    assert pad_b.usage()["tokens_intercepted"] == count_tokens(text, model="claude-sonnet-4-5") != count_tokens(text)
    assert pad_b.stub(b.handle)["tokens"] == count_tokens(text, model="claude-sonnet-4-5")


def test_stub_says_when_long_lines_were_cut(pad) -> None:  # type: ignore[no-untyped-def]
    assert "long lines clipped" in pad.spill("x" * 500 + "\nshort", tool="t").stub["note"]
    assert "long lines clipped" not in pad.spill("short\nlines", tool="t").stub["note"]


def test_explain_with_a_known_count_tokenizes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    tok = tokenizer_for("gpt-4o")
    monkeypatch.setattr(tok, "_raw_chunk", lambda c, b: pytest.fail("tokenized"))
    d = SpillPolicy(min_tokens=100).explain("anything", tool="t", tokens=150)
    assert (d.spill, d.tokens, d.tokens_exact) == (True, 150, True)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"context_safety_margin": 1.5},
        {"context_safety_margin": float("nan")},
        {"max_extraction_tokens": -1},
        {"max_extraction_tokens": 0},
        {"turn_depth_bonus": -2},
        {"error_max_bytes": 10},
    ],
)
def test_policy_ranges_are_checked(kwargs: dict) -> None:
    with pytest.raises(InvalidArgumentError):
        SpillPolicy(**kwargs)


def test_set_model_recounts_and_keeps_used(pad) -> None:  # type: ignore[no-untyped-def]
    pad.record_llm_usage(input_tokens=50_000)
    pad.set_model("claude-sonnet-4-5")
    assert pad.budget.context_window == 200_000 and pad.budget.used == 50_000
    assert pad.tokens_are_estimates
    r = pad.intercept(BIG, tool="t")
    assert r.stub["tokens"] == count_tokens(BIG, model="claude-sonnet-4-5")
    pad.set_model("gpt-4o", context_window=32_000)
    assert pad.budget.usable == 25_600 and pad.budget.used == 50_000 and pad.budget.remaining == 0


def test_a_bounded_error_never_cuts_a_terminal_escape_in_half() -> None:
    """A coloured traceback cut at its byte bound left '\x1b[38;5;28;' before the note: the
    terminal read the note as part of the colour sequence."""
    from jupyter_scratchpad.spill import bound_error_text

    line = "\x1b[38;5;28;01m  File \x1b[32m'x.py'\x1b[39m, line 1, in rec\x1b[0m\n"
    for shift in range(len(line)):
        text = "x" * shift + line * 2000
        bounded = bound_error_text(text, 16_384)
        head, _, rest = bounded.partition("\n[... ")
        _, _, tail = rest.partition(" ...]\n")
        assert len(bounded.encode()) <= 16_384 and tail
        for part in (head, tail):  # every escape in each part is whole: ESC [ digits;… m
            assert all(
                re.match(r"\[[0-9;]*m", piece) for piece in part.split("\x1b")[1:]
            ), (shift, part[-20:], part[:20])
