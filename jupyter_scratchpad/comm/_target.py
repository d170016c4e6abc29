"""The kernel end of the bridge: the ``jupyter_scratchpad`` comm target on ipykernel's comm manager.

``%load_ext jupyter_scratchpad`` calls ``register_comm_target(session, shell)``, which registers
the target and announces itself: it opens a comm to the front end's ``jupyter_scratchpad`` target
with the ``hello`` as its data, so an open JupyterLab page learns at once that the kernel is ready
(it need not retry after every cell). A page that connects later opens a comm to the kernel's
target and gets the same ``hello`` as its first message. Only the kernel
opens the store: DuckDB allows one writing process per file, so no server extension is involved.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from typing import Any

from ._handlers import handle_request, hello_result
from ._protocol import COMM_TARGET, PROTOCOL_VERSION, error_reply, open_error, tokens_event, valid_id

__all__ = [
    "KernelBridge",
    "bridge_for",
    "comm_manager_for",
    "register_comm_target",
    "unregister_comm_target",
]

log = logging.getLogger("jupyter_scratchpad.comm")

# One bridge per comm manager (one per kernel); keyed by id() so we keep no hold on the manager.
_BRIDGES: dict[int, KernelBridge] = {}


def comm_manager_for(shell: Any = None) -> Any | None:
    """The comm manager of the kernel ``shell`` runs in; None outside a kernel (plain IPython)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return None
        shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    return getattr(kernel, "comm_manager", None) if kernel is not None else None


class KernelBridge:
    """Answers the comms JupyterLab opens to ``jupyter_scratchpad`` for one session."""

    def __init__(self, session: Any) -> None:
        self.session: Any | None = session
        self.comms: dict[str, Any] = {}
        self._watched: Any | None = None  # the pad whose token counts we forward

    def _watch(self) -> None:
        """Hear the exact token counts that land after a spill (``pad.token_listeners``)."""
        pad = self.pad
        if pad is self._watched:
            return
        self._unwatch()
        listeners = getattr(pad, "token_listeners", None)
        if listeners is not None:
            listeners.append(self._on_tokens)
            self._watched = pad

    def _unwatch(self) -> None:
        old = self._watched
        self._watched = None
        if old is not None:
            with contextlib.suppress(ValueError):
                old.token_listeners.remove(self._on_tokens)

    def _on_tokens(self, handle: str, tokens: int) -> None:
        """Tell every open page that ``handle``'s exact count is in: the cards and the sidebar update.

        Runs on the counting thread; ipykernel's IOPub socket is safe to send on from any thread.
        """
        event = tokens_event(handle, tokens)
        for comm in list(self.comms.values()):
            try:
                comm.send(event)
            except Exception:  # a comm whose page or kernel is going away
                log.debug("sending a token event failed", exc_info=True)

    @property
    def pad(self) -> Any | None:
        return getattr(self.session, "pad", None) if self.session is not None else None

    def _hello(self, pad: Any, request_id: object = None) -> dict[str, Any]:
        rid = valid_id(request_id)
        return {"protocol": PROTOCOL_VERSION, "id": rid, "type": "hello", "ok": True, "result": hello_result(pad)}

    def _adopt(self, comm: Any) -> None:
        self.comms[comm.comm_id] = comm
        self._watch()
        comm.on_msg(self._on_msg)
        comm.on_close(self._on_close)

    def announce(self, create_comm: Any = None) -> Any | None:
        """Open a comm to the front end carrying the ``hello`` (None when it cannot be opened)."""
        pad = self.pad
        if pad is None:
            return None
        if create_comm is None:
            from comm import create_comm
        try:
            comm = create_comm(target_name=COMM_TARGET, data=self._hello(pad))
        except Exception:  # no front end to talk to is not an error
            log.debug("announcing the scratchpad comm failed", exc_info=True)
            return None
        self._adopt(comm)
        return comm

    def open(self, comm: Any, open_msg: dict[str, Any]) -> None:
        """The comm target: greet the front end, then answer each message on this comm."""
        data = (open_msg.get("content") or {}).get("data") or {}
        self._adopt(comm)
        pad = self.pad
        if pad is None:  # a session object that has no pad (yet)
            comm.close(data=error_reply(data, "not_loaded", "jupyter_scratchpad is not loaded"))
            return
        wrong = open_error(data)
        if wrong is not None:
            comm.send(error_reply(data, *wrong))
            return
        comm.send(self._hello(pad, data.get("id") if isinstance(data, dict) else None))

    def _on_msg(self, msg: dict[str, Any]) -> None:
        comm = self.comms.get(msg.get("content", {}).get("comm_id", ""))
        if comm is None:
            return
        self._watch()  # %config may have replaced the pad
        pad, request = self.pad, msg.get("content", {}).get("data")
        if _waits_for_counts(pad, request):
            # A budget waits for the exact token counts of large spills (seconds for 85 MB):
            # answered here it held the kernel, the page's other requests and the next cell
            # until then. The reply is sent from a thread once the counts are in.
            threading.Thread(
                target=self._answer, args=(comm, pad, request), name="scratchpad-budget", daemon=True
            ).start()
            return
        self._answer(comm, pad, request)

    def _answer(self, comm: Any, pad: Any, request: object) -> None:
        reply = handle_request(pad, request)
        try:
            reply = _json_safe(reply)
        except (TypeError, ValueError) as exc:  # NaN, or a value JSON cannot hold: a bug of ours
            log.exception("scratchpad reply is not JSON")
            reply = error_reply(reply, "internal_error", f"reply not serialisable: {exc}")
        try:
            comm.send(reply)
        except Exception:  # a comm whose page or kernel went away while the counts were awaited
            log.debug("sending a scratchpad reply failed", exc_info=True)

    def _on_close(self, msg: dict[str, Any]) -> None:
        self.comms.pop(msg.get("content", {}).get("comm_id", ""), None)

    def close(self) -> None:
        """Close every comm the front end opened; it then shows "not loaded"."""
        self._unwatch()
        self.session = None
        for comm in list(self.comms.values()):
            try:
                comm.close(
                    data={
                        "protocol": PROTOCOL_VERSION,
                        "type": "closed",
                        "reason": "jupyter_scratchpad was unloaded from the kernel",
                    }
                )
            except Exception:  # a comm whose kernel is going away
                log.debug("closing scratchpad comm failed", exc_info=True)
        self.comms.clear()


def _waits_for_counts(pad: Any, request: object) -> bool:
    """Whether ``request`` is a budget that would wait for token counts still being computed."""
    if pad is None or not isinstance(request, dict) or request.get("type") != "budget":
        return False
    wait = getattr(pad, "wait_for_counts", None)
    return wait is not None and not wait(timeout_s=0)


def register_comm_target(
    session: Any, shell: Any = None, *, comm_manager: Any = None, announce: bool = True, create_comm: Any = None
) -> bool:
    """Register the ``jupyter_scratchpad`` comm target for ``session`` (which has ``.pad``).

    Returns False, doing nothing, outside a kernel (a plain IPython terminal has no comms).
    Registering again replaces the previous session's bridge. ``announce`` opens a comm to the
    front end with the ``hello`` (``create_comm`` defaults to the kernel's ``comm.create_comm``).
    """
    manager = comm_manager if comm_manager is not None else comm_manager_for(shell)
    if manager is None:
        return False
    previous = _BRIDGES.pop(id(manager), None)
    if previous is not None:
        previous.close()
    bridge = KernelBridge(session)
    manager.register_target(COMM_TARGET, bridge.open)
    _BRIDGES[id(manager)] = bridge
    if announce:
        bridge.announce(create_comm)
    return True


def unregister_comm_target(session: Any = None, shell: Any = None, *, comm_manager: Any = None) -> bool:
    """Remove the comm target and close its comms; False when none was registered."""
    manager = comm_manager if comm_manager is not None else comm_manager_for(shell)
    if manager is None:
        return False
    bridge = _BRIDGES.pop(id(manager), None)
    if bridge is None:
        return False
    if manager.targets.get(COMM_TARGET) == bridge.open:
        manager.unregister_target(COMM_TARGET, bridge.open)
    bridge.close()
    return True


def bridge_for(shell: Any = None, *, comm_manager: Any = None) -> KernelBridge | None:
    """The bridge registered on this kernel, if any (for tests and diagnostics)."""
    manager = comm_manager if comm_manager is not None else comm_manager_for(shell)
    return _BRIDGES.get(id(manager)) if manager is not None else None


def _json_safe(reply: dict[str, Any]) -> dict[str, Any]:
    """Round-trip through JSON so a reply is exactly what the front end will parse."""
    result: dict[str, Any] = json.loads(json.dumps(reply, allow_nan=False))
    return result
