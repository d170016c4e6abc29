"""What an upstream can do to the proxy and what the client gets: a silent upstream is given up
(and told), progress keeps a slow one alive, every page of a listing is listed under names that
reach every tool, an error's attachments are bounded, an upstream's protocol errors are bounded,
and an HTTP upstream nobody answers at is one line. Real servers, the official client."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from conftest import INITIALIZE_LINE, cli, filesystem_server, free_port
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from test_mcp_proxy_blocks import MIXED, proxy_params, through_mixed

PAGED = Path(__file__).parent / "servers" / "paged_server.py"
OURS = {"head", "tail", "slice", "grep", "schema", "item_schema", "get_in", "iterate_over", "read", "read_handle",
        "sql", "scratch_write", "scratch_read", "scratch_list", "scratch_delete", "scratchpad_usage"}  # fmt: skip


def test_a_silent_upstream_is_given_up_and_told_and_progress_keeps_one_alive(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # the proxy waited forever: a tool that never answers held the client's call until the client gave up
    params = proxy_params(env, tmp_path / "store", "--upstream-timeout", "2", "--name", "mixed", "--",
                          sys.executable, str(MIXED))  # fmt: skip
    marker = tmp_path / "marker"

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            started = time.monotonic()
            with anyio.fail_after(30):
                res = await s.call_tool("wait_for_cancel", {"marker": str(marker)})
            took = time.monotonic() - started
            text = res.content[0].text
            assert res.is_error and "did not answer 'wait_for_cancel' within 2 s" in text, text
            assert "--upstream-timeout" in text and len(text) < 600
            assert 1.5 < took < 20, took
            with anyio.fail_after(20):  # the upstream was told: its handler saw the cancellation
                while marker.read_text() != "cancelled":
                    await anyio.sleep(0.05)
            # progress every second for 4 s: longer than the timeout, alive all along, so answered
            slow = await s.call_tool("slow_count", {"steps": 4, "interval": 1.0})
            assert not slow.is_error and slow.content[0].text == "counted to 4"
            small = await s.call_tool("small", {})
            assert small.content[0].text == "just this"

    anyio.run(run)


def test_a_bad_upstream_timeout_is_a_usage_error(tmp_path: Path, env: dict[str, str]) -> None:
    cmd, argv = cli("mcp", "proxy", "--ephemeral", "--upstream-timeout", "-1", "--", sys.executable, str(MIXED))
    out = subprocess.run([cmd, *argv], input="", env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--upstream-timeout takes seconds" in out.stderr, out.stderr
    bad = tmp_path / "servers.toml"
    bad.write_text(f'[mcp.servers.m]\ncommand = "{sys.executable}"\nargs = ["{MIXED}"]\ntimeout_s = "soon"\n')
    cmd, argv = cli("mcp", "proxy", "--ephemeral", "--config", str(bad))
    out = subprocess.run([cmd, *argv], input="", env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "[mcp.servers.m] timeout_s takes seconds" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_every_page_is_listed_and_every_tool_is_reachable(tmp_path: Path, env: dict[str, str]) -> None:
    # only the first page of tools (5 of 23), prompts and resources was listed; the upstream's
    # `grep` renamed to `paged__grep` was listed twice beside its literal `paged__grep`, which won
    params = proxy_params(env, tmp_path / "store", "--name", "paged", "--", sys.executable, str(PAGED))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
            upstream = [n for n in names if n not in OURS]
            assert len(upstream) == 23 and {f"tool_{i:02d}" for i in range(21)} <= set(upstream)
            assert "grep" in names  # ours keeps its name
            reached = set()
            for name in upstream:
                res = await s.call_tool(name, {})
                assert not res.is_error, res
                reached.add(res.content[0].text)
            assert reached == {f"this is {n}" for n in [f"tool_{i:02d}" for i in range(21)] + ["grep", "paged__grep"]}
            prompts = [p.name for p in (await s.list_prompts()).prompts]
            assert sorted(prompts) == ["broken", "p0", "p1", "p2", "p3", "p4", "p5"]
            got = await s.get_prompt("p5")
            assert got.messages[0].content.text == "prompt p5"
            uris = [str(x.uri) for x in (await s.list_resources()).resources]
            assert [u for u in uris if u.startswith("paged://")] == [f"paged://r{i}" for i in range(6)] + ["paged://log"]
            read = await s.read_resource("paged://r5")
            assert read.contents[0].text == "contents of paged://r5"  # small: unchanged
            # a 2.6 MB log read as a resource reached the client whole: its stub now, read back by our tools
            log = await s.read_resource("paged://log")
            stub = log.contents[0].text
            assert stub.startswith("[scratchpad] resources/read") and len(log.model_dump_json()) < 4000, stub[:300]
            handle = stub.split('handle "')[1].split('"')[0]
            found = await s.call_tool("grep", {"handle": handle, "pattern": "request 59999 served"})
            assert not found.is_error and "request 59999 served in" in found.content[0].text

    anyio.run(run)


def test_a_uri_of_an_upstreams_resource_template_is_read_from_that_upstream(tmp_path: Path, env: dict[str, str]) -> None:
    # resource templates were not listed, and with two upstreams a URI no resource listing named
    # (paged://item/42, of paged's template paged://item/{id}) was "unknown": clients read them
    config = tmp_path / "servers.toml"
    config.write_text(
        f'[mcp.servers.mixed]\ncommand = "{sys.executable}"\nargs = ["{MIXED}"]\n'
        f'[mcp.servers.paged]\ncommand = "{sys.executable}"\nargs = ["{PAGED}"]\n',
        encoding="utf-8",
    )
    params = proxy_params(env, tmp_path / "store", "--config", str(config))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            read = await s.read_resource("paged://item/42")  # before any listing
            assert read.contents[0].text == "item 42"
            templates = {t.uri_template: t for t in (await s.list_resource_templates()).resource_templates}
            assert set(templates) == {"paged://item/{id}", "scratchpad://{handle}{?page}"}
            with pytest.raises(MCPError) as unknown:
                await s.read_resource("nowhere://x")
            assert "no upstream listed it or has a template it fits" in unknown.value.message
            log = await s.read_resource("paged://log")  # a listed resource, before any listing too
            assert "request 59999 served" in log.contents[0].text
            with pytest.raises(MCPError) as ours:  # our template's URIs are ours
                await s.read_resource("scratchpad://nosuchhandle?page=2")
            assert "no live handle 'nosuchhandle'" in ours.value.message

    anyio.run(run)


def test_an_upstreams_protocol_errors_are_bounded(tmp_path: Path, env: dict[str, str]) -> None:
    # a resource read's 100,000-character error reached the client whole; an unknown prompt was a
    # ValueError with a traceback in the proxy's log
    params = proxy_params(env, tmp_path / "store", "--name", "paged", "--", sys.executable, str(PAGED))
    log = tmp_path / "proxy.err"

    async def run() -> None:
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                with pytest.raises(MCPError) as missing:
                    await s.read_resource("paged://nope")
                assert missing.value.code == types.INVALID_PARAMS
                assert missing.value.message.startswith("no such resource: zzz") and "cut" in missing.value.message
                assert len(missing.value.message.encode()) <= 8192
                with pytest.raises(MCPError) as broken:
                    await s.get_prompt("broken")
                assert broken.value.message.startswith("the prompt broke:") and len(broken.value.message) <= 8192
                with pytest.raises(MCPError) as unknown:
                    await s.get_prompt("nope")
                assert unknown.value.code == types.INVALID_PARAMS and "unknown prompt 'nope'" in unknown.value.message
                assert "p0" in unknown.value.message  # what there is

    anyio.run(run)
    assert "Traceback" not in log.read_text()


def test_an_errors_attachments_are_bounded(tmp_path: Path, env: dict[str, str]) -> None:
    # an error result's 1.7 MB embedded log and 1.4 MB image passed through whole (3.1 MB)
    async def check(s: ClientSession) -> None:
        res = await s.call_tool("explode_with_attachments", {})
        assert res.is_error and len(res.model_dump_json()) < 3 * 8192, len(res.model_dump_json())
        text = res.content[0].text
        assert text.startswith("the request failed; the log:\nlog line 0: request failed")
        assert "log line 59999: request failed" in text and "bytes of this error cut" in text
        assert "[the error's image block (" in text and "was left out]" in text
        assert [b.type for b in res.content] == ["text", "image"]  # the small icon fits, kept as it was
        assert "[the whole error (" in text and "is stored as handle" in text  # (its text, the cut middle too)
        usage = await s.call_tool("scratchpad_usage", {})
        assert usage.structured_content["spills"] == 1

    through_mixed(env, tmp_path / "store", check)


def test_an_http_upstream_nobody_answers_at_is_one_line(env: dict[str, str]) -> None:
    # 131 lines of exception groups, no line naming the upstream
    port = free_port()  # (nothing listens on it)
    cmd, argv = cli("mcp", "proxy", "--ephemeral", "--name", "api", "--url", f"http://127.0.0.1:{port}/mcp")
    out = subprocess.run([cmd, *argv], input=INITIALIZE_LINE, env=env, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    said = [line for line in out.stderr.splitlines() if "usage {" not in line]
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert len(said) == 1 and "upstream 'api' could not start" in said[0] and f":{port}/mcp" in said[0], said
    assert "ConnectError" in said[0]


def _start_with_stdin_open(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """The proxy as a client runs it: initialize sent, stdin kept open."""
    cmd, argv = cli("mcp", "proxy", "--ephemeral", *args)
    proc = subprocess.Popen([cmd, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True)  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write(INITIALIZE_LINE)
    proc.stdin.flush()
    return proc


def _exits_within(proc: subprocess.Popen[str], seconds: float) -> tuple[int, str]:
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the proxy was still running after {seconds:g} s") from None
    if proc.stdin is not None and proc.stdin.closed:
        proc.stdin = None
    out, err = proc.communicate()  # (closes the pipes)
    assert not out, err
    return proc.returncode, err


HANGS = (sys.executable, "-c", "import time; time.sleep(600)")  # a server that never answers initialize


def test_an_upstream_that_dies_at_start_stops_the_proxy_while_stdin_is_open(env: dict[str, str]) -> None:
    # the proxy said nothing and stayed alive until the client closed stdin

    proc = _start_with_stdin_open(env, "--name", "fs", "--", filesystem_server(), "/no/such/dir")
    code, err = _exits_within(proc, 30)
    said = [line for line in err.splitlines() if line.startswith("jupyter-scratchpad:")]
    assert code == 1 and len(said) == 1 and "upstream 'fs' could not start" in said[0], err


def test_an_upstream_that_hangs_at_start_is_bounded_and_a_leaving_client_ends_the_wait(env: dict[str, str]) -> None:
    # it waited the whole --upstream-timeout (300 s), even after the client closed stdin
    proc = _start_with_stdin_open(env, "--upstream-timeout", "2", "--name", "slow", "--", *HANGS)
    code, err = _exits_within(proc, 30)
    said = [line for line in err.splitlines() if line.startswith("jupyter-scratchpad:")]
    assert code == 1 and len(said) == 1 and "upstream 'slow' could not start" in said[0], err
    proc = _start_with_stdin_open(env, "--name", "slow", "--", *HANGS)  # the default: 300 s per call
    time.sleep(1)
    proc.stdin.close()  # type: ignore[union-attr]
    code, err = _exits_within(proc, 20)
    assert "Traceback" not in err, err


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ("", "no 'enabled = true'"),  # a server list copied from a client: spilling off, without a word
        ("[agent.scratchpad]\nenabled = true\n", "no pattern names the tools of 'mixed'"),  # opt-in, no pattern
    ],
)
def test_a_config_that_spills_nothing_says_so_at_start(tmp_path: Path, env: dict[str, str], table: str,
                                                        said: str) -> None:  # fmt: skip
    config = tmp_path / "servers.toml"
    config.write_text(f'{table}[mcp.servers.mixed]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(MIXED))}]\n')
    cmd, argv = cli("mcp", "proxy", "--ephemeral", "--config", str(config))
    params = StdioServerParameters(command=cmd, args=argv, env=env)
    errlog = tmp_path / "stderr.txt"

    async def run() -> None:
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                res = await s.call_tool("big_listing", {"mb": 1})
                assert not res.is_error and len(res.content[0].text) > 500_000  # passed through, as configured

    anyio.run(run)
    warned = [line for line in errlog.read_text().splitlines() if "warning:" in line]
    assert len(warned) == 1 and said in warned[0], errlog.read_text()
