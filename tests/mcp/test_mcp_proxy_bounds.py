"""What the proxy passes on from an upstream besides tool results, bounded: tool descriptions and
input schemas (one that is not valid JSON Schema, or huge, replaced by one any object matches),
listed resources and prompts, and a prompt's messages (spilled like a result); a content block of a
type MCP does not define stored and named, the rest of its result passed; and an upstream's
``tools/list_changed`` coalesced. A hand-written upstream (``servers/bounds_server.py``), our CLI
as the proxy, the official client."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from conftest import cli
from jsonschema import Draft202012Validator
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = Path(__file__).parent / "servers" / "bounds_server.py"
ANY_OBJECT = {"type": "object", "additionalProperties": True}


def through_bounds(
    env: dict[str, str],
    store: Path,
    check: Callable[[ClientSession], Awaitable[None]],
    *server_args: str,
    on_message: Any = None,
) -> str:
    """Run ``check`` on a client session of the proxy in front of ``bounds_server.py``; the
    proxy's stderr."""
    cmd, argv = cli("mcp", "proxy", "--store", str(store), "--run-id", "r", "--name", "up", "--",
                    sys.executable, str(SERVER), *server_args)  # fmt: skip
    params = StdioServerParameters(command=cmd, args=argv, env=env)

    async def run(errlog: Any) -> None:
        with anyio.fail_after(120):
            async with (
                stdio_client(params, errlog=errlog) as (r, w),
                ClientSession(r, w, message_handler=on_message) as s,
            ):
                await s.initialize()
                await check(s)

    with (store.parent / "stderr.txt").open("w+") as errlog:
        anyio.run(run, errlog)
        errlog.seek(0)
        return errlog.read()


def utf8(text: str | None) -> int:
    return len((text or "").encode())


def texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


def test_tool_descriptions_and_schemas_are_bounded_and_valid(tmp_path: Path, env: dict[str, str]) -> None:
    # a 2 MB description was listed whole, and a schema with "type": "nonsense" in it was passed on
    async def check(s: ClientSession) -> None:
        tools = (await s.list_tools()).tools
        listed = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools])
        assert len(listed) < 100_000, len(listed)  # (was 2.3 MB)
        by = {t.name: t for t in tools}
        small = by["small"].description or ""
        assert utf8(small) <= 8 * 1024 and small.startswith("ddd") and small.endswith("ddd")
        assert "of 2,000,000 bytes of this description cut" in small
        for tool in tools:  # every schema is a valid JSON Schema object: strict clients take the list
            Draft202012Validator.check_schema(tool.input_schema)
            assert tool.input_schema.get("type") == "object", tool.name
        bad = by["bad_schema"]
        assert bad.input_schema == ANY_OBJECT
        assert (bad.description or "").startswith("takes a\n\n[the proxy replaced this tool's input schema")
        assert "not valid JSON Schema (at properties/a/type" in (bad.description or "")
        assert "Its arguments were: a]" in (bad.description or "")
        huge = by["huge_schema"]
        assert huge.input_schema == ANY_OBJECT
        assert "bytes of JSON, over the proxy's 65,536" in (huge.description or "")
        assert "p0, p1" in (huge.description or "") and "and 1,960 more" in (huge.description or "")
        fine = by["fine"]  # a good definition is the upstream's own
        assert fine.description == "a fine tool"
        assert fine.input_schema == {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
        # the tools stay callable: the arguments reach the upstream as given
        res = await s.call_tool("bad_schema", {"a": [1, "x"]})
        assert not res.is_error and texts(res) == ['args: {"a": [1, "x"]}'], res
        assert texts(await s.call_tool("small", {})) == ["just this"]

    assert "Traceback" not in through_bounds(env, tmp_path / "store", check)


def test_a_schema_the_sdk_refuses_does_not_stop_the_proxy(tmp_path: Path, env: dict[str, str]) -> None:
    # an inputSchema without "type": "object" made the SDK refuse the whole list: the proxy did not start
    async def check(s: ClientSession) -> None:
        by = {t.name: t for t in (await s.list_tools()).tools}
        untyped = by["untyped"]
        assert untyped.input_schema == ANY_OBJECT
        assert 'did not say "type": "object"' in (untyped.description or "")
        assert "Its arguments were: q (required)]" in (untyped.description or "")
        res = await s.call_tool("untyped", {"q": "x"})
        assert texts(res) == ['args: {"q": "x"}'], res
        assert "fine" in by and "small" in by

    through_bounds(env, tmp_path / "store", check, "--untyped")


def upstream_bytes(tools: list[types.Tool]) -> int:
    """The compact JSON of the listed tools that are the upstream's (not the scratchpad's own)."""
    from jupyter_scratchpad.tools import TOOL_NAMES

    theirs = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools if t.name not in TOOL_NAMES]
    return len(json.dumps([t for t in theirs if t["name"] != "scratchpad_usage"], separators=(",", ":")).encode())


def test_many_tools_are_bounded_together_and_every_one_still_answers(tmp_path: Path, env: dict[str, str]) -> None:
    # each definition was bounded, but not the list: 120 tools of 5 KB and 40 arguments listed 1 MB,
    # which the model reads every turn
    async def check(s: ClientSession) -> None:
        tools = (await s.list_tools()).tools
        assert upstream_bytes(tools) <= 128 * 1024  # (was 1 MB)
        by = {t.name: t for t in tools}
        assert all(f"big_{i}" in by for i in range(120))  # cut, and all still listed
        big = by["big_0"]
        said = big.description or ""
        assert said.startswith("[the proxy replaced this tool's input schema") and "bytes of this description cut" in said
        assert big.input_schema == ANY_OBJECT and "Its arguments were: arg0, arg1" in said and "\n\ntool 0 bbb" in said
        assert by["fine"].description == "a fine tool"  # a short one is kept whole
        for tool in tools:
            Draft202012Validator.check_schema(tool.input_schema)
        res = await s.call_tool("big_7", {"arg3": "x"})
        assert texts(res) == ['args: {"arg3": "x"}'], res

    stderr = through_bounds(env, tmp_path / "store", check, "--many-big")
    assert "the upstream tools' definitions take" in stderr and "input schemas replaced" in stderr

    async def check_small(s: ClientSession) -> None:
        tools = (await s.list_tools()).tools
        assert upstream_bytes(tools) <= 128 * 1024  # (was 250 KB)
        names = {t.name for t in tools}
        assert "small_0" in names and "small_2999" not in names and "head" in names  # ours are listed
        res = await s.call_tool("small_2999", {"q": 1})  # left out of the list, still answers
        assert texts(res) == ['args: {"q": 1}'], res

    stderr = through_bounds(env, tmp_path / "store2", check_small, "--many-small")
    assert "tools left out of the list (each still answers a call by its name)" in stderr


def test_an_entry_the_sdk_refuses_leaves_the_rest_of_its_list(tmp_path: Path, env: dict[str, str]) -> None:
    # one resource listed without its uri, or one prompt without a name, made the SDK refuse the
    # whole listing: the server's resources and prompts were all missing (its prompts silently)
    async def check(s: ClientSession) -> None:
        resources = {r.name for r in (await s.list_resources()).resources}
        assert {"big", "ok", "blob"} <= resources and "no_uri" not in resources, resources
        prompts = {p.name for p in (await s.list_prompts()).prompts}
        assert {"big_prompt", "odd_prompt", "many_small"} <= prompts and "bad_args" not in prompts, prompts
        got = await s.get_prompt("odd_prompt")  # a listed prompt still answers
        assert got.messages[-1].content == types.TextContent(type="text", text="hi")

    stderr = through_bounds(env, tmp_path / "store", check, "--bad-entries")
    assert "upstream resource 'no_uri' is not a valid MCP resource; it is left out of the list" in stderr
    assert "upstream prompt 'bad_args' is not a valid MCP prompt; it is left out of the list" in stderr
    assert "upstream prompt None is not a valid MCP prompt" in stderr
    assert "Traceback" not in stderr


def test_listed_resources_and_prompts_and_a_prompts_messages_are_bounded(tmp_path: Path, env: dict[str, str]) -> None:
    # a resource listed with a 2 MB description, and a 3 MB prompt message, were passed whole
    async def check(s: ClientSession) -> None:
        resources = {r.name: r for r in (await s.list_resources()).resources}
        big = resources["big"]
        assert str(big.uri) == "mem://big" and utf8(big.description) <= 1024
        assert "of 2,000,000 bytes of this description cut" in (big.description or "")
        assert resources["ok"].description == "a small resource"
        read = await s.read_resource("mem://blob")  # a 3 MB blob reached the client whole
        note, icon = read.contents
        assert isinstance(note, types.TextResourceContents) and len(note.text) < 600, note
        assert "blob (image/png, 3,000,000 bytes of base64)" in note.text and "stored as handle" in note.text
        assert isinstance(icon, types.BlobResourceContents) and icon.blob == "QUJD" * 10  # a small one passes
        stored = note.text.split("stored as handle ")[1].split()[0]
        kind = await s.call_tool("get_in", {"handle": stored, "path": "mimeType"})
        assert not kind.is_error and "image/png" in texts(kind)[0], kind
        prompts = {p.name: p for p in (await s.list_prompts()).prompts}
        assert utf8(prompts["big_prompt"].description) <= 8 * 1024

        got = await s.get_prompt("big_prompt")
        assert len(got.model_dump_json()) < 5000, len(got.model_dump_json())
        first, second = got.messages
        assert first.role == "user" and isinstance(first.content, types.TextContent)
        assert first.content.text.startswith("[scratchpad] prompts/get output"), first.content.text[:200]
        handle = first.content.text.split('handle "')[1].split('"')[0]
        assert isinstance(second.content, types.TextContent) and second.content.text == "ok"  # a small one is kept
        head = await s.call_tool("head", {"handle": handle, "lines": 2})  # read back in the same session
        assert not head.is_error and "line 0" in texts(head)[0] and "line 1" in texts(head)[0], head

        many = await s.get_prompt("many_small")  # 3,000 small messages: measured together, one stub
        assert len(many.model_dump_json()) < 5000 and len(many.messages) == 1
        stub = many.messages[0].content
        assert isinstance(stub, types.TextContent) and stub.text.startswith("[scratchpad] prompts/get output")
        handle = stub.text.split('handle "')[1].split('"')[0]
        got_one = await s.call_tool("get_in", {"handle": handle, "path": "messages[2999].content.text"})
        assert not got_one.is_error and "2999 mmm" in texts(got_one)[0], got_one

    assert "Traceback" not in through_bounds(env, tmp_path / "store", check)


def test_an_unknown_content_block_is_stored_and_the_rest_passes(tmp_path: Path, env: dict[str, str]) -> None:
    # a {"type": "video"} block dropped the whole result, and the model read pydantic's errors
    async def check(s: ClientSession) -> None:
        res = await s.call_tool("blocks", {})
        assert not res.is_error, res
        before, video, image, after = texts(res)
        assert len(res.content) == 4 and (before, after) == ("before", "after")
        assert video.startswith("[a content block of type 'video', which MCP does not define (3,000,0")
        assert "stored as handle" in video and len(video) < 600, video
        assert image.startswith("[an 'image' content block that is not valid MCP") and "stored as handle" in image
        for said in texts(res):
            assert "pydantic" not in said.lower() and "validation error" not in said.lower()
        handle = video.split("stored as handle ")[1].split(";")[0]
        for name, path in re.findall(r'(\w+)\(handle="[^"]+"(?:, path="([^"]*)")?\)', video):  # the calls it names run
            called = await s.call_tool(name, {"handle": handle, **({"path": path} if path else {})})
            assert not called.is_error, called
        kind = await s.call_tool("get_in", {"handle": handle, "path": "mimeType"})
        assert "video/mp4" in texts(kind)[0], kind

        broken = await s.call_tool("bad_content", {})  # not repairable: a short error, not pydantic's dump
        said = texts(broken)[0]
        assert broken.is_error and "a result that is not valid MCP (content: Input should be a valid list)" in said
        assert "pydantic" not in said.lower() and "not a list not a list" not in said and len(said) < 500, said

        odd = await s.get_prompt("odd_prompt")  # a prompt's message: a note in its place
        first, second = odd.messages
        assert isinstance(first.content, types.TextContent) and isinstance(second.content, types.TextContent)
        assert first.content.text.startswith("[a content block of type 'video', which MCP does not define")
        assert second.content.text == "hi"

    assert "Traceback" not in through_bounds(env, tmp_path / "store", check)


def test_tool_list_changed_notifications_are_coalesced(tmp_path: Path, env: dict[str, str]) -> None:
    # 2,000 notifications were 2,000 re-lists upstream and 2,000 notifications to the client
    told: list[float] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.append(anyio.current_time())

    async def lists(s: ClientSession) -> int:
        """The upstream's count of tools/list requests, once the proxy has stopped re-listing."""
        counts: list[int] = []
        while len(counts) < 3 or counts[-1] != counts[-3]:
            counts.append(int(texts(await s.call_tool("list_count", {}))[0]))
            await anyio.sleep(0.3)
        return counts[-1]

    async def check(s: ClientSession) -> None:
        start = await lists(s)
        assert texts(await s.call_tool("spam", {})) == ["spammed"]
        after_spam = await lists(s)
        assert after_spam - start <= 2, after_spam - start  # one in flight, one pending
        assert told == []  # nothing changed: the client is not told
        assert "added" not in {t.name for t in (await s.list_tools()).tools}

        assert texts(await s.call_tool("spam_and_add", {})) == ["spammed"]
        after_add = await lists(s)
        assert after_add - after_spam <= 2, after_add - after_spam
        assert 1 <= len(told) <= 2, len(told)  # told once per re-list that changed something
        assert "added" in {t.name for t in (await s.list_tools()).tools}
        assert texts(await s.call_tool("added", {})) == ["added later"]

    assert "Traceback" not in through_bounds(env, tmp_path / "store", check, on_message=on_message)


def test_the_blocks_of_one_result_resource_or_prompt_are_bounded_together(tmp_path: Path, env: dict[str, str]) -> None:
    # 40 images just under the bound of one block each (40 MB), or 20,000 resource links, passed
    # whole: each block was bounded, never their sum
    def stored_note(said: str) -> str:
        assert "were kept out of the context by the proxy, stored as handle " in said and len(said) < 800, said[:300]
        return said.split("stored as handle ")[1].split()[0]

    async def check(s: ClientSession) -> None:
        images = await s.call_tool("many_images", {})
        assert len(images.model_dump_json(by_alias=True, exclude_none=True)) < 1_100_000, len(images.model_dump_json(by_alias=True, exclude_none=True))
        kept = [b for b in images.content if isinstance(b, types.ImageContent)]
        assert 5 <= len(kept) < 30 and texts(images)[0] == "thirty pictures"
        note = texts(images)[-1]
        assert f"{30 - len(kept)} more blocks ({30 - len(kept)} image;" in note
        handle = stored_note(note)
        rest = await s.call_tool("get_in", {"handle": handle, "path": "blocks[0].mimeType"})
        assert not rest.is_error and "image/png" in texts(rest)[0], rest
        calls = re.findall(r'(\w+)\((handle="[^"]+".*?)\)(?: or|\])', note)
        assert len(calls) == 2
        for name, args in calls:  # the calls the note names run
            ran = await s.call_tool(name, json.loads("{" + re.sub(r"(\w+)=", r'"\1":', args) + "}"))
            assert not ran.is_error, ran

        links = await s.call_tool("many_links", {})
        assert len(links.model_dump_json(by_alias=True, exclude_none=True)) < 1_100_000
        shown = [b for b in links.content if isinstance(b, types.ResourceLink)]
        assert 1000 < len(shown) < 5000 and str(shown[0].uri) == "file:///data/0.csv"
        last = await s.call_tool("get_in", {"handle": stored_note(texts(links)[-1]), "path": "blocks[-1].uri"})
        assert "file:///data/4999.csv" in texts(last)[0], last

        blobs = await s.read_resource("mem://blobs")
        assert len(blobs.model_dump_json(by_alias=True, exclude_none=True)) < 1_100_000 and len(blobs.contents) < 30
        assert isinstance(blobs.contents[-1], types.TextResourceContents)
        stored_note(blobs.contents[-1].text)

        prompt = await s.get_prompt("many_images")
        assert len(prompt.model_dump_json(by_alias=True, exclude_none=True)) < 1_100_000 and len(prompt.messages) < 30
        note_message = prompt.messages[-1].content
        assert isinstance(note_message, types.TextContent)
        stored_note(note_message.text)

    assert "Traceback" not in through_bounds(env, tmp_path / "store", check)


def test_resources_and_prompts_are_listed_in_bounded_pages(tmp_path: Path, env: dict[str, str]) -> None:
    # 20,000 resources were one 41 MB answer, 2,000 prompts one of 57 MB: now pages a client follows
    async def check(s: ClientSession) -> None:
        for listing, attr, want in (
            (s.list_resources, "resources", {f"r{i}" for i in range(3000)} | {"big", "ok", "blob"}),
            (s.list_prompts, "prompts", {f"p{i}" for i in range(600)} | {"big_prompt", "many_small"}),
        ):
            names: list[str] = []
            cursor, pages = None, 0
            while True:
                page = await listing(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
                assert len(page.model_dump_json(by_alias=True, exclude_none=True)) <= 140 * 1024
                names += [e.name for e in getattr(page, attr)]
                pages += 1
                cursor = page.next_cursor
                if not cursor:
                    break
            assert pages > 3 and want <= set(names) and len(names) == len(set(names)), (attr, pages)

    assert "Traceback" not in through_bounds(env, tmp_path / "store", check, "--many-listed")
