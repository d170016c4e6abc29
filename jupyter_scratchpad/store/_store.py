"""``ScratchStore``: a DuckDB catalog of scoped, expiring entries, with bodies on disk.

Layout of a store directory::

    catalog.duckdb        runs, agents, scratch_entries (+ scratch_meta: layout version)
    LOCK                  held (flock) by the one process that has the store open
    bodies/<body_id>/     raw, body, lines.idx  (see _bodies.py)
    tmp/                  bodies being written; anything left here after a crash is swept

Why bodies are files and not DuckDB BLOBs: a line or byte range of a file costs a seek and a read
of what is returned, while a BLOB is materialised whole by DuckDB before it can be sliced; and
DuckDB's ``read_json`` reads a file in place for SQL. ``benchmarks/bench_store.py`` has numbers.

Atomicity: a body is written under ``tmp/``, renamed into ``bodies/`` and only then made visible by
one catalog transaction, all under the store's lock. A process killed at any point leaves either
no row (and an orphan directory that the next sweep removes) or a complete entry.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from ..errors import (
    InvalidArgumentError,
    NotFoundError,
    ScopeError,
    StoreClosedError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
)
from ._bodies import BodyReader, BodyStats, remove_body_dir, write_body_dir
from ._entry import Entry, Scope, validate_handle, validate_id, validate_key, validate_ttl
from ._lock import StoreLock
from ._schema import DDL, LAYOUT_VERSION

if TYPE_CHECKING:
    from .._pad import Scratchpad
    from ..spill import SpillPolicy

__all__ = ["ScratchStore"]

log = logging.getLogger("jupyter_scratchpad.store")

DEFAULT_TTL_S = 3600.0
DEFAULT_MAX_TTL_S = 86_400.0  # a handle in use lives at most this long after its spill
DEFAULT_SWEEP_INTERVAL_S = 300.0

_COLUMNS = (
    "run_id, agent_id, kind, key, body_id, value_json, format, size_bytes, body_bytes, line_count, "
    "tokens, preview, source_tool, server, content_hash, meta_json, created_at, expires_at"
)


class ScratchStore:
    """A scratch store: a directory holding a DuckDB catalog and the spilled bodies.

    >>> with ScratchStore() as store:              # a temporary directory, removed by close()
    ...     pad = store.scratchpad(run_id="run-1", agent_id="main")
    ...     r = pad.intercept("x" * 100_000, tool="dump")
    ...     r.spilled
    True
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        sweep_interval_s: float | None = DEFAULT_SWEEP_INTERVAL_S,
        clock: Callable[[], float] = time.time,
        max_ttl_s: float = DEFAULT_MAX_TTL_S,
    ) -> None:
        self.ttl_s = validate_ttl(ttl_s)
        self.max_ttl_s = validate_ttl(max_ttl_s)
        self._clock = clock
        self._temporary = path is None
        self.path = (
            Path(tempfile.mkdtemp(prefix="jupyter-scratchpad-"))
            if path is None
            else Path(os.path.expandvars(os.path.expanduser(os.fspath(path))))
        )
        self._closed = True
        self._lock = threading.RLock()
        self._inflight: set[str] = set()
        self._readers: OrderedDict[str, BodyReader] = OrderedDict()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store directory {self.path}: {exc}", path=str(self.path)) from exc
        if not self.path.is_dir():
            raise StoreFormatError(f"{self.path} is not a directory", path=str(self.path))
        self._file_lock = StoreLock(self.path / "LOCK")
        try:
            (self.path / "bodies").mkdir(exist_ok=True)
            (self.path / "tmp").mkdir(exist_ok=True)
            self._conn = self._connect()
        except BaseException:
            self._file_lock.release()
            raise
        self._closed = False
        self._clear_tmp()
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None
        if sweep_interval_s:
            self._sweeper = threading.Thread(
                target=self._sweep_loop, args=(float(sweep_interval_s),), name="scratch-sweeper", daemon=True
            )
            self._sweeper.start()

    # -- lifecycle ---------------------------------------------------------------------------

    def _connect(self) -> duckdb.DuckDBPyConnection:
        db_path = self.path / "catalog.duckdb"
        try:
            conn = duckdb.connect(str(db_path), config={"autoinstall_known_extensions": "false"})
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"the DuckDB catalog {db_path} is locked by another process; close the store "
                    "there or open another directory",
                    path=str(self.path),
                    lock_path=str(db_path),
                ) from exc
            raise StoreFormatError(f"cannot open {db_path} as a DuckDB catalog: {exc}", path=str(self.path)) from exc
        except duckdb.Error as exc:
            raise StoreFormatError(f"cannot open {db_path} as a DuckDB catalog: {exc}", path=str(self.path)) from exc
        try:
            conn.execute(DDL)
            row = conn.execute("SELECT value FROM scratch_meta WHERE name = 'layout_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO scratch_meta VALUES ('layout_version', ?)", [str(LAYOUT_VERSION)])
            elif int(row[0]) != LAYOUT_VERSION:
                raise StoreFormatError(
                    f"{self.path} has store layout {row[0]}, this version reads {LAYOUT_VERSION}; "
                    "open it with a matching jupyter-scratchpad or use a new directory",
                    path=str(self.path),
                )
        except duckdb.Error as exc:
            conn.close()
            raise StoreFormatError(f"{db_path} is not a scratch catalog: {exc}", path=str(self.path)) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the sweeper, close the catalog and release the lock; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        if self._sweeper is not None and self._sweeper is not threading.current_thread():
            self._sweeper.join(timeout=10)
        with self._lock:
            self._readers.clear()
            try:
                self._conn.close()
            finally:
                self._file_lock.release()
                if self._temporary:
                    shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> ScratchStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # a forgotten embedded store should not leave its temp dir
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<ScratchStore {str(self.path)!r} {state}>"

    @contextmanager
    def _db(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """The catalog connection, under the store lock, with DuckDB errors wrapped once."""
        with self._lock:
            if self._closed:
                raise StoreClosedError(
                    f"the scratch store at {self.path} is closed; open a new ScratchStore",
                    path=str(self.path),
                )
            try:
                yield self._conn
            except duckdb.Error as exc:
                raise StoreError(f"catalog operation failed: {exc}", path=str(self.path)) from exc

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._db() as conn:
            conn.execute("BEGIN TRANSACTION")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def now(self) -> float:
        return float(self._clock())

    # -- scopes ------------------------------------------------------------------------------

    def ensure_scope(self, run_id: str, agent_id: str) -> Scope:
        """Register ``agent_id`` and ``run_id`` (owned by that agent); refuse another's run."""
        run_id = validate_id(run_id, "run_id")
        agent_id = validate_id(agent_id, "agent_id")
        now = self.now()
        with self._transaction() as conn:
            conn.execute("INSERT INTO agents VALUES (?, ?) ON CONFLICT DO NOTHING", [agent_id, now])
            row = conn.execute("SELECT agent_id FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None:
                conn.execute("INSERT INTO runs VALUES (?, ?, ?)", [run_id, agent_id, now])
            elif row[0] != agent_id:
                raise ScopeError(
                    f"run {run_id!r} is owned by agent {row[0]!r}, not {agent_id!r}; each run "
                    "belongs to one agent: use a new run_id for this agent",
                    run_id=run_id,
                    agent_id=agent_id,
                    owner=row[0],
                )
        return Scope(run_id, agent_id)

    def scratchpad(
        self,
        run_id: str = "default",
        agent_id: str = "main",
        model: str = "gpt-4o",
        *,
        context_window: int | None = None,
        safety_margin: float | None = None,
        max_extraction_tokens: int | None = None,
        policy: SpillPolicy | None = None,
        turn_depth_bonus: int | None = None,
        preview_lines: int = 20,
        tool_timeout_s: float = 10.0,
    ) -> Scratchpad:
        """The scratchpad of one (run, agent): intercept outputs, call tools, keep notes.

        ``safety_margin`` (default 0.20), ``max_extraction_tokens`` (10,000) and
        ``turn_depth_bonus`` (6) default to the policy's values, which default to Aura's.
        ``context_window`` defaults to the model's (``CONTEXT_WINDOWS``).
        """
        from .._pad import Scratchpad

        scope = self.ensure_scope(run_id, agent_id)
        return Scratchpad(
            self,
            scope,
            model=model,
            context_window=context_window,
            safety_margin=safety_margin,
            max_extraction_tokens=max_extraction_tokens,
            policy=policy,
            turn_depth_bonus=turn_depth_bonus,
            preview_lines=preview_lines,
            tool_timeout_s=tool_timeout_s,
        )

    # -- entries -----------------------------------------------------------------------------

    def get_entry(self, scope: Scope, kind: str, key: str) -> Entry | None:
        """The live entry ``(kind, key)`` of ``scope``, or None (expired rows are invisible)."""
        with self._db() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM scratch_entries WHERE run_id = ? AND agent_id = ? "
                "AND kind = ? AND key = ? AND expires_at > ?",
                [scope.run_id, scope.agent_id, kind, key, self.now()],
            ).fetchone()
        return Entry.from_row(row) if row else None

    def require_entry(self, scope: Scope, kind: str, key: str) -> Entry:
        entry = self.get_entry(scope, kind, key)
        if entry is None:
            what = "handle" if kind == "handle" else "note"
            raise NotFoundError(
                f"no live {what} {key!r} in run {scope.run_id!r} (it may have expired or been "
                "deleted); list what exists with scratch_list",
                **{"handle" if kind == "handle" else "key": key},
            )
        return entry

    def find_by_hash(self, scope: Scope, content_hash: str) -> Entry | None:
        """The oldest live handle of ``scope`` whose raw bytes hash to ``content_hash``, or None.

        One output, one entry: a spill of bytes already stored in the scope reuses that entry.
        """
        with self._db() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = 'handle' "
                "AND content_hash = ? AND expires_at > ? ORDER BY created_at, key LIMIT 1",
                [scope.run_id, scope.agent_id, content_hash, self.now()],
            ).fetchone()
        return Entry.from_row(row) if row else None

    def entries(self, scope: Scope, kind: str | None = None) -> list[Entry]:
        """Live entries of ``scope``, oldest first."""
        sql = f"SELECT {_COLUMNS} FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND expires_at > ?"
        params: list[Any] = [scope.run_id, scope.agent_id, self.now()]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        with self._db() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, key", params).fetchall()
        return [Entry.from_row(r) for r in rows]

    def list_entries(self, run_id: str, agent_id: str | None = None) -> list[dict[str, Any]]:
        """Metadata of the live entries of ``run_id`` (never bodies), as plain dicts."""
        sql = f"SELECT {_COLUMNS} FROM scratch_entries WHERE run_id = ? AND expires_at > ?"
        params: list[Any] = [run_id, self.now()]
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(agent_id)
        with self._db() as conn:
            rows = conn.execute(sql + " ORDER BY created_at, kind, key", params).fetchall()
        return [Entry.from_row(r).as_dict() for r in rows]

    def put_body(
        self,
        scope: Scope,
        *,
        handle: str,
        raw: bytes | Iterable[bytes],
        body: bytes | None,
        content_hash: str,
        fmt: str,
        size_bytes: int,
        tokens: int | None,
        preview: str,
        source_tool: str | None,
        server: str | None,
        meta: dict[str, Any] | None = None,
        ttl_s: float | None = None,
        replace: bool = True,
    ) -> tuple[Entry, bool]:
        """Store a spilled output as entry ``handle``; returns ``(entry, created)``.

        The same content under the same handle in the same scope is not written twice: its
        expiry is refreshed instead. A different content under an existing handle replaces it
        when ``replace`` (a named capture), else raises.
        """
        validate_handle(handle)
        ttl = self.ttl_s if ttl_s is None else validate_ttl(ttl_s)
        meta = {**(meta or {}), "ttl_s": ttl}  # the life each read renews (see slide)
        existing = self._row_any_expiry(scope, "handle", handle)
        if existing is not None and existing.content_hash == content_hash:
            now = self.now()
            with self._db() as conn:
                conn.execute(
                    "UPDATE scratch_entries SET expires_at = ?, created_at = CASE WHEN expires_at <= ? "
                    "THEN ? ELSE created_at END, tokens = coalesce(?, tokens), source_tool = ?, server = ?, "
                    "meta_json = ? WHERE run_id = ? AND agent_id = ? AND kind = 'handle' AND key = ?",
                    [
                        now + ttl, now, now, tokens, source_tool, server,
                        json.dumps({**existing.meta, **(meta or {})}), scope.run_id, scope.agent_id, handle,
                    ],
                )  # fmt: skip
            entry = self.require_entry(scope, "handle", handle)
            return entry, False
        if existing is not None and not replace and existing.expires_at > self.now():
            raise InvalidArgumentError(f"handle {handle!r} already holds other content", handle=handle)

        body_id = uuid.uuid4().hex
        tmp_dir = self.path / "tmp" / body_id
        with self._lock:
            self._inflight.add(body_id)
        try:
            stats = write_body_dir(tmp_dir, raw, body)
            with self._lock:
                if self._closed:
                    raise StoreClosedError(f"the scratch store at {self.path} is closed", path=str(self.path))
                os.rename(tmp_dir, self.path / "bodies" / body_id)
                try:
                    entry, old_body = self._insert_entry(
                        scope,
                        handle,
                        body_id,
                        stats,
                        content_hash,
                        fmt,
                        size_bytes,
                        tokens,
                        preview,
                        source_tool,
                        server,
                        meta or {},
                        ttl,
                    )
                except BaseException:
                    remove_body_dir(self.path / "bodies" / body_id)
                    raise
        except OSError as exc:
            raise StoreError(f"could not write the body of {handle!r}: {exc}", handle=handle) from exc
        finally:
            with self._lock:
                self._inflight.discard(body_id)
            if tmp_dir.exists():
                remove_body_dir(tmp_dir)
        if old_body:
            self._drop_bodies([old_body])
        return entry, True

    def _row_any_expiry(self, scope: Scope, kind: str, key: str) -> Entry | None:
        with self._db() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = ? AND key = ?",
                [scope.run_id, scope.agent_id, kind, key],
            ).fetchone()
        return Entry.from_row(row) if row else None

    def _insert_entry(
        self,
        scope: Scope,
        handle: str,
        body_id: str,
        stats: BodyStats,
        content_hash: str,
        fmt: str,
        size_bytes: int,
        tokens: int | None,
        preview: str,
        source_tool: str | None,
        server: str | None,
        meta: dict[str, Any],
        ttl: float,
    ) -> tuple[Entry, str | None]:
        now = self.now()
        with self._transaction() as conn:
            old = conn.execute(
                "SELECT body_id FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = 'handle' AND key = ?",
                [scope.run_id, scope.agent_id, handle],
            ).fetchone()
            if old is not None:
                conn.execute(
                    "DELETE FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = 'handle' AND key = ?",
                    [scope.run_id, scope.agent_id, handle],
                )
            entry = Entry(
                scope.run_id, scope.agent_id, "handle", handle, body_id, None, fmt, size_bytes,
                stats.body_bytes, stats.line_count, tokens, preview, source_tool, server, content_hash,
                {**meta, "longest_line": stats.longest_line}, now, now + ttl,
            )  # fmt: skip
            conn.execute(f"INSERT INTO scratch_entries ({_COLUMNS}) VALUES ({', '.join('?' * 18)})", entry.as_row())
        return entry, (old[0] if old else None)

    def put_note(self, scope: Scope, key: str, value: Any, ttl_s: float | None = None) -> Entry:
        """Write (or overwrite) the note ``key`` of ``scope``."""
        key = validate_key(key)
        ttl = self.ttl_s if ttl_s is None else validate_ttl(ttl_s)
        try:
            value_json = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"a note value must be JSON-serialisable: {exc}", key=key) from exc
        now = self.now()
        preview = value_json if len(value_json) <= 200 else value_json[:197] + "..."
        with self._transaction() as conn:
            conn.execute(
                "DELETE FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = 'note' AND key = ?",
                [scope.run_id, scope.agent_id, key],
            )
            conn.execute(
                f"INSERT INTO scratch_entries ({_COLUMNS}) VALUES "
                "(?, ?, 'note', ?, NULL, ?, 'json', ?, NULL, NULL, NULL, ?, 'scratch_write', NULL, NULL, "
                "NULL, ?, ?)",
                [scope.run_id, scope.agent_id, key, value_json, len(value_json.encode()), preview, now, now + ttl],
            )
        return self.require_entry(scope, "note", key)

    def touch(self, scope: Scope, kind: str, key: str, ttl_s: float | None = None) -> Entry:
        """Extend the life of a live entry to ``ttl_s`` from now."""
        ttl = self.ttl_s if ttl_s is None else validate_ttl(ttl_s)
        self.require_entry(scope, kind, key)
        with self._db() as conn:
            conn.execute(
                "UPDATE scratch_entries SET expires_at = ? WHERE run_id = ? AND agent_id = ? AND kind = ? AND key = ?",
                [self.now() + ttl, scope.run_id, scope.agent_id, kind, key],
            )
        return self.require_entry(scope, kind, key)

    def slide(self, scope: Scope, entry: Entry) -> float:
        """A handle that is read lives on: its expiry moves to ``now + its TTL`` (never earlier
        than it was, never later than ``max_ttl_s`` after its spill). Returns the new expiry.

        Idle handles still expire; notes keep their explicit TTLs (only handles slide).
        """
        if entry.kind != "handle":
            return entry.expires_at
        ttl = float(entry.meta.get("ttl_s") or self.ttl_s)
        target = min(self.now() + ttl, entry.created_at + self.max_ttl_s)
        # a write per read would cost every call a catalog UPDATE: the expiry moves only when it
        # gains at least 1% of the TTL (36 s of an hour; at most a minute)
        if target - entry.expires_at < min(60.0, ttl * 0.01):
            return entry.expires_at
        with self._db() as conn:
            conn.execute(
                "UPDATE scratch_entries SET expires_at = ? WHERE run_id = ? AND agent_id = ? AND kind = 'handle' "
                "AND key = ? AND content_hash = ? AND expires_at < ? AND expires_at > ?",
                [target, scope.run_id, scope.agent_id, entry.key, entry.content_hash, target, self.now()],
            )
        return target

    def set_tokens(self, scope: Scope, handle: str, content_hash: str, tokens: int) -> bool:
        """Record the exact token count of a handle counted after its spill (if it still holds
        that content); returns whether a row was updated."""
        with self._db() as conn:
            row = conn.execute(
                "UPDATE scratch_entries SET tokens = ?, meta_json = json_merge_patch(coalesce(meta_json, '{}'), "
                "'{\"tokens_exact\": true}') WHERE run_id = ? AND agent_id = ? AND kind = 'handle' AND key = ? "
                "AND content_hash = ? RETURNING key",
                [int(tokens), scope.run_id, scope.agent_id, handle, content_hash],
            ).fetchone()
        return row is not None

    def delete_entry(self, scope: Scope, kind: str, key: str) -> bool:
        """Delete one entry of ``scope`` (and its body); False when there was none."""
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT body_id, expires_at FROM scratch_entries WHERE run_id = ? AND agent_id = ? "
                "AND kind = ? AND key = ?",
                [scope.run_id, scope.agent_id, kind, key],
            ).fetchone()
            if row is None:
                return False
            conn.execute(
                "DELETE FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = ? AND key = ?",
                [scope.run_id, scope.agent_id, kind, key],
            )
        if row[0]:
            self._drop_bodies([row[0]])
        return bool(row[1] > self.now())

    def delete_run(self, run_id: str) -> int:
        """Delete a run with every entry and body of it, in one transaction; returns entries deleted."""
        return self._cascade("run_id", run_id, ("runs",))

    def delete_agent(self, agent_id: str) -> int:
        """Delete an agent, its runs, and every entry and body of them; returns entries deleted."""
        return self._cascade("agent_id", agent_id, ("runs", "agents"))

    def _cascade(self, column: str, value: str, owners: tuple[str, ...]) -> int:
        """DuckDB has no ON DELETE CASCADE: entries, then their owners, in one transaction."""
        where = f"WHERE {column} = ?"  # column is one of our two literals, never caller input
        with self._transaction() as conn:
            bodies = [
                r[0]
                for r in conn.execute(
                    f"SELECT body_id FROM scratch_entries {where} AND body_id IS NOT NULL", [value]
                ).fetchall()
            ]
            count = self._count(conn, f"SELECT count(*) FROM scratch_entries {where}", [value])
            conn.execute(f"DELETE FROM scratch_entries {where}", [value])
            for table in owners:
                conn.execute(f"DELETE FROM {table} {where}", [value])
        self._drop_bodies(bodies)
        return count

    @staticmethod
    def _count(conn: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> int:
        row = conn.execute(sql, params).fetchone()
        return int(row[0]) if row else 0

    # -- sweeping ----------------------------------------------------------------------------

    def sweep(self) -> int:
        """Delete expired entries and their bodies, and any orphan body; returns entries deleted."""
        now = self.now()
        with self._transaction() as conn:
            bodies = [
                r[0]
                for r in conn.execute(
                    "SELECT body_id FROM scratch_entries WHERE expires_at <= ? AND body_id IS NOT NULL", [now]
                ).fetchall()
            ]
            count = self._count(conn, "SELECT count(*) FROM scratch_entries WHERE expires_at <= ?", [now])
            conn.execute("DELETE FROM scratch_entries WHERE expires_at <= ?", [now])
        self._drop_bodies(bodies)
        self._remove_orphans()
        return count

    def _remove_orphans(self) -> None:
        with self._db() as conn:
            referenced = {
                r[0] for r in conn.execute("SELECT body_id FROM scratch_entries WHERE body_id IS NOT NULL").fetchall()
            }
            # Under the lock: a body renamed into bodies/ gets its row before the lock is released.
            for child in (self.path / "bodies").iterdir():
                if child.name not in referenced:
                    remove_body_dir(child)
                    self._readers.pop(child.name, None)
            self._clear_tmp()

    def _clear_tmp(self) -> None:
        with self._lock:
            for child in (self.path / "tmp").iterdir():
                if child.name not in self._inflight:
                    remove_body_dir(child)

    def _drop_bodies(self, body_ids: Iterable[str]) -> None:
        for body_id in body_ids:
            with self._lock:
                self._readers.pop(body_id, None)
            remove_body_dir(self.path / "bodies" / body_id)

    def _sweep_loop(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            try:
                removed = self.sweep()
                if removed:
                    log.debug("swept %d expired scratch entries", removed)
            except StoreClosedError:
                return
            except Exception:
                log.exception("background sweep of %s failed", self.path)

    # -- bodies ------------------------------------------------------------------------------

    def reader(self, entry: Entry) -> BodyReader:
        """Random access to the body of a handle entry."""
        if entry.body_id is None:
            raise InvalidArgumentError(f"{entry.key!r} is a note, it has no body", key=entry.key)
        with self._lock:
            reader = self._readers.get(entry.body_id)
            if reader is None:
                try:
                    reader = BodyReader(self.path / "bodies" / entry.body_id)
                except (OSError, ValueError) as exc:
                    raise StoreError(
                        f"the body of {entry.key!r} is missing or damaged ({exc}); delete the "
                        "entry and spill the output again",
                        handle=entry.key,
                    ) from exc
                self._readers[entry.body_id] = reader
                while len(self._readers) > 64:
                    self._readers.popitem(last=False)
            else:
                self._readers.move_to_end(entry.body_id)
        return reader

    def body_paths(self, entry: Entry) -> tuple[Path, Path]:
        """``(raw_path, body_path)`` of a handle entry, for DuckDB to read in place."""
        reader = self.reader(entry)
        return reader.raw_path, reader.body_path
