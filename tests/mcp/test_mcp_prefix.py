"""``--prefix``: every suggestion names our tools as they were published, in the text a model reads
too (the stub's "Next" line, a schema's ``next:`` line, a long outline's pointer), so following
one reaches our tool, not an upstream's own ``schema`` or an unknown ``item_schema``. Real
processes, official client."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import anyio
from conftest import cli
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from jupyter_scratchpad import ScratchStore

RAW = Path(__file__).parent / "servers" / "raw_server.py"
OURS = ("schema", "item_schema", "iterate_over", "get_in", "grep", "head", "tail", "slice", "sql")


def _bare_names(line: str, prefix: str) -> list[str]:
    """Our tool names in ``line`` without ``prefix`` (outside quoted values)."""
    unquoted = re.sub(r'"[^"]*"', '""', line)
    return [w for w in re.findall(r"(?<![\w$.])[a-z_]+(?![\w])", unquoted) if w in OURS]


def _first_call(line: str) -> tuple[str, dict[str, Any]]:
    """The first call of a ``next:`` line, as a model would make it."""
    m = re.search(r'([a-z_]+)\(handle="([a-z0-9_]+)"(?:, path="([^"]*)")?', line)
    assert m, line
    args: dict[str, Any] = {"handle": m.group(2)}
    if m.group(3):
        args["path"] = m.group(3)
    return m.group(1), args


def test_the_proxys_stub_and_next_lines_name_the_prefixed_tools(tmp_path: Path, env: dict[str, str]) -> None:
    cmd, argv = cli("mcp", "proxy", "--store", str(tmp_path / "store"), "--prefix", "sp_", "--name", "raw", "--",
                    sys.executable, str(RAW))  # fmt: skip

    async def run() -> None:
        async with stdio_client(StdioServerParameters(command=cmd, args=argv, env=env)) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                stub = (await s.call_tool("big_json", {})).content[0].text  # type: ignore[union-attr]
                handle = stub.split('handle "')[1].split('"')[0]
                nxt = stub.splitlines()[-1]
                assert nxt.startswith("Next, with this handle: sp_schema → sp_item_schema"), nxt
                assert _bare_names(nxt, "sp_") == [], nxt  # (was: schema → item_schema …; grep; sql)
                schema = (await s.call_tool("sp_schema", {"handle": handle})).content[0].text  # type: ignore[union-attr]
                line = next(ln for ln in schema.splitlines() if ln.startswith("next: "))
                assert _bare_names(line, "sp_") == [], line
                name, args = _first_call(line)
                followed = await s.call_tool(name, args)  # as the line says: was unknown_tool 'item_schema'
                assert name == "sp_item_schema" and not followed.is_error, followed.content[0]

    anyio.run(run)


def test_serve_names_the_prefixed_tools_in_its_text_not_in_the_documents(tmp_path: Path, env: dict[str, str]) -> None:
    outline = "# Title\n" + "\n".join(f"## Section {i}\n- key: value {i}\n" + "text " * 20 for i in range(500))
    log = "\n".join(f'line {i}: the agent called schema(handle="x") and grep(' for i in range(3000))
    with ScratchStore(tmp_path / "store") as store:
        pad = store.scratchpad("r1", "main")
        md = pad.spill(outline, tool="doc").handle
        text = pad.spill(log, tool="log").handle
        # a log that names its own handle (an agent's transcript): shown as stored, not rewritten
        own = "\n".join(f'step {i}: ran grep(handle="applog", pattern="x{i}")' for i in range(3000))
        pad.spill(own, tool="log", handle="applog")
    cmd, argv = cli("mcp", "serve", "--store", str(tmp_path / "store"), "--run-id", "r1", "--prefix", "sp_")

    async def run() -> None:
        async with stdio_client(StdioServerParameters(command=cmd, args=argv, env=env)) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                res = await s.call_tool("sp_schema", {"handle": md})
                said = res.content[0].text  # type: ignore[union-attr]
                more = next(ln for ln in said.splitlines() if "more headings" in ln)
                assert f'sp_schema(handle="{md}"' in more, more  # (was: schema(handle=…), an unknown tool)
                nxt = next(ln for ln in said.splitlines() if ln.startswith("next: "))
                assert nxt.startswith(f'next: sp_slice(handle="{md}"'), nxt
                head = await s.call_tool("sp_head", {"handle": text, "lines": 2})
                shown = head.content[0].text  # type: ignore[union-attr]
                assert 'the agent called schema(handle="x") and grep(' in shown  # the document as stored
                for tool, args in [("sp_head", {"lines": 2}), ("sp_grep", {"pattern": "x12", "context": 0})]:
                    got = await s.call_tool(tool, {"handle": "applog", **args})
                    said = got.content[0].text  # type: ignore[union-attr]
                    assert 'ran grep(handle="applog"' in said and "sp_grep(handle" not in said, said[:300]

    anyio.run(run)


def test_errors_name_the_prefixed_tools_in_their_words_too(tmp_path: Path, env: dict[str, str]) -> None:
    # the suggestions were prefixed, the message's words were not: "list live handles with
    # scratch_list", "use iterate_over or item_schema", "get_in would return …" (found by probe J)
    with ScratchStore(tmp_path / "store") as store:
        pad = store.scratchpad("r1", "main")
        doc = {"items": [{"name": f"pod-{i}", "note": "x" * 200} for i in range(3000)]}
        h = pad.spill(doc, tool="pods").handle
    cmd, argv = cli("mcp", "serve", "--store", str(tmp_path / "store"), "--run-id", "r1", "--prefix", "sp_")

    async def run() -> None:
        async with stdio_client(StdioServerParameters(command=cmd, args=argv, env=env)) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                names = {t.name for t in (await s.list_tools()).tools}

                async def said(tool: str, args: dict[str, Any]) -> str:
                    res = await s.call_tool(tool, args)
                    assert res.is_error, res.content
                    return res.content[0].text  # type: ignore[union-attr]

                cases = {
                    "sp_scratch_list": await said("sp_schema", {"handle": h + "X"}),
                    "sp_schema needs": await said("sp_schema", {}),
                    "sp_head: 'lines'": await said("sp_head", {"handle": h, "lines": -5}),
                    "sp_iterate_over or sp_item_schema": await said("sp_get_in", {"handle": h, "path": "$.items[*]"}),
                    "sp_get_in would return": await said("sp_get_in", {"handle": h, "path": "items"}),
                    "sp_scratchpad_usage takes no": await said("sp_scratchpad_usage", {"x": 1}),
                    "sp_head, sp_grep, sp_get_in or sp_sql": await said(
                        "sp_scratch_write", {"key": "k", "value": "word " * 200_000}
                    ),
                }
                for words, text in cases.items():
                    assert words in text, (words, text[:400])
                    for named in re.findall(r"\bsp_[a-z_]+", text):
                        assert named in names, (named, text[:400])  # every tool it names exists
                far = await said("sp_get_in", {"handle": h, "path": "items[" + "9" * 5000 + "]"})
                assert "set_int_max_str_digits" not in far and "out of range" in far, far[:300]

    anyio.run(run)
