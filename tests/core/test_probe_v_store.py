"""Probe V's defects of the shared store, on a real PostgreSQL: a copied catalog (CREATE DATABASE
… TEMPLATE) gets a store identity of its own, a spill racing a delete of its handle stores the
output again, the pool gives idle connections back, and ``list_runs`` counts tokens as an int."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

import jupyter_scratchpad
from jupyter_scratchpad import ScratchStore, StoreFormatError
from jupyter_scratchpad import _pad as pad_module
from jupyter_scratchpad.store._pgcatalog import POOL_MAX_IDLE_S
from tests.conftest import FakeClock
from tests.pgserver import PgServer

BIG = "\n".join(f"line {i} " + "y" * 50 for i in range(5000))  # about 300 KB, as the probe's


def _dbname(url: str) -> str:
    return url.split("/")[3].split("?")[0]


def _meta(url: str) -> dict[str, str]:
    with psycopg.connect(url, autocommit=True) as conn:
        return {str(n): str(v) for n, v in conn.execute("SELECT name, value FROM scratch_meta").fetchall()}


def _db_oid(pg_server: PgServer, dbname: str) -> str:
    return pg_server.psql(f"SELECT oid FROM pg_database WHERE datname = '{dbname}'").strip()


def _clone(pg_server: PgServer, source: str) -> str:
    """``CREATE DATABASE copy TEMPLATE source`` (as ops would); the copy's URL."""
    copy = f"c_{uuid.uuid4().hex[:16]}"
    pg_server.psql(f'CREATE DATABASE "{copy}" TEMPLATE "{source}"')
    return pg_server.url_for(copy)


def _age_bodies(store: ScratchStore, seconds: float) -> None:
    """Stand in for the orphan grace having passed: every body directory made older."""
    old = time.time() - seconds
    for body in (store.path / "bodies").iterdir():
        os.utime(body, (old, old))


# -- finding 1: a copied catalog destroyed the original's bodies -------------------------------


def test_a_template_copy_gets_an_id_of_its_own_and_its_delete_and_sweep_spare_the_original(
    pg_server: PgServer, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the default bodies directories live here
    monkeypatch.delenv("SCRATCHPAD_BODIES", raising=False)
    with ScratchStore(pg_url, sweep_interval_s=None) as prod:
        pp = prod.scratchpad(run_id="incident", agent_id="triage")
        hx = pp.intercept("pod-x line\n" * 20000, tool="logs").handle
        pp.scratch_write("plan", "step 3 of 9")
        prod_id = prod._cat.store_id  # type: ignore[attr-defined]
    stage_url = _clone(pg_server, _dbname(pg_url))
    with ScratchStore(pg_url, sweep_interval_s=None) as prod:
        pp = prod.scratchpad(run_id="incident", agent_id="triage")
        hy = pp.intercept("pod-y line\n" * 20000, tool="logs").handle  # spilled after the copy was made
        assert hx is not None and hy is not None
        caplog.set_level(logging.WARNING, logger="jupyter_scratchpad.store")
        with ScratchStore(stage_url, sweep_interval_s=None) as stage:
            assert prod._cat.store_id == prod_id  # type: ignore[attr-defined]
            assert stage._cat.store_id != prod_id  # type: ignore[attr-defined]
            assert stage.path != prod.path  # the copy's default bodies directory is its own
            said = [r.getMessage() for r in caplog.records if "is a copy of the scratch store" in r.getMessage()]
            assert len(said) == 1, said
            assert "not readable in the copy" in said[0] and "its notes are" in said[0]
            sp = stage.scratchpad(run_id="incident", agent_id="triage")
            assert sp.scratch_read("plan") == "step 3 of 9"  # the copy's notes are its own to read
            assert sp.delete(hx)
            _age_bodies(prod, 1200)  # 20 minutes later: the orphan grace (15) has passed
            _age_bodies(stage, 1200)
            stage.sweep()
        assert "pod-x line" in pp.get(hx)
        assert "pod-y line" in pp.get(hy)
    caplog.clear()
    with ScratchStore(stage_url, sweep_interval_s=None) as again:  # its id stays its own, said once
        assert again._cat.store_id not in (prod_id, None)  # type: ignore[attr-defined]
        assert not [r for r in caplog.records if "is a copy" in r.getMessage()]


def test_a_copy_is_refused_the_bodies_directory_of_its_original(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as prod:
        prod.scratchpad("r", "a").intercept(BIG, tool="dump")
    stage_url = _clone(pg_server, _dbname(pg_url))
    with pytest.raises(StoreFormatError, match="give the copy a bodies directory of its own"):
        ScratchStore(stage_url, bodies=tmp_path / "b", sweep_interval_s=None)
    with ScratchStore(stage_url, bodies=tmp_path / "stage-bodies", sweep_interval_s=None) as stage:
        assert len(stage.list_runs("a")) == 1  # a directory of its own: it opens


def test_a_restore_whose_original_database_is_gone_adopts_the_id(
    pg_server: PgServer, pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        handle = store.scratchpad("r", "a").intercept(BIG, tool="dump").handle
        store_id = store._cat.store_id  # type: ignore[attr-defined]
    dbname = _dbname(pg_url)
    here = _db_oid(pg_server, dbname)
    assert _meta(pg_url)["database_oid"] == here
    assert _meta(pg_url)["database_name"] == dbname
    # restored where its database never was: the recorded one is not in this cluster
    pg_server.psql(
        "UPDATE scratch_meta SET value = CASE name WHEN 'database_oid' THEN '4000000000' ELSE 'gone_db' END "
        "WHERE name IN ('database_oid', 'database_name')",
        dbname,
    )
    caplog.set_level(logging.WARNING, logger="jupyter_scratchpad.store")
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        assert store._cat.store_id == store_id  # type: ignore[attr-defined]
        assert "line 1 " in store.scratchpad("r", "a").get(str(handle))  # the same bodies, still its own
    assert _meta(pg_url)["database_oid"] == here
    assert _meta(pg_url)["database_name"] == dbname
    assert not [r for r in caplog.records if "is a copy" in r.getMessage()]


def test_a_catalog_made_before_the_binding_records_its_database_when_opened(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        store_id = store._cat.store_id  # type: ignore[attr-defined]
    dbname = _dbname(pg_url)
    pg_server.psql(  # what layout 3 left: no record of its database, no function to make one
        "DELETE FROM scratch_meta WHERE name IN ('database_oid', 'database_name', 'system_identifier'); "
        "UPDATE scratch_meta SET value = '3' WHERE name = 'layout_version'; "
        "DROP FUNCTION IF EXISTS scratchpad_store_identity(text)",
        dbname,
    )
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        assert store._cat.store_id == store_id  # type: ignore[attr-defined]
    meta = _meta(pg_url)
    assert meta["database_oid"] == _db_oid(pg_server, dbname)
    assert meta["database_name"] == dbname
    assert meta["system_identifier"] == pg_server.psql("SELECT system_identifier FROM pg_control_system()").strip()


_OPEN_AT = textwrap.dedent(
    """
    import sys, time
    from jupyter_scratchpad import ScratchStore
    url, bodies, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
    time.sleep(max(0.0, start - time.time()))  # every process opens at the same moment
    with ScratchStore(url, bodies=bodies, sweep_interval_s=None) as store:
        print(store._cat.store_id)
    """
)


def test_processes_opening_a_fresh_copy_at_once_agree_on_one_new_id(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as prod:
        prod_id = prod._cat.store_id  # type: ignore[attr-defined]
    stage_url = _clone(pg_server, _dbname(pg_url))
    script = tmp_path / "open_at.py"
    script.write_text(_OPEN_AT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(jupyter_scratchpad.__file__).parent.parent)}
    start = time.time() + 4.0  # (after every interpreter has imported the package)
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), stage_url, str(tmp_path / "stage-bodies"), str(start)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=env,
        )
        for _ in range(4)
    ]
    ids = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]  # (two ids: one process's claim of the directory is refused)
        ids.append(out.strip().splitlines()[-1])
    assert len(set(ids)) == 1, ids
    assert ids[0] != prod_id
    assert _meta(stage_url)["store_id"] == ids[0]
    assert _meta(stage_url)["copied_from"] == prod_id


# -- finding 4: a spill racing a delete of its handle in another process ------------------------


def test_a_refresh_whose_row_is_deleted_before_its_read_back_stores_the_output_anew(
    backend_store: ScratchStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = backend_store
    pad = store.scratchpad("r", "a")
    first = pad.intercept(BIG, tool="dump")
    assert first.handle is not None
    refresh = store._cat.refresh

    def refresh_then_deleted(scope: Any, handle: str, *args: Any, **kw: Any) -> bool:
        done = refresh(scope, handle, *args, **kw)
        monkeypatch.setattr(store._cat, "refresh", refresh)  # (once)
        store.delete_entry(scope, "handle", handle)  # another process, between the update and the read-back
        return done

    monkeypatch.setattr(store._cat, "refresh", refresh_then_deleted)
    again = pad.intercept(BIG, tool="dump")  # the same output: its entry is refreshed, then deleted
    assert again.spilled and again.failure is None, again.content[:300]
    assert again.handle == first.handle
    assert pad.get(str(again.handle)) == BIG  # written anew: it opens


def _deleted_once_stored(store: ScratchStore, monkeypatch: pytest.MonkeyPatch, times: int | None) -> list[Any]:
    """``store.put_body`` as it runs while another process deletes each stored handle at once (the
    first ``times`` of them; None: all): the body ids stored, in order."""
    put_body = store.put_body
    calls: list[Any] = []

    def stored_then_deleted(scope: Any, **kw: Any) -> Any:
        entry, created = put_body(scope, **kw)
        calls.append(entry.body_id)
        if times is None or len(calls) <= times:
            store.delete_entry(scope, "handle", entry.key)
        return entry, created

    monkeypatch.setattr(store, "put_body", stored_then_deleted)
    return calls


def test_a_handle_deleted_between_its_store_and_its_stub_is_stored_again(
    backend_store: ScratchStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = backend_store
    pad = store.scratchpad("r", "a")
    calls = _deleted_once_stored(store, monkeypatch, times=1)  # before the stub is read
    r = pad.intercept(BIG, tool="dump")
    assert r.spilled and r.failure is None, r.content[:300]
    assert len(calls) == 2 and calls[0] != calls[1]
    assert pad.get(str(r.handle)) == BIG  # the stub's handle opens
    assert "summary could not be made" not in r.content


def test_a_spill_that_loses_its_handle_every_time_fails_closed_after_bounded_tries(
    backend_store: ScratchStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = backend_store
    pad = store.scratchpad("r", "a")
    calls = _deleted_once_stored(store, monkeypatch, times=None)  # every time
    r = pad.intercept(BIG, tool="dump")
    assert not r.spilled and r.failure is not None and "removed while it was being read" in r.failure
    assert len(r.content) < 2000  # a pointer, never the flood
    assert len(calls) == 1 + pad_module.STUB_RESPILLS


def test_a_delete_once_the_stub_reader_is_open_leaves_the_stub_whole(
    backend_store: ScratchStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = backend_store
    pad = store.scratchpad("r", "a")
    build_stub = pad_module.build_stub

    def deleted_while_read(entry: Any, reader: Any, **kw: Any) -> Any:
        store.delete_entry(pad.scope, "handle", entry.key)  # another process, mid-stub
        return build_stub(entry, reader, **kw)

    monkeypatch.setattr(pad_module, "build_stub", deleted_while_read)
    r = pad.intercept(BIG, tool="dump")
    # the output was stored, and deleted by the other process after: the stub is what was stored
    assert r.spilled and r.failure is None, r.content[:300]
    assert "line 0 " in r.content and "line 4999 " in r.content


def test_a_spill_hammered_by_deletes_of_its_handle_from_another_store_stores_every_output(
    pg_url: str, tmp_path: Path
) -> None:
    """Probe V's c_spill_vs_delete: one output intercepted again and again while another store
    object of the same shared store deletes that handle in a loop (40-89 of 300 failed).

    What is honest to promise: no output is ever withheld unstored, and each stub is read whole
    from the body its spill stored (the other store may delete it the moment after: its delete
    came second). A spill that loses the race to the reader's open three times in a row still
    fails closed, naming the handle; with the deleter a thread of this process (the GIL hands it
    the turn at each commit) that was 1 run in about 20 of 150 intercepts, so one is allowed."""
    mine = ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None)
    other = ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None)
    stop = threading.Event()
    deleted = [0]

    def deleter() -> None:
        pad = other.scratchpad(run_id="r", agent_id="a")
        while not stop.is_set():
            for entry in pad.entries("handle"):
                pad.delete(entry["handle"])
                deleted[0] += 1

    try:
        pad = mine.scratchpad(run_id="r", agent_id="a")
        thread = threading.Thread(target=deleter, daemon=True)
        thread.start()
        failures = []
        for _ in range(150):
            r = pad.intercept(BIG, tool="dump")
            if r.failure or not r.spilled:
                failures.append(r.failure)
            else:  # a stub made from what was stored: its first and last lines
                assert "line 0 " in r.content and "line 4999 " in r.content
        stop.set()
        thread.join(timeout=30)
        assert deleted[0] > 20  # (the race was run)
        assert not [f for f in failures if "no live handle" in str(f)]  # withheld, nothing stored
        # (a window is left between the insert and the reader's open: losing it three times in a
        # row fails closed, about once in 20 runs of 150 here; before, 40-89 of 300 failed)
        assert len(failures) <= 3, failures
        last = pad.intercept(BIG, tool="dump")  # nobody deletes now: the handle opens
        assert pad.get(str(last.handle)) == BIG
    finally:
        stop.set()
        mine.close()
        other.close()


# -- finding 5: an idle process kept a full pool ------------------------------------------------


def test_the_pool_gives_idle_connections_back_within_a_minute(pg_url: str, tmp_path: Path) -> None:
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        pool = store._cat._pool  # type: ignore[attr-defined]
        assert pool.max_idle == POOL_MAX_IDLE_S <= 60
        assert pool.min_size == 1


# -- finding 6: list_runs' tokens were a Decimal on PostgreSQL ----------------------------------


def test_list_runs_counts_tokens_as_an_int_on_both_backends(backend_store: ScratchStore, clock: FakeClock) -> None:
    pad = backend_store.scratchpad(run_id="r", agent_id="a")
    pad.intercept(BIG, tool="dump")
    pad.scratch_write("k", "v")
    (run,) = backend_store.list_runs("a")
    assert type(run["tokens"]) is int and run["tokens"] > 0
    assert type(run["handles"]) is int and type(run["notes"]) is int
    assert json.loads(json.dumps(run))["tokens"] == run["tokens"]
