"""Auto-spill at ipykernel's publishing level: what an in-process kernel sends on iopub.

The front end (and the notebook file) receive exactly these messages, so each test asserts that
the message carries the stub and not the payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from ipykernel.inprocess.manager import InProcessKernelManager
from ipython_helpers import clear_shell

from jupyter_scratchpad.ipython import STUB_MIME, get_session


class Kernel:
    """An in-process ipykernel and a client: ``run(code)`` returns the cell's iopub messages."""

    def __init__(self) -> None:
        self.manager = InProcessKernelManager()
        self.manager.start_kernel()
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready()

    @property
    def shell(self) -> Any:
        return self.manager.kernel.shell

    @property
    def session(self) -> Any:
        return get_session(self.shell)

    def run(self, code: str, ok: bool = True) -> list[dict[str, Any]]:
        msg_id = self.client.execute(code)
        reply = self.client.get_shell_msg(timeout=10)
        self.last_reply = reply
        messages = []
        while True:
            msg = self.client.get_iopub_msg(timeout=10)
            if msg["msg_type"] == "status":
                if msg["parent_header"].get("msg_id") == msg_id and msg["content"]["execution_state"] == "idle":
                    break
                continue
            if msg["msg_type"] != "execute_input":
                messages.append(msg)
        assert reply["content"]["status"] == ("ok" if ok else "error"), reply["content"]
        return messages

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel()


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    clear_shell()
    k = Kernel()
    messages = k.run("%load_ext jupyter_scratchpad")
    assert [m["msg_type"] for m in messages] == ["stream"]
    yield k
    k.run("%unload_ext jupyter_scratchpad")
    k.close()
    clear_shell()


@pytest.fixture
def fresh(kernel: Kernel) -> Kernel:
    """The kernel with auto-spill on and an empty scratchpad."""
    kernel.session.auto_spill = True
    for entry in kernel.session.pad.entries():
        kernel.session.store.delete_entry(kernel.session.pad.scope, entry["kind"], entry["handle"] or entry["key"])
    return kernel


def wire(messages: list[dict[str, Any]]) -> str:
    """Everything that crossed iopub, as one string."""
    return json.dumps([m["content"] for m in messages])


def of_type(messages: list[dict[str, Any]], *types: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["msg_type"] in types]


def test_the_result_message_carries_the_stub(fresh: Kernel) -> None:
    messages = fresh.run("{'pods': [{'name': f'pod-{i}', 'phase': 'Running'} for i in range(4000)]}")
    [result] = of_type(messages, "execute_result")
    data = result["content"]["data"]
    assert set(data) == {"text/plain", "text/html", STUB_MIME}
    stub = data[STUB_MIME]
    assert stub["format"] == "json" and stub["tokens"] >= 5120 and stub["source_tool"] == "cell_2"
    assert "pod-2000" not in wire(messages) and len(wire(messages)) < 12_000
    assert fresh.shell.user_ns["_"]["pods"][3999]["name"] == "pod-3999"  # the object stays in the kernel
    assert fresh.session.pad.get(stub["handle"])["pods"][3999] == {"name": "pod-3999", "phase": "Running"}


@pytest.mark.parametrize(("code", "fmt"), [
    ("display(JSON({'rows': list(range(20000))}))", "json"),
    ("display(HTML('<tr><td>cell</td></tr>' * 20000))", "text"),
    ("display({'text/plain': 'row 9999\\n' * 9000}, raw=True)", "text"),
])
def test_display_messages_carry_the_stub(fresh: Kernel, code: str, fmt: str) -> None:
    messages = fresh.run(f"from IPython.display import display, JSON, HTML\n{code}")
    [display] = of_type(messages, "display_data")
    stub = display["content"]["data"][STUB_MIME]
    assert stub["format"] == fmt and stub["source_tool"].endswith("_display")
    assert len(wire(messages)) < 12_000


def test_stream_messages_stop_at_the_threshold_and_a_stub_follows(fresh: Kernel) -> None:
    code = "print('start')\nfor i in range(20000):\n    print(f'log line {i} of the job')\nprint('end')"
    messages = fresh.run(code)
    streamed = "".join(m["content"]["text"] for m in of_type(messages, "stream"))
    assert streamed.startswith("start\n") and "log line 19999" not in streamed and "end" not in streamed
    last = messages[-1]
    assert last["msg_type"] == "display_data"
    stub = last["content"]["data"][STUB_MIME]
    assert stub["source_tool"].endswith("_stdout")
    stored = fresh.session.pad.get(stub["handle"])
    assert stored.startswith(streamed) and stored.endswith("log line 19999 of the job\nend\n")
    assert len(wire(messages)) < 40_000


def test_stderr_messages_too(fresh: Kernel) -> None:
    messages = fresh.run("import sys\nsys.stderr.write('warning: disk almost full\\n' * 5000)")
    assert not of_type(messages, "stream")
    [stub_msg] = of_type(messages, "display_data")
    assert stub_msg["content"]["data"][STUB_MIME]["source_tool"].endswith("_stderr")


def test_small_outputs_cross_unchanged(fresh: Kernel) -> None:
    messages = fresh.run("from IPython.display import display\nprint('hello')\ndisplay({'a': 1}, raw=True)\n6 * 7")
    assert [m["msg_type"] for m in messages] == ["stream", "display_data", "execute_result"]
    assert messages[0]["content"]["text"] == "hello\n"
    assert messages[1]["content"]["data"] == {"a": 1}
    assert messages[2]["content"]["data"] == {"text/plain": "42"}
    assert fresh.session.pad.entries() == []


def test_auto_off_in_the_kernel(fresh: Kernel) -> None:
    fresh.run("%scratch auto off")
    messages = fresh.run("'word ' * 20000 + 'THE END'")
    assert "THE END" in wire(messages) and fresh.session.pad.entries() == []


def test_explorations_cross_in_full(fresh: Kernel) -> None:
    messages = fresh.run("big = {'rows': [{'id': i} for i in range(5000)]}\nbig")
    handle = of_type(messages, "execute_result")[0]["content"]["data"][STUB_MIME]["handle"]
    messages = fresh.run(f"%scratch iter {handle} rows --fields id --limit 400")
    [result] = of_type(messages, "execute_result")
    data = result["content"]["data"]
    assert STUB_MIME not in data and '[399,399]' in data["text/plain"]
    assert "<td>399</td>" in data["text/html"] and len(fresh.session.pad.entries()) == 1


def test_the_comm_target_is_registered_in_the_kernel(kernel: Kernel) -> None:
    from jupyter_scratchpad.comm import COMM_TARGET

    assert COMM_TARGET in kernel.manager.kernel.comm_manager.targets


def test_an_error_with_a_huge_message_is_bounded(fresh: Kernel) -> None:
    # raise ValueError(2 MB) sent the 2 MB to the notebook twice (traceback and evalue)
    messages = fresh.run("raise ValueError('HEAD' + 'z' * 2_000_000 + 'TAIL')", ok=False)
    [error] = of_type(messages, "error")
    content = error["content"]
    assert content["ename"] == "ValueError"
    assert len(json.dumps(content)) < 20_000
    reply = fresh.last_reply["content"]  # its evalue was str(the exception): 2 MB (nbclient quotes it)
    assert reply["ename"] == "ValueError" and len(json.dumps(reply)) < 30_000
    assert reply["evalue"].startswith("HEAD") and "TAIL (the whole exception is sys.last_value)" in reply["evalue"]
    shown = "\n".join(content["traceback"])
    assert "HEAD" in shown and "TAIL" in shown and "bytes of this error cut" in shown and "sys.last_value" in shown
    assert content["evalue"].startswith("HEAD") and content["evalue"].endswith("TAIL")
    assert fresh.run("import sys; len(str(sys.last_value))") and fresh.shell.user_ns["_"] == 2_000_008
    small = fresh.run("raise KeyError('short')", ok=False)
    [error] = of_type(small, "error")
    assert error["content"]["evalue"] == "'short'" and "cut" not in "\n".join(error["content"]["traceback"])


def test_an_exception_with_a_huge_class_name_is_bounded(fresh: Kernel) -> None:
    # the traceback and evalue were bounded, the ename was not: 1 MB in the error and in the reply
    messages = fresh.run("E = type('E' * 1_000_000, (Exception,), {})\nraise E('m')", ok=False)
    [error] = of_type(messages, "error")
    reply = fresh.last_reply["content"]
    for content in (error["content"], reply):
        assert len(json.dumps(content)) < 20_000, len(json.dumps(content))
        assert content["ename"].startswith("EEEE") and "1,000,000-character name" in content["ename"]
        assert content["evalue"] == "m"
    assert fresh.run("import sys\ntype(sys.last_value).__name__ == 'E' * 1_000_000") and fresh.shell.user_ns["_"] is True


def test_a_failing_cells_output_comes_before_its_error(fresh: Kernel) -> None:
    # the stub of what the cell printed came after the traceback (it was spilled at the cell's end)
    code = "print('\\n'.join(f'line {i} of the service log' for i in range(100_000)))\nraise ValueError('boom')"
    messages = fresh.run(code, ok=False)
    kinds = [m["msg_type"] for m in messages]
    stub_at = next(i for i, m in enumerate(messages) if STUB_MIME in m["content"].get("data", {}))
    assert stub_at < kinds.index("error"), kinds
    assert len(fresh.session.pad.entries("handle")) == 1 and fresh.run("print('after')")  # the kernel goes on


def test_a_persons_huge_read_is_shown_bounded_and_kept_whole(fresh: Kernel) -> None:
    # %scratch head H -n 300000 sent 16 MB (text and HTML) to the front end: a frozen tab
    fresh.run("log = '\\n'.join(f'line {i} of the service log' for i in range(300_000))\nlog")
    handle = fresh.session.pad.entries("handle")[0]["handle"]
    messages = fresh.run(f"r = %scratch head {handle} -n 300000\nr")
    [result] = of_type(messages, "execute_result")
    data = result["content"]["data"]
    # and once: the same text again as HTML made it ~2 MB in the browser and the notebook file
    assert len(data["text/plain"]) < 1_100_000 and "text/html" not in data
    assert "line 0 of the service log" in data["text/plain"] and "line 299999 of" in data["text/plain"]
    assert "characters not shown here; the whole result is this cell's value" in data["text/plain"]
    assert len(fresh.shell.user_ns["r"].text) > 8_000_000  # the value stays whole
    short = of_type(fresh.run(f"%scratch head {handle} -n 3"), "execute_result")[0]["content"]["data"]
    assert short["text/html"].startswith("<pre")  # a short read keeps its HTML
