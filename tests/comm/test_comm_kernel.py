"""End to end with a real ipykernel: ``%load_ext`` registers the target, the comm answers.

This is the exchange the JupyterLab extension has, driven from jupyter_client instead of a
browser: comm_open → hello, comm_msg requests → replies, ``%unload_ext`` → comm_close.
"""

from __future__ import annotations

import queue
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from comm_helpers import check
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from jupyter_scratchpad.comm import COMM_TARGET, PROTOCOL_VERSION

TIMEOUT_S = 60


@pytest.fixture(scope="module")
def kernel() -> Iterator[BlockingKernelClient]:
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT_S)
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


# iopub messages that execute_interactive read while waiting for its cell: comm events among them.
_SEEN: list[dict[str, Any]] = []


def run(kc: BlockingKernelClient, code: str) -> None:
    reply = kc.execute_interactive(code, timeout=TIMEOUT_S, output_hook=_SEEN.append)
    assert reply["content"]["status"] == "ok", reply["content"]


def comm_event(kc: BlockingKernelClient, comm_id: str) -> tuple[str, Any]:
    """The next comm_msg or comm_close of ``comm_id`` on iopub."""
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if _SEEN:
            msg = _SEEN.pop(0)
        else:
            try:
                msg = kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
        kind = msg["header"]["msg_type"]
        if kind in ("comm_msg", "comm_close") and msg["content"].get("comm_id") == comm_id:
            return kind, msg["content"].get("data")
    raise AssertionError(f"no comm message from the kernel within {TIMEOUT_S}s")


def open_comm(kc: BlockingKernelClient) -> tuple[str, tuple[str, Any]]:
    comm_id = uuid.uuid4().hex
    kc.shell_channel.send(
        kc.session.msg(
            "comm_open",
            {"comm_id": comm_id, "target_name": COMM_TARGET, "data": {"protocol": PROTOCOL_VERSION, "id": "hello"}},
        )
    )
    return comm_id, comm_event(kc, comm_id)


EVENTS: list[dict[str, Any]] = []  # unsolicited events (a landed token count) seen between replies


def next_reply(kc: BlockingKernelClient, comm_id: str) -> tuple[str, Any]:
    while True:
        kind, data = comm_event(kc, comm_id)
        if kind == "comm_msg" and isinstance(data, dict) and data.get("type") == "event":
            EVENTS.append(data)
            continue
        return kind, data


def request(kc: BlockingKernelClient, comm_id: str, data: dict[str, Any]) -> Any:
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))
    kind, reply = next_reply(kc, comm_id)
    assert kind == "comm_msg"
    return reply


def test_the_bridge_through_a_real_kernel(kernel: BlockingKernelClient) -> None:
    # Not loaded: the kernel closes a comm to an unknown target, which the front end reads as such.
    comm_id, (kind, _data) = open_comm(kernel)
    assert kind == "comm_close"

    run(kernel, "%load_ext jupyter_scratchpad")
    # Loading announces it to any open page: a comm_open to the page's target, the hello as data.
    announced = [m for m in _SEEN if m["header"]["msg_type"] == "comm_open"]
    assert [m["content"]["target_name"] for m in announced] == [COMM_TARGET]
    check("hello_reply", announced[0]["content"]["data"])
    announced_id = announced[0]["content"]["comm_id"]
    assert request(kernel, announced_id, {"protocol": "1.0", "id": "a1", "type": "budget"})["ok"] is True

    comm_id, (kind, hello) = open_comm(kernel)
    assert kind == "comm_msg"
    check("hello_reply", hello)
    assert hello["id"] == "hello"

    run(kernel, "big = {'items': [{'id': i, 'name': f'item-{i}', 'tags': ['a', 'b']} for i in range(4000)]}\nbig")
    listing = request(kernel, comm_id, {"protocol": "1.0", "id": "l1", "type": "list"})
    check("list_reply", listing)
    handles = [e["handle"] for e in listing["result"]["entries"]]
    assert len(handles) == 1, listing
    budget = request(kernel, comm_id, {"protocol": "1.0", "id": "b1", "type": "budget"})
    check("budget_reply", budget)
    assert budget["result"]["spills"] == 1
    stub = request(kernel, comm_id, {"protocol": "1.0", "id": "s1", "type": "stub", "handle": handles[0]})
    check("stub_reply", stub)
    assert stub["result"]["stub"]["lines"] > 4000
    # the exact count of this > 64 KiB spill is computed in the background, then pushed to the page
    while not [e for e in EVENTS if e["handle"] == handles[0]]:
        kind, data = comm_event(kernel, comm_id)
        if kind == "comm_msg" and data.get("type") == "event":
            EVENTS.append(data)
    [event] = [e for e in EVENTS if e["handle"] == handles[0]]
    check("tokens_event", event)
    assert (
        event["tokens"]
        == request(kernel, comm_id, {"protocol": "1.0", "id": "s2", "type": "stub", "handle": handles[0]})["result"][
            "stub"
        ]["tokens"]
    )

    run(kernel, "%unload_ext jupyter_scratchpad")
    closed = {}
    for _ in range(2):  # both comms, the announced one and the opened one, in either order
        msg = next(m for m in _SEEN if m["header"]["msg_type"] == "comm_close")
        _SEEN.remove(msg)
        closed[msg["content"]["comm_id"]] = msg["content"]["data"]
    assert set(closed) == {comm_id, announced_id}
    for data in closed.values():
        check("closed", data)
    _, (kind, _data) = open_comm(kernel)
    assert kind == "comm_close"


def test_a_budget_waiting_for_a_count_does_not_hold_the_list_back(kernel: BlockingKernelClient) -> None:
    # The sidebar stayed on "Nothing spilled yet" after a first large spill: the budget waits for
    # the spill's exact token count, and answered on the shell thread it held every later request
    # (the list among them) and the next cell until the count was in, past the page's timeout.
    run(kernel, "%load_ext jupyter_scratchpad")
    comm_id, (kind, _hello) = open_comm(kernel)
    assert kind == "comm_msg"
    run(kernel, "rows = {'rows': [{'id': i, 'txt': 'lorem ipsum dolor ' * 8} for i in range(250_000)]}\nrows")
    for data in ({"id": "b1", "type": "budget"}, {"id": "l1", "type": "list"}):
        message = {"comm_id": comm_id, "data": {"protocol": PROTOCOL_VERSION, **data}}
        kernel.shell_channel.send(kernel.session.msg("comm_msg", message))
    first, second = next_reply(kernel, comm_id)[1], next_reply(kernel, comm_id)[1]
    assert [first["id"], second["id"]] == ["l1", "b1"], "the list waited for the budget's count"
    check("list_reply", first)
    assert first["result"]["total_entries"] == 1
    check("budget_reply", second)
    # the budget, once the count is in, holds it
    assert second["result"]["tokens_intercepted"] >= 1_000_000
    run(kernel, "%unload_ext jupyter_scratchpad")
