"""A delete or extend from the sidebar (a comm request, no cell ran) refreshes the open explorers,
as the kernel does after each cell: an explorer on the deleted handle moves to the newest live one."""

from __future__ import annotations

from comm_helpers import pods

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.comm import handle_request
from jupyter_scratchpad.widgets import Explorer


def _spill(pad: Scratchpad, n: int) -> str:
    result = pad.intercept(pods(n), tool="k8s_list_pods")
    assert result.spilled and result.handle is not None
    return result.handle


def test_a_sidebar_delete_moves_an_explorer_off_the_deleted_handle(pad: Scratchpad) -> None:
    older = _spill(pad, 800)
    newer = _spill(pad, 900)
    explorer = Explorer(pad, handle=older)
    try:
        assert explorer.handle == older
        reply = handle_request(pad, {"protocol": "1.0", "id": "d", "type": "delete", "handle": older})
        assert reply["ok"] and reply["result"]["deleted"] is True
        # the picker no longer lists it, and the explorer shows the newest live handle
        assert explorer.handle == newer
        assert [e["handle"] for e in explorer.entries] == [newer]
        reply = handle_request(pad, {"protocol": "1.0", "id": "d2", "type": "delete", "handle": newer})
        assert reply["ok"]
        assert explorer.handle is None and explorer.entries == []
    finally:
        explorer.close()


def test_a_sidebar_extend_refreshes_the_explorer(pad: Scratchpad) -> None:
    handle = _spill(pad, 800)
    explorer = Explorer(pad, handle=handle)
    try:
        before = explorer.entries[0]["expires_at"]
        reply = handle_request(
            pad, {"protocol": "1.0", "id": "e", "type": "extend", "handle": handle, "ttl_s": 10 * 3600}
        )
        assert reply["ok"]
        assert explorer.entries[0]["expires_at"] > before
    finally:
        explorer.close()
