"""A JSON spill scans its raw bytes once: the long-number test (exact numbers) and the embedded-
document test (strings that hold JSON or markdown) are one RE2 set (``raw_marks``), and what it
found is handed to the parser, the segments of a streamed document and the spill's walk."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.explore import _embedded
from jupyter_scratchpad.store import _format, _jsonstream, _jsontext
from jupyter_scratchpad.store._jsontext import ExactNumber, loads, raw_marks


def _separately(raw: bytes) -> tuple[bool, bool]:
    return _jsontext._LONG_NUMBER.search(raw) is not None, _embedded.may_embed(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b'{"a": 1}',
        b'{"a": 12345678901234567890}',
        b'{"a": 0.1000000000000000000001}',
        b'{"a": "{\\"b\\": 1}"}',
        b'{"a": "# Title\\nbody"}',
        b'{"a": "x\\n## Heading\\n"}',
        b'[1, "[2]", 12345678901234567890123]',
        b'{"id": "12345678901234567890"}',  # digits inside a string are not a number token
    ],
)
def test_one_scan_finds_what_the_two_searches_find(raw: bytes) -> None:
    assert raw_marks(raw) == _separately(raw)


def test_one_scan_agrees_with_the_two_searches_on_random_documents() -> None:
    rng = random.Random(7)
    alphabet = ['"', "{", "[", ":", ",", " ", "#", "\\n", "1", "9", ".", "e", "-", "a", "\n"]
    seen = set()
    for _ in range(3000):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))).encode()
        raw += b":" + b"1" * rng.randint(10, 20) if rng.random() < 0.3 else b""
        marks = raw_marks(raw)
        seen.add(marks)
        assert marks == _separately(raw), raw
    assert seen == {(False, False), (False, True), (True, False), (True, True)}


class _Counting:
    """Counts the searches of a compiled pattern (RE2 objects cannot be patched in place)."""

    def __init__(self, pattern: Any) -> None:
        self.pattern, self.calls = pattern, 0

    def search(self, raw: bytes) -> Any:
        self.calls += 1
        return self.pattern.search(raw)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[_Counting, _Counting]:
    long_number = _Counting(_jsontext._LONG_NUMBER)
    may_embed = _Counting(_embedded._MAY_EMBED)
    monkeypatch.setattr(_jsontext, "_LONG_NUMBER", long_number)
    monkeypatch.setattr(_embedded, "_MAY_EMBED", may_embed)
    return long_number, may_embed


def _pods(n: int, long_number_at: int | None = None) -> str:
    items = [{"name": f"pod-{i}", "phase": "Running", "restarts": i % 4} for i in range(n)]
    if long_number_at is not None:
        items[long_number_at]["uid"] = 123456789012345678901234567890  # type: ignore[assignment]
    return json.dumps({"kind": "PodList", "items": items})


def test_a_json_spill_scans_its_text_once(tmp_path: Path, counted: tuple[_Counting, _Counting]) -> None:
    long_number, may_embed = counted
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad(run_id="r", agent_id="a")
        r = pad.intercept(_pods(5000), tool="kubectl", force=True)
        assert r.spilled
        # (before: the parser searched for long numbers and the spill for embedded documents)
        assert (long_number.calls, may_embed.calls) == (0, 0)
        got = pad.call_tool("get_in", {"handle": r.stub["handle"], "path": "items[4999].name"})
        assert got.ok and got.data == "pod-4999"


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Small documents take the streamed path; what ``stream_json`` returned is listed."""
    monkeypatch.setattr(_jsonstream, "SEGMENT_BYTES", 2048)
    monkeypatch.setattr(_format, "STREAM_MIN_BYTES", 8192)
    found: list[Any] = []
    real = _format.stream_json

    def spy(raw: bytes, long_numbers: bool | None = None) -> Any:
        found.append(real(raw, long_numbers))
        return found[-1]

    monkeypatch.setattr(_format, "stream_json", spy)
    return found


def test_a_streamed_spill_scans_no_segment_again(
    tmp_path: Path, streamed: list[Any], counted: tuple[_Counting, _Counting]
) -> None:
    long_number, may_embed = counted
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad(run_id="r", agent_id="a")
        r = pad.intercept(_pods(3000), tool="kubectl", force=True)
        assert r.spilled and len(streamed) == 1 and len(streamed[0].segments) > 10
        assert (long_number.calls, may_embed.calls) == (0, 0)


def test_a_long_number_in_one_segment_stays_exact(tmp_path: Path, streamed: list[Any]) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad(run_id="r", agent_id="a")
        r = pad.intercept(_pods(3000, long_number_at=2500), tool="kubectl", force=True)
        assert r.spilled and len(streamed) == 1 and streamed[0] is not None
        got = pad.call_tool("get_in", {"handle": r.stub["handle"], "path": "items[2500].uid"})
        assert got.ok and got.data == 123456789012345678901234567890, got.text
        assert "123456789012345678901234567890" in got.text


def test_loads_told_there_are_no_long_numbers_skips_the_scan(counted: tuple[_Counting, _Counting]) -> None:
    long_number, _ = counted
    assert loads(b'{"a": 1.5}', False) == {"a": 1.5}
    assert long_number.calls == 0
    exact = loads(b'{"a": 0.1000000000000000000001}', True)["a"]
    assert isinstance(exact, ExactNumber) and exact.text == "0.1000000000000000000001"
    assert loads(b'{"a": 0.1000000000000000000001}')["a"].text == "0.1000000000000000000001"
    assert long_number.calls == 1
