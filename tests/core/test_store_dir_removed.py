"""An embedded store whose whole directory is removed (a cleaner of temporary files takes the
default store's) or replaced while it is open fails closed: spills are withheld with a pointer
naming the cause, note writes and reads get a store error, and nothing is written into a directory
made again. It went on: spills and notes were "stored" in a catalog file with no name on disk and
lost at close, ``bodies/`` made again with orphans in it. Found by a probe (report R, finding 2)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore, StoreClosedError

BIG = {"items": [{"id": i, "v": "x" * 30} for i in range(20_000)]}
CAUSE = "was removed or replaced while the store was open"


def _assert_fails_closed(pad: Scratchpad) -> None:
    big = pad.intercept(BIG, tool="big")
    assert not big.spilled and big.handle is None and big.stub is None
    assert big.failure is not None and CAUSE in big.failure
    assert CAUSE in big.content and "was withheld" in big.content and "Nothing of it was stored" in big.content
    assert len(big.content) < 2_000  # the short pointer, not the output
    assert "stored as" not in big.content
    note = pad.call_tool("scratch_write", {"key": "n", "value": "important"})
    assert not note.ok and note.error["error"] == "store_error" and CAUSE in note.error["message"]
    assert "saved" not in note.text


def _open(path: Path | None) -> tuple[ScratchStore, Scratchpad]:
    store = ScratchStore(path, sweep_interval_s=None)
    return store, store.scratchpad("r", "a")


def test_spills_and_notes_after_the_directory_is_removed_fail_closed(tmp_path: Path) -> None:
    logging.disable(logging.CRITICAL)
    try:
        store, pad = _open(tmp_path / "s")
        before = pad.intercept(BIG, tool="before")
        assert before.spilled
        assert pad.call_tool("scratch_write", {"key": "old", "value": 1}).ok
        shutil.rmtree(store.path)
        _assert_fails_closed(pad)
        # a read that would tell a note the store no longer holds
        read = pad.call_tool("scratch_read", {"key": "old"})
        assert not read.ok and CAUSE in read.error["message"]
        with pytest.raises(StoreClosedError, match=CAUSE):
            store.sweep()
        assert not store.path.exists()  # bodies/ and tmp/ were made again, the body written there
        store.close()
        assert not store.path.exists()
    finally:
        logging.disable(logging.NOTSET)


def test_the_default_temporary_store_removed_by_a_cleaner(tmp_path: Path) -> None:
    logging.disable(logging.CRITICAL)
    try:
        store, pad = _open(None)
        shutil.rmtree(store.path)
        _assert_fails_closed(pad)
        assert not store.path.exists()
        store.close()
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("replacement", ["empty", "copy"])
def test_a_directory_replaced_under_the_open_store_is_noticed(tmp_path: Path, replacement: str) -> None:
    logging.disable(logging.CRITICAL)
    try:
        store, pad = _open(tmp_path / "s")
        assert pad.intercept(BIG, tool="before").spilled
        aside = tmp_path / "aside"
        store.path.rename(aside)
        if replacement == "empty":
            store.path.mkdir()
        else:  # the same names, other files
            shutil.copytree(aside, store.path, ignore=shutil.ignore_patterns("LOCK"))
        listed = sorted(p.name for p in store.path.iterdir())
        _assert_fails_closed(pad)
        assert sorted(p.name for p in store.path.iterdir()) == listed  # nothing written into it
        store.close()
        assert sorted(p.name for p in store.path.iterdir()) == listed  # (its close deleted the copy's WAL)
    finally:
        logging.disable(logging.NOTSET)


def test_a_removal_between_the_check_and_the_write_makes_no_directory(tmp_path: Path) -> None:
    logging.disable(logging.CRITICAL)
    try:
        store, pad = _open(tmp_path / "s")
        # the directory goes after the catalog check passed: the body's directory is not made
        store._check_here = lambda: None  # type: ignore[method-assign]
        shutil.rmtree(store.path)
        big = pad.intercept(BIG, tool="big")
        assert not big.spilled and big.failure is not None and CAUSE in big.failure
        assert not store.path.exists()
        store.close()
    finally:
        logging.disable(logging.NOTSET)


def test_the_normal_path_is_unaffected(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with ScratchStore(path, sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        big = pad.intercept(BIG, tool="big")
        assert big.spilled and big.failure is None
        assert pad.call_tool("scratch_write", {"key": "n", "value": "kept"}).ok
        shutil.rmtree(store.path / "bodies")  # bodies/ alone removed: made again, spills go on
        again = pad.intercept({"other": list(range(30_000))}, tool="again")
        assert again.spilled, again.failure
        assert store.sweep() == 0
        handle = again.handle
    with ScratchStore(path, sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        assert pad.call_tool("scratch_read", {"key": "n"}).data == "kept"
        assert pad.call_tool("head", {"handle": handle, "lines": 1}).ok


def test_a_new_store_at_the_removed_path_is_a_new_store(tmp_path: Path) -> None:
    # DuckDB keeps a database per path while a connection to it is open: a store opened at the
    # same path after the removal (as the error says to) got the old, unlinked database, and what
    # it was given was "stored" and lost at close. The store now closes itself when it finds out.
    logging.disable(logging.CRITICAL)
    try:
        path = tmp_path / "s"
        old, old_pad = _open(path)
        assert old_pad.intercept(BIG, tool="before").spilled
        shutil.rmtree(path)
        assert old.removed and old.closed  # found by a stat; closed itself: nothing of it holds the path
        _assert_fails_closed(old_pad)  # (the cause, not "closed")
        new, pad = _open(path)
        assert pad.entries("handle") == []  # (was: the old database's entry)
        kept = pad.intercept({"other": list(range(30_000))}, tool="new")
        assert kept.spilled and pad.call_tool("scratch_write", {"key": "n", "value": "kept"}).ok
        old.close()  # the old store's close writes nothing into the new one
        new.close()
        with ScratchStore(path, sweep_interval_s=None) as again:
            pad = again.scratchpad("r", "a")
            assert [e["handle"] for e in pad.entries("handle")] == [kept.handle]
            assert pad.call_tool("scratch_read", {"key": "n"}).data == "kept"
    finally:
        logging.disable(logging.NOTSET)
