"""``jupyter-scratchpad mcp serve`` through the official MCP client, over stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import cli, free_port, session_usage, wait_for_port
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from jupyter_scratchpad import ScratchStore

BIG = {"items": [{"id": i, "name": f"pod-{i}", "phase": "Running" if i % 7 else "Pending"} for i in range(4000)]}


def test_serve_over_stdio_answers_like_call_tool(tmp_path: Path, env: dict[str, str]) -> None:
    store_dir = tmp_path / "store"
    with ScratchStore(store_dir) as store:  # spill something into run "r1" first
        handle = store.scratchpad("r1", "main").spill(BIG, tool="k8s_list_pods").handle
        expected = store.scratchpad("r1", "main").call_tool("grep", {"handle": handle, "pattern": "pod-3999"})
        expected_many = store.scratchpad("r1", "main").call_tool(
            "grep", {"handle": handle, "pattern": "pod-", "max_matches": 300, "context": 0}
        )
        tokenizer = store.scratchpad("r1", "main").tokenizer

    errlog = (tmp_path / "server-stderr.txt").open("w+")

    async def run() -> None:
        cmd, args = cli("mcp", "serve", "--store", str(store_dir), "--run-id", "r1")
        async with stdio_client(StdioServerParameters(command=cmd, args=args, env=env), errlog=errlog) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                names = [t.name for t in (await s.list_tools()).tools]
                assert {"schema", "grep", "sql", "get_in", "scratch_write"} <= set(names)
                tool = next(t for t in (await s.list_tools()).tools if t.name == "grep")
                assert tool.input_schema["additionalProperties"] is False
                got = await s.call_tool("grep", {"handle": handle, "pattern": "pod-3999"})
                assert not got.is_error
                assert got.content[0].text.split("\n---")[0] == expected.text.split("\n---")[0]
                # grep's data (every line as an object, the matches again) is larger than its text
                assert got.structured_content is None
                rows = await s.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle}"})
                assert rows.structured_content == {"rows": [{"n": 1}]}
                # a client may give the model the structured copy instead of the text: it is sent
                # only when it is no larger than the text charged (grep's every match as data and
                # as lines was 4x its text)
                many = await s.call_tool("grep", {"handle": handle, "pattern": "pod-", "max_matches": 300, "context": 0})
                charged = tokenizer.count(many.content[0].text)
                assert not many.is_error and charged > 2000
                assert many.structured_content is None
                assert tokenizer.count(json.dumps(expected_many.data, ensure_ascii=False)) > charged
                typo = await s.call_tool("iterate", {"handle": handle})  # was the bare "unknown tool 'iterate'"
                assert typo.is_error and typo.structured_content["error"] == "unknown_tool"
                assert "iterate_over" in typo.structured_content["close_matches"]
                bad = await s.call_tool("get_in", {"handle": handle, "path": "$.nope"})
                assert bad.is_error and "key_path_not_found" in bad.content[0].text
                resources = (await s.list_resources()).resources
                assert [str(r.uri) for r in resources] == [f"scratchpad://{handle}"]
                page = await s.read_resource(f"scratchpad://{handle}")
                assert page.contents[0].text.startswith('{"items"') and "page 1 of" in page.contents[0].text
                last = page.contents[0].text.rsplit("scratchpad://", 1)[1].rstrip("]")
                assert (await s.read_resource(f"scratchpad://{last}")).contents[0].text
                # how any handle's page is read, for a client that knows a handle from a stub
                [template] = (await s.list_resource_templates()).resource_templates
                assert template.uri_template == "scratchpad://{handle}{?page}"
                # a bad URI is the client's mistake: a clear answer, no traceback in the server's log
                with pytest.raises(MCPError, match="no live handle 'nosuch'"):
                    await s.read_resource("scratchpad://nosuch")
                extra = await s.call_tool("scratchpad_usage", {"x": 1})  # (it ignored the argument)
                assert extra.is_error and "takes no arguments" in extra.content[0].text

    with errlog:
        anyio.run(run)
        errlog.seek(0)
        assert "Traceback" not in errlog.read()


def test_serve_over_streamable_http(tmp_path: Path, env: dict[str, str]) -> None:
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    cmd, args = cli("mcp", "serve", "--ephemeral", "--http", f"127.0.0.1:{port}")
    proc = subprocess.Popen([cmd, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(proc, port, timeout_s=30)

        async def run() -> None:
            async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    res = await s.call_tool("scratch_write", {"key": "plan", "value": "step 1"})
                    assert not res.is_error, res.content
                    back = await s.call_tool("scratch_read", {"key": "plan"})
                    assert "step 1" in back.content[0].text

        anyio.run(run)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.parametrize("run_id", [None, "shared"])
def test_each_http_client_session_has_its_own_budget_and_without_run_id_its_own_run(
    tmp_path: Path, env: dict[str, str], run_id: str | None
) -> None:
    # probe Y: two clients of one `mcp serve --http` shared one run, its notes and one budget
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    cmd, args = cli("mcp", "serve", "--ephemeral", "--http", f"127.0.0.1:{port}", *(["--run-id", run_id] if run_id else []))
    errlog = (tmp_path / "stderr.txt").open("w+b")
    proc = subprocess.Popen([cmd, *args], env=env, stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        wait_for_port(proc, port, timeout_s=30)

        async def run() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with streamable_http_client(url) as (r, w), ClientSession(r, w) as a:
                await a.initialize()
                assert not (await a.call_tool("scratch_write", {"key": "a", "value": "from a"})).is_error
                assert not (await a.call_tool("sql", {"query": "SELECT range AS n FROM range(200)"})).is_error
                used_a = (await session_usage(a))["budget"]["used"]
                async with streamable_http_client(url) as (r2, w2), ClientSession(r2, w2) as b:
                    await b.initialize()
                    mine = await session_usage(b)
                    assert mine["budget"]["used"] < used_a  # (its own budget: a's reads are not in it)
                    seen = (await b.call_tool("scratch_read", {"key": "a"})).content[0].text
                    if run_id is None:
                        assert mine["run_id"] != (await session_usage(a))["run_id"] and "from a" not in seen
                    else:  # (the run asked for is shared: its notes too)
                        assert mine["run_id"] == run_id == (await session_usage(a))["run_id"] and "from a" in seen
                assert (await session_usage(a))["budget"]["used"] >= used_a  # (b's reads are not in a's)

        anyio.run(run)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        errlog.close()
    said = (tmp_path / "stderr.txt").read_text()
    assert said.count("jupyter-scratchpad: run '") == 2, said  # (each session's run said)


def test_cli_reads_as_the_person(tmp_path: Path, env: dict[str, str]) -> None:
    store_dir = tmp_path / "store"
    with ScratchStore(store_dir) as store:
        handle = store.scratchpad("default", "main").spill(BIG, tool="k8s_list_pods").handle
    base = [sys.executable, "-m", "jupyter_scratchpad.cli"]
    out = subprocess.run([*base, "grep", "--store", str(store_dir), handle, "Pending"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Pending" in out.stdout, out.stderr
    sql = subprocess.run([*base, "sql", "--store", str(store_dir), "--json", f"SELECT count(*) AS n FROM {handle}"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert sql.returncode == 0 and '"n": 1' in sql.stdout, sql.stderr
    listing = subprocess.run([*base, "list", "--store", str(store_dir)], env=env, capture_output=True, text=True,
                             timeout=60)
    assert handle in listing.stdout
    bad = subprocess.run([*base, "get_in", "--store", str(store_dir), handle, "$.missing"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "key_path_not_found" in bad.stderr and not bad.stdout
    # a shell-using agent's head of a document with a 2 MB line printed all of it: a read is bounded
    # to a page by default (nothing charged), and --max-tokens 0 lifts the bound
    with ScratchStore(store_dir) as store:
        wide = store.scratchpad("default", "main").spill({"k": "y" * 2_000_000}, tool="wide").handle
    capped = subprocess.run([*base, "head", "--store", str(store_dir), wide, "5"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert capped.returncode == 1 and "head_too_large" in capped.stderr and not capped.stdout
    assert len(capped.stderr) < 1000
    whole = subprocess.run([*base, "head", "--store", str(store_dir), wide, "5", "--max-tokens", "0"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert whole.returncode == 0 and len(whole.stdout) > 2_000_000
    # many short lines: head cannot estimate them before reading, so it is measured once read
    with ScratchStore(store_dir) as store:
        nums = store.scratchpad("default", "main").spill("\n".join(map(str, range(200_000))), tool="nums").handle
    lines = subprocess.run([*base, "head", "--store", str(store_dir), nums, "200000"], env=env,
                           capture_output=True, text=True, timeout=60)
    assert lines.returncode == 1 and "head_too_large" in lines.stderr and not lines.stdout
    assert len(lines.stderr) < 1500 and f"(try: jupyter-scratchpad head --store {store_dir} {nums} " in lines.stderr  # a read that fits


@pytest.mark.parametrize("prefix", ["", "a", "ab", "abc"])
def test_resource_pages_never_cut_a_character(tmp_path: Path, prefix: str) -> None:
    # pages were cut at fixed byte offsets: joined, they had U+FFFD where a character was split
    from jupyter_scratchpad import ScratchStore
    from jupyter_scratchpad.mcp._server import PAGE_BYTES, read_page

    text = prefix + "é€😀" * (PAGE_BYTES // 3)  # 2-, 3- and 4-byte characters across every page edge
    with ScratchStore(tmp_path / "store") as store:
        pad = store.scratchpad(run_id="r", agent_id="a")
        handle = pad.intercept(text, tool="t", force=True).handle
        pages, uri = [], f"scratchpad://{handle}"
        while uri:
            page = read_page(pad, uri).contents[0].text
            body, _, note = page.partition(f"\n[page {len(pages) + 1} of ")
            pages.append(body)
            uri = note.rsplit("next: ", 1)[1].rstrip("]") if note else ""
        assert len(pages) == 3 and "".join(pages) == text and "\ufffd" not in "".join(pages)


def test_a_cancelled_sql_call_stops_its_query(tmp_path: Path, env: dict[str, str]) -> None:
    # the thread ran the query to its time limit after the client gave up (anyio waits for a
    # thread), and the client's next query waited behind it: 7.4 s for SELECT 42
    import time

    errlog = (tmp_path / "server-stderr.txt").open("w+")
    slow = "SELECT sum(a.range * b.range) AS s FROM range(200000) a, range(200000) b"

    async def run() -> None:
        cmd, args = cli("mcp", "serve", "--store", str(tmp_path / "store"), "--run-id", "r1")
        async with stdio_client(StdioServerParameters(command=cmd, args=args, env=env), errlog=errlog) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                warm = await s.call_tool("sql", {"query": "SELECT 1 AS one"})  # the worker started
                assert not warm.is_error
                with anyio.move_on_after(2):
                    await s.call_tool("sql", {"query": slow})
                    raise AssertionError("the slow query answered within 2 s")
                started = time.monotonic()
                quick = await s.call_tool("sql", {"query": "SELECT 42 AS x"})
                waited = time.monotonic() - started
                assert not quick.is_error and quick.structured_content == {"rows": [{"x": 42}]}, quick.content
                assert waited < 4.0, f"the next query waited {waited:.1f} s behind the cancelled one"

    with errlog:
        anyio.run(run)
        errlog.seek(0)
        assert "Traceback" not in errlog.read()


def test_a_servers_run_is_said_at_start_and_the_cli_names_the_server_holding_the_store(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # the CLI said "store.close(), or shut that kernel down", and the run id was in no message at start
    store = tmp_path / "store"
    cmd, argv = cli("mcp", "serve", "--store", str(store))
    errlog = tmp_path / "stderr.txt"

    def cli_run(*args: str) -> subprocess.CompletedProcess[str]:
        c, a = cli(*args, "--store", str(store))
        return subprocess.run([c, *a], env=env, capture_output=True, text=True, timeout=60)

    async def run() -> None:
        with errlog.open("w") as err:
            params = StdioServerParameters(command=cmd, args=argv, env=env)
            async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                await s.call_tool("scratch_write", {"key": "plan", "value": "step one"})
                held = await anyio.to_thread.run_sync(lambda: cli_run("ls"))
                assert held.returncode == 2 and "a jupyter-scratchpad mcp serve" in held.stderr, held.stderr
                assert "kernel" not in held.stderr and "--run-id" in held.stderr

    anyio.run(run)
    said = errlog.read_text()
    run_id = said.split("jupyter-scratchpad: run '")[1].split("'")[0]
    assert run_id.startswith("mcp-")
    note = cli_run("notes", "plan", "--run-id", run_id)
    assert note.returncode == 0 and "step one" in note.stdout, note


@pytest.mark.parametrize("second", [("mcp", "serve"), ("mcp", "proxy", "--", "cat")])
def test_a_second_server_on_a_held_store_answers_initialize_with_the_reason(
    tmp_path: Path, env: dict[str, str], second: tuple[str, ...]
) -> None:
    # probe Y: the second server exited before initialize; its client saw only "Connection closed"
    store = tmp_path / "store"
    errlog = tmp_path / "stderr.txt"

    async def run() -> None:
        with errlog.open("w") as err:
            cmd, argv = cli("mcp", "serve", "--store", str(store))
            async with stdio_client(StdioServerParameters(command=cmd, args=argv, env=env), errlog=err) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    cmd2, argv2 = cli(*second[:2], "--store", str(store), *second[2:])
                    params = StdioServerParameters(command=cmd2, args=argv2, env=env)
                    async with stdio_client(params, errlog=err) as (r2, w2), ClientSession(r2, w2) as s2:
                        with pytest.raises(MCPError) as refused:
                            with anyio.fail_after(30):
                                await s2.initialize()
                    said = refused.value.error.message
                    assert said.startswith("jupyter-scratchpad could not start: the scratch store at"), said
                    assert "a jupyter-scratchpad mcp serve" in said and "--store" in said
                    assert not (await s.call_tool("scratch_list", {})).is_error  # the first one serves on

    anyio.run(run)
    assert "is open in process" in errlog.read_text()  # (and stderr still says it)


def test_a_servers_budget_is_sized_by_context_window_and_its_refusal_says_what_a_person_can_do(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # probe Y: a client keeps one server for many conversations; once its 102,400 tokens were read
    # every later read was budget_exhausted, with no flag to size it and nothing said to a person
    store_dir = tmp_path / "store"
    with ScratchStore(store_dir) as store:
        handle = store.scratchpad("r1", "main").spill(BIG, tool="k8s_list_pods").handle

    async def run() -> None:
        cmd, args = cli("mcp", "serve", "--store", str(store_dir), "--run-id", "r1", "--context-window", "12,000")
        with (tmp_path / "stderr.txt").open("w") as err:
            async with stdio_client(StdioServerParameters(command=cmd, args=args, env=env), errlog=err) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    usage = json.loads((await s.call_tool("scratchpad_usage", {})).content[0].text)
                    assert usage["budget"]["usable"] == 9_600, usage  # (12,000 less the 20% margin)
                    refused = None
                    for start in range(1, 20_000, 400):
                        got = await s.call_tool("slice", {"handle": handle, "start": start, "end": start + 399})
                        said = got.content[0].text
                        if got.is_error and '"budget_exhausted"' in said:
                            refused = json.loads(said)
                            break
                    assert refused is not None, "the budget never ran out"
                    assert "restarts the server" in refused["message"] and "--context-window N" in refused["message"]

    anyio.run(run)


def test_context_window_is_a_number_of_tokens(tmp_path: Path, env: dict[str, str]) -> None:
    cmd, args = cli("mcp", "serve", "--ephemeral", "--context-window", "lots")
    done = subprocess.run([cmd, *args], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "--context-window" in done.stderr and "at least 1000" in done.stderr
