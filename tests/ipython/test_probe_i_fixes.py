"""Probe I's findings 1, 5 and 7: the tail of C-level and subprocess output held with the rest of
the cell's stream, messages that name ``%scratch`` commands a notebook can run, and what an old
handle or an open explorer says after ``%unload_ext``/``%reload_ext``."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from ipython_helpers import loaded_kernel, pods

from jupyter_scratchpad.ipython import STUB_MIME, ScratchSession, _streams, get_session
from jupyter_scratchpad.ipython._args import suggestion_as_magic
from jupyter_scratchpad.ipython._streams import StreamGate, _Tap

WAIT_S = 10.0  # a bound on waiting for the forwarding thread


def usage_error(ip: Any, code: str) -> str:
    with pytest.raises(UsageError) as info:
        ip.run_cell(code)
    return str(info.value)


# -- 1. C-level and subprocess output: the whole stream is the cell's ------------------------------

SEQ = ("import subprocess, sys\n"
       "subprocess.run([sys.executable, '-c', 'import sys; sys.stdout.write(\"\".join(f\"{i}\\\\n\" for i in "
       "range(1, 100001)))'])\nNone")
OS_WRITE = "import os\nos.write(1, b'osline\\n' * 50000)\nNone"


@pytest.mark.parametrize(("code", "lines", "last"), [(SEQ, 100_000, "100000"), (OS_WRITE, 50_000, "osline")])
def test_fd_output_is_held_whole_and_nothing_comes_after_its_card_in_a_real_kernel(
    tmp_path: Path, code: str, lines: int, last: str
) -> None:
    # subprocess.run(['seq', '1', '100000']): 7,033 lines reached the notebook, 5,011 of them after
    # the card, and the store held 94,989 lines ending on a cut one ('94')
    with loaded_kernel(tmp_path) as k:
        messages = [m for m in k.messages(code) if m["msg_type"] in ("stream", "display_data", "execute_result")]
        cards = [i for i, m in enumerate(messages) if m["msg_type"] == "display_data"
                 and STUB_MIME in m["content"]["data"]]
        assert len(cards) == 1 and cards[0] == len(messages) - 1, [m["msg_type"] for m in messages]
        shown = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
        assert shown.endswith("\n"), shown[-40:]  # the line shown last is whole
        card = messages[-1]["content"]["data"]
        n = shown.count("\n")
        assert f"held after the {n:,} lines of it shown above" in card["text/plain"], (n, card["text/plain"][-300:])
        handle = card[STUB_MIME]["handle"]
        digest = hashlib.sha256(shown.encode()).hexdigest()
        said = k.run(
            f"import hashlib\nr = %scratch get {handle}\n"
            f"print(repr((len(r.splitlines()), r.splitlines()[-1], "
            f"hashlib.sha256(r[:{len(shown)}].encode()).hexdigest())))"
        )
        assert said == repr((lines, last, digest)) + "\n", said


class _Forwarder:
    """ipykernel's fd forwarding, small: a pipe whose reader thread writes what it reads through the
    stream's ``write`` in pieces of ``piece`` bytes (a marker comes cut in two)."""

    def __init__(self, piece: int) -> None:
        self.received: list[str] = []
        self._fid, self._original_stdstream_fd = os.pipe()
        self._should_watch = True
        self.piece = piece
        self.go = threading.Event()  # (reading starts once the test has written: the pipe holds it)
        self.watch_fd_thread = threading.Thread(target=self._watch, daemon=True)
        self.watch_fd_thread.start()

    def write(self, text: str) -> int:  # what the tap passes on: the front end
        self.received.append(text)
        return len(text)

    def _watch(self) -> None:
        self.go.wait(WAIT_S)
        while data := os.read(self._fid, self.piece):
            self.write(data.decode())

    def close(self) -> None:
        os.close(self._original_stdstream_fd)
        self.watch_fd_thread.join(WAIT_S)
        os.close(self._fid)


@pytest.mark.parametrize("piece", [1, 7, 1000])
def test_a_drain_passes_everything_written_to_the_fd_before_it_and_drops_its_marker(
    ip: Any, session: ScratchSession, piece: int
) -> None:
    stream = _Forwarder(piece)
    gate = StreamGate(session, "stdout")
    gate.begin("cell_1_stdout")
    tap = _Tap(stream, gate)
    assert tap.install()
    try:
        written = "".join(f"line {i}\n" for i in range(300))
        os.write(stream._original_stdstream_fd, written.encode())
        assert tap.start_drain()
        stream.go.set()
        tap.wait_drained(time.monotonic() + WAIT_S)
        assert "".join(gate._chunks) == written  # all of it through the gate, before the drain returned
        assert "".join(stream.received) == written  # (small: shown) and no trace of the marker
        assert tap._marker is None and not tap._carry
        os.write(stream._original_stdstream_fd, b"after\n")  # after the drain: passes as before
        deadline = time.monotonic() + WAIT_S
        while not "".join(stream.received).endswith("after\n") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "".join(stream.received) == written + "after\n"
    finally:
        tap.uninstall()
        gate.end()
        stream.close()
    assert set(_streams._drain_marker()) == {"\x06", "\x7f"}  # (a terminal shows neither; no NUL)


def test_a_drain_writes_no_marker_when_the_pipe_is_empty(ip: Any, session: ScratchSession) -> None:
    # a marker per cell reached the server's console (ipykernel echoes what it forwards): only a
    # cell whose fd output still waits in the pipe needs one
    stream = _Forwarder(1000)
    stream.go.set()
    gate = StreamGate(session, "stdout")
    gate.begin("cell_1_stdout")
    tap = _Tap(stream, gate)
    assert tap.install()
    try:
        assert not tap.start_drain() and tap._marker is None
        assert stream.received == []
    finally:
        tap.uninstall()
        gate.end()
        stream.close()


# -- 5. messages name %scratch commands that run -------------------------------------------------


def test_schema_names_scratch_commands_in_its_next_line_and_they_run(ip: Any, session: ScratchSession) -> None:
    # "next: item_schema(handle=…, path="$.items"); iterate_over(…)": a NameError when typed
    ip.run_cell("{'items': [{'id': i, 'status': 'ok'} for i in range(20000)]}")
    ip.run_cell("'\\n'.join(f'log line {i}' for i in range(20000))")
    json_h, text_h = [e["handle"] for e in session.pad.entries("handle")]
    text = ip.run_line_magic("scratch", f"schema {json_h}").text
    [nxt] = [line for line in text.splitlines() if line.startswith("next: ")]
    assert nxt == (f"next: %scratch items {json_h} $.items; "
                   f"%scratch iter {json_h} $.items --fields id,status --limit 20"), nxt
    text = ip.run_line_magic("scratch", f"schema {text_h}").text
    [nxt_text] = [line for line in text.splitlines() if line.startswith("next: ")]
    assert "(" not in nxt_text and f"%scratch head {text_h} -n 50" in nxt_text, nxt_text
    for line in (nxt, nxt_text):
        for command in line[len("next: "):].split("; "):
            ip.run_cell(command)  # each one runs as typed
    agent = ip.run_line_magic("scratch", f"schema {json_h} --as-agent").text
    assert f'item_schema(handle="{json_h}", path="$.items")' in agent  # as the model is shown it


def test_schema_takes_a_path_as_its_next_line_names_it(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("_v = {'a': {'b': {'c': {'d': {'e': {'f': [1]}}}}}, 'pad': [f'x {i}' for i in range(20000)]}\n_v")
    [h] = [e["handle"] for e in session.pad.entries("handle")]
    text = ip.run_line_magic("scratch", f"schema {h} $.a").text
    assert text.startswith(f"schema of {h} at $.a"), text
    assert f"next: %scratch schema {h} $.a.b.c.d.e --depth 4" in text, text
    assert "$.a.b.c.d.e.f" in ip.run_line_magic("scratch", f"schema {h} $.a.b.c.d.e --depth 4").text


def test_a_refused_write_names_the_flag_and_suggests_a_write_that_runs(ip: Any, session: ScratchSession) -> None:
    # "'ttl_s' must be … ; try: scratch_write(key="k", value="v")"
    said = usage_error(ip, "%scratch write --ttl -1 k v")
    assert "--ttl must be" in said and "ttl_s" not in said and "scratch_write" not in said, said
    command = said.split("try: ", 1)[1]
    assert command == "%scratch write k v", said
    ip.run_cell(command)
    assert ip.run_line_magic("scratch", "read k") == "v"


@pytest.mark.parametrize("value", ["v", "42", 42, "a #b", [1, 2], "{{x}}", "x\ny", {"a": 1}, " sp", "", "it's",
                                   'say "hi"', True, "null", "--ttl"])
def test_a_suggested_write_saves_the_same_value(ip: Any, value: Any) -> None:
    command = suggestion_as_magic({"tool": "scratch_write", "arguments": {"key": "my key", "value": value,
                                                                          "ttl_s": 60}})
    assert command.startswith('%scratch write --ttl 60 "my key" '), command
    ip.run_cell(command)
    got = ip.run_line_magic("scratch", 'read "my key"')
    assert got == value and type(got) is type(value), (command, got)
    long = suggestion_as_magic({"tool": "scratch_write", "arguments": {"key": "k", "value": "z" * 500}})
    assert long == "%%scratch write k (the cell is the value)"


def test_a_mistyped_flag_of_the_cell_form_is_named(ip: Any) -> None:
    # "(a value that starts with '-' goes after --: %%scratch H -- -x)": that is no %%scratch form
    said = usage_error(ip, "%%scratch --frce\nprint(1)")
    assert "did you mean --force?" in said and "H -- -x" not in said, said
    said = usage_error(ip, "%%scratch -x\nprint(1)")
    assert "goes after --" not in said, said  # (the cell form takes no value)
    said = usage_error(ip, "%scratch list --knd note")
    assert "did you mean --kind?" in said, said
    said = usage_error(ip, "%scratch slice h 1 --ed 5")
    assert "goes after --: %scratch slice H START -- -x" in said, said


# -- 7. after %unload_ext / %reload_ext ----------------------------------------------------------


def test_an_old_handle_after_reload_ext_says_what_happened(ip: Any) -> None:
    ip.user_ns["pods"] = pods
    ip.run_cell("pods()")
    session = get_session(ip)
    assert session is not None
    [h] = [e["handle"] for e in session.pad.entries("handle")]
    ip.run_line_magic("reload_ext", "jupyter_scratchpad")
    said = usage_error(ip, f"%scratch head {h}")
    assert "kernel restarted" not in said, said  # (no restart happened)
    assert f"{h!r} was spilled before jupyter_scratchpad was unloaded in this kernel" in said, said
    assert "%reload_ext" in said and "store_path" in said, said


def test_an_open_explorer_after_reload_and_unload_names_notebook_commands(ip: Any) -> None:
    from jupyter_scratchpad.widgets import Explorer

    ip.user_ns["pods"] = pods
    ip.run_cell("pods()")
    session = get_session(ip)
    assert session is not None
    explorer = Explorer(session.pad)
    try:
        ip.run_line_magic("reload_ext", "jupyter_scratchpad")
        reply = explorer.handle_request({"type": "request", "id": 1, "action": "preview", "args": {}})
        message = reply["error"]["message"]
        assert not reply["ok"] and "ScratchStore" not in message, reply  # ("open a new ScratchStore")
        assert "reloaded" in message and "run %scratch explore" in message, message
        summary = explorer._repr_mimebundle_()[0]["text/plain"]
        assert "ScratchStore" not in summary and "%scratch explore" in summary, summary
        ip.run_line_magic("unload_ext", "jupyter_scratchpad")
        reply = explorer.handle_request({"type": "request", "id": 2, "action": "sql", "args": {"query": "SELECT 1"}})
        message = reply["error"]["message"]
        assert re.search(r"closed by %unload_ext jupyter_scratchpad: run %load_ext jupyter_scratchpad, then "
                         r"%scratch explore", message), message
    finally:
        explorer.close()
