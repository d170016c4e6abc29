"""Probe K's defects of the shared store, on a real PostgreSQL: one clock for every process (the
database's), PostgreSQL 15's per-user schema, note keys bounded alike on both backends,
``connect_timeout=0``, and what a role with no grant is told."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import jupyter_scratchpad
from jupyter_scratchpad import InvalidArgumentError, ScratchStore, StoreError, StoreUnavailableError
from jupyter_scratchpad.store import _pgcatalog
from jupyter_scratchpad.store._entry import Entry, Scope
from tests.conftest import FakeClock
from tests.pgserver import PgServer

SKEW_S = 400.0  # a machine whose NTP is off: more than the 300 s TTL below

# A process on another machine: its clock (time.time) runs SKEW seconds off the database's. The
# patch comes before the package is imported, as a process's clock is wrong from its start.
_OTHER_MACHINE = textwrap.dedent(
    """
    import json, sys, time
    _real = time.time
    time.time = lambda: _real() + float(sys.argv[1])
    from jupyter_scratchpad import ScratchStore
    url, bodies, action = sys.argv[2], sys.argv[3], sys.argv[4]
    with ScratchStore(url, bodies=bodies, sweep_interval_s=None, ttl_s=300) as store:
        out = {"now_minus_time": store.now() - time.time()}
        if action == "write":
            pad = store.scratchpad(run_id="r", agent_id="a")
            pad.scratch_write("plan", "step 3 of 9", ttl_s=300)
            out["handle"] = pad.intercept("line\\n" * 40000, tool="dump").handle
        else:
            pad = store.scratchpad(run_id="r2", agent_id="a")
            try:
                out["read"] = pad.scratch_read("plan")
            except Exception as exc:
                out["read"] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))
    """
)


def _dbname(url: str) -> str:
    return url.split("/")[3].split("?")[0]


def _on_other_machine(tmp_path: Path, skew_s: float, url: str, bodies: Path, action: str) -> dict[str, object]:
    script = tmp_path / "other_machine.py"
    script.write_text(_OTHER_MACHINE, encoding="utf-8")
    # the package this test imported (the subprocess must not find another one first)
    env = {**os.environ, "PYTHONPATH": str(Path(jupyter_scratchpad.__file__).parent.parent)}
    proc = subprocess.run(
        [sys.executable, str(script), str(skew_s), url, str(bodies), action],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _db_now(pg_server: PgServer, dbname: str) -> float:
    return float(pg_server.psql("SELECT extract(epoch FROM clock_timestamp())", dbname).strip())


# -- #1: one clock, the database's --------------------------------------------------------------


def test_a_writer_whose_clock_runs_behind_keeps_its_entries_through_anothers_sweep(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    bodies = tmp_path / "bodies"
    wrote = _on_other_machine(tmp_path, -SKEW_S, pg_url, bodies, "write")
    left = pg_server.psql(
        "SELECT string_agg(round(expires_at - extract(epoch FROM clock_timestamp()))::text, ',') FROM scratch_entries",
        _dbname(pg_url),
    ).strip()
    assert all(250 < float(s) <= 300 for s in left.split(",")), left  # 300 s by the database's clock
    with ScratchStore(pg_url, bodies=bodies, sweep_interval_s=None) as sweeper:  # a correct clock
        assert sweeper.sweep() == 0  # (it removed both, the writer's live note and handle)
        pad = sweeper.scratchpad(run_id="r", agent_id="a")
        assert pad.scratch_read("plan") == "step 3 of 9"
        head = pad.call_tool("head", {"handle": wrote["handle"], "n": 2})
        assert "line" in str(head) and "unknown_handle" not in str(head), head
    assert wrote["now_minus_time"] == pytest.approx(SKEW_S, abs=5)  # its store's clock is the database's


def test_a_reader_whose_clock_runs_ahead_sees_a_note_just_written(pg_url: str, tmp_path: Path) -> None:
    bodies = tmp_path / "bodies"
    with ScratchStore(pg_url, bodies=bodies, sweep_interval_s=None) as store:
        store.scratchpad(run_id="r2", agent_id="a").scratch_write("plan", "fresh, 300 s TTL", ttl_s=300)
    read = _on_other_machine(tmp_path, SKEW_S, pg_url, bodies, "read")
    assert read["read"] == "fresh, 300 s TTL"  # (was NotFoundError: 400 s ahead, the note had expired)
    assert read["now_minus_time"] == pytest.approx(-SKEW_S, abs=5)


def test_the_offset_is_measured_again_when_the_local_clock_jumps(
    pg_server: PgServer, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skew = [-SKEW_S]
    real = _pgcatalog._ticks
    monkeypatch.setattr(_pgcatalog, "_ticks", lambda: real() + skew[0])
    dbname = _dbname(pg_url)
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        assert store.now() == pytest.approx(_db_now(pg_server, dbname), abs=2)
        pad = store.scratchpad(run_id="r", agent_id="a")
        skew[0] += 2 * SKEW_S  # the local clock is stepped: 400 s ahead now
        pad.scratch_list()  # the next pooled connection taken measures again
        assert store.now() == pytest.approx(_db_now(pg_server, dbname), abs=2)
        entry = store.put_note(pad.scope, "k", 1, ttl_s=300)
        assert entry.expires_at - _db_now(pg_server, dbname) == pytest.approx(300, abs=5)
        # and a minute later (CLOCK_RESYNC_S) without any jump
        monkeypatch.setattr(_pgcatalog, "CLOCK_RESYNC_S", 0.0)
        skew[0] += 0.5  # (under _CLOCK_JUMP_S: only the interval measures it)
        pad.scratch_list()
        assert store.now() == pytest.approx(_db_now(pg_server, dbname), abs=0.4)
    # an injected clock is used as given, with no offset (tests move it by hand)
    clock = FakeClock()
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None, clock=clock) as store:
        assert store.now() == clock.now
        entry = store.put_note(store.ensure_scope("r", "a"), "k", 1, ttl_s=60)
        assert (entry.created_at, entry.expires_at) == (clock.now, clock.now + 60)


# -- #3: PostgreSQL 15's per-user schema -----------------------------------------------------


def _schema_owner(pg_server: PgServer, dbname: str) -> str:
    """``CREATE SCHEMA app AUTHORIZATION app``, ``public`` not writable (PostgreSQL 15's advice)."""
    app = f"app_{uuid.uuid4().hex[:8]}"
    pg_server.psql(f"CREATE ROLE {app} LOGIN CREATEROLE")
    pg_server.psql(f"CREATE SCHEMA {app} AUTHORIZATION {app}", dbname)
    pg_server.psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC", dbname)
    return app


def test_the_per_user_schema_of_postgresql_15_works(pg_server: PgServer, pg_url: str, tmp_path: Path) -> None:
    dbname = _dbname(pg_url)
    app = _schema_owner(pg_server, dbname)
    url = pg_server.url_for(dbname, user=app)
    with ScratchStore(url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        pad = store.scratchpad(run_id="r", agent_id="a")
        pad.scratch_write("k", "v")
        handle = pad.intercept("line\n" * 40000, tool="dump").handle
        assert pad.scratch_read("k") == "v"
        assert store.sweep() == 0
    tables = pg_server.psql("SELECT schemaname FROM pg_tables WHERE tablename = 'scratch_entries'", dbname)
    assert tables.split() == [app]
    with ScratchStore(url, bodies=tmp_path / "b", sweep_interval_s=None) as store:  # a later open
        pad = store.scratchpad(run_id="r", agent_id="a")
        assert pad.scratch_read("k") == "v"
        assert "line" in str(pad.call_tool("head", {"handle": handle, "n": 1}))


def test_a_schema_the_app_role_may_not_use_is_named_not_row_level_security(
    pg_server: PgServer, pg_url: str, tmp_path: Path
) -> None:
    dbname = _dbname(pg_url)
    app = _schema_owner(pg_server, dbname)
    url = pg_server.url_for(dbname, user=app)
    ScratchStore(url, bodies=tmp_path / "b", sweep_interval_s=None).close()
    pg_server.psql(f"REVOKE USAGE ON SCHEMA {app} FROM scratchpad_app", dbname)
    with pytest.raises(StoreError) as err:
        ScratchStore(url, bodies=tmp_path / "b", sweep_interval_s=None)
    said = err.value.message
    assert "row-level security" not in said and f"GRANT USAGE ON SCHEMA {app} TO scratchpad_app" in said, said


# -- #4: note keys bounded in bytes, alike on both backends --------------------------------


def test_a_key_too_large_for_an_index_row_is_refused_alike_on_both_backends(backend_store: ScratchStore) -> None:
    pad = backend_store.scratchpad(run_id="r", agent_id="a")
    emoji = "".join(chr(0x1F300 + i % 700) for i in range(1024))  # 1,024 characters, 4 KB
    said = pad.call_tool("scratch_write", {"key": emoji, "value": "v"})
    assert '"invalid_argument"' in str(said) and "1024 bytes" in str(said), said
    with pytest.raises(InvalidArgumentError, match="at most 1024 bytes"):
        pad.scratch_write(emoji, "v")
    # the largest allowed: ids of 512 bytes and a key of 1,024 bytes, one index row of PostgreSQL
    run_id, agent_id = "运" * 170, "代" * 170  # 510 bytes each
    wide = backend_store.scratchpad(run_id=run_id, agent_id=agent_id)
    wide.scratch_write(emoji[:256], "kept")
    assert wide.scratch_read(emoji[:256]) == "kept"
    with pytest.raises(InvalidArgumentError, match="512 bytes"):
        backend_store.scratchpad(run_id="运" * 256, agent_id="a")


def test_a_row_postgresql_cannot_index_is_no_outage(pg_url: str, tmp_path: Path) -> None:
    with ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        scope = store.ensure_scope("r", "a")
        now = store.now()
        key = secrets.token_hex(2500)  # 5,000 bytes that do not compress
        row = Entry("r", "a", "note", key, None, "1", "json", 1, None, None, None, "1",
                    "scratch_write", None, None, {}, now, now + 60).as_row()  # fmt: skip
        with pytest.raises(StoreError) as err:  # (past validate_key: the catalog's own answer)
            store.catalog.put_note(row)
        assert not isinstance(err.value, StoreUnavailableError), err.value
        assert "retry when it is back" not in err.value.message and "will not change" in err.value.message
        assert store.get_entry(scope, "note", key) is None
        assert store.entries(Scope("r", "a")) == []  # and the store goes on


# -- #5: connect_timeout=0 is libpq's "no connect timeout" ----------------------------------


def test_connect_timeout_zero_opens_the_store(pg_url: str, tmp_path: Path) -> None:
    with ScratchStore(pg_url + "&connect_timeout=0", bodies=tmp_path / "b", sweep_interval_s=None) as store:
        pad = store.scratchpad(run_id="r", agent_id="a")
        pad.scratch_write("k", 1)
        assert pad.scratch_read("k") == 1
        assert store._cat._timeout_s == _pgcatalog.DEFAULT_WAIT_S  # a call still waits at most 5 s
    with ScratchStore(pg_url + "&connect_timeout=1.5", bodies=tmp_path / "b", sweep_interval_s=None) as store:
        assert store._cat._timeout_s == 1.5


# -- #6: a role granted nothing is told to GRANT scratchpad_app ------------------------------


def test_a_role_granted_nothing_is_told_to_grant_the_app_role(pg_server: PgServer, pg_url: str, tmp_path: Path) -> None:
    dbname = _dbname(pg_url)
    ScratchStore(pg_url, bodies=tmp_path / "b", sweep_interval_s=None).close()  # the layout, as its owner
    eve = f"Eve_{uuid.uuid4().hex[:6]}"  # (a name that needs quoting)
    pg_server.psql(f'CREATE ROLE "{eve}" LOGIN')
    url = pg_server.url_for(dbname, user=eve)
    with pytest.raises(StoreError) as err:
        ScratchStore(url, bodies=tmp_path / "b", sweep_interval_s=None)
    said = err.value.message
    assert f'GRANT scratchpad_app TO "{eve}"' in said and "create the scratch layout" not in said, said
    # with a grant on scratch_meta only: refused when it opens, not "catalog operation failed" later
    pg_server.psql(f'GRANT SELECT ON scratch_meta TO "{eve}"', dbname)
    with pytest.raises(StoreError) as err:
        ScratchStore(url, bodies=tmp_path / "b", sweep_interval_s=None)
    assert f'GRANT scratchpad_app TO "{eve}"' in err.value.message, err.value.message
    pg_server.psql(f'GRANT scratchpad_app TO "{eve}"')  # the advice works
    with ScratchStore(url, bodies=tmp_path / "b", sweep_interval_s=None) as store:
        pad = store.scratchpad(run_id="r", agent_id="eve")
        pad.scratch_write("k", 1)
        assert pad.scratch_read("k") == 1
