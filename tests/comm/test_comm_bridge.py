"""The comm target on a real ``comm`` CommManager, with comms that record what they publish.

Like ipywidgets' dummy comm: the manager, the comm and the bridge are the real classes; only
the wire (``publish_msg``) is replaced by a list, so no kernel or browser is needed.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import comm.base_comm
import pytest
from comm_helpers import check

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.comm import (
    COMM_TARGET,
    PROTOCOL_VERSION,
    bridge_for,
    comm_manager_for,
    register_comm_target,
    unregister_comm_target,
)


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """The explorer and the lab bridge work unchanged on both backends (embedded, shared PostgreSQL)."""
    return backend_store


class RecordingComm(comm.base_comm.BaseComm):
    """A comm whose messages to the front end are kept in ``sent``."""

    def __init__(self, **kwargs: Any) -> None:
        self.sent: list[tuple[str, Any]] = []
        super().__init__(**kwargs)

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        self.sent.append((msg_type, data))


class Session:
    """What ``%load_ext`` hands over: an object with a ``pad``."""

    def __init__(self, pad: Scratchpad | None) -> None:
        self.pad = pad


@pytest.fixture
def manager() -> comm.base_comm.CommManager:
    return comm.base_comm.CommManager()


def open_comm(manager: comm.base_comm.CommManager, data: Any = None) -> RecordingComm:
    """Do what the manager does on a comm_open from the front end."""
    comm_id = uuid.uuid4().hex
    c = RecordingComm(comm_id=comm_id, primary=False, target_name=COMM_TARGET)
    manager.register_comm(c)
    target = manager.targets[COMM_TARGET]
    target(c, {"content": {"comm_id": comm_id, "target_name": COMM_TARGET, "data": data or {}}})
    return c


def send(c: RecordingComm, data: Any) -> Any:
    """Deliver a comm_msg from the front end; return the reply the kernel published.

    A token count landing in the background may push an event at any time: those are skipped.
    """
    before = len(c.sent)
    c.handle_msg({"content": {"comm_id": c.comm_id, "data": data}})
    replies = [m for m in c.sent[before:] if not (isinstance(m[1], dict) and m[1].get("type") == "event")]
    assert len(replies) == 1
    msg_type, reply = replies[0]
    assert msg_type == "comm_msg"
    return reply


def test_open_greets_with_hello(pad: Scratchpad, manager: Any) -> None:
    assert register_comm_target(Session(pad), comm_manager=manager)
    c = open_comm(manager, {"protocol": PROTOCOL_VERSION, "id": "hello"})
    msg_type, hello = c.sent[-1]
    assert msg_type == "comm_msg"
    check("hello_reply", hello)
    assert hello["id"] == "hello"
    assert hello["result"]["run_id"] == pad.run_id
    unregister_comm_target(comm_manager=manager)


def test_requests_are_answered_on_the_comm(pad: Scratchpad, manager: Any, spilled: str) -> None:
    register_comm_target(Session(pad), comm_manager=manager)
    c = open_comm(manager)
    listing = send(c, {"protocol": "1.0", "id": "1", "type": "list"})
    check("list_reply", listing)
    assert [e["handle"] for e in listing["result"]["entries"]] == [spilled]
    deleted = send(c, {"protocol": "1.0", "id": "2", "type": "delete", "handle": spilled})
    assert deleted["result"]["deleted"] is True
    assert pad.entries("handle") == []
    refused = send(c, {"protocol": "1.0", "id": "3", "type": "stub"})
    check("error_reply", refused)
    unregister_comm_target(comm_manager=manager)


def test_the_pad_is_read_from_the_session_at_each_request(store: Any, manager: Any) -> None:
    # %config ScratchMagics.run_id replaces session.pad; the bridge must follow it.
    session = Session(store.scratchpad(run_id="a", agent_id="x"))
    register_comm_target(session, comm_manager=manager)
    c = open_comm(manager)
    session.pad = store.scratchpad(run_id="b", agent_id="x")
    assert send(c, {"protocol": "1.0", "id": "1", "type": "hello"})["result"]["run_id"] == "b"
    unregister_comm_target(comm_manager=manager)


def test_unregister_closes_the_comms_and_removes_the_target(pad: Scratchpad, manager: Any) -> None:
    register_comm_target(Session(pad), comm_manager=manager)
    comms = [open_comm(manager), open_comm(manager)]
    assert unregister_comm_target(comm_manager=manager)
    assert COMM_TARGET not in manager.targets
    assert bridge_for(comm_manager=manager) is None
    for c in comms:
        msg_type, data = c.sent[-1]
        assert msg_type == "comm_close"
        check("closed", data)
    assert not unregister_comm_target(comm_manager=manager)


def test_a_message_after_unload_gets_not_loaded(pad: Scratchpad, manager: Any) -> None:
    register_comm_target(Session(pad), comm_manager=manager)
    bridge = bridge_for(comm_manager=manager)
    c = open_comm(manager)
    assert bridge is not None
    bridge.session = None  # as if the session went away while a comm is still open
    reply = send(c, {"protocol": "1.0", "id": "1", "type": "list"})
    assert reply["error"]["code"] == "not_loaded"
    unregister_comm_target(comm_manager=manager)


def test_registering_again_replaces_the_bridge(pad: Scratchpad, manager: Any) -> None:
    register_comm_target(Session(pad), comm_manager=manager)
    old = open_comm(manager)
    register_comm_target(Session(pad), comm_manager=manager)
    assert old.sent[-1][0] == "comm_close"
    new = open_comm(manager)
    assert new.sent[-1][1]["type"] == "hello"
    unregister_comm_target(comm_manager=manager)


def test_outside_a_kernel_nothing_is_registered(pad: Scratchpad) -> None:
    class PlainShell:  # a terminal IPython has no .kernel
        pass

    assert comm_manager_for(PlainShell()) is None
    assert register_comm_target(Session(pad), PlainShell()) is False
    assert unregister_comm_target(Session(pad), PlainShell()) is False


def test_a_reply_json_cannot_hold_becomes_an_internal_error(pad: Scratchpad, manager: Any) -> None:
    pad.budget.safety_margin = float("nan")  # would make the budget reply invalid JSON
    register_comm_target(Session(pad), comm_manager=manager)
    c = open_comm(manager)
    reply = send(c, {"protocol": "1.0", "id": "9", "type": "budget"})
    check("error_reply", reply)
    assert reply["error"]["code"] == "internal_error"
    assert reply["id"] == "9"
    unregister_comm_target(comm_manager=manager)


def test_registering_announces_the_kernel_to_the_front_end(pad: Scratchpad, manager: Any) -> None:
    made: list[RecordingComm] = []

    def create_comm(**kwargs: Any) -> RecordingComm:
        c = RecordingComm(**kwargs, primary=False)  # primary=False: no global comm manager
        c.publish_msg("comm_open", data=kwargs.get("data"))
        made.append(c)
        return c

    register_comm_target(Session(pad), comm_manager=manager, create_comm=create_comm)
    [announced] = made
    msg_type, hello = announced.sent[0]
    assert (msg_type, announced.target_name) == ("comm_open", COMM_TARGET)
    check("hello_reply", hello)
    assert hello["id"] is None
    # The announced comm answers requests like an opened one, and is closed on unload.
    assert send(announced, {"protocol": "1.0", "id": "1", "type": "budget"})["ok"] is True
    unregister_comm_target(comm_manager=manager)
    assert announced.sent[-1][0] == "comm_close"


def test_an_announcement_that_cannot_be_sent_is_not_an_error(pad: Scratchpad, manager: Any) -> None:
    def no_front_end(**kwargs: Any) -> Any:
        raise RuntimeError("no kernel to publish on")

    assert register_comm_target(Session(pad), comm_manager=manager, create_comm=no_front_end)
    assert bridge_for(comm_manager=manager).comms == {}  # type: ignore[union-attr]
    assert open_comm(manager).sent[-1][1]["type"] == "hello"
    unregister_comm_target(comm_manager=manager)


def test_a_landed_token_count_is_pushed_to_every_open_page(store: Any, manager: Any) -> None:
    pad = store.scratchpad(run_id="counts", agent_id="k")
    register_comm_target(Session(pad), comm_manager=manager)
    pages = [open_comm(manager), open_comm(manager)]
    big = "\n".join(f"2026-12-03T10:00:00 worker-{i % 7} handled request {i} in {i % 97} ms" for i in range(40_000))
    spilled = pad.intercept(big, tool="fetch_logs")
    assert spilled.stub is not None and spilled.stub["tokens_exact"] is False  # > 64 KiB: counted later
    assert pad.wait_for_counts(30)
    exact = pad.stub(spilled.handle)["tokens"]
    for page in pages:
        events = [data for kind, data in page.sent if kind == "comm_msg" and data.get("type") == "event"]
        assert events == [
            {
                "protocol": PROTOCOL_VERSION,
                "type": "event",
                "event": "tokens",
                "handle": spilled.handle,
                "tokens": exact,
            }
        ]
        check("tokens_event", events[0])
    assert exact > spilled.stub["tokens"]
    unregister_comm_target(comm_manager=manager)
    assert bridge_for(manager) is None
    assert pad.token_listeners == [], "an unloaded bridge stops listening"


def test_hostile_requests_are_answered_short_and_never_raise(pad: Scratchpad, manager: Any, spilled: str) -> None:
    # probe L: a ttl_s of 401 digits raised OverflowError past the comm (no reply: the page
    # waited 15 s); a 5 MB type, a 5 MB key, 200,000 keys came back whole in the error
    register_comm_target(Session(pad), comm_manager=manager)
    c = open_comm(manager)
    v = PROTOCOL_VERSION
    hostile = [
        {"protocol": v, "id": "x1", "type": "extend", "handle": spilled, "ttl_s": 10**400},
        {"protocol": v, "id": "x2", "type": "x" * 5_000_000},
        {"protocol": v, "id": "x3", "type": "list", "k" * 5_000_000: 1},
        {"protocol": v, "id": "x4", "type": "list", **{f"f{i}": 0 for i in range(200_000)}},
        {"protocol": "9" * 5_000_000, "id": "x5", "type": "list"},
    ]
    for data in hostile:
        reply = send(c, data)
        check("error_reply", reply)
        assert not reply["ok"] and len(json.dumps(reply)) < 2_500, (reply["error"], len(json.dumps(reply)))
    assert "and 199,995 more" in send(c, hostile[3])["error"]["message"]
    assert pad.store.get_entry(pad.scope, "handle", spilled) is not None  # nothing changed
    unregister_comm_target(comm_manager=manager)


def test_an_opening_message_is_checked_like_a_request(pad: Scratchpad, manager: Any) -> None:
    # its id came back as sent (a newline and HTML), and a page speaking protocol 9.0 was greeted ok
    register_comm_target(Session(pad), comm_manager=manager)
    odd = open_comm(manager, {"protocol": PROTOCOL_VERSION, "id": "bad id\n<b>"})
    _, hello = odd.sent[-1]
    assert hello["ok"] and hello["id"] is None
    future = open_comm(manager, {"protocol": "9.0", "id": "h"})
    _, refused = future.sent[-1]
    check("error_reply", refused)
    assert not refused["ok"] and refused["error"]["code"] == "unsupported_protocol" and refused["id"] == "h"
    unregister_comm_target(comm_manager=manager)
