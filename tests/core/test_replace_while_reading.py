"""A named handle re-spilled with new content while another thread reads it: every read answers
(from the body it opened, or the new one), and the replaced body is swept once no read can hold
it. Its body was removed at once: 16 of 18 SQL reads said "DuckDB cannot read this handle" (a
live handle), and on PostgreSQL the line tools said "no live handle"."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter

import pytest

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.store import _store


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    return backend_store


def _doc(version: int) -> str:
    return json.dumps({"v": version, "items": [{"i": i, "v": version, "pad": "p" * 50} for i in range(8000)]})


def test_reads_racing_a_replacement_all_answer(store: ScratchStore) -> None:
    pad = store.scratchpad(run_id="r", agent_id="a", model="gpt-4o")
    pad.intercept(_doc(0), tool="t", handle="h", force=True)
    stop = threading.Event()
    written = Counter[str]()

    def writer() -> None:
        version = 0
        while not stop.is_set():
            version += 1
            pad.intercept(_doc(version), tool="t", handle="h", force=True)
            written["n"] += 1

    thread = threading.Thread(target=writer)
    thread.start()
    failures: list[str] = []
    reads = 0
    try:
        started = time.monotonic()
        while time.monotonic() - started < 6 or written["n"] < 3:
            for tool, args in (
                ("head", {"handle": "h", "lines": 3}),
                ("get_in", {"handle": "h", "path": "$.items[7999].i"}),
                ("sql", {"query": "SELECT count(*) AS n FROM h.items"}),
            ):
                res = pad.call_tool(tool, args)
                reads += 1
                if not res.ok:
                    failures.append(f"{tool}: {res.text[:200]}")
                elif tool == "sql":
                    assert res.data == [{"n": 8000}]
            if time.monotonic() - started > 60:
                break
    finally:
        stop.set()
        thread.join()
    assert written["n"] >= 3 and reads >= 9
    assert not failures, failures[:3]


def test_a_replaced_body_is_swept_once_its_grace_is_over(store: ScratchStore, monkeypatch: pytest.MonkeyPatch) -> None:
    pad = store.scratchpad(run_id="r", agent_id="a", model="gpt-4o")
    for version in range(3):
        pad.intercept(_doc(version), tool="t", handle="h", force=True)
    bodies = store.path / "bodies"
    assert len(list(bodies.iterdir())) == 3  # the replaced ones wait for their readers
    store.sweep()
    assert len(list(bodies.iterdir())) == 3  # still within RETIRED_GRACE_S
    monkeypatch.setattr(_store, "RETIRED_GRACE_S", 0.0)
    store.orphan_grace_s = 0.0  # (a shared store's orphans wait 15 minutes for other writers)
    store.sweep()
    left = list(bodies.iterdir())
    assert len(left) == 1
    assert pad.call_tool("get_in", {"handle": "h", "path": "$.v"}).text.startswith("2")
