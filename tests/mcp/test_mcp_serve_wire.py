"""``mcp serve`` and what a client really sends: a lone surrogate escape in the arguments is read
(the SDK's parser refused the line and the request was never answered), a request nested too deep
for any parser is answered at once with a JSON-RPC error under its id; resource pages out of range
are said as such. Raw lines over stdio (an SDK client cannot send them), and the official client."""

from __future__ import annotations

import json
import select
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from conftest import INITIALIZE_LINE, cli
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from jupyter_scratchpad import ScratchStore


def _answer(proc: subprocess.Popen[bytes], timeout_s: float = 30) -> dict[str, object]:
    """The next line with an id the server writes, within ``timeout_s``."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            line = proc.stdout.readline()
            assert line, "the server closed its stdout"
            msg = json.loads(line)
            if "id" in msg:
                return dict(msg)
    raise AssertionError(f"no answer within {timeout_s} s")


def test_lone_surrogates_are_read_and_a_too_deep_request_is_answered_at_once(
    tmp_path: Path, env: dict[str, str]
) -> None:
    cmd, argv = cli("mcp", "serve", "--ephemeral")
    with (tmp_path / "stderr.txt").open("wb") as errlog:
        proc = subprocess.Popen([cmd, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=env)
        assert proc.stdin is not None
        try:

            def send(line: bytes) -> None:
                assert proc.stdin is not None
                proc.stdin.write(line + b"\n")
                proc.stdin.flush()

            send(INITIALIZE_LINE.strip().encode())
            assert _answer(proc)["id"] == 1
            send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            # JavaScript's JSON.stringify of a string cut inside an emoji: a lone surrogate escape
            write = b'{"name":"scratch_write","arguments":{"key":"plan","value":"half an emoji: \\ud83d"}}'
            send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":%s}' % write)
            saved = _answer(proc)  # (was: never answered)
            assert saved["id"] == 2 and not saved["result"]["isError"], saved  # type: ignore[index]
            read = {"name": "scratch_read", "arguments": {"key": "plan"}}
            send(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":%s}' % json.dumps(read).encode())
            back = _answer(proc)
            assert "half an emoji: \\ud83d" in back["result"]["content"][0]["text"], back  # type: ignore[index]
            deep = b"[" * 100_000 + b"]" * 100_000
            started = time.monotonic()
            send(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"scratch_write",'
                 b'"arguments":{"key":"deep","value":' + deep + b"}}}")  # fmt: skip
            refused = _answer(proc)
            assert refused["id"] == 4 and time.monotonic() - started < 20
            error = refused["error"]
            assert isinstance(error, dict) and error["code"] == -32700 and "nested deeper" in error["message"]
            send(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"scratch_list","arguments":{}}}')
            assert _answer(proc)["id"] == 5  # still serving
            # an unreadable request whose id holds a lone surrogate: its error was written under
            # the raw character, which the writer cannot encode, and the server exited
            send(b'{"jsonrpc":"2.0","id":"b\\ud800","method":"tools/call","params":"x" ' + b"[" * 100_000 + b"}")
            bad = _answer(proc)
            assert bad["id"] == "b\\ud800" and bad["error"]["code"] == -32700, bad  # type: ignore[index]
            send(b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"scratch_list","arguments":{}}}')
            assert _answer(proc)["id"] == 6  # still serving
            # a JSON-RPC batch (MCP dropped them): it was dropped in silence, its caller waiting for ever;
            # each request in it is answered with an error now
            send(b'[{"jsonrpc":"2.0","id":7,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"},'
                 b'{"jsonrpc":"2.0","id":"eight","method":"ping"}]')  # fmt: skip
            first, second = _answer(proc), _answer(proc)
            assert [first["id"], second["id"]] == [7, "eight"]
            for answer in (first, second):
                error = answer["error"]
                assert isinstance(error, dict) and error["code"] == -32600 and "own line" in error["message"]
            send(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"scratch_list","arguments":{}}}')
            assert _answer(proc)["id"] == 9  # still serving
        finally:
            proc.stdin.close()
            proc.wait(30)
            if proc.stdout is not None:
                proc.stdout.close()
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


@pytest.mark.parametrize(
    ("page", "said"),
    [("999999999999", "page 999999999999 is past the end (1 page of 16 KiB"), ("-1", "page must be ≥ 1"),
     ("0", "page must be ≥ 1")],
)  # fmt: skip
def test_a_page_out_of_range_is_said_as_such(tmp_path: Path, env: dict[str, str], page: str, said: str) -> None:
    with ScratchStore(tmp_path / "store") as store:
        handle = store.scratchpad("r1", "main").spill({"items": list(range(100))}, tool="small").handle
    cmd, argv = cli("mcp", "serve", "--store", str(tmp_path / "store"), "--run-id", "r1")

    async def run() -> None:
        async with stdio_client(StdioServerParameters(command=cmd, args=argv, env=env)) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                with pytest.raises(MCPError) as caught:  # (was: "not a scratchpad resource")
                    await s.read_resource(f"scratchpad://{handle}?page={page}")
                assert said in str(caught.value) and "not a scratchpad resource" not in str(caught.value)
                first = await s.read_resource(f"scratchpad://{handle}?page=1")
                assert '"items"' in first.contents[0].text  # type: ignore[union-attr]

    anyio.run(run)
