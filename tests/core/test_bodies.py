"""Bodies: formats, raw bytes kept exactly, ranges that cost what they return, bad input."""

from __future__ import annotations

import hashlib
import json
import tracemalloc
from pathlib import Path

import pytest

from jupyter_scratchpad import InvalidArgumentError, ScratchStore
from jupyter_scratchpad.store import normalise
from jupyter_scratchpad.store._bodies import BYTE_STEP, LINE_STEP, BodyReader, write_body_dir


@pytest.mark.parametrize(
    ("result", "fmt"),
    [
        ({"a": [1, 2]}, "json"),
        ([{"a": 1}], "json"),
        ('{"items": [1, 2, 3]}', "json"),
        (b'  [{"x": "y"}]\n', "json"),
        ('{"a": 1}\n{"a": 2}\n{"b": [3]}\n', "jsonl"),
        ("# Title\n\nSome text\n\n## Part\n- item\n", "markdown"),
        ("plain log line 1\nplain log line 2\n", "text"),
        ('{"broken": ', "text"),
        ("123", "text"),
        (b"\xff\xfe\x00binary\x80", "text"),
        ("", "text"),
    ],
)
def test_format_detection(result: object, fmt: str) -> None:
    assert normalise(result).format == fmt


def test_json_body_is_pretty_printed_with_two_spaces_raw_kept() -> None:
    raw = '{"b":{"c":[1,2]},"a":"x"}'
    n = normalise(raw)
    assert n.raw == raw.encode()
    assert n.body.decode() == json.dumps(json.loads(raw), indent=2) + "\n"


def _lines_of(body: bytes) -> list[str]:
    text = body.decode()
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


@pytest.mark.parametrize("ending", ["\n", ""])
@pytest.mark.parametrize("shape", ["short", "long", "mixed"])
def test_line_index_finds_every_line(tmp_path: Path, ending: str, shape: str) -> None:
    if shape == "short":
        lines = [f"l{i}" for i in range(3 * LINE_STEP + 7)]
    elif shape == "long":
        lines = [chr(97 + i % 26) * (BYTE_STEP // 3 + i) for i in range(40)]
    else:
        lines = [("y" * (2 * BYTE_STEP) if i % 97 == 0 else f"row {i}") for i in range(2000)]
    body = ("\n".join(lines) + ending).encode()
    write_body_dir(tmp_path / "b", body, None)
    reader = BodyReader(tmp_path / "b")
    assert reader.line_count == len(lines) == len(_lines_of(body))
    assert reader.longest_line == max(len(x) for x in lines)
    for start in (1, 2, LINE_STEP, LINE_STEP + 1, len(lines) // 2, len(lines) - 1, len(lines)):
        for width in (0, 1, 5):
            end = min(len(lines), start + width)
            assert reader.read_lines(start, end) == lines[start - 1 : end], (start, end)
    assert reader.read_lines(len(lines) + 1, len(lines) + 5) == []
    assert list(reader.iter_lines()) == lines


def test_empty_body(tmp_path: Path) -> None:
    write_body_dir(tmp_path / "e", b"", None)
    reader = BodyReader(tmp_path / "e")
    assert (reader.line_count, reader.body_bytes) == (0, 0)
    assert reader.read_lines(1, 10) == []


def test_raw_bytes_are_kept_exactly(pad) -> None:  # type: ignore[no-untyped-def]
    payloads = [
        bytes(range(256)) * 400,  # not UTF-8, NULs included
        "caf\u00e9 \U0001f600 \x00 NUL\n".encode() * 3000,
        ('{"k": "v", "n": 1.0000, "e": 1E5}' + " " * 3).encode() * 1 + b"\n" * 20000,
    ]
    for raw in payloads:
        r = pad.intercept(raw, tool="bytes", force=True)
        assert r.spilled
        size = r.stub["size"]
        assert size == len(raw)
        res = pad.call_tool("read_handle", {"handle": r.handle, "start": 0, "end": size})
        if res.ok:
            got = (
                res.data["text"].encode()
                if res.data["valid_utf8"]
                else __import__("base64").b64decode(res.data["base64"])
            )
            assert got == raw
        else:  # too large for one call: check in ranges
            got = b""
            for start in range(0, size, 4096):
                part = pad.call_tool("read_handle", {"handle": r.handle, "start": start, "end": start + 4096})
                assert part.ok, part.error
                d = part.data
                got += d["text"].encode() if d["valid_utf8"] else __import__("base64").b64decode(d["base64"])
            assert hashlib.sha256(got).digest() == hashlib.sha256(raw).digest()
        entry = pad.entry(r.handle)
        reader = pad.store.reader(entry)
        assert reader.read_raw(0, reader.raw_size) == raw


def test_slicing_a_big_body_does_not_load_it(tmp_path: Path) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad()
        line = b"2026-12-02T10:00:00Z INFO request served path=/api/v1/items latency_ms=12\n"
        n_lines = 400_000  # ~30 MB
        chunks = (line * 10_000 for _ in range(n_lines // 10_000))
        entry, _ = store.put_body(
            pad.scope,
            handle="biglog",
            raw=chunks,
            body=None,
            content_hash="x" * 64,
            fmt="text",
            size_bytes=len(line) * n_lines,
            tokens=None,
            preview="",
            source_tool="bench",
            server=None,
        )
        assert entry.line_count == n_lines
        tracemalloc.start()
        try:
            res = pad.call_tool("slice", {"handle": "biglog", "start": 300_001, "end": 300_010})
            tail = pad.call_tool("tail", {"handle": "biglog", "lines": 3})
            rng = pad.call_tool("read_handle", {"handle": "biglog", "start": 20_000_000, "end": 20_000_100})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert res.ok and res.data["start"] == 300_001 and len(res.data["lines"]) == 10
        assert tail.ok and tail.data["start"] == n_lines - 2
        assert rng.ok and len(rng.data["text"]) == 100
        assert peak < 4 * 1024 * 1024  # the body is 30 MB


BAD_INPUTS = [
    "",
    b"",
    b"\xc3\x28 not utf-8 \xa0\xa1" * 5000,
    '{"unterminated": [1, 2, 3' * 3000,
    "[" * 100_000 + "]" * 100_000,
    "x" * 50_000_000,
    "a\x00b\x00c\n" * 20_000,
    {"../../etc/passwd": "x" * 10_000, "'; DROP TABLE scratch_entries; --": [None] * 3000},
    [float("nan"), float("inf"), 10**40, {"k": {1: 2}}] * 3000,
]


@pytest.mark.parametrize("result", BAD_INPUTS, ids=[f"bad{i}" for i in range(len(BAD_INPUTS))])
def test_bad_input_never_crashes_and_loses_nothing(pad, result: object) -> None:  # type: ignore[no-untyped-def]
    before = pad.intercept("kept safe\n" * 6000, tool="earlier")
    assert before.spilled
    r = pad.intercept(result, tool="weird", force=True)
    assert r.failure is None
    assert r.spilled
    for tool, args in [
        ("head", {"lines": 3}),
        ("tail", {"lines": 3}),
        ("schema", {}),
        ("grep", {"pattern": "x", "max_matches": 2}),
        ("read_handle", {"start": 0, "end": 64}),
    ]:
        res = pad.call_tool(tool, {"handle": r.handle, **args})
        assert res.ok or res.error["error"] in ("invalid_argument", f"{tool}_too_large"), res.error
    assert pad.call_tool("head", {"handle": before.handle, "lines": 1}).data["lines"] == ["kept safe"]


def test_named_handle_validation(pad) -> None:  # type: ignore[no-untyped-def]
    for bad in ("../../etc/passwd", "Has Caps", "quote'", "x" * 65, ""):
        with pytest.raises(InvalidArgumentError):
            pad.intercept("data", tool="t", handle=bad, force=True)
    r = pad.intercept("v1", tool="t", handle="my_result", force=True)
    assert r.handle == "my_result"
    r2 = pad.intercept("v2 different", tool="t", handle="my_result", force=True)
    assert r2.handle == "my_result"
    assert pad.get("my_result") == "v2 different"
    assert len(pad.entries("handle")) == 1


def test_line_at_agrees_with_counting(tmp_path: Path) -> None:
    lines = [("z" * (BYTE_STEP + 5) if i % 50 == 0 else f"line {i}") for i in range(3000)]
    body = ("\n".join(lines) + "\n").encode()
    write_body_dir(tmp_path / "b", body, None)
    reader = BodyReader(tmp_path / "b")
    for offset in (0, 1, 7, BYTE_STEP, BYTE_STEP * 3 + 11, len(body) // 2, len(body) - 2):
        assert reader.line_at(offset) == body[:offset].count(b"\n") + 1
