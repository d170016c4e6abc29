"""``jupyter-scratchpad mcp proxy`` in front of real third-party MCP servers, with the official client."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
from conftest import cli, filesystem_server, git_server
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def proxy_params(env: dict[str, str], store: Path, *args: str) -> StdioServerParameters:
    cmd, argv = cli("mcp", "proxy", "--store", str(store), "--run-id", "r", *args)
    return StdioServerParameters(command=cmd, args=argv, env=env)


def test_git_log_spills_and_reads_back_in_the_same_session(git_repo: Path, tmp_path: Path,
                                                          env: dict[str, str]) -> None:
    params = proxy_params(env, tmp_path / "store", "--name", "git", "--", git_server(), "--repository", str(git_repo))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            assert "git_log" in names and "git_status" in names and "grep" in names and "sql" in names
            big = await s.call_tool("git_log", {"repo_path": str(git_repo), "max_count": 3000})
            text = big.content[0].text
            assert not big.is_error and text.startswith("[scratchpad] git_log output")
            assert "unwrapped from an MCP CallToolResult" in text and len(text) < 2000
            handle = text.split('handle "')[1].split('"')[0]
            hits = await s.call_tool("grep", {"handle": handle, "pattern": "^Message: commit 1234:", "context": 0})
            assert not hits.is_error and "1 matching line" in hits.content[0].text
            count = await s.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle} WHERE line LIKE 'Commit:%'"})
            assert count.structured_content == {"rows": [{"n": 3000}]}
            typo = await s.call_tool("git_lgo", {"repo_path": str(git_repo)})  # upstream names are offered too
            assert typo.is_error and "git_log" in typo.structured_content["close_matches"]
            small = await s.call_tool("git_status", {"repo_path": str(git_repo)})
            assert not small.is_error and small.content[0].text.startswith("Repository status")  # unchanged
            err = await s.call_tool("git_show", {"repo_path": str(git_repo), "revision": "no-such-rev"})
            assert err.is_error and "scratchpad" not in err.content[0].text  # upstream errors pass through

    anyio.run(run)


def test_filesystem_server_from_npm_through_a_config(tmp_path: Path, env: dict[str, str], git_repo: Path) -> None:
    files = tmp_path / "files"
    files.mkdir()
    (files / "small.txt").write_text("hello\n")
    (files / "big.log").write_text("".join(f"2026-12-03 worker-{i % 9} handled request {i}\n" for i in range(20000)))
    config = tmp_path / "servers.toml"
    config.write_text(
        f"""
[agent.scratchpad]
enabled = true

[mcp.servers.fs]
command = "{filesystem_server()}"
args = ["{files}"]

[mcp.servers.fs.scratchpad]
"read_*" = {{ min_tokens = 1000 }}

[mcp.servers.git]
command = "{git_server()}"
args = ["--repository", "{git_repo}"]

[mcp.servers.git2]
command = "{git_server()}"
args = ["--repository", "{git_repo}"]
""",
        encoding="utf-8",
    )
    params = proxy_params(env, tmp_path / "store", "--config", str(config))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            # two servers with the same tools: both kept, prefixed with their server's name
            assert "git__git_log" in names and "git2__git_log" in names and "git_log" not in names
            assert "read_text_file" in names or "read_file" in names
            read = "read_text_file" if "read_text_file" in names else "read_file"
            big = await s.call_tool(read, {"path": str(files / "big.log")})
            assert big.content[0].text.startswith(f"[scratchpad] {read} output"), big.content[0].text[:300]
            small = await s.call_tool(read, {"path": str(files / "small.txt")})
            assert small.content[0].text.strip() == "hello"
            # git is opt-in per server in Aura's layout: no pattern for git, so nothing of it is spilled
            log = await s.call_tool("git__git_log", {"repo_path": str(git_repo), "max_count": 3000})
            assert not log.content[0].text.startswith("[scratchpad]") and "commit 2999" in log.content[0].text

    anyio.run(run)


def test_a_failed_spill_fails_closed(git_repo: Path, tmp_path: Path, env: dict[str, str]) -> None:
    store = tmp_path / "store"
    params = proxy_params(env, store, "--name", "git", "--", git_server(), "--repository", str(git_repo))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            shutil.rmtree(store / "bodies")
            (store / "bodies").write_text("not a directory")  # every body write now fails
            res = await s.call_tool("git_log", {"repo_path": str(git_repo), "max_count": 3000})
            text = res.content[0].text
            assert len(text.encode()) <= 2048 and "commit 1500" not in text, text[:500]
            assert "git_log" in text

    anyio.run(run)


def test_a_media_file_from_the_filesystem_server_is_stored_once(tmp_path: Path, env: dict[str, str]) -> None:
    # read_media_file sends the image as a block and again as {"content": [the block]}: both were
    # stored, and the first stub pointed the model at an empty $.content
    import os

    import mcp_types as types

    files = tmp_path / "files"
    files.mkdir()
    (files / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(3_000_000))
    params = proxy_params(env, tmp_path / "store", "--name", "fs", "--", filesystem_server(), str(files))

    async def run() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("read_media_file", {"path": str(files / "pic.png")})
            assert not res.is_error and res.structured_content is None
            [note] = res.content
            assert isinstance(note, types.TextContent) and "image block (image/png" in note.text, note
            assert "stored as handle" in note.text and "[scratchpad]" not in note.text
            listed = await s.call_tool("scratch_list", {})
            assert listed.content[0].text.count("read_media_file_") == 1, listed.content[0].text

    anyio.run(run)
