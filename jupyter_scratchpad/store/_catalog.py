"""The catalog of a store: runs, agents and scoped, expiring entries, written once for two engines.

``SqlCatalog`` holds every statement of the store (standard SQL that DuckDB and PostgreSQL both
run); an engine supplies transactions (``_tx``), the few statements that differ, and the
cross-agent reads a database with row-level security must route through vetted functions:

- ``DuckCatalog``: the embedded default, ``catalog.duckdb`` in the store directory, one process.
- ``PgCatalog`` (``_pgcatalog.py``): a shared PostgreSQL catalog, many processes and machines,
  every scoped statement run in a transaction whose ``scratchpad.agent_id`` the database's
  row-level security checks.

Rows are tuples in ``COLUMNS`` order (``Entry.from_row``); times are epoch seconds the store passes
in (one clock, the store's: ``SqlCatalog.now`` unless a clock is injected), so no statement reads
the time itself.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import duckdb

from ..errors import StoreError, StoreFormatError, StoreLockedError
from ._entry import Scope
from ._schema import DDL, LAYOUT_VERSION

COLUMNS = (
    "run_id, agent_id, kind, key, body_id, value_json, format, size_bytes, body_bytes, line_count, "
    "tokens, preview, source_tool, server, content_hash, meta_json, created_at, expires_at"
)
_SCOPE = "run_id = ? AND agent_id = ?"
_INDEX = {name.strip(): i for i, name in enumerate(COLUMNS.split(","))}
# a note write is one upsert: two writers of one key (threads, or processes of a shared store)
# never collide on the primary key
_UPSERT_NOTE = (
    f"INSERT INTO scratch_entries ({COLUMNS}) VALUES ({', '.join('?' * len(_INDEX))}) "
    "ON CONFLICT (run_id, agent_id, kind, key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in list(_INDEX)[4:])
)

Row = tuple[Any, ...]


class Cursor(Protocol):
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class Tx(Protocol):
    """What a catalog transaction offers: ``execute`` with ``?`` placeholders."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor: ...


def written_concurrently(handle: str) -> StoreError:
    """A named handle another writer replaced with other content while this spill stored its own."""
    return StoreError(
        f"handle {handle!r} was written concurrently with other content; spill again", handle=handle, concurrent=True
    )


def _damaged(path: Path, store_dir: Path, exc: Exception) -> str:
    said = " ".join(str(exc).split())[:300]
    return (
        f"cannot open {path} as a DuckDB catalog ({said}): it is damaged or not a catalog; move {store_dir} "
        "aside (its handles and notes cannot be read without it) and open a new store"
    )


class SqlCatalog(ABC):
    """Every catalog statement of the store, once; ``_tx`` and a few hooks differ per engine."""

    #: many processes share it (orphan bodies need a grace period, sweeps an election)
    shared = False
    #: SQL expression: ``meta_json`` with ``tokens_exact`` set to true
    _META_TOKENS_EXACT = "json_merge_patch(coalesce(meta_json, '{}'), '{\"tokens_exact\": true}')"

    @abstractmethod
    def _tx(self, agent_id: str | None) -> Any:
        """A context manager: one transaction, scoped to ``agent_id`` where the engine enforces it."""

    def _one(self, agent_id: str | None) -> Any:
        """A context manager for one statement: a transaction only where the engine needs one
        (PostgreSQL: to scope it with SET LOCAL)."""
        return self._tx(agent_id)

    @abstractmethod
    def _run_owner(self, tx: Tx, run_id: str) -> str | None:
        """The agent owning ``run_id`` whoever asks (under row-level security: a vetted function)."""

    @abstractmethod
    def sweep_expired(self, now: float) -> tuple[int, list[str]] | None:
        """Delete every expired entry of every scope: ``(count, body_ids)``; None when another
        process is sweeping right now."""

    @abstractmethod
    def referenced_bodies(self) -> set[str]:
        """The body ids some entry (live or expired) still names, across all scopes."""

    @abstractmethod
    def close(self) -> None: ...

    def close_abandoned(self) -> None:
        """Close a catalog whose store's directory was removed or replaced (see DuckCatalog)."""
        self.close()

    def now(self) -> float:
        """The store's clock (unless one is injected): this process's for an embedded catalog,
        which one process uses; a shared catalog's is its database's (``PgCatalog.now``)."""
        return time.time()

    @abstractmethod
    def describe(self) -> str:
        """Where the catalog lives, for messages (no password)."""

    # -- scopes ------------------------------------------------------------------------------

    def ensure_scope(self, run_id: str, agent_id: str, now: float) -> str:
        """Register the agent and the run (if new); returns the run's owner (maybe another agent)."""
        with self._tx(agent_id) as tx:
            tx.execute("INSERT INTO agents VALUES (?, ?) ON CONFLICT DO NOTHING", [agent_id, now])
            owner = self._run_owner(tx, run_id)
            if owner is None:
                # two processes creating one run: one insert wins, both then read the winner
                tx.execute("INSERT INTO runs VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [run_id, agent_id, now])
                owner = self._run_owner(tx, run_id)
        return owner or agent_id

    # -- reads -------------------------------------------------------------------------------

    def row(self, scope: Scope, kind: str, key: str, now: float | None) -> Row | None:
        """The entry ``(kind, key)`` of ``scope``: live at ``now``, or whatever its expiry (None)."""
        sql = f"SELECT {COLUMNS} FROM scratch_entries WHERE {_SCOPE} AND kind = ? AND key = ?"
        params: list[Any] = [scope.run_id, scope.agent_id, kind, key]
        if now is not None:
            sql += " AND expires_at > ?"
            params.append(now)
        with self._one(scope.agent_id) as tx:
            row: Row | None = tx.execute(sql, params).fetchone()
        return row

    def row_by_hash(self, scope: Scope, content_hash: str, now: float) -> Row | None:
        with self._one(scope.agent_id) as tx:
            row: Row | None = tx.execute(
                f"SELECT {COLUMNS} FROM scratch_entries WHERE {_SCOPE} AND kind = 'handle' "
                "AND content_hash = ? AND expires_at > ? ORDER BY created_at, key LIMIT 1",
                [scope.run_id, scope.agent_id, content_hash, now],
            ).fetchone()
        return row

    def rows(self, scope: Scope, kind: str | None, now: float) -> list[Row]:
        sql = f"SELECT {COLUMNS} FROM scratch_entries WHERE {_SCOPE} AND expires_at > ?"
        params: list[Any] = [scope.run_id, scope.agent_id, now]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        with self._one(scope.agent_id) as tx:
            return list(tx.execute(sql + " ORDER BY created_at, key", params).fetchall())

    def run_rows(self, run_id: str, agent_id: str | None, now: float) -> list[Row]:
        """Live entries of a run. Every entry of a run is its owner's (``ensure_scope``), so the
        read runs in the owner's scope."""
        if agent_id is None:
            with self._one(None) as tx:
                agent_id = self._run_owner(tx, run_id)
            if agent_id is None:
                return []
        with self._one(agent_id) as tx:
            return list(
                tx.execute(
                    f"SELECT {COLUMNS} FROM scratch_entries WHERE {_SCOPE} AND expires_at > ? "
                    "ORDER BY created_at, kind, key",
                    [run_id, agent_id, now],
                ).fetchall()
            )

    def run_owner(self, run_id: str) -> str | None:
        """The agent owning ``run_id``, whether or not anything in it is live; None: no such run."""
        with self._one(None) as tx:
            return self._run_owner(tx, run_id)

    def live_runs(self, agent_id: str | None, now: float) -> list[Row]:
        """``(run_id, agent_id, handles, notes, tokens, last_created_at)`` of every run with a live
        entry, newest first; ``agent_id`` None: every agent's (a shared catalog's row-level
        security shows each agent only its own: there it must be given)."""
        # (the tokens cast: PostgreSQL's sum over bigint is numeric, which psycopg reads as a
        # Decimal and `runs --json` printed as a string)
        sql = (
            "SELECT run_id, agent_id, count(*) FILTER (WHERE kind = 'handle'), count(*) FILTER (WHERE kind = 'note'), "
            "CAST(coalesce(sum(tokens) FILTER (WHERE kind = 'handle'), 0) AS BIGINT), max(created_at) "
            "FROM scratch_entries WHERE expires_at > ?"
        )
        params: list[Any] = [now]
        if agent_id is not None:
            sql += " AND agent_id = ?"
            params.append(agent_id)
        with self._one(agent_id) as tx:
            rows = tx.execute(sql + " GROUP BY run_id, agent_id", params).fetchall()
        return sorted((tuple(r) for r in rows), key=lambda r: (-r[5], r[0]))

    def runs_holding(self, agent_id: str, kind: str, key: str, now: float) -> list[str]:
        """The runs of ``agent_id`` where ``(kind, key)`` is live (to say where a handle is)."""
        with self._one(agent_id) as tx:
            rows = tx.execute(
                "SELECT run_id FROM scratch_entries WHERE agent_id = ? AND kind = ? AND key = ? AND expires_at > ? "
                "ORDER BY created_at DESC",
                [agent_id, kind, key, now],
            ).fetchall()
        return [str(r[0]) for r in rows]

    # -- writes ------------------------------------------------------------------------------

    def refresh(
        self, scope: Scope, handle: str, content_hash: str | None, *, now: float, expires: float,
        tokens: int | None, source_tool: str | None, server: str | None, meta_json: str,
    ) -> bool:  # fmt: skip
        """The same content spilled again under its handle: a new expiry, no new body. Whether
        the handle still held that content (another process may have replaced it meanwhile)."""
        with self._one(scope.agent_id) as tx:
            row = tx.execute(
                "UPDATE scratch_entries SET expires_at = ?, created_at = CASE WHEN expires_at <= ? "
                "THEN ? ELSE created_at END, tokens = coalesce(?, tokens), source_tool = ?, server = ?, "
                f"meta_json = ? WHERE {_SCOPE} AND kind = 'handle' AND key = ? AND content_hash = ? "
                "RETURNING key",
                [expires, now, now, tokens, source_tool, server, meta_json, scope.run_id, scope.agent_id, handle,
                 content_hash],
            ).fetchone()  # fmt: skip
        return row is not None

    def insert_handle(self, row: Sequence[Any], *, dedupe: bool) -> tuple[Row | None, str | None]:
        """Insert a handle entry, replacing the one of the same key: ``(None, old_body_id)``.

        When the key (or, with ``dedupe``, an automatic spill's content in the scope) was stored
        meanwhile with the same content, by another thread or process, that row is returned as
        ``(row, None)`` and nothing is stored: the caller drops its body and uses the winner's.
        """
        run_id, agent_id, _kind, key = row[:4]
        content_hash = row[14]
        with self._tx(agent_id) as tx:
            old = tx.execute(
                f"SELECT {COLUMNS} FROM scratch_entries WHERE {_SCOPE} AND kind = 'handle' AND key = ?",
                [run_id, agent_id, key],
            ).fetchone()
            if old is not None and old[14] == content_hash:
                return tuple(old), None  # never delete a body others may be reading for the same bytes
            if old is not None:
                tx.execute(
                    f"DELETE FROM scratch_entries WHERE {_SCOPE} AND kind = 'handle' AND key = ?",
                    [run_id, agent_id, key],
                )
            winner = self._insert(tx, row, dedupe)
            if winner is not None:
                return winner, None
        return None, (old[4] if old else None)

    def _insert(self, tx: Tx, row: Sequence[Any], dedupe: bool) -> Row | None:
        """Insert ``row``; an engine shared by processes may return another's row instead."""
        tx.execute(f"INSERT INTO scratch_entries ({COLUMNS}) VALUES ({', '.join('?' * 18)})", list(row))
        return None

    def put_note(self, row: Sequence[Any]) -> None:
        """Write a note, replacing the one of the same key (one upsert)."""
        with self._tx(row[1]) as tx:
            tx.execute(_UPSERT_NOTE, list(row))

    def set_expiry(self, scope: Scope, kind: str, key: str, expires: float) -> None:
        with self._one(scope.agent_id) as tx:
            tx.execute(
                f"UPDATE scratch_entries SET expires_at = ? WHERE {_SCOPE} AND kind = ? AND key = ?",
                [expires, scope.run_id, scope.agent_id, kind, key],
            )

    def slide(self, scope: Scope, key: str, content_hash: str | None, target: float, now: float) -> None:
        """Move a live handle's expiry later to ``target`` (never earlier, never a dead one)."""
        with self._one(scope.agent_id) as tx:
            tx.execute(
                f"UPDATE scratch_entries SET expires_at = ? WHERE {_SCOPE} AND kind = 'handle' AND key = ? "
                "AND content_hash = ? AND expires_at < ? AND expires_at > ?",
                [target, scope.run_id, scope.agent_id, key, content_hash, target, now],
            )

    def set_tokens(self, scope: Scope, handle: str, content_hash: str, tokens: int) -> bool:
        with self._one(scope.agent_id) as tx:
            row = tx.execute(
                f"UPDATE scratch_entries SET tokens = ?, meta_json = {self._META_TOKENS_EXACT} "
                f"WHERE {_SCOPE} AND kind = 'handle' AND key = ? AND content_hash = ? RETURNING key",
                [int(tokens), scope.run_id, scope.agent_id, handle, content_hash],
            ).fetchone()
        return row is not None

    def delete(self, scope: Scope, kind: str, key: str) -> tuple[str | None, float] | None:
        """Delete one entry: ``(body_id, expires_at)`` of what was deleted, or None."""
        with self._one(scope.agent_id) as tx:
            row = tx.execute(
                f"DELETE FROM scratch_entries WHERE {_SCOPE} AND kind = ? AND key = ? RETURNING body_id, expires_at",
                [scope.run_id, scope.agent_id, kind, key],
            ).fetchone()
        return (row[0], float(row[1])) if row else None

    def delete_run(self, run_id: str) -> tuple[int, list[str]]:
        with self._tx(None) as tx:
            owner = self._run_owner(tx, run_id)
        if owner is None:
            return 0, []
        return self._cascade(owner, "run_id", run_id, ("runs",))

    def delete_agent(self, agent_id: str) -> tuple[int, list[str]]:
        return self._cascade(agent_id, "agent_id", agent_id, ("runs", "agents"))

    def _cascade(self, agent_id: str, column: str, value: str, owners: tuple[str, ...]) -> tuple[int, list[str]]:
        """Entries, then their owners, in one transaction (DuckDB has no ON DELETE CASCADE)."""
        where = f"WHERE {column} = ?"  # column is one of our two literals, never caller input
        with self._tx(agent_id) as tx:
            gone = tx.execute(f"DELETE FROM scratch_entries {where} RETURNING body_id", [value]).fetchall()
            for table in owners:
                tx.execute(f"DELETE FROM {table} {where}", [value])
        return len(gone), [r[0] for r in gone if r[0]]


class DuckCatalog(SqlCatalog):
    """The embedded catalog: ``catalog.duckdb``, one connection, used under one lock."""

    def __init__(self, store_dir: Path) -> None:
        self.path = store_dir / "catalog.duckdb"
        self._lock = threading.RLock()
        try:
            conn = duckdb.connect(str(self.path), config={"autoinstall_known_extensions": "false"})
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"the DuckDB catalog {self.path} is locked by another process; close the store "
                    "there or open another directory",
                    path=str(store_dir),
                    lock_path=str(self.path),
                ) from exc
            raise StoreFormatError(_damaged(self.path, store_dir, exc), path=str(store_dir)) from exc
        except duckdb.Error as exc:
            raise StoreFormatError(_damaged(self.path, store_dir, exc), path=str(store_dir)) from exc
        try:
            conn.execute(DDL)
            row = conn.execute("SELECT value FROM scratch_meta WHERE name = 'layout_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO scratch_meta VALUES ('layout_version', ?)", [str(LAYOUT_VERSION)])
            # the id its directory records (STORE_ID), as a shared catalog's bodies directory does
            found = conn.execute("SELECT value FROM scratch_meta WHERE name = 'store_id'").fetchone()
            if found is None:
                found = (uuid.uuid4().hex,)
                conn.execute("INSERT INTO scratch_meta VALUES ('store_id', ?)", [found[0]])
            self.store_id = str(found[0])
            if row is not None and int(row[0]) != LAYOUT_VERSION:
                raise StoreFormatError(
                    f"{store_dir} has store layout {row[0]}, this version reads {LAYOUT_VERSION}; "
                    "open it with a matching jupyter-scratchpad or use a new directory",
                    path=str(store_dir),
                )
        except duckdb.Error as exc:
            conn.close()
            raise StoreFormatError(
                f"{self.path} is not a scratch catalog: {exc}; open the store in another directory (this one is "
                "another program's, or its catalog is damaged: then move it aside)",
                path=str(store_dir),
            ) from exc
        except BaseException:
            conn.close()
            raise
        self.conn = conn
        # The one process holding the store (a file lock) writes every row, so it can keep them
        # all in memory: a lookup is a dict access, not a DuckDB query (~1.5 ms each; a spill
        # makes three and every tool call one). Updated only after a write commits.
        self._mirror: dict[tuple[str, str], dict[tuple[str, str], Row]] = {}
        for r in conn.execute(f"SELECT {COLUMNS} FROM scratch_entries").fetchall():
            self._put(tuple(r))

    def describe(self) -> str:
        return str(self.path)

    @contextmanager
    def _tx(self, agent_id: str | None) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            conn = self.conn
            try:
                conn.execute("BEGIN TRANSACTION")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except duckdb.Error as exc:
                raise StoreError(f"catalog operation failed: {exc}", path=str(self.path)) from exc

    @contextmanager
    def _one(self, agent_id: str | None) -> Iterator[duckdb.DuckDBPyConnection]:
        """One statement needs no explicit transaction in DuckDB (three statements would be slower)."""
        with self._lock:
            try:
                yield self.conn
            except duckdb.Error as exc:
                raise StoreError(f"catalog operation failed: {exc}", path=str(self.path)) from exc

    # -- the in-memory mirror of scratch_entries -----------------------------------------------

    def _put(self, row: Row) -> None:
        self._mirror.setdefault((row[0], row[1]), {})[(row[2], row[3])] = row

    def _edit(self, scope: Scope, kind: str, key: str, **changes: Any) -> None:
        rows = self._mirror.get((scope.run_id, scope.agent_id), {})
        old = rows.get((kind, key))
        if old is not None:
            new = list(old)
            for name, value in changes.items():
                new[_INDEX[name]] = value
            rows[(kind, key)] = tuple(new)

    def _drop_where(self, keep: Any) -> None:
        for scope in list(self._mirror):
            rows = self._mirror[scope]
            for k in [k for k, r in rows.items() if not keep(r)]:
                del rows[k]
            if not rows:
                del self._mirror[scope]

    def row(self, scope: Scope, kind: str, key: str, now: float | None) -> Row | None:
        with self._lock:
            r = self._mirror.get((scope.run_id, scope.agent_id), {}).get((kind, key))
        return r if r is not None and (now is None or r[17] > now) else None

    def row_by_hash(self, scope: Scope, content_hash: str, now: float) -> Row | None:
        with self._lock:
            found = [
                r
                for (kind, _), r in self._mirror.get((scope.run_id, scope.agent_id), {}).items()
                if kind == "handle" and r[14] == content_hash and r[17] > now
            ]
        return min(found, key=lambda r: (r[16], r[3])) if found else None

    def rows(self, scope: Scope, kind: str | None, now: float) -> list[Row]:
        with self._lock:
            found = [
                r
                for (k, _), r in self._mirror.get((scope.run_id, scope.agent_id), {}).items()
                if (kind is None or k == kind) and r[17] > now
            ]
        return sorted(found, key=lambda r: (r[16], r[3]))

    def run_rows(self, run_id: str, agent_id: str | None, now: float) -> list[Row]:
        with self._lock:
            found = [
                r
                for (run, agent), rows in self._mirror.items()
                if run == run_id and (agent_id is None or agent == agent_id)
                for r in rows.values()
                if r[17] > now
            ]
        return sorted(found, key=lambda r: (r[16], r[2], r[3]))

    def live_runs(self, agent_id: str | None, now: float) -> list[Row]:
        runs: dict[tuple[str, str], list[Any]] = {}
        with self._lock:
            for (run, agent), rows in self._mirror.items():
                if agent_id is not None and agent != agent_id:
                    continue
                for r in rows.values():
                    if r[17] > now:
                        acc = runs.setdefault((run, agent), [run, agent, 0, 0, 0, r[16]])
                        acc[2 if r[2] == "handle" else 3] += 1
                        acc[4] += (r[10] or 0) if r[2] == "handle" else 0
                        acc[5] = max(acc[5], r[16])
        return sorted((tuple(a) for a in runs.values()), key=lambda r: (-r[5], r[0]))

    def runs_holding(self, agent_id: str, kind: str, key: str, now: float) -> list[str]:
        with self._lock:
            found = [
                (rows[(kind, key)][16], run)
                for (run, agent), rows in self._mirror.items()
                if agent == agent_id and (kind, key) in rows and rows[(kind, key)][17] > now
            ]
        return [run for _, run in sorted(found, reverse=True)]

    def refresh(
        self, scope: Scope, handle: str, content_hash: str | None, *, now: float, expires: float,
        tokens: int | None, source_tool: str | None, server: str | None, meta_json: str,
    ) -> bool:  # fmt: skip
        with self._lock:
            done = super().refresh(
                scope, handle, content_hash, now=now, expires=expires, tokens=tokens, source_tool=source_tool,
                server=server, meta_json=meta_json,
            )  # fmt: skip
            old = self.row(scope, "handle", handle, None) if done else None
            if old is not None:
                self._edit(
                    scope, "handle", handle, expires_at=expires, created_at=now if old[17] <= now else old[16],
                    tokens=old[10] if tokens is None else tokens, source_tool=source_tool, server=server,
                    meta_json=meta_json,
                )  # fmt: skip
        return done

    def insert_handle(self, row: Sequence[Any], *, dedupe: bool) -> tuple[Row | None, str | None]:
        with self._lock:
            if self._mirror.get((row[0], row[1]), {}).get((row[2], row[3])) is None:
                # a new key (the common case): one INSERT, which DuckDB commits by itself; the
                # transaction below (look up, delete, insert) cost 3x as much
                with self._one(row[1]) as conn:
                    self._insert(conn, row, dedupe)
                self._put(tuple(row))
                return None, None
            winner, old_body = super().insert_handle(row, dedupe=dedupe)
            if winner is None:
                self._put(tuple(row))
        return winner, old_body

    def put_note(self, row: Sequence[Any]) -> None:
        with self._lock:
            super().put_note(row)
            self._put(tuple(row))

    def set_expiry(self, scope: Scope, kind: str, key: str, expires: float) -> None:
        with self._lock:
            super().set_expiry(scope, kind, key, expires)
            self._edit(scope, kind, key, expires_at=expires)

    def slide(self, scope: Scope, key: str, content_hash: str | None, target: float, now: float) -> None:
        with self._lock:
            super().slide(scope, key, content_hash, target, now)
            old = self.row(scope, "handle", key, None)
            if old is not None and old[14] == content_hash and now < old[17] < target:
                self._edit(scope, "handle", key, expires_at=target)

    def set_tokens(self, scope: Scope, handle: str, content_hash: str, tokens: int) -> bool:
        with self._lock:
            updated = super().set_tokens(scope, handle, content_hash, tokens)
            if updated:
                old = self.row(scope, "handle", handle, None)
                assert old is not None
                meta = {**json.loads(old[15] or "{}"), "tokens_exact": True}
                self._edit(scope, "handle", handle, tokens=int(tokens), meta_json=json.dumps(meta))
        return updated

    def delete(self, scope: Scope, kind: str, key: str) -> tuple[str | None, float] | None:
        with self._lock:
            gone = super().delete(scope, kind, key)
            self._mirror.get((scope.run_id, scope.agent_id), {}).pop((kind, key), None)
        return gone

    def _cascade(self, agent_id: str, column: str, value: str, owners: tuple[str, ...]) -> tuple[int, list[str]]:
        with self._lock:
            done = super()._cascade(agent_id, column, value, owners)
            at = 0 if column == "run_id" else 1
            self._drop_where(lambda r: r[at] != value)
        return done

    def _run_owner(self, tx: Tx, run_id: str) -> str | None:
        row = tx.execute("SELECT agent_id FROM runs WHERE run_id = ?", [run_id]).fetchone()
        return row[0] if row else None

    def sweep_expired(self, now: float) -> tuple[int, list[str]] | None:
        with self._lock:
            with self._one(None) as tx:
                gone = tx.execute(
                    "DELETE FROM scratch_entries WHERE expires_at <= ? RETURNING body_id", [now]
                ).fetchall()
            self._drop_where(lambda r: r[17] > now)
        return len(gone), [r[0] for r in gone if r[0]]

    def referenced_bodies(self) -> set[str]:
        with self._one(None) as tx:
            return {
                r[0] for r in tx.execute("SELECT body_id FROM scratch_entries WHERE body_id IS NOT NULL").fetchall()
            }

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def close_abandoned(self) -> None:
        """Close a catalog whose file is no longer at its path (its directory removed or replaced):
        no checkpoint, which would write through the path and then delete the WAL found there,
        another directory's now."""
        with self._lock:
            try:
                self.conn.execute("PRAGMA disable_checkpoint_on_shutdown")
            finally:
                self.conn.close()
