"""The proxy reads an upstream's stdout in whole lines (the SDK's reader is quadratic in a message's
size): the same lines, in the same order, whatever the chunks; a real server's 8 MB result whole."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream

from jupyter_scratchpad.mcp._lines import LineAlignedText, use_line_aligned_reader

MIXED = Path(__file__).parent / "servers" / "mixed_server.py"


def _sdk_lines(stream_class: type[TextReceiveStream], chunks: list[bytes]) -> tuple[list[str], list[str]]:
    """The SDK's stdout loop over ``chunks`` (``mcp.client.stdio``): the lines it parses, and the
    text it carried from one chunk to the next."""

    async def run() -> tuple[list[str], list[str]]:
        send, receive = anyio.create_memory_object_stream[bytes](len(chunks) + 1)
        for chunk in chunks:
            send.send_nowait(chunk)
        send.close()
        lines: list[str] = []
        carried: list[str] = []
        buffer = ""
        async with stream_class(receive) as stream:  # type: ignore[arg-type]
            async for chunk in stream:
                parts = (buffer + chunk).split("\n")
                buffer = parts.pop()
                lines += parts
                carried.append(buffer)
        return lines, carried

    return anyio.run(run)


def _cut(data: bytes, rng: random.Random, most: int) -> list[bytes]:
    chunks, at = [], 0
    while at < len(data):
        size = rng.randint(1, most)
        chunks.append(data[at : at + size])
        at += size
    return chunks


@pytest.mark.parametrize("seed", range(40))
def test_the_same_lines_whatever_the_chunks(seed: int) -> None:
    rng = random.Random(seed)
    words = ["pod", "ünïcödé", "€", "日本語", "🙂", "", '{"a": [1, 2]}', "x" * rng.randint(0, 3000)]
    lines = ["".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(0, 30))]
    text = "\n".join(lines) + rng.choice(["", "\n", "\npartial"])
    chunks = _cut(text.encode(), rng, rng.choice([1, 7, 64, 4096]))  # (cuts inside characters too)
    theirs, _ = _sdk_lines(TextReceiveStream, chunks)
    ours, carried = _sdk_lines(LineAlignedText, chunks)
    assert ours == theirs  # what the SDK parses does not change
    # nothing is carried from chunk to chunk but at the very end (a last line with no newline)
    assert all(c == "" for c in carried[:-1])


def test_a_long_line_is_handed_over_once_whole() -> None:
    line = json.dumps({"items": ["x" * 100] * 50_000}) + "\n"  # ~5 MB
    chunks = _cut(line.encode(), random.Random(1), 65_536)
    ours, carried = _sdk_lines(LineAlignedText, chunks)
    assert ours == [line[:-1]] and carried == [""]  # the SDK's loop ran once, on the whole line


def test_it_takes_the_sdks_place_once_and_leaves_another_reader_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp.client.stdio as stdio

    monkeypatch.setattr(stdio, "TextReceiveStream", TextReceiveStream)
    assert use_line_aligned_reader() and stdio.TextReceiveStream is LineAlignedText
    assert use_line_aligned_reader() and stdio.TextReceiveStream is LineAlignedText
    other = type("SomethingElse", (), {})
    monkeypatch.setattr(stdio, "TextReceiveStream", other)
    assert not use_line_aligned_reader() and stdio.TextReceiveStream is other


def test_a_real_server_result_of_megabytes_arrives_whole(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    import mcp.client.stdio as stdio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    monkeypatch.setattr(stdio, "TextReceiveStream", TextReceiveStream)
    assert use_line_aligned_reader()

    async def run() -> Any:
        params = StdioServerParameters(command=sys.executable, args=[str(MIXED)], env=env)
        async with stdio_client(params) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            big = await session.call_tool("big_listing", {"mb": 8})
            small = await session.call_tool("small", {})
            return big, small

    big, small = anyio.run(run)
    doc = json.loads(big.content[0].text)
    assert len(doc["items"]) == 56_000 and doc["items"][-1]["name"] == "pod-55999"
    assert small.content[0].text == "just this"  # the next message, after the long line
