"""The TypeScript tests read real kernel messages: this test makes them and keeps them current.

``labextension/tests/fixtures/messages.json`` holds one request and reply of each type and a
displayed stub, produced here by the real handlers on a pad with a fixed clock. When a message
changes shape, this test fails; ``SCRATCHPAD_UPDATE_FIXTURES=1`` rewrites the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from comm_helpers import check, pods

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.comm import PROTOCOL_VERSION, handle_request, tokens_event

FIXTURE = Path(__file__).parents[2] / "labextension" / "tests" / "fixtures" / "messages.json"


def make_messages(store: ScratchStore, clock: Any) -> dict[str, Any]:
    pad = store.scratchpad(run_id="notebook", agent_id="kernel", model="gpt-4o")
    spilled = pad.intercept(pods(800), tool="k8s_list_pods")
    assert spilled.stub is not None
    pad.scratch_write("plan", {"next": "count pending pods"}, ttl_s=1800)
    clock.advance(120)
    h = spilled.stub["handle"]
    requests = {
        "hello": {},
        "list": {},
        "budget": {},
        "stub": {"handle": h},
        "extend": {"handle": h, "ttl_s": 7200},
        "delete": {"key": "plan"},
        "explore": {"handle": h},
        "explorer": {"model_id": "0123456789abcdef0123456789abcdef"},
    }
    messages: dict[str, Any] = {"protocol": PROTOCOL_VERSION, "stub": spilled.stub}
    for i, (kind, args) in enumerate(requests.items()):
        request = {"protocol": PROTOCOL_VERSION, "id": f"r{i + 1}", "type": kind, **args}
        messages[f"{kind}_request"] = request
        messages[f"{kind}_reply"] = handle_request(pad, request)
    from jupyter_scratchpad.widgets import live_explorer

    opened = live_explorer(messages["explore_reply"]["result"]["model_id"])
    assert opened is not None
    opened.close()
    bad = {"protocol": PROTOCOL_VERSION, "id": "r99", "type": "stub", "handle": "gone_000000000000"}
    messages["error_reply"] = handle_request(pad, bad)
    messages["tokens_event"] = tokens_event(h, pad.stub(h)["tokens"])
    result: dict[str, Any] = json.loads(json.dumps(messages))
    return result


def test_fixture_messages_match_the_kernel(tmp_path: Path, clock: Any) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None, clock=clock) as store:
        messages = make_messages(store, clock)
    for name, message in messages.items():
        if name != "protocol":
            check(name, message)
    if os.environ.get("SCRATCHPAD_UPDATE_FIXTURES") == "1":
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(json.dumps(messages, indent=2) + "\n", encoding="utf-8")
    assert FIXTURE.is_file(), "run with SCRATCHPAD_UPDATE_FIXTURES=1 to create the fixture"
    committed = json.loads(FIXTURE.read_text(encoding="utf-8"))
    # Same messages, same keys and types throughout; values such as the budget's starting tokens
    # (the size of the tool specs) or the preview's wording belong to other modules.
    assert shape(committed) == shape(messages), (
        "the kernel's messages changed shape: rerun with SCRATCHPAD_UPDATE_FIXTURES=1 and check the TS tests"
    )
    for name, message in messages.items():
        if isinstance(message, dict) and "ok" in message:
            envelope = {k: message[k] for k in ("protocol", "id", "type", "ok")}
            assert envelope == {k: committed[name][k] for k in envelope}, name
    assert committed["stub"]["handle"] == messages["stub"]["handle"]


def shape(value: Any) -> Any:
    """The structure of a JSON value: keys and types, no values."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted({json.dumps(shape(v), sort_keys=True) for v in value})
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__
