"""Kernel side of the JupyterLab bridge: the ``jupyter_scratchpad`` comm target and its protocol.

>>> from jupyter_scratchpad.comm import PROTOCOL_VERSION, load_schema
>>> load_schema("list_request")["properties"]["protocol"]["const"] == PROTOCOL_VERSION
True

``register_comm_target(session, shell)`` is called by ``%load_ext jupyter_scratchpad`` and
``unregister_comm_target(session, shell)`` by ``%unload_ext``; ``handle_request(pad, message)`` is
the whole protocol as a function (no kernel needed).
"""

from __future__ import annotations

from ._handlers import handle_request
from ._protocol import (
    COMM_TARGET,
    ERROR_CODES,
    PROTOCOL_VERSION,
    REQUEST_TYPES,
    ProtocolError,
    check_request,
    load_schema,
    schema_names,
    schemas_dir,
    tokens_event,
)
from ._target import (
    KernelBridge,
    bridge_for,
    comm_manager_for,
    register_comm_target,
    unregister_comm_target,
)

__all__ = [
    "COMM_TARGET",
    "ERROR_CODES",
    "PROTOCOL_VERSION",
    "REQUEST_TYPES",
    "KernelBridge",
    "ProtocolError",
    "bridge_for",
    "check_request",
    "comm_manager_for",
    "handle_request",
    "load_schema",
    "register_comm_target",
    "schema_names",
    "schemas_dir",
    "tokens_event",
    "unregister_comm_target",
]
