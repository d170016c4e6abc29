"""ScratchStore: layout, scoping in SQL, TTL and sweeps, cascades, locking, bodies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from jupyter_scratchpad import (
    InvalidArgumentError,
    NotFoundError,
    ScopeError,
    ScratchStore,
    StoreClosedError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
)
from jupyter_scratchpad.store import Scope
from tests.conftest import FakeClock

BIG = "\n".join(f"line {i} " + "x" * 40 for i in range(2000))


def spill(pad, text=BIG, tool="dump", **kw):  # type: ignore[no-untyped-def]
    r = pad.intercept(text, tool=tool, **kw)
    assert r.spilled, r.decision
    return r


def body_dirs(store: ScratchStore) -> set[str]:
    return {p.name for p in (store.path / "bodies").iterdir()}


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """The store contract runs on both backends: embedded DuckDB and shared PostgreSQL."""
    return backend_store


def raw_one(store: ScratchStore, sql: str) -> tuple:  # type: ignore[type-arg]
    """One row of ``sql`` seen by the catalog's owner: every row, whatever its scope."""
    if store.url is None:
        with store._cat._tx(None) as conn:
            return tuple(conn.execute(sql).fetchone())
    import psycopg

    with psycopg.connect(store.url) as conn:  # the test server's superuser: no row-level security
        return tuple(conn.execute(sql).fetchone())


def raw_all(store: ScratchStore, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    if store.url is None:
        with store._cat._tx(None) as conn:
            return [tuple(r) for r in conn.execute(sql).fetchall()]
    import psycopg

    with psycopg.connect(store.url) as conn:
        return [tuple(r) for r in conn.execute(sql).fetchall()]


def test_embedded_default_is_a_temporary_directory_removed_on_close() -> None:
    store = ScratchStore()
    path = store.path
    pad = store.scratchpad()
    spill(pad)
    assert (path / "catalog.duckdb").exists()
    store.close()
    store.close()  # idempotent
    assert not path.exists()
    with pytest.raises(StoreClosedError):
        store.list_entries("default")


def test_directory_store_persists_across_opens(tmp_path: Path, clock: FakeClock) -> None:
    with ScratchStore(tmp_path / "s", clock=clock, sweep_interval_s=None) as store:
        r = spill(store.scratchpad("run", "agent"))
        store.scratchpad("run", "agent").scratch_write("k", {"v": 1})
    with ScratchStore(tmp_path / "s", clock=clock, sweep_interval_s=None) as store:
        pad = store.scratchpad("run", "agent")
        assert pad.call_tool("head", {"handle": r.handle, "lines": 1}).data["lines"] == ["line 0 " + "x" * 40]
        assert pad.scratch_read("k") == {"v": 1}
    assert (tmp_path / "s" / "catalog.duckdb").exists()


def test_one_table_with_kind_and_scope_columns(store: ScratchStore, pad) -> None:  # type: ignore[no-untyped-def]
    spill(pad)
    pad.scratch_write("note", "v")
    kinds = sorted(r[0] for r in raw_all(store, "SELECT kind FROM scratch_entries"))
    tables = {r[0] for r in raw_all(store, "SELECT table_name FROM information_schema.tables")}
    assert kinds == ["handle", "note"]
    assert {"scratch_entries", "runs", "agents"} <= tables


def test_a_run_belongs_to_one_agent(store: ScratchStore) -> None:
    store.scratchpad("run-x", "alice")
    with pytest.raises(ScopeError, match="owned by agent 'alice'"):
        store.scratchpad("run-x", "bob")
    store.scratchpad("run-x", "alice")  # the owner again is fine


def test_reads_are_scoped_by_run_and_agent(store: ScratchStore) -> None:
    a = store.scratchpad("run-a", "alice")
    b = store.scratchpad("run-b", "bob")
    a2 = store.scratchpad("run-a2", "alice")
    r = spill(a)
    a.scratch_write("secret", "alice's")
    assert store.get_entry(b.scope, "handle", r.handle) is None
    assert store.get_entry(a2.scope, "handle", r.handle) is None
    assert b.call_tool("head", {"handle": r.handle}).error["error"] == "unknown_handle"
    assert b.call_tool("scratch_read", {"key": "secret"}).error["error"] == "unknown_key"
    assert b.entries() == [] and a2.entries() == []
    with pytest.raises(NotFoundError):
        b.scratch_read("secret")
    # the same output in another scope is a separate entry with its own body
    rb = spill(b)
    assert rb.handle == r.handle
    assert len(body_dirs(store)) == 2


def test_same_output_same_scope_same_handle_no_duplicate_body(store: ScratchStore, pad, clock) -> None:  # type: ignore[no-untyped-def]
    r1 = spill(pad)
    clock.advance(100)
    r2 = spill(pad)
    assert r1.handle == r2.handle
    assert len(body_dirs(store)) == 1
    entry = store.get_entry(pad.scope, "handle", r1.handle)
    assert entry is not None and entry.expires_at == pytest.approx(clock.now + store.ttl_s)
    r3 = spill(pad, BIG + "\nmore")
    assert r3.handle != r1.handle and r3.handle.startswith("dump_")


def test_handles_are_safe_identifiers(pad) -> None:  # type: ignore[no-untyped-def]
    for tool in ("k8s.list-pods", "../../etc/passwd", "Ünïcødé", "", "a" * 300, "DROP TABLE x; --"):
        r = spill(pad, BIG + tool, tool=tool)
        assert len(r.handle) <= 64
        assert all(c in "abcdefghijklmnopqrstuvwxyz0123456789_" for c in r.handle), r.handle


def test_ttl_hides_expired_entries_before_any_sweep(store: ScratchStore, pad, clock) -> None:  # type: ignore[no-untyped-def]
    r = spill(pad, ttl_s=60)
    pad.scratch_write("n", 1, ttl_s=30)
    assert len(store.list_entries("run-1")) == 2
    clock.advance(31)
    assert [e["kind"] for e in store.list_entries("run-1")] == ["handle"]
    clock.advance(30)
    assert store.list_entries("run-1") == []
    assert pad.call_tool("head", {"handle": r.handle}).error["error"] == "expired_handle"  # (said so until swept)
    assert body_dirs(store)  # still on disk until swept
    assert store.sweep() == 2
    assert body_dirs(store) == set()
    assert store.sweep() == 0


def test_the_same_bytes_after_the_expiry_are_a_new_entry_on_every_backend(pad, clock) -> None:  # type: ignore[no-untyped-def]
    # PostgreSQL revived the expired, unswept row (tool_a's handle, tool_b's name on it) where the
    # embedded store made a new entry: the handle a model got depended on the backend
    data = "same bytes\n" * 50_000
    first = pad.intercept(data, tool="tool_a", ttl_s=60)
    clock.advance(61)
    second = pad.intercept(data, tool="tool_b")
    assert second.spilled and second.handle.startswith("tool_b_") and second.handle != first.handle
    assert [(e["handle"], e["source_tool"]) for e in pad.entries()] == [(second.handle, "tool_b")]
    # (expired, or gone: a backend may have replaced the expired row with the new entry)
    assert pad.call_tool("head", {"handle": first.handle}).error["error"] in ("expired_handle", "unknown_handle")
    assert pad.get(second.handle) == data
    again = pad.intercept(data, tool="tool_b")  # while it lives: the same entry
    assert again.handle == second.handle and len(pad.entries()) == 1


def test_default_ttl_is_one_hour(tmp_path: Path) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        assert store.ttl_s == 3600
        pad = store.scratchpad()
        spill(pad)
        (e,) = store.list_entries("default")
        assert (e["expires_at"] - e["created_at"]).total_seconds() == pytest.approx(3600)


def test_background_sweeper_removes_expired_and_stops_on_close(tmp_path: Path) -> None:
    clock = FakeClock()
    store = ScratchStore(tmp_path / "s", sweep_interval_s=0.05, clock=clock)
    pad = store.scratchpad()
    spill(pad, ttl_s=10)
    clock.advance(11)
    import time

    deadline = time.monotonic() + 5
    while body_dirs(store) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert body_dirs(store) == set()
    sweeper = store._sweeper
    store.close()
    assert sweeper is not None and not sweeper.is_alive()


def test_delete_run_cascades_in_one_transaction(store: ScratchStore) -> None:
    a = store.scratchpad("run-a", "alice")
    keep = store.scratchpad("run-k", "alice")
    spill(a), spill(a, BIG + "2"), a.scratch_write("n", 1)
    kept = spill(keep, BIG + "k")
    assert store.delete_run("run-a") == 3
    assert raw_one(store, "SELECT count(*) FROM scratch_entries WHERE run_id='run-a'") == (0,)
    assert raw_one(store, "SELECT count(*) FROM runs WHERE run_id='run-a'") == (0,)
    assert raw_one(store, "SELECT count(*) FROM runs WHERE run_id='run-k'") == (1,)
    assert body_dirs(store) == {store.get_entry(keep.scope, "handle", kept.handle).body_id}
    # the run id is free again, for any agent
    store.scratchpad("run-a", "bob")


def test_delete_agent_cascades_to_all_its_runs(store: ScratchStore) -> None:
    for run in ("r1", "r2"):
        p = store.scratchpad(run, "alice")
        spill(p, BIG + run)
        p.scratch_write("k", run)
    bob = store.scratchpad("r3", "bob")
    spill(bob)
    assert store.delete_agent("alice") == 4
    assert store.list_entries("r1") == [] and store.list_entries("r2") == []
    assert len(store.list_entries("r3")) == 1
    assert len(body_dirs(store)) == 1
    assert raw_one(store, "SELECT count(*) FROM agents WHERE agent_id='alice'") == (0,)
    assert raw_one(store, "SELECT count(*) FROM runs WHERE agent_id='alice'") == (0,)
    assert raw_one(store, "SELECT count(*) FROM runs WHERE agent_id='bob'") == (1,)


def test_cascade_failure_rolls_back_everything(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ScratchStore(tmp_path / "s", sweep_interval_s=None, clock=clock)
    a = store.scratchpad("run-a", "alice")
    spill(a)
    real_execute = duckdb.DuckDBPyConnection.execute
    calls = {"n": 0}

    class Boom(duckdb.Error):
        pass

    def failing(self, sql, *args):  # type: ignore[no-untyped-def]
        if sql.startswith("DELETE FROM runs"):
            raise Boom("disk on fire")
        calls["n"] += 1
        return real_execute(self, sql, *args)

    conn = store._cat.conn
    monkeypatch.setattr(store._cat, "conn", _Proxy(conn, failing))
    from jupyter_scratchpad import StoreError

    with pytest.raises(StoreError, match="disk on fire"):
        store.delete_run("run-a")
    monkeypatch.setattr(store._cat, "conn", conn)
    assert len(store.list_entries("run-a")) == 1  # the entry delete was rolled back
    assert len(body_dirs(store)) == 1
    store.close()


class _Proxy:
    def __init__(self, conn, execute):  # type: ignore[no-untyped-def]
        self._conn, self._execute = conn, execute

    def execute(self, sql, *args):  # type: ignore[no-untyped-def]
        return self._execute(self._conn, sql, *args)


def test_list_entries_is_metadata_only(store: ScratchStore, pad) -> None:  # type: ignore[no-untyped-def]
    r = spill(pad, tool="k8s_list_pods")
    pad.scratch_write("plan", ["a", "b"])
    exact = pad.usage()["tokens_intercepted"]  # waits for the count made after the spill
    handle_row, note_row = store.list_entries("run-1")
    assert handle_row["handle"] == r.handle and handle_row["kind"] == "handle"
    assert handle_row["source_tool"] == "k8s_list_pods"
    assert handle_row["size"] == len(BIG.encode()) and handle_row["tokens"] == exact
    assert handle_row["preview"].startswith("line 0")
    assert set(handle_row) >= {
        "handle",
        "key",
        "kind",
        "size",
        "tokens",
        "preview",
        "source_tool",
        "created_at",
        "expires_at",
    }
    assert note_row["key"] == "plan" and note_row["kind"] == "note"
    assert all(not isinstance(v, (bytes, bytearray)) for v in handle_row.values())
    assert len(json.dumps(handle_row, default=str)) < 1000


def test_notes_keys_are_arbitrary_strings(pad) -> None:  # type: ignore[no-untyped-def]
    keys = ["it's", 'say "hi"', "'; DROP TABLE scratch_entries; --", "../../etc/passwd", "ключ", "a\nb", "x" * 1024]
    for i, key in enumerate(keys):
        pad.scratch_write(key, {"i": i})
    for i, key in enumerate(keys):
        assert pad.scratch_read(key) == {"i": i}
    assert {n["key"] for n in pad.scratch_list()} == set(keys)
    pad.scratch_write(keys[0], "overwritten")
    assert pad.scratch_read(keys[0]) == "overwritten"
    assert pad.scratch_delete(keys[1]) is True and pad.scratch_delete(keys[1]) is False
    with pytest.raises(InvalidArgumentError, match="at most 1024"):
        pad.scratch_write("k" * 10_000, 1)
    with pytest.raises(InvalidArgumentError):
        pad.scratch_write("", 1)
    with pytest.raises(InvalidArgumentError, match="JSON"):
        pad.scratch_write("obj", object())
    with pytest.raises(InvalidArgumentError, match="ttl_s"):
        pad.scratch_write("t", 1, ttl_s=-5)
    # NUL was a key on the embedded store and a catalog failure on PostgreSQL; an unpaired
    # surrogate a DuckDB conversion failure or a bare UnicodeEncodeError: refused alike on both
    for bad in ("a\x00b", "\ud800", "x\udfffy"):
        with pytest.raises(InvalidArgumentError, match="without NUL or an unpaired surrogate"):
            pad.scratch_write(bad, 1)
    assert pad.scratch_read(keys[2]) == {"i": 2}  # nothing lost by the refusals
    # a value holding one is stored as JSON's escape and read back the same (was a bare UnicodeEncodeError)
    odd = {"lone": "a\ud800b", "nul": "c\x00d", "list": ["\udfff"]}
    pad.scratch_write("odd", odd)
    assert pad.scratch_read("odd") == odd


def test_bad_ids_are_refused_clearly(store: ScratchStore) -> None:
    for bad in ("", None, "x" * 1000, "a\x00b", "\ud800"):  # (a surrogate was a bare UnicodeEncodeError on PG)
        with pytest.raises(InvalidArgumentError):
            store.scratchpad(run_id=bad, agent_id="a")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="invalid handle"):
        store.scratchpad().stub("../../etc/passwd")


@pytest.mark.parametrize("interval", [-1, float("nan"), float("inf"), "60", True])
def test_a_sweep_interval_that_would_busy_loop_is_refused(tmp_path: Path, interval: object) -> None:
    # -1 and NaN were accepted: Event.wait returned at once and the sweeper took a core
    with pytest.raises(InvalidArgumentError, match="sweep_interval_s must be a positive, finite number"):
        ScratchStore(tmp_path / "s", sweep_interval_s=interval)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="orphan_grace_s"):
        ScratchStore(tmp_path / "s", orphan_grace_s=-5)
    with ScratchStore(tmp_path / "s", sweep_interval_s=0) as off:  # 0 or None: no background sweeps
        assert off._sweeper is None


def test_a_store_directory_that_cannot_be_written_is_a_store_error(tmp_path: Path) -> None:
    # a read-only filesystem or another user's directory raised a bare OSError from the lock file
    # (as root, a lock path that is a directory stands in for the permission the test cannot lose)
    (tmp_path / "s" / "LOCK").mkdir(parents=True)
    with pytest.raises(StoreError, match=r"cannot open the scratch store at .* for writing") as err:
        ScratchStore(tmp_path / "s", sweep_interval_s=None)
    assert "a directory you can write" in str(err.value)


def test_second_process_gets_a_clear_lock_error(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    with ScratchStore(path, sweep_interval_s=None) as store:
        spill(store.scratchpad())
        code = (
            "import sys\n"
            "from jupyter_scratchpad import ScratchStore, StoreLockedError\n"
            f"try:\n    ScratchStore({str(path)!r})\n"
            "except StoreLockedError as e:\n    print('LOCKED', e.lock_path, e.holder); sys.exit(3)\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 3, proc.stderr
        assert "LOCKED" in proc.stdout and str(path / "LOCK") in proc.stdout and str(os.getpid()) in proc.stdout
        # and the store is intact for its owner
        assert len(store.list_entries("default")) == 1
    # once closed, another process may open it
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from jupyter_scratchpad import ScratchStore; "
            f"s = ScratchStore({str(path)!r}); print(len(s.list_entries('default'))); s.close()",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stdout.strip() == "1", proc.stderr


def test_same_process_second_open_is_refused(tmp_path: Path) -> None:
    with ScratchStore(tmp_path / "s", sweep_interval_s=None):
        with pytest.raises(StoreLockedError, match="is open in process"):
            ScratchStore(tmp_path / "s", sweep_interval_s=None)


def test_not_a_directory(tmp_path: Path) -> None:
    from jupyter_scratchpad import StoreError

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreError):
        ScratchStore(f)


def test_scope_dataclass_is_what_pads_use(pad) -> None:  # type: ignore[no-untyped-def]
    assert pad.scope == Scope("run-1", "agent-1")


def test_a_repeated_spill_is_one_entry_counted_once(tmp_path: Path) -> None:

    store = ScratchStore(tmp_path / "s")
    pad = store.scratchpad("r", "a")
    payload = {"items": [{"id": i, "name": f"n{i}"} for i in range(3000)]}
    first = pad.spill(payload, tool="list_things")
    once = pad.usage()["tokens_intercepted"]
    again = pad.spill(payload, tool="list_things_again")
    assert first.handle == again.handle and again.stub is not None and again.stub["reused"] is True
    assert len(pad.entries("handle")) == 1
    assert once > 0 and pad.usage()["tokens_intercepted"] == once
    other = store.scratchpad("r2", "a")  # another scope: its own entry
    assert not (other.spill(payload, tool="list_things").stub or {}).get("reused")
    assert pad.get(first.handle) == payload
    store.close()


def test_the_embedded_catalogs_memory_matches_its_table(tmp_path: Path, clock: FakeClock) -> None:
    """Lookups of the embedded store read an in-memory copy of its rows: after every kind of
    write (spill, refresh, replace, note, touch, slide, exact tokens, delete, cascade, sweep) it
    must hold exactly what the table holds, and a reopened store must read the same."""
    path = tmp_path / "s"
    store = ScratchStore(path, sweep_interval_s=None, clock=clock)

    def table() -> list[tuple]:  # type: ignore[type-arg]
        with store._cat._tx(None) as conn:
            rows = conn.execute("SELECT * FROM scratch_entries ORDER BY run_id, agent_id, kind, key").fetchall()
        return [norm(r) for r in rows]

    def norm(r: tuple) -> tuple:  # type: ignore[type-arg]
        return (*r[:15], json.loads(r[15] or "{}"), *r[16:])  # meta: the same JSON, maybe spelt otherwise

    def memory() -> list[tuple]:  # type: ignore[type-arg]
        rows = [norm(r) for scope in store._cat._mirror.values() for r in scope.values()]  # type: ignore[attr-defined]
        return sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3]))

    a, b = store.scratchpad("run-a", "alice"), store.scratchpad("run-b", "bob")
    r1 = spill(a)
    spill(a, BIG + "x", ttl_s=5)
    a.spill(BIG + "named", tool="t", handle="named")
    a.spill(BIG + "named again", tool="t", handle="named")  # replaced
    clock.advance(100)
    spill(a)  # refresh of the same bytes
    a.scratch_write("n", {"v": 1}, ttl_s=50)
    a.scratch_write("n", {"v": 2})
    store.touch(a.scope, "handle", r1.handle, ttl_s=10_000)  # type: ignore[arg-type]
    assert a.usage()["tokens_intercepted"] > 0  # waits for the exact counts (set_tokens)
    spill(b)
    b.scratch_write("m", 1)
    assert b.wait_for_counts(30)
    assert memory() == table()
    clock.advance(2000)
    a.call_tool("head", {"handle": r1.handle, "lines": 1})  # slides its expiry
    assert memory() == table()
    store.sweep()
    assert memory() == table()
    a.scratch_delete("n")
    store.delete_agent("bob")
    assert memory() == table() and table()
    kept = table()
    store.close()
    store = ScratchStore(path, sweep_interval_s=None, clock=clock)
    assert memory() == table() == kept
    store.delete_run("run-a")
    assert memory() == table() == []
    store.close()


def test_a_directory_records_its_catalog_and_the_first_claim_is_read_whole(tmp_path: Path) -> None:
    # STORE_ID was created empty and written after: a store reading it in between was refused as
    # "another catalog" with an empty id (93 of 360 claims by 6 processes at once)
    from concurrent.futures import ThreadPoolExecutor

    from jupyter_scratchpad.store._store import claim_bodies_dir

    for round_ in range(30):
        directory = tmp_path / f"d{round_}"
        directory.mkdir()
        with ThreadPoolExecutor(8) as pool:
            claims = [pool.submit(claim_bodies_dir, directory, "catalog-one", "test") for _ in range(8)]
            for claim in claims:
                claim.result()  # none refused
        assert (directory / "STORE_ID").read_text() == "catalog-one\n"
        assert [p.name for p in directory.iterdir()] == ["STORE_ID"]  # no temporary file left
    with pytest.raises(StoreFormatError, match="belongs to another scratch catalog"):
        claim_bodies_dir(tmp_path / "d0", "catalog-two", "test")
    # an embedded store records its own catalog's id, and keeps it across opens
    with ScratchStore(tmp_path / "embedded", sweep_interval_s=None):
        recorded = (tmp_path / "embedded" / "STORE_ID").read_text()
    with ScratchStore(tmp_path / "embedded", sweep_interval_s=None):
        assert (tmp_path / "embedded" / "STORE_ID").read_text() == recorded


def test_a_note_deleted_by_another_process_right_after_it_was_written_is_still_confirmed(
    store: ScratchStore, pad, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    # scratch_write read the note back after writing it: when another process deleted it in
    # between (19-30 of 300 writes on a shared store), the write that had succeeded raised
    # NotFoundError. The other process is played here by a delete right after the write commits.
    catalog = store.catalog
    written = catalog.put_note

    def then_deleted(row):  # type: ignore[no-untyped-def]
        written(row)
        catalog.delete(pad.scope, "note", row[3])

    monkeypatch.setattr(catalog, "put_note", then_deleted)
    res = pad.call_tool("scratch_write", {"key": "plan", "value": {"step": 1}})
    assert res.ok and "saved note 'plan'" in res.text, res.text
    assert pad.store.get_entry(pad.scope, "note", "plan") is None  # (it was deleted after all)


def test_background_sweeps_say_once_that_the_database_is_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # with PostgreSQL away for 45 s, a 2 s sweeper logged a traceback every interval (20 of them);
    # the sweep's own answer is played here by a StoreUnavailableError, as the catalog raises it
    import logging
    import threading
    import time

    from jupyter_scratchpad import StoreUnavailableError

    store = ScratchStore(tmp_path / "s", sweep_interval_s=None)
    calls = []

    def sweep() -> int:
        calls.append(1)
        if len(calls) <= 6:
            raise StoreUnavailableError("the shared store's PostgreSQL is unavailable")
        return 0

    monkeypatch.setattr(store, "sweep", sweep)
    try:
        with caplog.at_level(logging.DEBUG, logger="jupyter_scratchpad"):
            loop = threading.Thread(target=store._sweep_loop, args=(0.01,))
            loop.start()
            deadline = time.monotonic() + 10
            while len(calls) < 10 and time.monotonic() < deadline:
                time.sleep(0.01)
            store._stop.set()
            loop.join(5)
    finally:
        store.close()
    assert len(calls) >= 10
    said = [r for r in caplog.records if "background sweep" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING, logging.WARNING], [r.getMessage() for r in said]
    assert "wait for it" in said[0].getMessage() and "run again" in said[1].getMessage()
    assert all(r.exc_info is None for r in said)


def test_runs_are_listed_per_agent_and_a_handle_is_found_in_its_run(store: ScratchStore, clock: FakeClock) -> None:
    a1 = store.ensure_scope("r1", "agent-a")
    a2 = store.ensure_scope("r2", "agent-a")
    b = store.ensure_scope("rb", "agent-b")
    for scope, handle in ((a1, "h_one"), (a2, "h_two"), (b, "h_one")):
        store.put_body(scope, handle=handle, raw=b"x\n" * 10, body=None, content_hash=handle, fmt="text",
                       size_bytes=20, tokens=7, preview="x", source_tool="t", server=None, ttl_s=60)  # fmt: skip
        clock.advance(1)
    store.put_note(a2, "k", 1, ttl_s=60)
    clock.advance(1)
    store.ensure_scope("r3", "agent-a")  # a run with nothing in it
    mine = store.list_runs("agent-a")
    assert [(r["run_id"], r["handles"], r["notes"], r["tokens"]) for r in mine] == [("r2", 1, 1, 7), ("r1", 1, 0, 7)]
    assert store.runs_holding("agent-a", "h_one") == ["r1"] and store.runs_holding("agent-b", "h_one") == ["rb"]
    assert store.run_owner("r3") == "agent-a" and store.run_owner("nope") is None
    if store.shared:  # row-level security: one agent's runs at a time
        with pytest.raises(InvalidArgumentError):
            store.list_runs()
    else:
        assert {r["run_id"] for r in store.list_runs()} == {"r1", "r2", "rb"}
    clock.advance(120)  # everything expired: no live run
    assert store.list_runs("agent-a") == [] and store.runs_holding("agent-a", "h_one") == []
