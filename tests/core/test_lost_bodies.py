"""A body lost under a live entry (removed outside the store, cut short by a crash, ``bodies/``
removed by a cleaner of /tmp): reads say so and offer the delete, the same output spilled again is
stored again under its handle, spills and sweeps go on, and a store closed right after a large
spill keeps its exact token count. Found by a probe of failing spills."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from jupyter_scratchpad import ScratchStore

TEXT = "\n".join(f"line {i} some payload text status=ok" for i in range(50_000))


def _body_dir(store: ScratchStore, handle: str, pad) -> Path:  # type: ignore[no-untyped-def]
    entry = store.get_entry(pad.scope, "handle", handle)
    assert entry is not None
    return store.path / "bodies" / str(entry.body_id)


def test_a_removed_body_is_said_and_the_same_output_is_stored_again(tmp_path: Path) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept(TEXT, tool="logs").handle
        shutil.rmtree(_body_dir(store, h, pad))
        res = pad.call_tool("head", {"handle": h, "lines": 2})
        # was: "removed while it was being read … list live handles", no suggestion, for ever
        assert "is gone from" in res.error["message"] and "delete the handle" in res.error["message"]
        assert res.error["suggestions"][0]["tool"] == "scratch_delete"
        again = pad.intercept(TEXT, tool="logs")  # was: withheld, "the body … was removed", every time
        assert again.spilled and again.handle == h and again.failure is None
        assert pad.call_tool("head", {"handle": h, "lines": 1}).data["lines"][0].startswith("line 0 ")


def test_a_body_cut_short_is_written_anew_not_refreshed(tmp_path: Path) -> None:
    now = [2_000_000.0]
    with ScratchStore(tmp_path / "s", sweep_interval_s=None, clock=lambda: now[0], ttl_s=100) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept(TEXT, tool="logs").handle
        body = _body_dir(store, h, pad)
        os.truncate(body / "raw", 1000)  # what a machine crash leaves
        store._readers.clear()  # (another process, or after a restart)
        now[0] += 60
        again = pad.intercept(TEXT, tool="logs")
        assert again.spilled and again.handle == h, again.failure
        assert pad.call_tool("slice", {"handle": h, "start": 50_000, "end": 50_000}).ok
        assert not body.exists()  # the damaged one is gone, a whole one stands in its place


def test_a_lost_json_body_written_anew_is_not_called_reused_and_its_schema_is_made(tmp_path: Path) -> None:
    items = [{"name": f"pod-{i}", "phase": "Running", "restarts": i % 5} for i in range(5_000)]
    doc = json.dumps({"items": items})  # JSON text: the spill parses it and precomputes its schema
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        h = pad.intercept(doc, tool="pods").handle
        same = pad.intercept(doc, tool="pods")
        assert same.handle == h and same.stub.get("reused") is True  # the live body: reused
        assert pad.wait_for_counts(30)
        shutil.rmtree(_body_dir(store, h, pad))
        store._readers.clear()
        again = pad.intercept(doc, tool="pods")
        assert again.spilled and again.handle == h and "reused" not in again.stub  # written anew
        assert pad.wait_for_counts(30)  # the schema precomputed beside the new body (was skipped: "existing")
        assert any(p.name.startswith("schema") for p in _body_dir(store, h, pad).iterdir())
        assert pad.call_tool("item_schema", {"handle": h, "path": "items"}).ok


def test_bodies_removed_by_a_cleaner_are_made_again(tmp_path: Path) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        pad.intercept(TEXT, tool="before")
        shutil.rmtree(store.path / "bodies")
        shutil.rmtree(store.path / "tmp")
        after = pad.intercept(TEXT + "\nmore", tool="after")  # was: failed until the store was reopened
        assert after.spilled, after.failure
        assert store.sweep() == 0  # was: FileNotFoundError with the host path
        assert pad.call_tool("tail", {"handle": after.handle, "lines": 1}).data["lines"][0] == "more"


def test_a_store_closed_right_after_a_large_spill_keeps_the_exact_count(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with ScratchStore(path, sweep_interval_s=None) as store:
        h = store.scratchpad("r", "a").intercept(TEXT * 4, tool="logs").handle
    with ScratchStore(path, sweep_interval_s=None) as store:  # was: "≥ 5,120 tokens" for ever
        (row,) = [r for r in store.list_entries("r") if r["handle"] == h]
        assert row["tokens_exact"] is True and row["tokens"] > 5_120


def test_intercept_refuses_metadata_that_is_not_a_mapping(tmp_path: Path) -> None:
    import pytest

    from jupyter_scratchpad import InvalidArgumentError

    with ScratchStore(tmp_path / "s") as store:  # was: a 12-byte output withheld as "too large"
        with pytest.raises(InvalidArgumentError, match="metadata must be a mapping"):
            store.scratchpad().intercept({"ok": True}, tool="t", metadata=5)  # type: ignore[arg-type]


def test_a_damaged_or_removed_catalog_says_what_to_do(tmp_path: Path) -> None:
    import pytest

    from jupyter_scratchpad import StoreFormatError

    path = tmp_path / "s"
    with ScratchStore(path) as store:
        store.scratchpad().intercept(TEXT, tool="logs")
    with open(path / "catalog.duckdb", "r+b") as fh:
        fh.write(b"\xff" * 4096)
    with pytest.raises(StoreFormatError, match=r"move .* aside .* open a new store"):
        ScratchStore(path)
    (path / "catalog.duckdb").unlink()
    (path / "catalog.duckdb.wal").unlink(missing_ok=True)
    # was: "belongs to another scratch catalog … its sweep would delete that catalog's bodies"
    with pytest.raises(StoreFormatError, match=r"catalog\.duckdb\) is gone") as gone:
        ScratchStore(path)
    assert "another scratch catalog" not in str(gone.value)
