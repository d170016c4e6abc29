"""The proxy in front of a streamable-HTTP upstream (``--url``), as in front of a stdio one: a
multi-MB result is spilled (the SDK's 1 MiB SSE event default lost it), one past the proxy's bound
fails closed, and an upstream that goes away answers each later call with a short tool error
while our tools and stored handles keep working (it took the whole proxy down). Real servers, the
official client; every process started here is stopped by its PID."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from conftest import INITIALIZE_LINE, cli, free_port, wait_for_port
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

WEB = Path(__file__).parent / "servers" / "web_server.py"


@contextmanager
def running(argv: list[str], env: dict[str, str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    """A server process listening on ``port``, stopped (by its PID) at the end."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(proc, port)
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()


def web(env: dict[str, str], port: int) -> list[str]:
    return [sys.executable, str(WEB), str(port)]


def proxy(env: dict[str, str], store: Path, port: int, *args: str) -> StdioServerParameters:
    cmd, argv = cli("mcp", "proxy", "--store", str(store), "--run-id", "r", *args, "--name", "web",
                    "--url", f"http://127.0.0.1:{port}/mcp")  # fmt: skip
    return StdioServerParameters(command=cmd, args=argv, env=env)


def handle_of(stub: str) -> str:
    return stub.split('handle "')[1].split('"')[0]


def test_a_multi_mb_http_result_is_spilled_and_one_past_the_bound_fails_closed(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # a result over ~500 KB of text came back as "SSE stream failed: Server-sent event exceeded the
    # 1048576 byte limit": lost, not spilled
    port = free_port()
    errlog = tmp_path / "stderr.txt"
    with running(web(env, port), env, port):

        async def run() -> None:
            with errlog.open("w") as err:
                async with stdio_client(proxy(env, tmp_path / "store", port), errlog=err) as (r, w), \
                        ClientSession(r, w) as s:  # fmt: skip
                    await s.initialize()
                    res = await s.call_tool("big", {"mb": 3})  # 3.2 MB of text, more as an SSE event
                    assert not res.is_error, res.content[0]
                    stub = res.content[0]
                    assert isinstance(stub, types.TextContent) and stub.text.startswith("[scratchpad]"), stub
                    assert len(stub.text) < 4000
                    handle = handle_of(stub.text)
                    q = await s.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle}.rows"})
                    assert q.structured_content == {"rows": [{"n": 51_000}]}, q
                    found = await s.call_tool("grep", {"handle": handle, "pattern": "request 50999 served"})
                    assert not found.is_error and "request 50999 served" in found.content[0].text, found
                    # past the proxy's bound for one upstream message: a short tool error, at once
                    started = time.monotonic()
                    over = await s.call_tool("big", {"mb": 70})  # about 78 MB
                    assert over.is_error and len(over.content[0].text) < 600, over.content[0]
                    said = over.content[0].text
                    assert "upstream server 'web'" in said and "over the proxy's bound" in said, said
                    assert "67,108,864 bytes" in said and "Ask for less" in said
                    assert time.monotonic() - started < 60
                    assert (await s.call_tool("small", {})).content[0].text == "just this"  # the session goes on

        anyio.run(run)
    assert "Traceback" not in errlog.read_text(), errlog.read_text()


def _unreachable(text: str) -> None:
    assert "upstream server 'api' is unreachable" in text and "restart the proxy" in text, text
    assert "scratchpad's tools and stored handles still work" in text and len(text) < 1000, text


@pytest.mark.parametrize("when", ["after_a_call", "before_any_call"])
def test_an_http_upstream_that_goes_away_answers_with_a_short_error_and_the_proxy_lives(
    tmp_path: Path, env: dict[str, str], when: str
) -> None:
    # the call ignored --upstream-timeout (one hung 11 minutes), then the proxy died with an
    # ExceptionGroup traceback (httpx2.ConnectError), and even our own tools got "Connection closed"
    port = free_port()
    cmd, argv = cli("mcp", "serve", "--ephemeral", "--http", f"127.0.0.1:{port}")
    errlog = tmp_path / "stderr.txt"
    upstream = subprocess.Popen([cmd, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(upstream, port)
        pcmd, pargv = cli("mcp", "proxy", "--store", str(tmp_path / "store"), "--run-id", "r",
                          "--upstream-timeout", "5", "--name", "api", "--url", f"http://127.0.0.1:{port}/mcp")  # fmt: skip
        params = StdioServerParameters(command=pcmd, args=pargv, env=env)

        async def run() -> None:
            with errlog.open("w") as err:
                async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
                    await s.initialize()
                    if when == "after_a_call":
                        first = await s.call_tool("api__scratch_list", {})
                        assert not first.is_error, first
                    stop(upstream)
                    for _ in range(2):  # this call and the next
                        started = time.monotonic()
                        with anyio.fail_after(30):  # (it hung for minutes)
                            res = await s.call_tool("api__scratch_list", {})
                        assert time.monotonic() - started < 5, time.monotonic() - started
                        assert res.is_error, res
                        _unreachable(res.content[0].text)
                    ours = await s.call_tool("scratch_list", {})
                    assert not ours.is_error, ours

        anyio.run(run)
    finally:
        stop(upstream)
    said = errlog.read_text()
    assert "Traceback" not in said and "ExceptionGroup" not in said, said
    assert len([line for line in said.splitlines() if "unreachable" in line]) <= 1, said


def test_a_gone_http_upstreams_resources_and_prompts_say_so_and_our_handles_still_work(
    tmp_path: Path, env: dict[str, str]
) -> None:
    port = free_port()
    errlog = tmp_path / "stderr.txt"
    upstream = subprocess.Popen(web(env, port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(upstream, port)

        async def run() -> None:
            with errlog.open("w") as err:
                async with stdio_client(proxy(env, tmp_path / "store", port, "--upstream-timeout", "5"),
                                        errlog=err) as (r, w), ClientSession(r, w) as s:  # fmt: skip
                    await s.initialize()
                    res = await s.call_tool("big", {"mb": 0.3})  # (small enough for the SDK's default bound too)
                    handle = handle_of(res.content[0].text)
                    assert (await s.read_resource("web://note")).contents[0].text == "a note"
                    stop(upstream)
                    started = time.monotonic()
                    with anyio.fail_after(30):
                        gone = await s.call_tool("small", {})
                    assert gone.is_error and "upstream server 'web' is unreachable" in gone.content[0].text, gone
                    with pytest.raises(MCPError) as read:
                        await s.read_resource("web://note")
                    assert "upstream server 'web' is unreachable" in read.value.message, read.value.message
                    with pytest.raises(MCPError) as prompt:
                        await s.get_prompt("greet")
                    assert "upstream server 'web' is unreachable" in prompt.value.message, prompt.value.message
                    assert time.monotonic() - started < 5
                    q = await s.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle}.rows"})
                    assert q.structured_content == {"rows": [{"n": 5_100}]}, q  # the stored handle still works

        anyio.run(run)
    finally:
        stop(upstream)
    assert "Traceback" not in errlog.read_text(), errlog.read_text()


def test_a_proxy_whose_http_upstream_went_away_stops_cleanly_on_sigterm(tmp_path: Path, env: dict[str, str]) -> None:
    port = free_port()
    upstream = subprocess.Popen(web(env, port), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc = None
    try:
        wait_for_port(upstream, port)
        cmd, argv = cli("mcp", "proxy", "--ephemeral", "--upstream-timeout", "5", "--name", "web",
                        "--url", f"http://127.0.0.1:{port}/mcp")  # fmt: skip
        proc = subprocess.Popen([cmd, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, text=True)  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INITIALIZE_LINE)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        proc.stdin.flush()
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        assert json.loads(lines.get(timeout=30))["id"] == 1
        stop(upstream)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "small", "arguments": {}}}
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        answer = json.loads(lines.get(timeout=30))  # (the proxy died, or its answer never came)
        assert answer["id"] == 2 and answer["result"]["isError"] is True, answer
        assert "upstream server 'web' is unreachable" in answer["result"]["content"][0]["text"], answer
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        err = proc.stderr.read() if proc.stderr is not None else ""
        assert proc.returncode == 143, (proc.returncode, err)
        assert "Traceback" not in err and "ExceptionGroup" not in err, err
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        stop(upstream)
