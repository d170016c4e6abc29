"""The shared store on a real PostgreSQL: row-level security, migrations, sweeps, faults.

The store contract itself (scoping, TTL, cascades, notes, bodies) runs on both backends in
``test_store.py``; this file holds what only a shared catalog has.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from jupyter_scratchpad import (
    InvalidArgumentError,
    ScratchStore,
    StoreError,
    StoreFormatError,
    StoreUnavailableError,
)
from jupyter_scratchpad.store._pgcatalog import _SWEEP_LOCK, APP_ROLE, MIGRATIONS, PG_LAYOUT_VERSION
from tests.conftest import FakeClock
from tests.pgserver import PgServer, start_server

BIG = "\n".join(f"line {i} " + "x" * 40 for i in range(2000))


def shared(url: str, bodies: Path, **kw: object) -> ScratchStore:
    kw.setdefault("sweep_interval_s", None)
    return ScratchStore(url, bodies=bodies, **kw)  # type: ignore[arg-type]


def body_dirs(store: ScratchStore) -> set[str]:
    return {p.name for p in (store.path / "bodies").iterdir()}


# -- scoping enforced by the database --------------------------------------------------------


def test_row_level_security_hides_and_protects_another_agents_rows(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    with shared(pg_url, tmp_path / "b") as store:
        alice = store.scratchpad("run-a", "alice")
        r = alice.intercept(BIG, tool="dump")
        alice.scratch_write("secret", "alice's")
        store.scratchpad("run-b", "bob").scratch_write("mine", "bob's")
        dbname = pg_url.split("/")[3].split("?")[0]
        pg_server.psql(f"ALTER ROLE {APP_ROLE} LOGIN", dbname)
        try:
            # the application role itself, connected with raw psycopg, acting as agent bob
            with psycopg.connect(pg_server.url_for(dbname, user=APP_ROLE), autocommit=True) as conn:
                assert conn.execute(
                    "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
                ).fetchone() == (False,)
                assert conn.execute("SELECT count(*) FROM scratch_entries").fetchone() == (0,)  # no setting: nothing
                conn.execute("SELECT set_config('scratchpad.agent_id', 'bob', false)")
                assert conn.execute("SELECT key FROM scratch_entries").fetchall() == [("mine",)]
                assert conn.execute("SELECT count(*) FROM runs WHERE run_id = 'run-a'").fetchone() == (0,)
                cur = conn.execute("UPDATE scratch_entries SET preview = 'owned' WHERE agent_id = 'alice'")
                assert cur.rowcount == 0
                assert conn.execute("DELETE FROM scratch_entries WHERE agent_id = 'alice'").rowcount == 0
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                    conn.execute(
                        "INSERT INTO scratch_entries (run_id, agent_id, kind, key, size_bytes, created_at, expires_at) "
                        "VALUES ('run-a', 'alice', 'note', 'forged', 1, 0, 1e12)"
                    )
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                    conn.execute("UPDATE scratch_entries SET agent_id = 'alice' WHERE key = 'mine'")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("ALTER TABLE scratch_entries DISABLE ROW LEVEL SECURITY")
                # the sweep function runs as its owner: a "now" far ahead of the database's clock
                # deleted every agent's live rows
                assert conn.execute("SELECT count(*) FROM scratchpad_sweep(1e12)").fetchone() == (0,)
                # as alice the same connection sees alice's rows: the policy, not an empty table
                conn.execute("SELECT set_config('scratchpad.agent_id', 'alice', false)")
                assert sorted(k for (k,) in conn.execute("SELECT key FROM scratch_entries")) == sorted(
                    [r.handle, "secret"]
                )
        finally:
            pg_server.psql(f"ALTER ROLE {APP_ROLE} NOLOGIN", dbname)
        assert alice.scratch_read("secret") == "alice's"  # nothing of alice's changed
        assert alice.call_tool("head", {"handle": r.handle, "lines": 1}).ok


def test_the_store_itself_runs_as_the_role_that_cannot_bypass_rls(pg_url: str, tmp_path: Path) -> None:
    with shared(pg_url, tmp_path / "b") as store:
        with store._cat._tx("alice") as tx:
            assert tx.execute("SELECT current_user").fetchone() == (APP_ROLE,)
            assert tx.execute("SELECT current_setting('scratchpad.agent_id')").fetchone() == ("alice",)
        with store._cat._tx("bob") as tx:  # SET LOCAL: alice's scope did not stay on the pooled connection
            assert tx.execute("SELECT current_setting('scratchpad.agent_id')").fetchone() == ("bob",)
            # a forged row for another agent is refused by the database, not by our code
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                tx.execute("INSERT INTO agents VALUES ('mallory', 0)")


def test_a_role_that_bypasses_rls_is_refused(pg_server: PgServer, pg_url: str, tmp_path: Path) -> None:
    shared(pg_url, tmp_path / "b").close()  # the layout exists
    dbname = pg_url.split("/")[3].split("?")[0]
    pg_server.psql(
        "DO $$ BEGIN CREATE ROLE bypasser LOGIN BYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
    )
    pg_server.psql(
        "GRANT ALL ON ALL TABLES IN SCHEMA public TO bypasser; GRANT USAGE ON SCHEMA public TO bypasser", dbname
    )
    with pytest.raises(StoreError, match="not subject to row-level security"):
        ScratchStore(pg_server.url_for(dbname, user="bypasser"), bodies=tmp_path / "b", sweep_interval_s=None)


# -- layout versions -------------------------------------------------------------------------


def test_an_older_layout_is_upgraded_in_place_and_a_newer_one_refused(pg_url: str, tmp_path: Path) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:  # a database left by layout 1
        conn.execute(MIGRATIONS[1])
        conn.execute("INSERT INTO scratch_meta VALUES ('layout_version', '1'), ('store_id', 'old-store')")
        conn.execute("INSERT INTO agents VALUES ('alice', 0)")
        conn.execute("INSERT INTO runs VALUES ('run-a', 'alice', 0)")
        conn.execute(
            "INSERT INTO scratch_entries (run_id, agent_id, kind, key, value_json, format, size_bytes, preview, "
            "created_at, expires_at) VALUES ('run-a', 'alice', 'note', 'kept', '{\"v\": 1}', 'json', 8, '', 0, 1e12)"
        )
    with shared(pg_url, tmp_path / "b") as store:
        assert store.scratchpad("run-a", "alice").scratch_read("kept") == {"v": 1}
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM scratch_meta WHERE name = 'layout_version'").fetchone() == (
            str(PG_LAYOUT_VERSION),
        )
        assert conn.execute("SELECT relrowsecurity FROM pg_class WHERE relname = 'scratch_entries'").fetchone() == (
            True,
        )
        conn.execute("UPDATE scratch_meta SET value = '99' WHERE name = 'layout_version'")
    with pytest.raises(StoreFormatError, match=r"layout 99.*upgrade jupyter-scratchpad"):
        shared(pg_url, tmp_path / "b")


def test_a_bodies_directory_serves_one_catalog(pg_server: PgServer, pg_url: str, tmp_path: Path) -> None:
    with shared(pg_url, tmp_path / "b") as store:
        r = store.scratchpad("r", "a").intercept(BIG, tool="dump")
        kept = body_dirs(store)
    other = pg_server.create_database("other_catalog_" + os.urandom(4).hex())
    with pytest.raises(StoreFormatError, match="belongs to another scratch catalog"):
        shared(other, tmp_path / "b")
    with shared(pg_url, tmp_path / "b") as store:  # nothing was removed by the refused store
        assert body_dirs(store) == kept
        assert store.scratchpad("r", "a").call_tool("head", {"handle": r.handle, "lines": 1}).ok
    with pytest.raises(InvalidArgumentError, match="bodies= is for a shared store"):
        ScratchStore(tmp_path / "embedded", bodies=tmp_path / "b")
    # an embedded store (or the CLI's --store) opened on the shared bodies is refused before it
    # touches them: its sweep removed every agent's bodies as orphans of its empty catalog
    with pytest.raises(StoreFormatError, match="belongs to another scratch catalog"):
        ScratchStore(tmp_path / "b", sweep_interval_s=None)
    assert not (tmp_path / "b" / "catalog.duckdb").exists()
    # and a shared store given an embedded store's directory as bodies= is refused alike
    with ScratchStore(tmp_path / "embedded", sweep_interval_s=None) as embedded:
        own = embedded.scratchpad("r", "a").intercept(BIG, tool="dump")
        embedded_bodies = body_dirs(embedded)
    with pytest.raises(StoreFormatError, match="an embedded store's directory"):
        shared(pg_url, tmp_path / "embedded")
    with ScratchStore(tmp_path / "embedded", sweep_interval_s=None) as embedded:
        assert body_dirs(embedded) == embedded_bodies
        assert embedded.scratchpad("r", "a").call_tool("head", {"handle": own.handle, "lines": 1}).ok
    with shared(pg_url, tmp_path / "b") as store:
        assert body_dirs(store) == kept


# -- sweeps ----------------------------------------------------------------------------------


def test_a_process_whose_clock_runs_ahead_sweeps_nothing_still_live(pg_url: str, tmp_path: Path) -> None:
    # expiry is by the writers' clocks; a sweeper 20 minutes ahead removed another agent's handle
    # and note that had 15 minutes to live
    with shared(pg_url, tmp_path / "b") as store:
        pad = store.scratchpad("r", "alice")
        handle = pad.intercept(BIG, tool="dump", ttl_s=900).handle
        pad.scratch_write("plan", "keep", ttl_s=900)
        with shared(pg_url, tmp_path / "b", clock=lambda: time.time() + 1200) as ahead:
            assert ahead.sweep() == 0
        assert pad.scratch_read("plan") == "keep"
        assert pad.call_tool("head", {"handle": handle, "lines": 1}).ok


def test_one_sweeper_at_a_time_and_bodies_go_after_rows(pg_url: str, tmp_path: Path) -> None:
    clock = FakeClock()
    a = shared(pg_url, tmp_path / "b", clock=clock)
    b = shared(pg_url, tmp_path / "b", clock=clock)  # a second process's store, same catalog and bodies
    try:
        pad = a.scratchpad("r", "agent")
        pad.intercept(BIG, tool="dump", ttl_s=10)
        pad.intercept(BIG + "2", tool="dump", ttl_s=1000)
        clock.advance(11)
        with psycopg.connect(pg_url, autocommit=True) as holder:  # another sweeper holds the lock
            holder.execute("SELECT pg_advisory_lock(%s)", [_SWEEP_LOCK])
            assert a.sweep() == 0 and b.sweep() == 0
            assert len(body_dirs(a)) == 2
            holder.execute("SELECT pg_advisory_unlock(%s)", [_SWEEP_LOCK])
        assert b.sweep() == 1  # the other process's store sweeps this one's expired entry
        assert len(body_dirs(a)) == 1 and len(a.list_entries("r")) == 1
        assert a.sweep() == 0
    finally:
        a.close()
        b.close()


def test_orphan_bodies_are_removed_after_a_grace_period(pg_url: str, tmp_path: Path) -> None:
    with shared(pg_url, tmp_path / "b") as store:
        store.scratchpad("r", "a").intercept(BIG, tool="dump")
        live = body_dirs(store)
        old, young = store.path / "bodies" / ("0" * 32), store.path / "bodies" / ("1" * 32)
        for d in (old, young, store.path / "tmp" / "2"):
            d.mkdir()
            (d / "raw").write_bytes(b"half")
        past = time.time() - store.orphan_grace_s - 10
        os.utime(old, (past, past))
        assert store.orphan_grace_s == 900
        store.sweep()
        assert body_dirs(store) == live | {young.name}  # young: maybe another process's write in flight
        store.orphan_grace_s = 0
        store.sweep()
        assert body_dirs(store) == live and not any((store.path / "tmp").iterdir())


def test_a_shared_store_without_a_grace_period_says_what_it_risks(
    pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # accepted silently: a probe's sweeper with orphan_grace_s=0 deleted 150 of 150 bodies other
    # processes were still writing (each of those spills failed closed)
    with caplog.at_level("WARNING", logger="jupyter_scratchpad.store"):
        ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None, orphan_grace_s=0).close()
    assert any("may delete bodies other processes are still writing" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="jupyter_scratchpad.store"):
        ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None).close()
    assert not any("orphan_grace_s" in r.getMessage() for r in caplog.records)


def test_a_failed_cascade_rolls_back_everything(pg_server: PgServer, pg_url: str, tmp_path: Path) -> None:
    dbname = pg_url.split("/")[3].split("?")[0]
    with shared(pg_url, tmp_path / "b") as store:
        pad = store.scratchpad("run-a", "alice")
        pad.intercept(BIG, tool="dump")
        pad.scratch_write("n", 1)
        pg_server.psql(
            "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$;"
            "CREATE TRIGGER boom BEFORE DELETE ON runs FOR EACH ROW EXECUTE FUNCTION boom();",
            dbname,
        )
        with pytest.raises(StoreError, match="disk on fire"):
            store.delete_run("run-a")
        assert len(store.list_entries("run-a")) == 2 and len(body_dirs(store)) == 1
        pg_server.psql("DROP TRIGGER boom ON runs", dbname)
        assert store.delete_run("run-a") == 2 and body_dirs(store) == set()


# -- PostgreSQL restarted mid-run --------------------------------------------------------------


@contextlib.contextmanager
def _own_server(tmp_path: Path, query: str) -> Iterator[tuple[PgServer, ScratchStore, Any, Any]]:
    """A server of the test's own (it stops or freezes it), a shared store on it with ``query``
    added to the URL, its pad, and one spill made while all is well; the server is stopped after."""
    server = start_server()
    try:
        store = shared(server.create_database("own") + query, tmp_path / "b")
        pad = store.scratchpad("r", "a")
        yield server, store, pad, pad.intercept(BIG, tool="dump")
    finally:
        server.stop()


def test_postgres_down_then_back_without_reopening(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with _own_server(tmp_path, "&connect_timeout=2&password=s3cret-in-query") as (server, store, pad, before):
        server._kill_postmaster()  # down (by PID), data kept
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=r"unavailable.*retry when it is back"):
            store.get_entry(pad.scope, "handle", before.handle)  # type: ignore[arg-type]
        assert time.monotonic() - t0 < 15
        down = pad.intercept(BIG + "\nwhile down", tool="dump")  # fails closed: a short pointer
        assert not down.spilled and down.failure and "StoreUnavailableError" in down.failure
        # (the reason was cut at 200 characters: "…after 5.00 sec; nothing was")
        assert not down.failure.endswith("nothing was") and ("retry when" in down.failure or down.failure[-1] == "…")
        assert len(down.content.encode()) < 2000 and down.content != BIG + "\nwhile down"
        res = pad.call_tool("head", {"handle": before.handle, "lines": 1})
        assert not res.ok and len(res.text) < 2000
        for said in (down.failure, down.content, res.text):  # what the model and the log read
            assert "s3cret-in-query" not in said and "password=***" in said, said
        while time.monotonic() - t0 < 18:  # a longer outage, calls failing all along
            with pytest.raises(StoreUnavailableError):
                store.get_entry(pad.scope, "handle", before.handle)  # type: ignore[arg-type]
        server._start()  # back: the same store object works again, no reopen
        # and at once: the pool's doubling reconnect delay (8 s by now) held it away after a restart
        t1 = time.monotonic()
        store.get_entry(pad.scope, "handle", before.handle)  # type: ignore[arg-type]
        assert time.monotonic() - t1 < 1.5  # not a wait for the pool's next try (connect_timeout=2)
        # the pool's warning at each failed try (a notebook's stderr showed them all) is DEBUG now
        loud = [r.getMessage() for r in caplog.records if r.name.startswith("psycopg") and r.levelno >= 30]
        assert not loud, loud[:3]
        after = pad.intercept(BIG + "\nafter", tool="dump")
        assert after.spilled, after.failure
        assert pad.call_tool("head", {"handle": before.handle, "lines": 1}).ok
        assert pad.get(after.handle) == BIG + "\nafter"  # type: ignore[arg-type]
        store.close()


def _within(seconds: float, call: Any) -> Any:
    """``call()``'s result, or an AssertionError when it has not returned within ``seconds``."""
    import threading

    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, f"still waiting after {seconds} s"
    return out[0]


def test_a_frozen_server_bounds_every_call(tmp_path: Path) -> None:
    # a server that stops answering but keeps its connections (SIGSTOP here; a network partition
    # looks the same to the client) held every call forever: libpq has no read timeout
    query = "&connect_timeout=2&options=-c%20statement_timeout%3D1000"
    with _own_server(tmp_path, query) as (server, store, pad, before):
        pids = server.freeze()
        try:
            # (in a thread: were a call to block, the test fails and thaws instead of hanging)
            # the answer's wait (1 s + 2 s grace) and a reconnect try (2 s)
            res = _within(8, lambda: pad.call_tool("head", {"handle": before.handle, "lines": 1}))
            assert not res.ok and "unavailable" in res.text and len(res.text) < 2000, res.text
            down = _within(8, lambda: pad.intercept(BIG + "\nwhile frozen", tool="dump"))  # fails closed
            assert not down.spilled and down.failure and len(down.content.encode()) < 2000
        finally:
            server.thaw(pids)
        # the same store works again, no reopen
        assert pad.call_tool("head", {"handle": before.handle, "lines": 1}).ok
        after = pad.intercept(BIG + "\nafter", tool="dump")
        assert after.spilled, after.failure
        assert pad.get(after.handle) == BIG + "\nafter"  # type: ignore[arg-type]
        store.close()


def test_a_statement_past_its_deadline_is_cut_with_a_clear_error(pg_url: str, tmp_path: Path) -> None:
    # the in-flight case: a statement that does not come back is cut at the URL's
    # statement_timeout + grace even when the server cannot cancel it itself
    from jupyter_scratchpad.store._pgcatalog import answer_timeout

    assert answer_timeout(pg_url) == 30.0
    assert answer_timeout(pg_url + "&options=-c%20statement_timeout%3D1500") == 3.5
    assert answer_timeout(pg_url + "&options=-c%20statement_timeout%3D2s") == 4.0
    assert answer_timeout(pg_url + "&options=-c%20statement_timeout%3D0") == 30.0  # 0: none, as in PostgreSQL
    with shared(pg_url + "&options=-c%20statement_timeout%3D0", tmp_path / "b") as store:
        catalog = store._cat  # type: ignore[attr-defined]
        catalog._answer_s = 1.0  # the server itself would wait forever (statement_timeout=0)

        def sleep_past_the_deadline() -> BaseException | None:
            try:
                with catalog._tx(None) as tx:
                    tx.execute("SELECT pg_sleep(30)")
            except StoreUnavailableError as exc:
                return exc
            return None

        cut = _within(5, sleep_past_the_deadline)
        assert cut is not None and re.search(r"did not answer within 1 s.*statement_timeout", str(cut)), cut
        store.scratchpad("r", "a").scratch_write("k", 1)  # the pool replaced the cut connection


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    url = f"postgresql://postgres:hunter2@/postgres?host={tmp_path}/no-such-dir&port=1&connect_timeout=1"
    with pytest.raises(StoreUnavailableError, match="unavailable") as info:
        ScratchStore(url, bodies=tmp_path / "b")
    said = str(info.value)
    assert len(said) < 800 and "\n" not in said
    assert "hunter2" not in said and "postgres:***@" in said  # the password never reaches a message


def test_a_password_in_the_query_string_never_reaches_a_message(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    # libpq also takes ?password=…: it was shown in repr(store) and describe() (and, with the
    # server down, in the errors a model reads: see test_postgres_down_then_back_without_reopening)
    with shared(f"{pg_url}&password=s3cret-in-query", tmp_path / "b") as store:
        for text in (repr(store), store.describe()):
            assert "s3cret-in-query" not in text and "password=***" in text, text
    # a URL libpq cannot read was "catalog operation failed on …: invalid percent-encoded token: "%zz"" (a
    # piece of the password) with no word about the URL
    for bad in ("postgresql://app:pw%zz@localhost/db", "postgresql://app:s3cret@localhost/db?bogus=1"):
        with pytest.raises(StoreError, match=r"URL .* cannot be read") as unread:
            shared(bad, tmp_path / "u")
        said = str(unread.value)
        assert "pw%zz" not in said and "%zz" not in said and "s3cret" not in said and "percent-encode" in said
    # a database that does not exist is not an outage to retry
    missing = pg_server.url_for("no_such_database_here") + "&password=s3cret-in-query"
    with pytest.raises(StoreError, match="a retry will not change") as info:
        shared(missing, tmp_path / "c")
    assert not isinstance(info.value, StoreUnavailableError) and "s3cret-in-query" not in str(info.value)


def test_a_port_that_is_not_a_number_is_a_url_typo_not_an_outage(tmp_path: Path) -> None:
    # libpq called it "failed to resolve host 'localhost': Servname not supported", which the
    # store reported as an outage to retry
    for url in ("postgresql://u:pw@localhost:54x2/db", "postgresql://u@h1:5432,h2:abc/db"):
        with pytest.raises(StoreError, match="is not a number") as info:
            ScratchStore(url, bodies=tmp_path / "b")
        assert not isinstance(info.value, StoreUnavailableError) and "pw@" not in str(info.value)
    assert not (tmp_path / "b").exists()  # refused before anything was created


def test_a_bad_setting_in_the_url_is_not_an_outage(pg_url: str, tmp_path: Path) -> None:
    # the server's FATAL "-c statement_timeout requires a value" was "unavailable … retry when it is back"
    for options in ("-c%20statement_timeout", "-c%20no_such_setting%3D1"):
        with pytest.raises(StoreError, match="a retry will not change") as info:
            shared(f"{pg_url}&options={options}", tmp_path / "b")
        assert not isinstance(info.value, StoreUnavailableError)


def test_a_database_owner_without_createrole_is_told_what_the_first_open_needs(tmp_path: Path) -> None:
    # (a cluster of its own: the role the first open creates is the cluster's, made by other tests)
    server = start_server()
    try:
        server.psql("CREATE ROLE owner_only LOGIN")
        server.psql("CREATE DATABASE owned OWNER owner_only")
        with pytest.raises(StoreError) as info:
            shared(server.url_for("owned", user="owner_only"), tmp_path / "b")
        said = str(info.value)
        assert "CREATEROLE" in said and "CONTEXT" not in said, said
    finally:
        server.stop()


def test_the_same_content_is_stored_once_under_a_race(pg_url: str, tmp_path: Path) -> None:
    """Two stores (as two processes would) spill the same bytes into one scope: the unique
    constraint, not a check-then-insert, keeps one entry and one body."""
    a, b = shared(pg_url, tmp_path / "b"), shared(pg_url, tmp_path / "b")
    try:
        pa, pb = a.scratchpad("r", "fleet"), b.scratchpad("r", "fleet")
        digest = hashlib.sha256(BIG.encode()).hexdigest()
        # b cannot see a's entry when it checks (as if a committed right after b's check)
        real = b.find_by_hash
        b.find_by_hash = lambda scope, h: None  # type: ignore[method-assign]
        ra = pa.intercept(BIG, tool="dump")
        rb = pb.intercept(BIG, tool="other_tool")  # another name, same content
        b.find_by_hash = real  # type: ignore[method-assign]
        assert ra.spilled and rb.spilled and rb.handle == ra.handle
        with psycopg.connect(pg_url) as conn:
            n = conn.execute("SELECT count(*) FROM scratch_entries WHERE content_hash = %s", [digest]).fetchone()
        assert n == (1,) and len(body_dirs(a)) == 1
    finally:
        a.close()
        b.close()


def test_a_same_content_respill_racing_a_replacement_keeps_its_own_content(pg_url: str, tmp_path: Path) -> None:
    """a re-spills its content X under a named handle; between a's lookup (X is there: only a
    refresh is needed) and a's refresh, b replaces the handle with Y. The refresh must not give
    Y's row X's tokens and metadata: a's output is stored (the last writer wins), whole."""
    a, b = shared(pg_url, tmp_path / "b"), shared(pg_url, tmp_path / "b")
    try:
        pa, pb = a.scratchpad("r", "fleet"), b.scratchpad("r", "fleet")
        x = {"who": "A", "items": [{"i": n, "pad": "x" * 200} for n in range(300)]}
        y = {"who": "B", "rows": [{"j": 1}]}
        assert pa.intercept(x, tool="t", handle="nn", force=True).spilled
        cat = a._cat
        real = cat.refresh

        def replaced_first(*args: Any, **kw: Any) -> bool:
            cat.refresh = real  # type: ignore[method-assign]
            assert pb.intercept(y, tool="t", handle="nn", force=True).spilled
            return bool(real(*args, **kw))

        cat.refresh = replaced_first  # type: ignore[method-assign]
        res = pa.intercept(x, tool="t", handle="nn", force=True)
        assert res.failure is None and res.spilled, res.failure
        fresh = shared(pg_url, tmp_path / "b")
        try:
            pf = fresh.scratchpad("r", "fleet")
            for pad in (pa, pb, pf):
                assert pad.call_tool("get_in", {"handle": "nn", "path": "who"}, charge=False).data == "A"
                out = pad.call_tool("sql", {"query": "SELECT count(*) AS n FROM nn.items"}, charge=False)
                assert out.ok and out.data == [{"n": 300}], out.text
            entry = pf.entry("nn")
            assert entry.size_bytes == res.stub["size"]
        finally:
            fresh.close()
    finally:
        a.close()
        b.close()


def test_two_processes_replacing_one_named_handle_at_once_the_last_writer_wins(pg_url: str, tmp_path: Path) -> None:
    """b replaces the named handle with Y; a commits X under it after b looked (no row yet) and
    before b's insert: b's insert met a's row, and b's spill failed "spill again" (2 of 479 in a
    stress run). b's output replaces a's, as when they come one after the other."""
    a, b = shared(pg_url, tmp_path / "b"), shared(pg_url, tmp_path / "b")
    try:
        pa, pb = a.scratchpad("r", "fleet"), b.scratchpad("r", "fleet")
        x = {"who": "A", "items": [{"i": n, "pad": "x" * 200} for n in range(300)]}
        y = {"who": "B", "rows": [{"j": n} for n in range(2000)]}
        cat = b._cat
        real = cat._insert

        def a_first(*args: Any, **kw: Any) -> Any:
            cat._insert = real  # type: ignore[method-assign]
            assert pa.intercept(x, tool="t", handle="nn", force=True).spilled
            return real(*args, **kw)

        cat._insert = a_first  # type: ignore[method-assign]
        res = pb.intercept(y, tool="t", handle="nn", force=True)
        assert res.failure is None and res.spilled, res.failure
        for pad in (pa, pb):
            assert pad.call_tool("get_in", {"handle": "nn", "path": "who"}, charge=False).data == "B"
        assert pa.entry("nn").size_bytes == res.stub["size"]
        a.sweep(), b.sweep()  # a's body, replaced, is retired: one body left once the grace has passed
        assert len(body_dirs(a)) <= 2 and pb.call_tool("head", {"handle": "nn", "lines": 3}, charge=False).ok
    finally:
        a.close()
        b.close()


def test_a_named_respill_that_meets_its_twin_replaced_again_is_stored_last(pg_url: str, tmp_path: Path) -> None:
    """a re-spills X under a named handle; b stores the same X first (a's insert meets b's row and
    would use it), then, before a gives b's row its expiry, c replaces the handle with Y. a's
    spill failed "written concurrently with other content; spill again" (10-20 of 100 named
    re-spills per process with 4 processes): a is the last writer, so X is stored."""
    a, b, c = (shared(pg_url, tmp_path / "b") for _ in range(3))
    try:
        pa, pb, pc = (s.scratchpad("r", "fleet") for s in (a, b, c))
        x = {"who": "A", "items": [{"i": n, "pad": "x" * 200} for n in range(300)]}
        y = {"who": "C", "rows": [{"j": 1}]}
        cat = a._cat
        real_insert, real_refresh = cat._insert, cat.refresh

        def twin_first(*args: Any, **kw: Any) -> Any:
            cat._insert = real_insert  # type: ignore[method-assign]
            assert pb.intercept(x, tool="t", handle="nn", force=True).spilled
            return real_insert(*args, **kw)

        def replaced_then(*args: Any, **kw: Any) -> bool:
            cat.refresh = real_refresh  # type: ignore[method-assign]
            assert pc.intercept(y, tool="t", handle="nn", force=True).spilled
            return bool(real_refresh(*args, **kw))

        cat._insert, cat.refresh = twin_first, replaced_then  # type: ignore[method-assign]
        res = pa.intercept(x, tool="t", handle="nn", force=True)
        assert res.failure is None and res.spilled, res.failure
        for pad in (pa, pb, pc):
            assert pad.call_tool("get_in", {"handle": "nn", "path": "who"}, charge=False).data == "A"
            out = pad.call_tool("sql", {"query": "SELECT count(*) AS n FROM nn.items"}, charge=False)
            assert out.ok and out.data == [{"n": 300}], out.text
    finally:
        for s in (a, b, c):
            s.close()


def test_agent_sql_on_a_shared_store_never_reaches_postgres(pg_url: str, tmp_path: Path) -> None:
    with shared(pg_url, tmp_path / "b") as store:
        pad = store.scratchpad("r", "alice")
        h = pad.intercept([{"id": i, "name": f"n{i}"} for i in range(3000)], tool="rows").handle
        dsn = pg_url.replace("postgresql://", "postgres://")
        for query in (
            f"ATTACH '{pg_url}' AS pg (TYPE postgres)",
            f"SELECT * FROM postgres_scan('{dsn}', 'public', 'scratch_entries')",
            "INSTALL postgres",
            "LOAD postgres",
            f"SELECT * FROM postgres_query('{dsn}', 'SELECT 1')",
        ):
            res = pad.call_tool("sql", {"query": query})
            assert not res.ok and res.error["error"] in ("sql_forbidden", "sql_error", "sql_not_read_only"), (
                query,
                res.text,
            )
            assert "scratch_entries" not in res.text.replace(query, "") and len(res.text) < 3000
        ok = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {h}"})
        assert ok.ok and "3000" in ok.text


def test_without_a_bodies_directory_each_catalog_gets_its_own(
    pg_server: PgServer, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SCRATCHPAD_BODIES", raising=False)
    other = pg_server.create_database("second_" + os.urandom(4).hex())
    with ScratchStore(pg_url, sweep_interval_s=None) as a, ScratchStore(other, sweep_interval_s=None) as b:
        assert (
            a.path != b.path
            and a.path.parent == b.path.parent == tmp_path / "cache" / "jupyter-scratchpad" / "shared-bodies"
        )
        assert a.path.name == a._cat.store_id  # type: ignore[attr-defined]
    monkeypatch.setenv("SCRATCHPAD_BODIES", str(tmp_path / "env-bodies"))
    with ScratchStore(pg_url, sweep_interval_s=None) as c:
        assert c.path == tmp_path / "env-bodies"


def test_two_writers_of_one_note_never_collide(pg_url: str, tmp_path: Path) -> None:
    """The kill test found it: two processes writing one note key both deleted, then both
    inserted, and one failed on the primary key. A note write is one upsert now."""
    import threading

    stores = [shared(pg_url, tmp_path / "b"), shared(pg_url, tmp_path / "b")]
    errors: list[BaseException] = []

    def write(n: int) -> None:
        pad = stores[n].scratchpad("r", "fleet")
        for i in range(150):
            try:
                pad.scratch_write("same-key", {"writer": n, "i": i})
            except BaseException as exc:  # every error is the test finding
                errors.append(exc)

    try:
        threads = [threading.Thread(target=write, args=(n,)) for n in range(2) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert stores[0].scratchpad("r", "fleet").scratch_read("same-key")["i"] == 149
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT count(*) FROM scratch_entries WHERE key = 'same-key'").fetchone() == (1,)
    finally:
        for s in stores:
            s.close()


def test_a_reader_given_another_bodies_directory_is_told_so(pg_url: str, tmp_path: Path) -> None:
    """The catalog names a live handle whose body is not in this process's bodies directory (it
    was given another one): that, not 'removed while it was being read (it expired…)'."""
    a, b = shared(pg_url, tmp_path / "right"), shared(pg_url, tmp_path / "wrong")
    try:
        h = a.scratchpad("r", "fleet").intercept(BIG, tool="dump").handle
        res = b.scratchpad("r", "fleet").call_tool("head", {"handle": h, "lines": 3}, charge=False)
        assert not res.ok and "removed while" not in res.error["message"]
        assert f"is not in {tmp_path / 'wrong'}" in res.error["message"] and "same one" in res.error["message"]
        # (or the directory's files were lost: a new STORE_ID is written to an emptied directory)
        assert "files of this directory were removed" in res.error["message"]
        assert a.scratchpad("r", "fleet").call_tool("head", {"handle": h, "lines": 3}, charge=False).ok
    finally:
        a.close()
        b.close()
