"""The dispatcher's error shapes, the tool specs, and the budget rules."""

from __future__ import annotations

import json
import math
import threading

import jsonschema
import pytest

from jupyter_scratchpad import ContextBudget, InvalidArgumentError, Scratchpad, ScratchStore, count_tokens
from jupyter_scratchpad.budget import context_window_for
from jupyter_scratchpad.tools import TOOL_NAMES


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """Every tool works unchanged on both backends (embedded DuckDB, shared PostgreSQL)."""
    return backend_store


TOOLS = {
    "head",
    "tail",
    "slice",
    "read_handle",
    "grep",
    "schema",
    "item_schema",
    "get_in",
    "iterate_over",
    "read",
    "sql",
    "scratch_write",
    "scratch_read",
    "scratch_list",
    "scratch_delete",
}


@pytest.mark.parametrize("flavor", ["openai", "anthropic"])
def test_specs_are_valid_json_schema_for_every_tool(pad: Scratchpad, flavor: str) -> None:
    specs = pad.tool_specs(flavor=flavor)
    names = {s["function"]["name"] if flavor == "openai" else s["name"] for s in specs}
    assert names == TOOLS == set(TOOL_NAMES)
    for spec in specs:
        params = spec["function"]["parameters"] if flavor == "openai" else spec["input_schema"]
        jsonschema.Draft202012Validator.check_schema(params)
        assert params["additionalProperties"] is False and params["type"] == "object"
        assert set(params["required"]) <= set(params["properties"])
        json.dumps(spec)  # plain JSON


def test_descriptions_teach_the_order_of_use(pad: Scratchpad) -> None:
    by_name = {s["name"]: s["description"] for s in pad.tool_specs("anthropic")}
    assert "Step 1" in by_name["schema"] and "item_schema" in by_name["schema"]
    assert "Step 2" in by_name["item_schema"] and "Step 3" in by_name["iterate_over"]
    assert "prefer schema" in by_name["read"].lower() or "only for small" in by_name["read"].lower()


def test_calls_validate_against_the_specs(pad: Scratchpad, pods_handle: str) -> None:
    specs = {s["name"]: s["input_schema"] for s in pad.tool_specs("anthropic")}
    jsonschema.validate({"handle": pods_handle, "path": "items", "fields": "a,b"}, specs["iterate_over"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"handle": pods_handle, "bogus": 1}, specs["head"])


@pytest.mark.parametrize(
    ("name", "args", "code"),
    [
        ("no_such_tool", {}, "unknown_tool"),
        ("head", {}, "invalid_argument"),
        ("head", {"handle": "x", "bogus": 1}, "invalid_argument"),
        ("head", {"handle": "x", "lines": "many"}, "invalid_argument"),
        ("head", {"handle": "x", "lines": 0}, "invalid_argument"),  # the spec says minimum 1
        ("head", {"handle": "x", "lines": None}, "unknown_handle"),  # null means the default
        ("grep", {"handle": "nope_123"}, "invalid_argument"),
        ("get_in", {"handle": "unknown_handle_1", "path": "a"}, "unknown_handle"),
        ("sql", {"query": 42}, "invalid_argument"),
        ("head", "not json", "invalid_argument"),
        ("head", ["a", "list"], "invalid_argument"),
    ],
)
def test_mistakes_are_results_not_exceptions(pad: Scratchpad, name: str, args: object, code: str) -> None:
    before = pad.budget.used
    res = pad.call_tool(name, args)  # type: ignore[arg-type]
    # the model reads an error like any result: it is charged, and it is small
    assert not res.ok and res.data is None and res.tokens == count_tokens(res.text) > 0
    assert pad.budget.used == before + res.tokens and len(res.text.encode()) <= 2048
    assert res.error["error"] == code
    assert isinstance(res.error["message"], str) and isinstance(res.error["suggestions"], list)
    # the model reads each suggestion as the call it makes (tool, arguments), not also as the
    # "call" string people read (res.error keeps it): a third of a refusal's tokens, twice
    seen = json.loads(res.text)
    assert all("call" not in s and {"tool", "arguments"} <= s.keys() for s in seen["suggestions"])
    assert all("call" in s for s in res.error["suggestions"])
    # nor the fields that say again what its message says, echo the model's own call or are empty
    # (res.error keeps them, for programs)
    said = {"argument", "allowed", "requested_path", "valid_prefix", "failed_segment", "estimated_tokens",
            "per_call_limit", "remaining_budget_tokens", "page_tokens", "requested_lines", "pattern",
            "max_matches", "context", "offset", "limit", "window_size", "max_rows"}  # fmt: skip
    message = res.error["message"]
    for key, value in res.error.items():
        if key in seen:
            assert key == "suggestions" or seen[key] == json.loads(json.dumps(value, default=str)), key
        else:
            assert key in said or value in (None, [], {}) or str(value) in message or f"{value:,}" in message, key
    assert seen["suggestions"] == [{k: v for k, v in s.items() if k != "call"} for s in res.error["suggestions"]]
    assert all(str(n) in message for n in res.error.get("allowed", [])) and str(res.error.get("argument", "")) in message


def test_unknown_tool_suggests_close_names(pad: Scratchpad) -> None:
    res = pad.call_tool("item_shcema", {})
    assert res.error["close_matches"][0] == "item_schema"


@pytest.mark.parametrize("name", ["search_bytes", "scratch_delte", "scratch_writ"])
def test_a_misspelt_tool_never_suggests_a_call_that_changes_the_store(pad: Scratchpad, log_handle: str,
                                                                      name: str) -> None:
    # search_bytes {handle} suggested scratch_delete {handle}: running the hint deleted the handle
    res = pad.call_tool(name, {"handle": log_handle, "key": "k", "value": 1, "kind": "handle"})
    assert res.error["error"] == "unknown_tool" and res.error["close_matches"]
    assert not {s["tool"] for s in res.error["suggestions"]} & {"scratch_delete", "scratch_write"}
    for s in res.error["suggestions"]:  # what is offered runs, and reads
        assert pad.call_tool(s["tool"], s["arguments"]).ok
    assert [e["handle"] for e in pad.entries("handle")] == [log_handle] and pad.entries("note") == []


def test_common_model_slips_are_forgiven(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool("head", {"handle": log_handle, "lines": "3"})
    assert res.ok and len(res.data["lines"]) == 3
    res = pad.call_tool(
        "grep", json.dumps({"file": log_handle, "pattern": "ERROR", "ignore_case": "true", "max_matches": 2.0})
    )
    assert res.ok and len(res.data["matches"]) == 2


def test_budget_math_and_initial_use(pad: Scratchpad) -> None:
    b = pad.budget
    assert b.context_window == 128_000 and b.usable == math.floor(128_000 * 0.8)
    assert b.used == count_tokens(json.dumps(pad.tool_specs("openai")))
    assert b.remaining == b.usable - b.used


def test_each_success_is_charged_exactly(pad: Scratchpad, log_handle: str) -> None:
    before = pad.budget.used
    res = pad.call_tool("head", {"handle": log_handle, "lines": 20})
    assert res.tokens == count_tokens(res.text)
    assert pad.budget.used == before + res.tokens
    assert pad.usage()["tokens_extracted"] == res.tokens


def test_per_call_cap_is_checked_first(store: ScratchStore, log_handle: str) -> None:
    pad = store.scratchpad("run-1", "agent-1", max_extraction_tokens=500)
    res = pad.call_tool("head", {"handle": log_handle, "lines": 200})
    e = res.error
    assert e["error"] == "head_too_large" and e["per_call_limit"] == 500 and "remaining_budget_tokens" not in e
    assert e["estimated_tokens"] > 500 and res.tokens == count_tokens(res.text) < 500
    for s in e["suggestions"]:  # every suggestion is a concrete call that works
        follow = pad.call_tool(s["tool"], s["arguments"])
        assert follow.ok, (s, follow.error)
    fit = next(s for s in e["suggestions"] if s["tool"] == "head")
    assert fit["arguments"]["lines"] < 200


def test_remaining_budget_is_checked_second(store: ScratchStore, log_handle: str) -> None:
    pad = store.scratchpad("run-1", "agent-1", context_window=5000)
    assert pad.budget.remaining < 2000
    remaining = pad.budget.remaining
    res = pad.call_tool("head", {"handle": log_handle, "lines": 100})
    assert res.error["error"] == "head_too_large"
    assert res.error["remaining_budget_tokens"] == remaining == pad.budget.remaining + res.tokens
    used = pad.budget.used
    assert pad.call_tool("head", {"handle": log_handle, "lines": 2}).ok
    assert pad.budget.used > used


def test_record_llm_usage_only_raises(pad: Scratchpad) -> None:
    base = pad.budget.used
    pad.record_llm_usage(input_tokens=10, output_tokens=5)
    assert pad.budget.used == base
    pad.record_llm_usage(input_tokens=50_000, output_tokens=1_000)
    assert pad.budget.used == 51_000
    pad.record_llm_usage(input_tokens=100)
    assert pad.budget.used == 51_000
    with pytest.raises(InvalidArgumentError):
        pad.record_llm_usage(input_tokens=-1)
    assert pad.usage()["tokens_extracted"] == 0  # ground truth is not an extraction


def test_concurrent_charges_never_overdraw() -> None:
    budget = ContextBudget(10_000, 0.0, initial_used=0, max_extraction_tokens=1_000)
    accepted: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def worker() -> None:
        barrier.wait()
        for _ in range(200):
            if budget.try_charge(7) is None:
                with lock:
                    accepted.append(7)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(accepted) == budget.used <= budget.usable
    assert budget.usable - budget.used < 7


def test_concurrent_tool_calls_charge_consistently(store: ScratchStore, log_handle: str) -> None:
    pad = store.scratchpad("run-1", "agent-1", context_window=8_000, safety_margin=0.0)
    start = pad.budget.used
    results = []

    def worker(i: int) -> None:
        results.append(pad.call_tool("slice", {"handle": log_handle, "start": 1 + i * 10, "end": 10 + i * 10}))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    charged = sum(r.tokens for r in results if r.ok)
    refused = sum(r.tokens for r in results if not r.ok)  # refusals are short and charged too
    assert pad.budget.used == start + charged + refused
    assert start + charged <= pad.budget.usable
    assert any(not r.ok for r in results)  # the window ran out for some
    # too large for what was left, or (nothing smaller fits either) the budget is spent
    assert {r.error["error"] for r in results if not r.ok} <= {"slice_too_large", "budget_exhausted"}


def test_context_windows_table() -> None:
    assert context_window_for("gpt-4o-2024-08-06") == 128_000
    assert context_window_for("gpt-4.1-mini") == 1_047_576
    assert context_window_for("claude-sonnet-4-5") == 200_000
    assert context_window_for("gemini-1.5-pro") == 2_097_152
    assert context_window_for("gpt-4") == 8_192
    assert context_window_for("who-knows") == 128_000


def test_notes_tools(pad: Scratchpad, pods_handle: str) -> None:
    assert pad.call_tool("scratch_write", {"key": 'k "q"', "value": [1, {"a": None}], "ttl_s": 60}).ok
    assert pad.call_tool("scratch_read", {"key": 'k "q"'}).data == [1, {"a": None}]
    listing = pad.call_tool("scratch_list", {})
    assert {r["kind"] for r in listing.data} == {"handle", "note"}
    assert pad.call_tool("scratch_delete", {"key": 'k "q"'}).ok
    assert pad.call_tool("scratch_read", {"key": 'k "q"'}).error["error"] == "unknown_key"
    assert pad.call_tool("scratch_delete", {}).error["error"] == "invalid_argument"
    assert pad.call_tool("scratch_write", {"key": "t", "value": 1, "ttl_s": -1}).error["error"] == "invalid_argument"
    assert pad.call_tool("scratch_delete", {"handle": pods_handle}).ok
    assert pad.call_tool("head", {"handle": pods_handle}).error["error"] == "unknown_handle"


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "claude-sonnet-4-5"])
def test_charged_tokens_are_the_count_of_the_whole_text(store: ScratchStore, model: str) -> None:
    pad = store.scratchpad(f"run-{model}", "agent-1", model=model)
    h = pad.intercept("\n".join(f"  line {i} /path/{i}" for i in range(3000)), tool="t", force=True).handle
    for tool, args in [
        ("head", {"lines": 40}),
        ("grep", {"pattern": "line 1", "max_matches": 5}),
        ("schema", {}),
        ("slice", {"start": 100, "end": 130}),
    ]:
        res = pad.call_tool(tool, {"handle": h, **args})
        assert res.ok and res.tokens == count_tokens(res.text, model=model), tool


def test_errors_are_bounded_even_when_the_input_is_huge(pad: Scratchpad) -> None:
    # a wrong path on an object whose keys are megabytes long: the error shows a bounded part
    doc = {f"{'k' * 50_000}{i}": i for i in range(100)}
    h = pad.spill(doc, "wide").handle
    before = pad.budget.used
    res = pad.call_tool("get_in", {"handle": h, "path": "nope"})
    assert res.error["error"] == "key_path_not_found"
    assert len(res.text.encode()) <= 2048 and res.tokens == count_tokens(res.text)
    assert pad.budget.used == before + res.tokens
    # a megabyte query string is not echoed back whole either
    res = pad.call_tool("sql", {"query": "SELECT " + "x" * 1_000_000})
    assert not res.ok and len(res.text.encode()) <= 2048 and len(str(res.arguments)) < 5000


def test_a_call_past_its_time_limit_stops_with_a_timeout(store: ScratchStore) -> None:
    pad = store.scratchpad("run-1", "agent-1", tool_timeout_s=0.001)
    h = pad.spill("\n".join(f"line {i} x" for i in range(400_000)), "big").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": r"x$|(\d+)+ x", "max_matches": 1000})
    assert not res.ok and res.error["error"] == "timeout" and res.error["time_limit_s"] == 0.001
    assert res.error["suggestions"] and res.tokens == count_tokens(res.text)
    res = pad.call_tool("read_handle", {"handle": h, "match": "line", "window": 1})
    assert res.error["error"] == "timeout"
    pad.tool_timeout_s = 10.0
    assert pad.call_tool("grep", {"handle": h, "pattern": "line 399999 x"}).ok  # the pad is healthy after


def test_bad_numbers_are_invalid_arguments_not_internal_errors(pad: Scratchpad, log_handle: str) -> None:
    for args in ({"lines": "²"}, {"lines": -(10**30)}, {"lines": "9" * 5000}):
        res = pad.call_tool("head", {"handle": log_handle, **args})
        assert not res.ok and res.error["error"] == "invalid_argument", res.error
    res = pad.call_tool("head", f'{{"handle": "{log_handle}", "lines": {"9" * 5000}}}')
    assert not res.ok and res.error["error"] == "invalid_argument", res.error


def test_scratch_list_pages_and_filters_many_notes(store: ScratchStore) -> None:
    pad = store.scratchpad("run-notes", "agent-1", max_extraction_tokens=4000)
    for i in range(1500):
        pad.scratch_write(f"{'plan' if i % 2 else 'fact'}_{i:04d}_" + "k" * 40, i)
    first = pad.call_tool("scratch_list", {})
    assert first.ok and len(first.data) == 50 and first.meta["total"] == 1500 and first.meta["next_offset"] == 50
    page = pad.call_tool("scratch_list", {"prefix": "plan_", "offset": 700, "limit": 100})
    assert page.ok and len(page.data) == 50 and all(r["key"].startswith("plan_") for r in page.data)
    big = pad.call_tool("scratch_list", {"limit": 500})
    assert big.error["error"] == "scratch_list_too_large"
    for s in big.error["suggestions"]:
        assert s["arguments"] != {"limit": 500}
        assert pad.call_tool(s["tool"], s["arguments"]).ok, s


def test_errors_never_show_host_paths(pad: Scratchpad, log_handle: str) -> None:

    entry = pad.entry(log_handle)
    index = pad.store.path / "bodies" / entry.body_id / "lines.idx"
    index.unlink()
    index.mkdir()  # a damaged store: the OS error names the file's host path
    pad.store._readers.clear()
    res = pad.call_tool("head", {"handle": log_handle})
    assert not res.ok and res.error["error"] == "store_error"
    assert str(pad.store.path) not in res.text and "<store>" in res.text


def test_read_handle_with_a_dense_match_stays_quick(pad: Scratchpad) -> None:
    import time

    h = pad.spill("a" * 5_000_000, tool="dense").handle
    started = time.perf_counter()
    res = pad.call_tool("read_handle", {"handle": h, "match": "a", "window": 10})
    assert time.perf_counter() - started < 5  # a per-byte Python loop took 14-35 s on 100 MB
    assert res.ok and res.data["occurrences"] == 10_001 and "10,001+" in res.text


def _spend(pad: Scratchpad, handle: str, leave: int) -> None:
    """Use the budget up until about ``leave`` tokens are left (with reads of the log)."""
    while pad.budget.remaining > leave + 400:
        lines = max(1, min(200, (pad.budget.remaining - leave) // 40))
        assert pad.call_tool("head", {"handle": handle, "lines": lines}).ok
    while pad.budget.remaining > leave:
        if not pad.call_tool("head", {"handle": handle, "lines": 1}).ok:
            break


def test_a_note_written_or_an_entry_deleted_with_no_budget_left_says_it_was_done(
    store: ScratchStore, log_handle: str
) -> None:
    pad = store.scratchpad("run-1", "agent-1", context_window=8_000)
    _spend(pad, log_handle, 0)
    assert pad.budget.remaining == 0
    wrote = pad.call_tool("scratch_write", {"key": "found", "value": {"errors": 100}})
    assert wrote.ok and "saved note 'found'" in wrote.text and wrote.tokens > 0
    assert pad.scratch_read("found") == {"errors": 100}
    used = pad.budget.used
    gone = pad.call_tool("scratch_delete", {"handle": log_handle})
    assert gone.ok and pad.budget.used == used + gone.tokens  # charged, past the budget, as an error is
    assert log_handle not in {e["handle"] for e in pad.entries("handle")}


def test_with_little_budget_left_suggestions_fit_it_and_with_none_the_budget_is_spent(
    store: ScratchStore, log_handle: str
) -> None:
    pad = store.scratchpad("run-1", "agent-1", context_window=60_000)
    _spend(pad, log_handle, 3_000)
    big = pad.call_tool("head", {"handle": log_handle, "lines": 2000})  # over the per-call limit too
    assert big.error is not None and big.error["error"] == "head_too_large", big.text
    assert big.error["per_call_limit"] == pad.budget.max_extraction_tokens
    left = pad.budget.remaining  # after this refusal was charged
    assert big.error["suggestions"] and big.error["remaining_budget_tokens"] < 3_000
    for s in big.error["suggestions"]:  # each runs and fits what is left now
        dry = pad.call_tool(s["tool"], s["arguments"], charge=False)
        answer = pad.tokenizer.count(dry.text)
        assert dry.ok
        assert answer + 48 <= left, (s, answer, left)
    _spend(pad, log_handle, 0)
    small = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {log_handle}"})
    assert small.ok and small.data == [{"n": 5000}]  # no longer than the refusal: shown instead
    spent = pad.call_tool("sql", {"query": f"SELECT * FROM {log_handle} LIMIT 50"})
    assert spent.error is not None and spent.error["error"] == "budget_exhausted"
    assert spent.error["remaining_budget_tokens"] == 0 and spent.error["suggestions"] == []
    assert "scratch_write" in spent.error["message"] and spent.tokens < 200


@pytest.mark.parametrize(
    ("model", "known"),
    [
        ("gpt-4o", True),
        ("gpt-4o-2024-08-06", True),
        ("gpt-4.1-mini", True),
        ("claude-opus-4-1", True),
        ("o1-preview", True),
        ("gpt-4oo", False),  # a typo that starts like gpt-4o passed for it, with no warning
        ("o3x", False),
        ("llama-3", False),
    ],
)
def test_a_model_that_only_starts_like_a_known_one_is_not_known(model: str, known: bool) -> None:
    from jupyter_scratchpad.budget import is_known_model

    assert is_known_model(model) is known


def test_a_handle_of_another_run_is_said_to_be_there(store: ScratchStore, pad: Scratchpad, pods_handle: str) -> None:
    # it read as "never spilled here": a model retried, a person doubted the store
    other = store.scratchpad("run-2", pad.agent_id)
    res = other.call_tool("head", {"handle": pods_handle})
    assert res.error["error"] == "unknown_handle" and res.error["in_runs"] == [pad.run_id], res.error
    assert f"live in run {pad.run_id!r}" in res.error["message"]
    stranger = store.scratchpad("run-3", "agent-2")  # another agent's runs are never named
    res = stranger.call_tool("head", {"handle": pods_handle})
    assert "in_runs" not in res.error and "never spilled here" in res.error["message"]


def test_used_starts_at_the_definitions_the_model_holds(store: ScratchStore) -> None:
    # a Claude pad started at the OpenAI strict specs: 420 tokens more than the Anthropic ones it got
    pad = store.scratchpad("run-claude", "agent-1", model="claude-sonnet-4-5")
    anthropic = pad.tokenizer.count(json.dumps(pad.tool_specs("anthropic")))
    assert pad.budget.used == anthropic
    openai = pad.tokenizer.count(json.dumps(pad.tool_specs("openai")))  # handed out instead: followed
    assert openai != anthropic and pad.budget.used == openai
    pad.budget.charge_unconditionally(10)
    pad.tool_specs("anthropic")  # once something was charged, used stays what it is
    assert pad.budget.used == openai + 10
