"""The protocol as a function: every request type, every refusal, checked against the schemas."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from comm_helpers import check, pods

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad._version import __version__
from jupyter_scratchpad.comm import (
    ERROR_CODES,
    PROTOCOL_VERSION,
    REQUEST_TYPES,
    handle_request,
    load_schema,
    schema_names,
)


def req(kind: str, **args: Any) -> dict[str, Any]:
    return {"protocol": PROTOCOL_VERSION, "id": f"t-{kind}", "type": kind, **args}


def test_every_schema_is_valid_and_pins_the_protocol_version() -> None:
    names = schema_names()
    assert {f"{t}_{s}" for t in REQUEST_TYPES for s in ("request", "reply")} <= set(names)
    assert {"error_reply", "stub", "closed"} <= set(names)
    for name in names:
        schema = load_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        if name != "stub":  # the MIME payload is the stub itself, not a message
            assert schema["properties"]["protocol"] == {"const": PROTOCOL_VERSION}, name
    assert load_schema("error_reply")["properties"]["error"]["properties"]["code"]["enum"] == list(ERROR_CODES)


def test_protocol_version_is_not_the_package_version() -> None:
    assert __version__ != PROTOCOL_VERSION
    assert PROTOCOL_VERSION.count(".") == 1


def test_hello_names_the_pad(pad: Scratchpad) -> None:
    reply = handle_request(pad, req("hello"))
    check("hello_request", req("hello"))
    check("hello_reply", reply)
    assert reply["result"] == {
        "protocol": PROTOCOL_VERSION,
        "package_version": __version__,
        "run_id": "run-1",
        "agent_id": "agent-1",
        "model": "gpt-4o",
    }


def test_list_gives_entries_newest_first_and_notes_with_time_left(pad: Scratchpad, clock: Any) -> None:
    first = pad.intercept(pods(800), tool="k8s_list_pods").handle
    clock.advance(10)
    second = pad.spill("x" * 100, tool="small_tool", ttl_s=60).handle
    pad.scratch_write("plan", {"step": 2}, ttl_s=120)
    clock.advance(20)
    assert pad.wait_for_counts(60)  # (the exact count of the big one lands off the critical path)
    reply = handle_request(pad, req("list"))
    check("list_request", req("list"))
    check("list_reply", reply)
    result = reply["result"]
    assert [e["handle"] for e in result["entries"]] == [second, first]
    small = result["entries"][0]
    assert small["source_tool"] == "small_tool"
    assert small["size"] == 100
    assert small["ttl_left_s"] == pytest.approx(40)
    assert result["entries"][1]["tokens"] == pad.entry(first).tokens
    assert result["notes"] == [
        {
            "key": "plan",
            "size": len('{"step": 2}'),
            "preview": result["notes"][0]["preview"],
            "created_at": clock.now - 20,
            "expires_at": clock.now + 100,
            "ttl_left_s": pytest.approx(100),
        }
    ]
    assert "step" in result["notes"][0]["preview"]
    assert (result["total_entries"], result["total_notes"], result["now"]) == (2, 1, clock.now)


def test_expired_entries_are_not_listed(pad: Scratchpad, clock: Any) -> None:
    pad.spill("y" * 50, tool="t", ttl_s=5)
    clock.advance(6)
    assert handle_request(pad, req("list"))["result"]["entries"] == []


def test_budget_follows_the_pad(pad: Scratchpad, spilled: str) -> None:
    before = handle_request(pad, req("budget"))
    check("budget_reply", before)
    assert pad.call_tool("head", {"handle": spilled, "lines": 5}).ok
    after = handle_request(pad, req("budget"))["result"]
    b = pad.budget
    assert after["used"] == b.used > before["result"]["used"]
    assert (after["usable"], after["remaining"], after["context_window"]) == (b.usable, b.remaining, 128_000)
    assert after["spills"] == 1
    assert after["tokens_extracted"] == pad.usage()["tokens_extracted"] > 0
    assert after["tokens_intercepted"] == pad.entry(spilled).tokens


def test_stub_is_the_displayed_stub(pad: Scratchpad, spilled: str) -> None:
    pad.wait_for_counts()  # the exact count of a large spill lands in the background
    reply = handle_request(pad, req("stub", handle=spilled))
    check("stub_reply", reply)
    check("stub", reply["result"]["stub"])
    assert reply["result"]["stub"] == json.loads(json.dumps(pad.stub(spilled)))


def test_extend_moves_expiry_from_now(pad: Scratchpad, spilled: str, clock: Any) -> None:
    clock.advance(100)
    reply = handle_request(pad, req("extend", handle=spilled, ttl_s=7200))
    check("extend_request", req("extend", handle=spilled, ttl_s=7200))
    check("extend_reply", reply)
    assert reply["result"] == {"kind": "handle", "key": spilled, "expires_at": clock.now + 7200, "ttl_left_s": 7200}
    assert pad.entry(spilled).expires_at == clock.now + 7200
    default = handle_request(pad, req("extend", handle=spilled))["result"]
    assert default["ttl_left_s"] == 7200  # the store's default TTL is shorter: the later expiry stays


def test_extend_and_delete_a_note(pad: Scratchpad) -> None:
    pad.scratch_write("k", [1, 2, 3], ttl_s=20)
    assert handle_request(pad, req("extend", key="k"))["result"]["ttl_left_s"] == pad.store.ttl_s
    assert handle_request(pad, req("extend", key="k", ttl_s=30))["result"]["ttl_left_s"] == pad.store.ttl_s
    reply = handle_request(pad, req("delete", key="k"))
    check("delete_reply", reply)
    assert reply["result"] == {"kind": "note", "key": "k", "deleted": True}
    assert pad.scratch_list() == []


def test_delete_a_handle_then_it_is_gone(pad: Scratchpad, spilled: str) -> None:
    check("delete_request", req("delete", handle=spilled))
    assert handle_request(pad, req("delete", handle=spilled))["result"]["deleted"] is True
    assert handle_request(pad, req("delete", handle=spilled))["result"]["deleted"] is False
    missing = handle_request(pad, req("stub", handle=spilled))
    check("error_reply", missing)
    assert missing["error"]["code"] == "not_found"
    assert spilled in missing["error"]["message"]


BAD_REQUESTS = [
    ("not an object", ["list"], "invalid_request", None),
    ("no protocol", {"id": "a", "type": "list"}, "invalid_request", "a"),
    ("protocol is a number", {"protocol": 1.0, "id": "a", "type": "list"}, "invalid_request", "a"),
    ("another major", {"protocol": "2.0", "id": "a", "type": "list"}, "unsupported_protocol", "a"),
    ("no id", {"protocol": "1.0", "type": "list"}, "invalid_request", None),
    ("id too long", {"protocol": "1.0", "id": "x" * 65, "type": "list"}, "invalid_request", None),
    ("unknown type", {"protocol": "1.0", "id": "a", "type": "drop_tables"}, "unknown_type", "a"),
    ("extra field", {"protocol": "1.0", "id": "a", "type": "budget", "handle": "h"}, "invalid_request", "a"),
    ("stub without handle", {"protocol": "1.0", "id": "a", "type": "stub"}, "invalid_request", "a"),
    ("bad handle", {"protocol": "1.0", "id": "a", "type": "stub", "handle": "../etc"}, "invalid_request", "a"),
    (
        "both handle and key",
        {"protocol": "1.0", "id": "a", "type": "delete", "handle": "h", "key": "k"},
        "invalid_request",
        "a",
    ),
    ("neither handle nor key", {"protocol": "1.0", "id": "a", "type": "extend"}, "invalid_request", "a"),
    ("negative ttl", {"protocol": "1.0", "id": "a", "type": "extend", "key": "k", "ttl_s": -1}, "invalid_request", "a"),
    ("bool ttl", {"protocol": "1.0", "id": "a", "type": "extend", "key": "k", "ttl_s": True}, "invalid_request", "a"),
    ("empty key", {"protocol": "1.0", "id": "a", "type": "delete", "key": ""}, "invalid_request", "a"),
    ("unknown note", {"protocol": "1.0", "id": "a", "type": "extend", "key": "nope"}, "not_found", "a"),
    ("id with a trailing newline", {"protocol": "1.1", "id": "a\n", "type": "list"}, "invalid_request", None),
    (
        "handle with a trailing newline",
        {"protocol": "1.1", "id": "a", "type": "stub", "handle": "h\n"},
        "invalid_request",
        "a",
    ),
    ("version with a trailing newline", {"protocol": "1.1\n", "id": "a", "type": "list"}, "invalid_request", "a"),
    (
        "a tiny ttl",
        {"protocol": "1.1", "id": "a", "type": "extend", "key": "k", "ttl_s": 0.001},
        "invalid_request",
        "a",
    ),
    ("explorer without model id", {"protocol": "1.1", "id": "a", "type": "explorer"}, "invalid_request", "a"),
    (
        "explorer with a bad model id",
        {"protocol": "1.1", "id": "a", "type": "explorer", "model_id": "x\n"},
        "invalid_request",
        "a",
    ),
]


@pytest.mark.parametrize(
    ("message", "code", "echoed_id"), [b[1:] for b in BAD_REQUESTS], ids=[b[0] for b in BAD_REQUESTS]
)
def test_bad_requests_get_error_replies(pad: Scratchpad, message: object, code: str, echoed_id: str | None) -> None:
    reply = handle_request(pad, message)
    check("error_reply", reply)
    assert reply["error"]["code"] == code
    assert reply["id"] == echoed_id
    assert reply["error"]["message"]


@pytest.mark.parametrize(
    "message",
    [b[1] for b in BAD_REQUESTS if b[2] == "invalid_request"],
    ids=[b[0] for b in BAD_REQUESTS if b[2] == "invalid_request"],
)
def test_the_schemas_refuse_what_the_kernel_refuses(message: object) -> None:
    kind = message.get("type", "list") if isinstance(message, dict) else "list"
    with pytest.raises(jsonschema.ValidationError):
        check(f"{kind}_request", message)


def test_a_request_without_a_loaded_pad_says_not_loaded() -> None:
    reply = handle_request(None, req("list"))
    check("error_reply", reply)
    assert reply["error"]["code"] == "not_loaded"
    assert "%load_ext jupyter_scratchpad" in reply["error"]["message"]


def test_a_store_failure_is_an_internal_error_not_an_exception(pad: Scratchpad) -> None:
    pad.store.close()
    reply = handle_request(pad, req("list"))
    check("error_reply", reply)
    assert reply["error"]["code"] == "internal_error"
    assert "StoreClosedError" in reply["error"]["message"]


def test_extend_never_shortens_an_entrys_life(pad: Scratchpad, spilled: str, clock: Any) -> None:
    long = handle_request(pad, req("extend", handle=spilled, ttl_s=7200))["result"]
    short = handle_request(pad, req("extend", handle=spilled, ttl_s=5))
    check("extend_reply", short)
    assert short["result"]["expires_at"] == long["expires_at"] == pad.entry(spilled).expires_at
    clock.advance(10)
    assert handle_request(pad, req("stub", handle=spilled))["ok"]  # still there after 5 s


def test_explore_opens_one_panel_explorer_per_pad(pad: Scratchpad, spilled: str) -> None:
    from jupyter_scratchpad.widgets import live_explorer

    reply = handle_request(pad, req("explore", handle=spilled))
    check("explore_request", req("explore", handle=spilled))
    check("explore_reply", reply)
    model_id = reply["result"]["model_id"]
    explorer = live_explorer(model_id)
    try:
        assert explorer is not None and explorer.pad is pad and explorer.handle == spilled
        other = pad.spill("another output\n" * 400, tool="other").handle
        again = handle_request(pad, req("explore", handle=other))["result"]
        assert again == {"model_id": model_id, "handle": other}  # the same panel, moved
        assert handle_request(pad, req("explore", handle="gone_000000000000"))["error"]["code"] == "not_found"
        alive = handle_request(pad, req("explorer", model_id=model_id))
        check("explorer_request", req("explorer", model_id=model_id))
        check("explorer_reply", alive)
        assert alive["result"] == {"model_id": model_id, "live": True, "handle": other}
    finally:
        assert explorer is not None
        explorer.close()
    gone = handle_request(pad, req("explorer", model_id=model_id))["result"]
    assert gone == {"model_id": model_id, "live": False, "handle": None}
