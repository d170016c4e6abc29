"""Probe AC's defects of the shared store, on a real PostgreSQL: the first call after a restart
with many idle pooled connections, a delete racing a body's open (read as damage), SQL over a
handle deleted while it ran, and a deleted body's directory kept by the schema worker's files.

Races are made deterministic: the other process's delete runs at the step in between, through a
hook, never by sleeping and hoping."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_scratchpad import NotFoundError, Scratchpad, ScratchStore, StoreError, StoreUnavailableError
from jupyter_scratchpad.explore import _schema, _sql, _sqlworker
from jupyter_scratchpad.store import _store
from jupyter_scratchpad.store._entry import Entry
from tests.pgserver import start_server

REMOVED = "removed while it was being read"
DOC = json.dumps({"kind": "PodList", "items": [{"id": i, "name": f"pod-{i}", "status": "ok"} for i in range(3000)]})


def shared(url: str, bodies: Path) -> ScratchStore:
    return ScratchStore(url, bodies=bodies, sweep_interval_s=None)


@pytest.fixture
def two(pg_url: str, tmp_path: Path) -> Iterator[tuple[ScratchStore, ScratchStore]]:
    """Two stores on one database and one bodies directory: two processes of a shared store."""
    a = shared(pg_url, tmp_path / "bodies")
    b = shared(pg_url, tmp_path / "bodies")
    yield a, b
    b.close()
    a.close()


def body_dir(store: ScratchStore, entry: Entry) -> Path:
    return store.path / "bodies" / str(entry.body_id)


def _only_the_body_file(directory: Path) -> None:
    """A delete's removal of the directory caught after its first file: the pretty-printed body."""
    (directory / "body").unlink()


# -- #1: the first call after a restart, with many idle pooled connections -----------------------


def _warm(store: ScratchStore, n: int) -> None:
    """Grow the pool to ``n`` connections (n calls at once), all idle after."""
    catalog = store._cat  # type: ignore[attr-defined]
    start = threading.Barrier(n)

    def call() -> None:
        start.wait()
        with catalog._tx(None) as tx:
            tx.execute("SELECT pg_sleep(0.3)")

    threads = [threading.Thread(target=call) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert catalog._pool.get_stats()["pool_available"] >= 4


def test_the_first_call_after_a_restart_succeeds_at_once_and_a_down_server_fails_fast(tmp_path: Path) -> None:
    server = start_server()
    try:
        store = shared(server.create_database("own") + "&connect_timeout=2", tmp_path / "b")
        pad = store.scratchpad("r", "a")
        _warm(store, 6)
        server.restart()  # fully back: every idle connection is a stale one
        t0 = time.monotonic()
        res = pad.call_tool("scratch_list", {})
        took = time.monotonic() - t0
        # (each stale connection cost a failed check and a doubling back-off: it failed after 2 s)
        assert res.ok, res.text
        assert took < 1.5, took
        assert pad.intercept(DOC, tool="after").spilled

        _warm(store, 6)
        server._kill_postmaster()  # really down: fails closed, as fast and as short as before
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=r"unavailable: couldn't get a connection after 2\.00 sec"):
            store.list_entries("r", "a")
        assert time.monotonic() - t0 < 5
        down = pad.intercept(DOC + " ", tool="down")
        assert not down.spilled and down.failure and "StoreUnavailableError" in down.failure
        server._start()
        assert pad.call_tool("scratch_list", {}).ok
        store.close()
    finally:
        server.stop()


# -- #2: a delete racing a body's open is a removal, not damage ---------------------------------


def test_a_spill_whose_body_is_deleted_as_it_opens_is_stored_again(
    two: tuple[ScratchStore, ScratchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = two
    pad = store.scratchpad("r", "a")
    real_held = store.held_reader
    raced: list[Entry] = []

    def held_reader(entry: Entry) -> Any:
        if not raced:  # the other process deletes it now: its row, then (one file so far) the files
            raced.append(entry)
            with monkeypatch.context() as m:
                m.setattr(_store, "remove_body_dir", _only_the_body_file)
                assert other.delete_entry(pad.scope, "handle", entry.key)
        return real_held(entry)

    monkeypatch.setattr(store, "held_reader", held_reader)
    r = pad.intercept(DOC, tool="pods")
    # it was "missing or damaged (raw holds … where … were written: a machine crash …)", withheld
    assert raced and r.spilled, r.failure
    assert r.failure is None and r.handle == raced[0].key
    entry = store.get_entry(pad.scope, "handle", r.handle)  # type: ignore[arg-type]
    assert entry is not None and entry.body_id != raced[0].body_id  # stored again
    assert other.reader(entry).read_raw(0, 10**7).decode() == DOC
    assert pad.call_tool("head", {"handle": r.handle, "lines": 2}).ok


def test_a_reader_of_a_body_deleted_as_it_opens_is_told_it_was_removed(
    two: tuple[ScratchStore, ScratchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = two
    r = store.scratchpad("r", "a").intercept(DOC, tool="pods")
    entry = other.get_entry(store.scratchpad("r", "a").scope, "handle", r.handle)  # type: ignore[arg-type]
    assert entry is not None
    with monkeypatch.context() as m:  # the delete is under way: row gone, the body file removed first
        m.setattr(_store, "remove_body_dir", _only_the_body_file)
        assert store.delete_entry(store.scratchpad("r", "a").scope, "handle", r.handle)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError, match=REMOVED) as info:
        other.reader(entry)
    assert "damaged" not in str(info.value) and "crash" not in str(info.value)


@pytest.mark.parametrize("harm", ["truncate", "remove"])
def test_a_damaged_body_whose_row_is_there_still_says_damaged(
    two: tuple[ScratchStore, ScratchStore], harm: str
) -> None:
    store, other = two
    pad = store.scratchpad("r", "a")
    r = pad.intercept(DOC, tool="pods")
    entry = other.get_entry(pad.scope, "handle", r.handle)  # type: ignore[arg-type]
    assert entry is not None
    pretty = body_dir(store, entry) / "body"
    if harm == "truncate":  # a machine crash before its bytes reached the disk
        with open(pretty, "r+b") as fh:
            fh.truncate(100)
    else:
        pretty.unlink()
    with pytest.raises(StoreError, match="missing or damaged") as info:
        other.reader(entry)
    assert info.value.context.get("damaged") is True and not isinstance(info.value, NotFoundError)


# -- #4: SQL over a handle deleted while the query ran ------------------------------------------


def _delete_before_the_worker(
    monkeypatch: pytest.MonkeyPatch, store: ScratchStore, scope: Any, handle: Callable[[], str], replies: list[Any]
) -> None:
    real = _sql.run_job

    def run_job(job: dict[str, Any], budget_s: float) -> dict[str, Any]:
        if not replies:
            assert store.delete_entry(scope, "handle", handle())  # another process's rm, mid-call
        reply = real(job, budget_s)
        replies.append(reply)
        return reply

    monkeypatch.setattr(_sql, "run_job", run_job)


@pytest.mark.parametrize(
    ("data", "query"),
    [
        (DOC, "SELECT status, count(*) FROM {h}.items GROUP BY 1"),  # the table load reads raw
        ("\n".join(json.dumps({"id": i, "v": "x" * 20}) for i in range(5000)), "SELECT count(*) FROM {h}"),
        ("a,b\n" + "\n".join(f"{i},x{i}" for i in range(20000)), "SELECT count(*) FROM {h}.rows"),
        ("\n".join(f"line {i} level=INFO" for i in range(20000)), "SELECT count(*) FROM {h}"),
    ],
    ids=["json", "jsonl", "csv", "text"],
)
def test_sql_over_a_handle_deleted_mid_query_says_it_was_removed(
    two: tuple[ScratchStore, ScratchStore], monkeypatch: pytest.MonkeyPatch, data: str, query: str
) -> None:
    store, other = two
    pad = store.scratchpad("r", "a")
    r = pad.intercept(data, tool="dump")
    assert r.spilled
    replies: list[Any] = []
    _delete_before_the_worker(monkeypatch, other, pad.scope, lambda: str(r.handle), replies)
    res = pad.call_tool("sql", {"query": query.format(h=r.handle)})
    # it was "DuckDB cannot read this handle", "FileNotFoundError: [Errno 2] …", "rows does not
    # exist", or (read_text of no file) a count of 0
    assert not res.ok and REMOVED in res.text, res.text
    for wrong in ("cannot read", "Errno", "FileNotFoundError", "does not exist", "<store>"):
        assert wrong not in res.text, res.text
    for reply in replies:  # what the worker itself says of a file gone: short, no errno, no path
        said = str(reply.get("message", ""))
        assert "Errno" not in said and "FileNotFoundError" not in said and "/bodies/" not in said, said


def test_a_handle_duckdb_could_not_read_because_its_row_went_is_removed(
    two: tuple[ScratchStore, ScratchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the delete caught between its row and its files: the worker found a file gone (raw and body
    # not yet) and left the handle out as unreadable
    store, other = two
    pad = store.scratchpad("r", "a")
    r = pad.intercept(DOC, tool="pods")

    def run_job(job: dict[str, Any], budget_s: float) -> dict[str, Any]:
        with monkeypatch.context() as m:
            m.setattr(_store, "remove_body_dir", lambda directory: None)
            assert other.delete_entry(pad.scope, "handle", str(r.handle))
        return {
            "error": "sql_error",
            "message": "Catalog Error: Table with name items does not exist!",
            "unreadable": [r.handle],
            "unreadable_why": {r.handle: ""},
        }

    monkeypatch.setattr(_sql, "run_job", run_job)
    res = pad.call_tool("sql", {"query": f"SELECT count(*) FROM {r.handle}.items"})
    assert not res.ok and REMOVED in res.text and "cannot read" not in res.text, res.text


def test_the_worker_says_a_removed_file_without_errno(tmp_path: Path) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        pad = store.scratchpad("r", "a")
        r = pad.intercept("\n".join(json.dumps({"id": i}) for i in range(5000)), tool="dump")
        entry = store.get_entry(pad.scope, "handle", r.handle)  # type: ignore[arg-type]
        assert entry is not None
        from jupyter_scratchpad.explore._base import ToolContext

        ctx = ToolContext(pad, "sql", 10_000)
        job = {
            "relations": [_sql.relation_spec(ctx, entry)],
            "notes": [],
            "scope": repr(pad.scope),
            "query": f"SELECT count(*) FROM {r.handle}",
            "max_rows": 10,
            "redact": [str(store.path)],
        }
        store.delete_entry(pad.scope, "handle", str(r.handle))
        reply = _sqlworker.run_job(job, 30.0)
    assert reply.get("error") == "sql_error" and reply.get("file_removed") is True, reply
    assert reply["message"] == _sqlworker.FILE_REMOVED


# -- #5: a deleted body's directory is not kept (or made again) by the schema worker ------------


def _spilled_and_counted(store: ScratchStore) -> tuple[Scratchpad, Any, Entry, Path]:
    """DOC spilled in ``store``, its count and schema landed: the pad, the result, its entry and
    its body's directory."""
    pad = store.scratchpad("r", "a")
    r = pad.intercept(DOC, tool="pods")
    assert pad.wait_for_counts(30)
    entry = store.get_entry(pad.scope, "handle", r.handle)  # type: ignore[arg-type]
    assert entry is not None
    return pad, r, entry, body_dir(store, entry)


def test_a_schema_file_written_while_a_delete_removes_the_directory_does_not_keep_it(
    two: tuple[ScratchStore, ScratchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = two
    pad, r, entry, directory = _spilled_and_counted(store)
    real_rmdir = os.rmdir
    wrote: list[str] = []

    def rmdir(path: Any, *args: Any, **kw: Any) -> None:
        # the spill's schema worker (in the process that spilled) saves its file now: after the
        # delete emptied the directory, before it removes it
        if os.fspath(path) in (entry.body_id, os.fspath(directory)) and not wrote:
            wrote.append("schema")
            (directory / "schema-v4-d4.json").write_bytes(b'{"rows": [], "truncated": 0}')
        real_rmdir(path, *args, **kw)

    monkeypatch.setattr(os, "rmdir", rmdir)
    assert other.delete_entry(pad.scope, "handle", str(r.handle))
    monkeypatch.undo()
    assert wrote
    assert not directory.exists(), sorted(p.name for p in directory.iterdir())


def test_the_schema_worker_writes_nothing_beside_a_body_being_removed(
    two: tuple[ScratchStore, ScratchStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, other = two
    pad, r, entry, directory = _spilled_and_counted(store)

    def files_only(d: Path) -> None:  # the delete under way: its files gone, the directory not yet
        for p in d.iterdir():
            p.unlink()

    with monkeypatch.context() as m:
        m.setattr(_store, "remove_body_dir", files_only)
        assert other.delete_entry(pad.scope, "handle", str(r.handle))
    # the worker's job for it, running now (a body id of its own: nothing cached in memory)
    value = json.loads(DOC)
    _schema.precompute_schema(directory, "raced-" + str(entry.body_id), entry.line_count, value).result(30)
    assert not directory.exists() or list(directory.iterdir()) == [], sorted(p.name for p in directory.iterdir())
