"""Handles that live as long as they are used (issue 11 §7): each successful read slides the TTL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_scratchpad import ScratchStore


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """Every tool works unchanged on both backends (embedded DuckDB, shared PostgreSQL)."""
    return backend_store


LOG = "\n".join(f"2026-12-03T10:00:{i % 60:02d} worker-{i % 5} handled request {i}" for i in range(3000))


def test_a_handle_read_a_minute_ago_outlives_its_first_hour(store: ScratchStore, clock: Any) -> None:
    pad = store.scratchpad("r", "a")
    h = pad.spill(LOG, tool="fetch_logs").handle
    clock.advance(3540)  # 59 minutes: still alive, then read
    assert pad.call_tool("head", {"handle": h, "lines": 5}).ok
    clock.advance(61)  # +3,601 s after the spill: alive, because it was read at +3,540 s
    res = pad.call_tool("head", {"handle": h, "lines": 5})
    assert res.ok, res.text
    clock.advance(3601)  # idle for more than its TTL: gone
    gone = pad.call_tool("head", {"handle": h, "lines": 5})
    assert not gone.ok and gone.error["error"] == "expired_handle", gone.text
    assert "expired 1 s ago" in gone.error["message"] and "spill the output again" in gone.error["message"]


def test_a_refused_or_failed_call_does_not_extend(store: ScratchStore, clock: Any) -> None:
    pad = store.scratchpad("r", "a")
    h = pad.spill(LOG, tool="fetch_logs").handle
    before = pad.store.get_entry(pad.scope, "handle", h).expires_at
    clock.advance(600)
    bad = pad.call_tool("slice", {"handle": h, "start": 10, "end": 2})
    assert not bad.ok
    assert pad.store.get_entry(pad.scope, "handle", h).expires_at == before


def test_the_slide_keeps_the_entrys_own_ttl_and_stops_at_max_ttl(tmp_path: Path, clock: Any) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None, clock=clock, max_ttl_s=7200) as store:
        pad = store.scratchpad("r", "a")
        short = pad.spill(LOG, tool="fetch_logs", ttl_s=60).handle
        clock.advance(50)
        assert pad.call_tool("tail", {"handle": short, "lines": 3}).ok
        # its own 60 s, not the store's hour
        assert store.get_entry(pad.scope, "handle", short).expires_at == clock() + 60
        long = pad.spill(LOG + "\nmore", tool="fetch_logs").handle
        created = store.get_entry(pad.scope, "handle", long).created_at
        for _ in range(5):  # read every 50 minutes: lives on, but never past max_ttl_s after its spill
            clock.advance(3000)
            if not pad.call_tool("head", {"handle": long, "lines": 1}).ok:
                break
        assert clock() - created > 7200 - 3000
        assert store.get_entry(pad.scope, "handle", long) is None


def test_notes_keep_their_explicit_ttl(store: ScratchStore, clock: Any) -> None:
    pad = store.scratchpad("r", "a")
    pad.scratch_write("plan", {"step": 1}, ttl_s=100)
    clock.advance(90)
    assert pad.call_tool("scratch_read", {"key": "plan"}).ok
    clock.advance(20)
    assert not pad.call_tool("scratch_read", {"key": "plan"}).ok


def test_reads_close_together_write_the_expiry_once(store: ScratchStore, clock: Any) -> None:
    pad = store.scratchpad("r", "a")
    h = pad.spill(LOG, tool="fetch_logs").handle
    clock.advance(600)
    assert pad.call_tool("head", {"handle": h, "lines": 2}).ok
    moved = pad.store.get_entry(pad.scope, "handle", h).expires_at
    clock.advance(20)  # less than 1% of the hour gained: no catalog write for this read
    assert pad.call_tool("head", {"handle": h, "lines": 2}).ok
    assert pad.store.get_entry(pad.scope, "handle", h).expires_at == moved
    clock.advance(60)
    assert pad.call_tool("head", {"handle": h, "lines": 2}).ok
    assert pad.store.get_entry(pad.scope, "handle", h).expires_at == moved + 80


def test_a_read_that_outlasts_the_expiry_still_slides_it(
    store: ScratchStore, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a 300 MB grep started 0.3 s before the expiry succeeded after it; the slide needed the
    # handle live at its end, so the next call found none
    import dataclasses

    from jupyter_scratchpad import tools

    pad = store.scratchpad("r", "a")
    h = pad.spill(LOG, tool="fetch_logs").handle
    clock.advance(3599)  # a second left
    head = tools.TOOLS["head"]

    def slow(*args: Any, **kwargs: Any) -> Any:
        out = head.run(*args, **kwargs)
        clock.advance(5)  # the read ends 4 s after the expiry (no sweep ran meanwhile)
        return out

    monkeypatch.setitem(tools.TOOLS, "head", dataclasses.replace(head, run=slow))
    assert pad.call_tool("head", {"handle": h, "lines": 5}).ok
    monkeypatch.setitem(tools.TOOLS, "head", head)
    clock.advance(60)
    again = pad.call_tool("head", {"handle": h, "lines": 5})
    assert again.ok, again.text  # slid to an hour after the read


def test_a_gone_handle_is_not_offered_other_data_of_the_same_source(store: ScratchStore, clock: Any) -> None:
    # an expired cell_14_… was offered cell_5_… ("did you mean"): the same source, other data
    pad = store.scratchpad("r", "a")
    old = pad.spill(LOG, tool="cell_14", ttl_s=60).handle
    clock.advance(30)
    other = pad.spill(LOG + "\nmore", tool="cell_5").handle
    clock.advance(31)
    gone = pad.call_tool("head", {"handle": old})
    assert gone.error["error"] == "expired_handle" and gone.error["close_matches"] == []
    assert [s["tool"] for s in gone.error["suggestions"]] == ["scratch_list"]
    # a typo of the id is one, and so is the source without its id, or capitals and spaces
    typo = pad.call_tool("head", {"handle": other[:-1] + ("0" if other[-1] != "0" else "1")})
    assert typo.error["close_matches"] == [other]
    assert pad.call_tool("head", {"handle": "cell_5"}).error["close_matches"] == [other]
    upper = pad.call_tool("head", {"handle": f" {other.upper()}"})
    assert upper.error["error"] == "invalid_handle" and upper.error["suggestions"][0]["arguments"]["handle"] == other


def test_sql_over_an_expired_handle_says_it_expired(store: ScratchStore, clock: Any) -> None:
    # head said "expired 1 s ago … spill the output again"; sql said DuckDB's "Catalog Error: Table
    # with name … does not exist!"
    pad = store.scratchpad("r", "a")
    h = pad.spill(LOG, tool="fetch_logs").handle
    j = pad.spill({"items": [{"i": i} for i in range(300)]}, tool="list").handle
    clock.advance(3601)
    for query in (f"SELECT count(*) FROM {h}", f"SELECT count(*) FROM {j}.items"):
        gone = pad.call_tool("sql", {"query": query})
        assert gone.error["error"] == "expired_handle" and "spill the output again" in gone.error["message"], gone.text


def test_sql_over_a_text_body_removed_underneath_is_an_error_not_zero_rows(store: ScratchStore) -> None:
    # read_text of a removed file reads no rows: count(*) answered 0
    import shutil

    pad = store.scratchpad("r", "a")
    h = pad.spill(LOG, tool="fetch_logs").handle
    shutil.rmtree(Path(pad.store.reader(pad.entry(h)).body_path).parent)
    res = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {h}"})
    # its entry still names it: lost (embedded "is gone from", shared "is not in"), the delete offered
    assert not res.ok and ("is gone from" in res.text or "is not in" in res.text), res.text
    assert res.error["suggestions"][0]["tool"] == "scratch_delete"
