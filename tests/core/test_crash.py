"""A spill killed by SIGKILL leaves no half-entry visible, and the next sweep no orphan body."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jupyter_scratchpad import ScratchStore

CHILD = textwrap.dedent(
    """
    import os, sys, time
    from jupyter_scratchpad import ScratchStore
    from jupyter_scratchpad.store import _store, _bodies

    path, stage, ready = sys.argv[1], sys.argv[2], sys.argv[3]

    def wait_for_kill():
        open(ready, "w").close()
        time.sleep(120)

    store = ScratchStore(path, sweep_interval_s=None)
    pad = store.scratchpad("run", "agent")
    pad.intercept("committed before the crash\\n" * 5000, tool="before")

    if stage == "writing":           # halfway through writing the body files
        def slow_write(directory, raw, body, durable=False):
            directory.mkdir(parents=True)
            (directory / "raw").write_bytes(raw[: len(raw) // 2])
            wait_for_kill()
        _store.write_body_dir = slow_write
    elif stage == "renamed":         # body renamed into bodies/, catalog row not yet inserted
        def stalled_insert(self, *args, **kwargs):
            wait_for_kill()
        type(store._cat).insert_handle = stalled_insert

    if stage == "loop":
        open(ready, "w").close()
        i = 0
        while True:
            pad.intercept((f"spill {i}\\n" * 20000), tool="loop")
            i += 1
    else:
        pad.intercept("the spill that is killed\\n" * 5000, tool="victim")
    """
)


def _run_and_kill(tmp_path: Path, stage: str, delay: float = 0.0) -> Path:
    store_dir = tmp_path / "store"
    ready = tmp_path / f"ready-{stage}"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store_dir), stage, str(ready)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode() if proc.stderr else "child died")
            if time.monotonic() > deadline:
                raise AssertionError("child never got ready")
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    return store_dir


def _check_consistent(store_dir: Path) -> list[dict]:
    with ScratchStore(store_dir, sweep_interval_s=None) as store:
        pad = store.scratchpad("run", "agent")
        entries = store.entries(pad.scope, "handle")
        for entry in entries:  # every visible entry is complete and byte-exact
            reader = store.reader(entry)
            raw = reader.read_raw(0, reader.raw_size)
            assert len(raw) == entry.size_bytes
            assert hashlib.sha256(raw).hexdigest() == entry.content_hash
            assert pad.call_tool("tail", {"handle": entry.key, "lines": 1}).ok
        store.sweep()
        referenced = {e.body_id for e in entries}
        on_disk = {p.name for p in (store_dir / "bodies").iterdir()}
        assert on_disk == referenced, "orphan bodies left after the sweep"
        assert list((store_dir / "tmp").iterdir()) == []
        return [e.as_dict() for e in entries]


@pytest.mark.parametrize("stage", ["writing", "renamed"])
def test_sigkill_mid_spill_leaves_no_half_entry(tmp_path: Path, stage: str) -> None:
    store_dir = _run_and_kill(tmp_path, stage)
    if stage == "renamed":
        assert len(list((store_dir / "bodies").iterdir())) == 2  # the victim's body is there, rowless
    else:
        assert list((store_dir / "tmp").iterdir())  # a half-written body is there
    entries = _check_consistent(store_dir)
    assert [e["source_tool"] for e in entries] == ["before"]


def test_sigkill_at_arbitrary_moments(tmp_path: Path) -> None:
    for attempt, delay in enumerate((0.05, 0.13, 0.29)):
        store_dir = _run_and_kill(tmp_path / str(attempt), "loop", delay)
        entries = _check_consistent(store_dir)
        assert entries[0]["source_tool"] == "before"


@pytest.mark.parametrize("cut", ["raw", "lines.idx", "body"])
def test_a_body_a_machine_crash_cut_short_is_refused_not_misread(tmp_path: Path, cut: str) -> None:
    # A machine crash (not a process's) may keep the catalog row, which DuckDB syncs to disk,
    # and lose the bytes of the body it names, which are not synced: the files are there, cut
    # short or empty. Read as they were, a text handle's head was empty and its count(*) 1.
    from jupyter_scratchpad.store._bodies import BodyReader

    path = tmp_path / "s"
    store = ScratchStore(path, sweep_interval_s=None)
    pad = store.scratchpad("run", "agent")
    text = "\n".join(f"line {i} " + "x" * 50 for i in range(20_000))
    damaged = pad.intercept(text if cut != "body" else '{"rows": [' + ",".join(['{"a": 1}'] * 20_000) + "]}",
                            tool="cut").handle
    whole = pad.intercept(text.replace("line", "row"), tool="whole").handle
    directory = store.reader(pad.entry(damaged)).directory
    store.close()
    assert (directory / cut).exists()
    os.truncate(directory / cut, (directory / cut).stat().st_size // 3)
    with pytest.raises(ValueError, match="where"):
        BodyReader(directory)

    store = ScratchStore(path, sweep_interval_s=None)
    try:
        pad = store.scratchpad("run", "agent")
        calls = [("head", {"handle": damaged}), ("grep", {"handle": damaged, "pattern": "line 5"}),
                 ("schema", {"handle": damaged}), ("read_handle", {"handle": damaged}),
                 ("sql", {"query": f"SELECT count(*) AS n FROM {damaged}"})]
        for tool, args in calls:
            res = pad.call_tool(tool, args)
            assert not res.ok and res.error["error"] == "store_error", (tool, res.text)
            assert f"the body of {damaged!r} is missing or damaged" in res.error["message"], res.text
            assert "spill the output again" in res.error["message"] and len(res.text) < 600
        delete = res.error["suggestions"][0]
        assert delete["tool"] == "scratch_delete" and pad.call_tool(delete["tool"], delete["arguments"]).ok
        assert damaged not in {e["handle"] for e in pad.entries("handle")}
        # the other handles of the store answer as before
        assert pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {whole}"}).data == [{"n": 20_000}]
        assert pad.call_tool("head", {"handle": whole, "lines": 1}).ok
    finally:
        store.close()


def test_a_body_removed_while_it_is_read_says_so_not_damaged(tmp_path: Path) -> None:
    # another process of a shared store deleted or replaced the handle between the entry's read
    # and the body's: grep and read_handle answered internal_error FileNotFoundError, pad.get()
    # raised it raw, and opening the body called it "damaged … a machine crash"
    import shutil

    from jupyter_scratchpad import NotFoundError, StoreError

    store = ScratchStore(tmp_path / "s", sweep_interval_s=None)
    try:
        pad = store.scratchpad("run", "agent")
        handle = pad.intercept("\n".join(f"line {i} " + "x" * 50 for i in range(20_000)), tool="gone").handle
        assert pad.call_tool("head", {"handle": handle, "lines": 1}).ok  # its reader is open (cached)
        shutil.rmtree(store.reader(pad.entry(handle)).directory)
        calls = [("grep", {"handle": handle, "pattern": "line 5"}), ("read_handle", {"handle": handle}),
                 ("head", {"handle": handle}), ("slice", {"handle": handle, "start": 10, "end": 12})]
        # its entry still names it: lost (removed outside the store), the delete offered, never "a crash"
        for tool, args in calls:
            res = pad.call_tool(tool, args)
            assert not res.ok and res.error["error"] == "store_error", (tool, res.text)
            assert "is gone from" in res.error["message"] and "crash" not in res.error["message"], (tool, res.text)
            assert res.error["suggestions"][0]["tool"] == "scratch_delete"
        with pytest.raises(StoreError, match="is gone from"):
            pad.get(handle)
        # the race itself: the entry read, then deleted (and its body) by another process
        stale = pad.entry(handle)
        store.delete_entry(pad.scope, "handle", handle)
        store._readers.clear()
        with pytest.raises(NotFoundError, match="removed while it was being read"):
            store.reader(stale)
    finally:
        store.close()
