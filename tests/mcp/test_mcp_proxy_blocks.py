"""The proxy's handling of what upstream results hold: text spilled as one entry, images through
untouched, size hints, progress, huge errors bounded, and a multi-MB JSON file from the npm
filesystem server explored with schema and sql in the same session. Real servers, official client."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from conftest import INITIALIZE_LINE, cli, filesystem_server, free_port, session_usage, wait_for_port
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

MIXED = Path(__file__).parent / "servers" / "mixed_server.py"


def proxy_params(env: dict[str, str], store: Path, *args: str) -> StdioServerParameters:
    cmd, argv = cli("mcp", "proxy", "--store", str(store), "--run-id", "r", *args)
    return StdioServerParameters(command=cmd, args=argv, env=env)


def through_mixed(env: dict[str, str], store: Path, check: Callable[[ClientSession], Awaitable[None]]) -> None:
    """Run ``check`` on a client session of the proxy in front of ``mixed_server.py``."""
    params = proxy_params(env, store, "--name", "mixed", "--", sys.executable, str(MIXED))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await check(s)

    anyio.run(run)


def handle_of(text: str) -> str:
    return text.split('handle "')[1].split('"')[0]


def test_text_spills_and_the_image_passes_untouched(tmp_path: Path, env: dict[str, str]) -> None:
    params = proxy_params(env, tmp_path / "store", "--name", "mixed", "--", sys.executable, str(MIXED))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            direct = StdioServerParameters(command=sys.executable, args=[str(MIXED)], env=env)
            async with stdio_client(direct) as (r2, w2), ClientSession(r2, w2) as upstream:
                await upstream.initialize()
                raw = await upstream.call_tool("report_with_chart", {})
            res = await s.call_tool("report_with_chart", {})
            assert not res.is_error and len(res.content) == 2
            stub, image = res.content
            assert isinstance(stub, types.TextContent) and stub.text.startswith("[scratchpad] report_with_chart")
            assert isinstance(image, types.ImageContent)
            assert image.model_dump() == raw.content[1].model_dump()  # byte for byte the upstream's image
            assert base64.b64decode(image.data).startswith(b"\x89PNG")
            handle = handle_of(stub.text)
            # JSON kept as JSON: the rows are a relation, queried in the same session
            q = await s.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle}.rows WHERE status = 'failed'"})
            assert not q.is_error, q.content[0].text
            assert q.structured_content == {"rows": [{"n": 2000}]}
            small = await s.call_tool("small", {})
            assert small.content[0].text == "just this"

    anyio.run(run)


def test_size_hint_progress_and_errors(tmp_path: Path, env: dict[str, str]) -> None:
    params = proxy_params(env, tmp_path / "store", "--name", "mixed", "--", sys.executable, str(MIXED))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            # the tool's _meta asks for results up to 2,000,000 characters whole: not spilled
            whole = await s.call_tool("whole_document", {})
            assert whole.content[0].text.startswith("paragraph 0:") and "paragraph 7999:" in whole.content[0].text
            # the upstream's progress reaches our client under our request
            seen: list[tuple[float, float | None, str | None]] = []

            async def on_progress(done: float, total: float | None, message: str | None) -> None:
                seen.append((done, total, message))

            counted = await s.call_tool("slow_count", {"steps": 3}, progress_callback=on_progress)
            assert counted.content[0].text == "counted to 3"
            assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
            # a huge error: bounded and still an error; its whole text stored, named after the cut
            # (probe Y: the middle of a 750 KB trace, often the part that says why, was unreadable)
            err = await s.call_tool("explode", {})
            text = err.content[0].text
            assert err.is_error and text.startswith("Traceback:") and "bytes of this error cut" in text
            assert len(text.encode()) <= 8192 and "[scratchpad]" not in text
            handle = re.search(r"is stored as handle (\S+):", text)
            assert handle is not None, text[-400:]
            middle = await s.call_tool("slice", {"handle": handle.group(1), "start": 5000, "end": 5001})
            assert not middle.is_error and middle.content[0].text.strip(), middle
            usage = await s.call_tool("scratchpad_usage", {})
            assert usage.structured_content["spills"] == 1 and usage.structured_content["run_id"] == "r"

    anyio.run(run)


def test_an_upstream_that_fails_or_ends_is_a_short_tool_error(tmp_path: Path, env: dict[str, str]) -> None:
    # an error's structured content passed through at 1.5 MB; after the upstream's process ended,
    # every call of its tools raised a bare "Connection closed" protocol error
    async def check(s: ClientSession) -> None:
        err = await s.call_tool("explode_structured", {})
        assert err.is_error and err.structured_content is None
        assert err.content[0].text.startswith("bad\n") and "structured content" in err.content[0].text
        assert len(err.model_dump_json()) < 8192
        gone = await s.call_tool("exit_now", {})
        again = await s.call_tool("small", {})
        for res in (gone, again):
            assert res.is_error and "upstream server 'mixed' is gone" in res.content[0].text, res
            assert "Restart the proxy" in res.content[0].text and len(res.content[0].text) < 1000
        ours = await s.call_tool("scratch_list", {})
        assert not ours.is_error  # the proxy's own tools still answer

    through_mixed(env, tmp_path / "store", check)


def test_an_embedded_resources_text_is_spilled_with_the_text(tmp_path: Path, env: dict[str, str]) -> None:
    # a 1.7 MB file embedded as a resource passed through whole: the model reads it as text
    async def check(s: ClientSession) -> None:
        res = await s.call_tool("embedded_file", {})
        assert not res.is_error and len(res.content) == 1, [b.type for b in res.content]
        stub = res.content[0]
        assert isinstance(stub, types.TextContent) and stub.text.startswith("[scratchpad] embedded_file")
        assert len(res.model_dump_json()) < 4000
        found = await s.call_tool("grep", {"handle": handle_of(stub.text), "pattern": "log line 59999:"})
        assert not found.is_error and "request served" in found.content[0].text

    through_mixed(env, tmp_path / "store", check)


def test_an_upstream_that_cannot_start_is_one_line(tmp_path: Path, env: dict[str, str]) -> None:
    # 89 lines of exception-group traceback, and no answer to initialize
    cmd, argv = cli("mcp", "proxy", "--ephemeral", "--name", "x", "--", str(tmp_path / "no-such-command"))
    out = subprocess.run([cmd, *argv], input=INITIALIZE_LINE, env=env, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert out.returncode == 1 and not out.stdout
    said = [line for line in out.stderr.splitlines() if "usage {" not in line]
    assert len(said) == 1 and "upstream 'x' could not start" in said[0] and "no-such-command" in said[0], out.stderr
    assert "Traceback" not in out.stderr
    bad = tmp_path / "servers.toml"
    bad.write_text('[mcp.servers.a]\ncommand = "echo"\nargs = "notalist"\n')
    cmd, argv = cli("mcp", "proxy", "--ephemeral", "--config", str(bad))
    out = subprocess.run([cmd, *argv], input="", env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "args must be a list" in out.stderr and "Traceback" not in out.stderr


def test_a_multi_megabyte_json_file_from_the_npm_filesystem_server(tmp_path: Path, env: dict[str, str]) -> None:
    files = tmp_path / "files"
    files.mkdir()
    doc = {
        "kind": "EventList",
        "items": [
            {"id": i, "type": ["create", "update", "delete"][i % 3], "user": {"name": f"user{i % 40}"}, "n": i}
            for i in range(40000)
        ],
    }
    (files / "events.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    assert (files / "events.json").stat().st_size > 3_000_000
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    (files / "chart.png").write_bytes(png)
    (files / "small.json").write_text('{"ok": true}\n', encoding="utf-8")
    params = proxy_params(env, tmp_path / "store", "--name", "fs", "--", filesystem_server(), str(files))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"read_text_file", "read_media_file", "schema", "sql", "scratchpad_usage"} <= names
            big = await s.call_tool("read_text_file", {"path": str(files / "events.json")})
            stub = big.content[0].text
            assert not big.is_error and stub.startswith("[scratchpad] read_text_file") and len(stub) < 4000, stub
            assert big.structured_content is None  # the stub replaces the upstream's structured copy
            handle = handle_of(stub)
            schema = await s.call_tool("schema", {"handle": handle})
            assert not schema.is_error and "$.items" in schema.content[0].text, schema.content[0].text[:500]
            q = await s.call_tool(
                "sql", {"query": f"SELECT type, count(*) AS n FROM {handle}.items GROUP BY type ORDER BY type"}
            )
            assert not q.is_error, q.content[0].text
            assert q.structured_content == {
                "rows": [{"type": "create", "n": 13334}, {"type": "delete", "n": 13333}, {"type": "update", "n": 13333}]
            }
            small = await s.call_tool("read_text_file", {"path": str(files / "small.json")})
            assert small.content[0].text == '{"ok": true}\n'  # small results pass unchanged
            media = await s.call_tool("read_media_file", {"path": str(files / "chart.png")})
            blocks = [b for b in media.content if isinstance(b, types.ImageContent)]
            assert blocks and base64.b64decode(blocks[0].data) == png
            usage = await s.call_tool("scratchpad_usage", {})
            assert usage.structured_content["spills"] == 1 and usage.structured_content["tokens_intercepted"] > 500_000
            missing = await s.call_tool("read_text_file", {"path": str(files / "nope.json")})
            assert missing.is_error and "[scratchpad]" not in missing.content[0].text

    anyio.run(run)


def test_a_cancelled_call_is_cancelled_upstream(tmp_path: Path, env: dict[str, str]) -> None:
    params = proxy_params(env, tmp_path / "store", "--name", "mixed", "--", sys.executable, str(MIXED))
    marker = tmp_path / "marker"

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            with anyio.move_on_after(30):  # the client gives up once the upstream has started
                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        await s.call_tool("wait_for_cancel", {"marker": str(marker)})

                    tg.start_soon(call)
                    while not marker.exists():
                        await anyio.sleep(0.05)
                    tg.cancel_scope.cancel()  # the client cancels: notifications/cancelled to the proxy
            with anyio.fail_after(20):
                while marker.read_text() != "cancelled":
                    await anyio.sleep(0.05)
            small = await s.call_tool("small", {})  # the session goes on
            assert small.content[0].text == "just this"

    anyio.run(run)
    assert marker.read_text() == "cancelled"


def test_the_proxy_over_streamable_http_both_ways(tmp_path: Path, env: dict[str, str]) -> None:
    """An HTTP upstream (--url) behind a proxy that itself serves streamable HTTP (--http), with the
    official client over streamable HTTP: spill, the image through untouched, sql on the stub's
    handle, and the upstream's error bounded."""
    from mcp.client.streamable_http import streamable_http_client

    up_port, proxy_port = free_port(), free_port()
    upstream = subprocess.Popen([sys.executable, str(MIXED), "--http", str(up_port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cmd, argv = cli("mcp", "proxy", "--store", str(tmp_path / "store"), "--run-id", "r", "--name", "mixed",
                    "--url", f"http://127.0.0.1:{up_port}/mcp", "--http", f"127.0.0.1:{proxy_port}")
    proxy = None
    try:
        wait_for_port(upstream, up_port)
        proxy = subprocess.Popen([cmd, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(proxy, proxy_port)

        async def run() -> None:
            async with streamable_http_client(f"http://127.0.0.1:{proxy_port}/mcp") as (r, w), \
                    ClientSession(r, w) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}
                assert {"report_with_chart", "explode", "schema", "sql"} <= names
                res = await s.call_tool("report_with_chart", {})
                stub, image = res.content
                assert isinstance(stub, types.TextContent) and stub.text.startswith("[scratchpad]")
                assert isinstance(image, types.ImageContent) and base64.b64decode(image.data).startswith(b"\x89PNG")
                q = await s.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle_of(stub.text)}.rows"})
                assert q.structured_content == {"rows": [{"n": 6000}]}
                err = await s.call_tool("explode", {})
                assert err.is_error and len(err.content[0].text.encode()) <= 8192 and "cut" in err.content[0].text

        anyio.run(run)
    finally:
        for p in (proxy, upstream):
            if p is not None:
                p.terminate()
                p.wait(timeout=10)
                if p.stderr is not None:
                    p.stderr.close()


@pytest.mark.parametrize("run_id", [None, "shared"])
def test_each_http_client_session_of_the_proxy_spills_into_its_own_run_and_budget(
    tmp_path: Path, env: dict[str, str], run_id: str | None
) -> None:
    # `mcp proxy --http` served every client from one pad: one run (each saw the others' handles and
    # notes) and one budget, which one client's reads used up for all (`mcp serve --http` had its fix)
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    cmd, argv = cli("mcp", "proxy", "--store", str(tmp_path / "store"), *(["--run-id", run_id] if run_id else []),
                    "--http", f"127.0.0.1:{port}", "--name", "mixed", "--", sys.executable, str(MIXED))  # fmt: skip
    errlog = (tmp_path / "stderr.txt").open("w+b")
    proxy = subprocess.Popen([cmd, *argv], env=env, stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        wait_for_port(proxy, port)

        async def run() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with streamable_http_client(url) as (r, w), ClientSession(r, w) as a:
                await a.initialize()
                stub = (await a.call_tool("report_with_chart", {})).content[0]
                assert isinstance(stub, types.TextContent)
                handle = handle_of(stub.text)
                assert not (await a.call_tool("head", {"handle": handle, "lines": 40})).is_error
                used_a = (await session_usage(a))["budget"]["used"]
                async with streamable_http_client(url) as (r2, w2), ClientSession(r2, w2) as b:
                    await b.initialize()
                    mine = await session_usage(b)
                    assert mine["budget"]["used"] < used_a  # (its own budget: a's reads are not in it)
                    read = await b.call_tool("head", {"handle": handle, "lines": 3})
                    listed = [str(x.uri) for x in (await b.list_resources()).resources]
                    if run_id is None:  # a run of its own: a's handle is not b's to read or list
                        assert mine["run_id"] != (await session_usage(a))["run_id"]
                        assert read.is_error and f"scratchpad://{handle}" not in listed
                        assert handle in read.content[0].text  # (the refusal names what it could not find)
                    else:  # the run asked for is shared, its handles with it
                        assert mine["run_id"] == run_id == (await session_usage(a))["run_id"]
                        assert not read.is_error and f"scratchpad://{handle}" in listed
                assert (await session_usage(a))["budget"]["used"] >= used_a

        anyio.run(run)
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
        errlog.close()
    said = (tmp_path / "stderr.txt").read_text()
    assert said.count("jupyter-scratchpad: run '") == 2, said  # (each session's run said)


def test_a_huge_image_in_a_result_is_stored_and_a_small_one_passes(tmp_path: Path, env: dict[str, str]) -> None:
    # a 2.8 MB image passed through whole (the same block in an error result was cut to 8 KiB)
    async def check(s: ClientSession) -> None:
        res = await s.call_tool("big_image", {})
        assert not res.is_error and len(res.content) == 2
        note, icon = res.content
        assert isinstance(note, types.TextContent) and len(note.text) < 600, note
        assert "image block (image/png" in note.text and "stored as handle" in note.text
        assert isinstance(icon, types.ImageContent) and len(icon.data) < 2000  # a small one is untouched
        handle = note.text.split("stored as handle ")[1].split()[0]
        got = await s.call_tool("get_in", {"handle": handle, "path": "mimeType"})
        assert not got.is_error and "image/png" in got.content[0].text, got
        # the calls the note names run as written (it named a CLI export that could not open the
        # store the proxy holds)
        assert "jupyter-scratchpad export" not in note.text
        for name, args in re.findall(r'(\w+)\(handle="[^"]+"(?:, path="([^"]*)")?\)', note.text):
            called = await s.call_tool(name, {"handle": handle, **({"path": args} if args else {})})
            assert not called.is_error, called

    through_mixed(env, tmp_path / "store", check)


def test_the_upstreams_instructions_come_after_ours_under_its_name(tmp_path: Path, env: dict[str, str]) -> None:
    # probe Y: the client's instructions were only the proxy's own; the upstream's rules were gone
    params = proxy_params(env, tmp_path / "store", "--name", "mixed", "--", sys.executable, str(MIXED))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            init = await s.initialize()
            said = init.instructions or ""
            assert said.startswith("Large tool outputs are kept out of the context as handles."), said
            assert "From the upstream server 'mixed': MIXED-RULES: call report_with_chart at most once" in said

    anyio.run(run)


def test_an_upstreams_instructions_are_bounded() -> None:
    from jupyter_scratchpad.mcp._proxy import UPSTREAM_INSTRUCTIONS_MAX_CHARS, joined_instructions

    said = joined_instructions("ours", {"big": "x" * 1_000_000})
    assert len(said) < UPSTREAM_INSTRUCTIONS_MAX_CHARS + 200 and "996,000 characters of its instructions cut" in said


def test_a_clients_json_configuration_is_read_as_it_is(tmp_path: Path, env: dict[str, str]) -> None:
    # probe Y: a no-code user points --config at the file their client already has:
    # "servers_claude.json is not valid TOML: Invalid statement (at line 1, column 1)"
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(json.dumps({"mcpServers": {
        "mixed": {"command": sys.executable, "args": [str(MIXED)], "type": "stdio"},
        "off": {"command": "no-such-server", "disabled": True},
    }}))  # fmt: skip
    params = proxy_params(env, tmp_path / "store", "--config", str(config))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            names = {t.name for t in (await s.list_tools()).tools}
            assert "report_with_chart" in names and "schema" in names
            got = await s.call_tool("report_with_chart", {})
            assert not got.is_error and "scratchpad" in got.content[0].text.lower()

    anyio.run(run)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"mcpServers": {"git": ', "not valid JSON"),
        ('{"tools": {}}', '"mcpServers"'),
        ('{"mcpServers": {}}', 'no server in its "mcpServers"'),
        ('{"mcpServers": {"git": {"command": "x", "args": "--repository ."}}}', "args must be a list"),
        ('{"mcpServers": ' + "[" * 200_000 + "]" * 200_000 + "}", '"mcpServers"'),  # (a RecursionError traceback)
    ],
    ids=["cut-short", "no-servers", "empty", "args-a-string", "nested-deep"],
)
def test_a_wrong_json_configuration_says_what_it_should_hold(
    tmp_path: Path, env: dict[str, str], text: str, said: str
) -> None:
    config = tmp_path / "servers.json"
    config.write_text(text)
    cmd, argv = cli("mcp", "proxy", "--ephemeral", "--config", str(config))
    done = subprocess.run([cmd, *argv], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "TOML" not in done.stderr and "Traceback" not in done.stderr
