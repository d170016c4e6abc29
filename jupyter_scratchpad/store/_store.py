"""``ScratchStore``: a catalog of scoped, expiring entries, with bodies on disk.

The catalog is DuckDB in the store directory (embedded, the default) or PostgreSQL (shared by
processes and machines, ``_pgcatalog.py``); both run the statements of ``_catalog.SqlCatalog``.

Layout of an embedded store directory (a shared store's bodies directory has ``bodies/``, ``tmp/``
and ``STORE_ID``, naming the catalog it belongs to)::

    catalog.duckdb        runs, agents, scratch_entries (+ scratch_meta: layout version)
    LOCK                  held (flock) by the one process that has the store open
    bodies/<body_id>/     raw, body, lines.idx  (see _bodies.py)
    tmp/                  bodies being written; anything left here after a crash is swept

Why bodies are files and not DuckDB BLOBs: a line or byte range of a file costs a seek and a read
of what is returned, while a BLOB is materialised whole by DuckDB before it can be sliced; and
DuckDB's ``read_json`` reads a file in place for SQL. ``benchmarks/bench_store.py`` has numbers.

Atomicity: a body is written under ``tmp/``, renamed into ``bodies/`` and only then made visible by
one catalog transaction, all under the store's lock. A process killed at any point leaves either
no row (and an orphan directory that the next sweep removes) or a complete entry. A shared store
cannot lock other processes out: its sweep removes only orphans older than ``orphan_grace_s``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from .._bounded import is_utf8_text, positive_seconds
from ..errors import (
    InvalidArgumentError,
    NotFoundError,
    ScopeError,
    ScratchpadError,
    StoreClosedError,
    StoreError,
    StoreFormatError,
    StoreUnavailableError,
)
from ._bodies import BodyReader, fsync_dir, remove_body_dir, removed_while_read, write_body_dir
from ._catalog import DuckCatalog, SqlCatalog, written_concurrently
from ._entry import Entry, Scope, validate_handle, validate_id, validate_key, validate_ttl
from ._jsontext import dumps_compact
from ._lock import StoreLock

if TYPE_CHECKING:
    from .._pad import Scratchpad
    from ..spill import SpillPolicy
    from ._pgcatalog import PgCatalog

__all__ = ["ScratchStore"]

log = logging.getLogger("jupyter_scratchpad.store")

DEFAULT_TTL_S = 3600.0
DEFAULT_MAX_TTL_S = 86_400.0  # a handle in use lives at most this long after its spill
DEFAULT_SWEEP_INTERVAL_S = 300.0

SHARED_ORPHAN_GRACE_S = 900.0  # a body being written by another process is younger than this
# A body whose handle was re-spilled with new content stays this long for the reads that opened
# it (a sql call lasts at most 30 s, a load of its tables longer); then the orphan sweep takes it.
# It was removed at once: a read racing the replacement got "no live handle" or "DuckDB cannot
# read this handle" about a handle that was live the whole time.
RETIRED_GRACE_S = 120.0
CLOSE_COUNT_WAIT_S = 10.0  # how long close() waits for exact token counts still running
_STORE_ID_FILE = "STORE_ID"
_R = TypeVar("_R", bound=BodyReader)


def default_shared_bodies(store_id: str) -> Path:
    """Where a shared store keeps bodies when neither ``bodies=`` nor ``$SCRATCHPAD_BODIES`` says:
    a directory per catalog in the user's cache, which one machine's processes share; processes
    on several machines need a directory they all mount (``bodies=DIR``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "jupyter-scratchpad" / "shared-bodies" / store_id


def _recorded_id(path: Path) -> str | None:
    """The catalog id a store directory records in ``STORE_ID``, or None when it records none."""
    try:
        return (path / _STORE_ID_FILE).read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        return None


def _refuse_other(path: Path, found: str, store_id: str | None, where: str) -> StoreFormatError:
    mine = f" (not {store_id[:12]}… of {where})" if store_id else ""
    return StoreFormatError(
        f"{path} belongs to another scratch catalog (id {found[:12]}…{mine}): its sweep would delete that "
        "catalog's bodies as orphans; give this store a directory of its own (a shared store: bodies=DIR)",
        path=str(path),
    )


def claim_bodies_dir(path: Path, store_id: str, where: str, copied_from: str | None = None) -> None:
    """A directory of bodies serves one catalog (a shared store's, or an embedded store's own):
    another catalog's sweep would delete its bodies as orphans. The first store records the
    catalog's id in ``STORE_ID`` (written whole, then linked into place: a process reading it
    never sees it half-written); others must match it. ``copied_from``: the id of the store a
    shared catalog is a copy of (its database copied), whose directory this may be."""
    found = _recorded_id(path)
    if found is None:
        tmp = path / f".{_STORE_ID_FILE}.{os.getpid()}.{threading.get_ident()}"
        try:
            tmp.write_text(store_id + "\n", encoding="ascii")
            with contextlib.suppress(FileExistsError):  # another store recorded its id first
                os.link(tmp, path / _STORE_ID_FILE)
        except OSError as exc:
            raise StoreError(f"cannot use {path} as a bodies directory: {exc}", path=str(path)) from exc
        finally:
            tmp.unlink(missing_ok=True)
        found = _recorded_id(path)
    if found is not None and found == copied_from:
        raise StoreFormatError(
            f"{path} holds the bodies of the store {where} was copied from (id {found[:12]}…; its database was "
            "copied, by CREATE DATABASE … TEMPLATE or a restore beside it): the copy's deletes and sweeps would "
            "remove the original's bodies; give the copy a bodies directory of its own (bodies=DIR, --bodies, "
            "$SCRATCHPAD_BODIES), or leave it unset for the default one",
            path=str(path),
        )
    if found != store_id:
        raise _refuse_other(path, found or "?", store_id, where)


class _HeldReader(BodyReader):
    """A reader whose body files stay open until ``close``: a delete by another process of a
    shared store (which unlinks them) cannot pull them away between its reads. One thread's (its
    reads share each file's offset): a spill reads its stub through one."""

    def __init__(self, directory: Path, raw_size: int | None = None) -> None:
        super().__init__(directory, raw_size)
        self._held: dict[Path, BinaryIO] = {}
        try:
            for path in (self.raw_path, self.body_path):
                if path not in self._held:  # (FileNotFoundError: said by the store, as for any reader)
                    self._held[path] = open(path, "rb")  # noqa: SIM115 - closed by close()
        except BaseException:
            self.close()
            raise

    def _open(self, path: Path) -> BinaryIO:
        held = self._held.get(path)
        return super()._open(path) if held is None else os.fdopen(os.dup(held.fileno()), "rb")

    @property
    def raw_size(self) -> int:
        return os.fstat(self._held[self.raw_path].fileno()).st_size

    def close(self) -> None:
        for fh in self._held.values():
            fh.close()


def _positive_seconds(value: object, what: str) -> float:
    """A finite number of seconds > 0 (a negative or NaN interval made the sweeper busy-loop)."""
    seconds = positive_seconds(value)
    if seconds is None:
        raise InvalidArgumentError(f"{what} must be a positive, finite number of seconds (or None), not {value!r}")
    return seconds


def _older(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime <= cutoff
    except OSError:
        return False


def _identity(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file at ``path``: None when it is not there, or on a
    filesystem that gives no inode numbers (0; then only its presence is checked)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino) if st.st_ino else (0, 0)


def _postgres_url(url: str) -> str:
    """A URL given as the store: PostgreSQL's (any case of the scheme, outer spaces dropped), or
    refused before anything is created. Any other ``scheme://`` was taken as a relative directory
    and created, the password in its name (``postgresql+psycopg://u:pw@db/x``, ``mysql://…``)."""
    from ._pgcatalog import redact_url

    url = url.strip()
    scheme, rest = url.split("://", 1)
    if scheme.lower() in ("postgresql", "postgres"):
        return f"{scheme.lower()}://{rest}"
    hint = " (a SQLAlchemy driver name: libpq takes postgresql://)" if scheme.lower().startswith("postgres") else ""
    raise InvalidArgumentError(
        f"the store is a directory or a postgresql:// URL, not a {scheme}:// URL{hint}: "
        f"ScratchStore('postgresql://user@host/db') or ScratchStore('/path/to/dir')",
        url=redact_url(url)[:200],
    )


# what is meant as PostgreSQL but is no URL: libpq's "host=db dbname=x password=…" and a URL
# missing a character of its "://"; each was taken as a relative directory and created (the
# password in its name), an embedded store no other process shares
_URL_LOOKALIKE = re.compile(
    r"\s*postgres(?:ql)?(?:\+\w+)?(?::/|//)|(?:^|.*\s)(?:host|dbname|user|password)=\S", re.IGNORECASE | re.DOTALL
)


def _not_a_url_lookalike(path: str) -> None:
    """Refuse a store meant as PostgreSQL that is no URL (it is not echoed: a password may be in it)."""
    if _URL_LOOKALIKE.match(path) and not os.path.isdir(path):
        raise InvalidArgumentError(
            "the store looks like a PostgreSQL connection but is not a postgresql:// URL (libpq's "
            "'host=… dbname=…' form, or a URL missing part of its '://'): write "
            "ScratchStore('postgresql://user:password@host:5432/db'), or name a directory"
        )


class ScratchStore:
    """A scratch store: a catalog of scoped, expiring entries and the spilled bodies as files.

    ``ScratchStore()`` or ``ScratchStore(DIR)`` is the embedded store: a DuckDB catalog in the
    directory, one process at a time. ``ScratchStore("postgresql://…", bodies=DIR)`` is the shared
    store: the catalog in PostgreSQL (row-level security per agent), the bodies in ``DIR`` — a
    directory every process that shares the store can reach (local, NFS, EFS).

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
        bodies: str | os.PathLike[str] | None = None,
        ttl_s: float = DEFAULT_TTL_S,
        sweep_interval_s: float | None = DEFAULT_SWEEP_INTERVAL_S,
        clock: Callable[[], float] | None = None,
        max_ttl_s: float = DEFAULT_MAX_TTL_S,
        orphan_grace_s: float | None = None,
    ) -> None:
        self.ttl_s = validate_ttl(ttl_s)
        self.max_ttl_s = validate_ttl(max_ttl_s)
        if sweep_interval_s is not None and sweep_interval_s != 0:  # (None or 0: no background sweeps)
            sweep_interval_s = _positive_seconds(sweep_interval_s, "sweep_interval_s")
        if orphan_grace_s is not None and orphan_grace_s != 0:
            orphan_grace_s = _positive_seconds(orphan_grace_s, "orphan_grace_s")
        # No clock given (or time.time): the catalog's. That is the database's clock on a shared
        # store (its offset to this machine's, measured at open and every minute), so every
        # process writes, reads, slides and sweeps expiries by one clock whatever its machine's
        # says; the embedded store's is time.time(). An injected clock is used as given, on
        # either store, with no offset: it is the caller's own time line (tests move it by hand
        # and compare expiries to it exactly); on a shared store it must then agree with the
        # database's for other processes' sweeps (which never run ahead of the database's).
        self._clock = None if clock is time.time else clock
        self.url: str | None = None
        pg_cat: PgCatalog | None = None
        if isinstance(path, str) and re.match(r"\s*[A-Za-z][A-Za-z0-9+.\-]*://", path):
            path = _postgres_url(path)
        elif isinstance(path, str):
            _not_a_url_lookalike(path)
        if isinstance(path, str) and path.startswith(("postgresql://", "postgres://")):
            from ._pgcatalog import PgCatalog

            self.url = path
            pg_cat = PgCatalog(path)
            # by default, a directory per catalog: two catalogs never share one by accident
            if bodies is None:
                bodies = os.environ.get("SCRATCHPAD_BODIES") or default_shared_bodies(pg_cat.store_id)
            path = bodies
        elif bodies is not None:
            raise InvalidArgumentError(
                "bodies= is for a shared store: ScratchStore('postgresql://…', bodies=DIR); an embedded "
                "store keeps its bodies inside its own directory",
                bodies=str(bodies),
            )
        self._temporary = path is None
        self.path = (
            Path(tempfile.mkdtemp(prefix="jupyter-scratchpad-"))
            if path is None
            else Path(os.path.expandvars(os.path.expanduser(os.fspath(path))))
        )
        self._closed = True
        # the embedded catalog's (st_dev, st_ino) at open: while DuckDB holds the file open its
        # inode cannot be reused, so another file (or none) at its path means the directory was
        # removed or replaced under the open store (see _check_here)
        self._catalog_at: tuple[Path, tuple[int, int]] | None = None
        self._lock = threading.RLock()
        self._removed = False  # the directory was removed or replaced while open (see _abandon)
        self._inflight: set[str] = set()
        self._counts: set[Future[Any]] = set()  # exact token counts still to be recorded (close waits)
        self._readers: OrderedDict[str, BodyReader] = OrderedDict()
        self._retired: dict[str, float] = {}  # replaced body -> when (kept RETIRED_GRACE_S for its readers)
        try:
            self._open_catalog(pg_cat)
        except BaseException:
            if pg_cat is not None:
                pg_cat.close()
            raise
        # another process may be writing a body of a shared store right now: only bodies older
        # than this are orphans (the embedded store's lock makes its sweep exact)
        self.orphan_grace_s = float(
            orphan_grace_s if orphan_grace_s is not None else (SHARED_ORPHAN_GRACE_S if self.shared else 0.0)
        )
        if self.shared and self.orphan_grace_s < 60:  # (a probe's sweeper deleted 150 of 150 bodies mid-write)
            log.warning(
                "orphan_grace_s=%s on a shared store: its sweeps may delete bodies other processes are still "
                "writing (their spills then fail closed); the default is %s s",
                self.orphan_grace_s,
                f"{SHARED_ORPHAN_GRACE_S:g}",
            )
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

    def _open_catalog(self, pg_cat: PgCatalog | None) -> None:
        """Make the directory and open the catalog: DuckDB under a file lock, or the given
        PostgreSQL catalog once the bodies directory is claimed for it."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store directory {self.path}: {exc}", path=str(self.path)) from exc
        if not self.path.is_dir():
            raise StoreFormatError(f"{self.path} is not a directory", path=str(self.path))
        self._file_lock: StoreLock | None = None
        self._cat: SqlCatalog
        if pg_cat is None:
            found = _recorded_id(self.path)
            if found is not None and not (self.path / "catalog.duckdb").exists():
                if (self.path / "LOCK").exists():  # an embedded store's own directory: its catalog was removed
                    raise StoreFormatError(
                        f"the catalog of the store at {self.path} (catalog.duckdb) is gone, removed outside the "
                        "store: its handles and notes cannot be read without it; move the directory aside (or "
                        "delete it) and open a new store",
                        path=str(self.path),
                    )
                raise _refuse_other(self.path, found, None, "")  # a shared store's bodies
            self._file_lock = StoreLock(self.path / "LOCK")
            try:
                (self.path / "bodies").mkdir(exist_ok=True)
                (self.path / "tmp").mkdir(exist_ok=True)
                cat = self._cat = DuckCatalog(self.path)
                try:
                    found_id = _identity(cat.path)
                    self._catalog_at = None if found_id is None or os.name == "nt" else (cat.path, found_id)
                    claim_bodies_dir(self.path, cat.store_id, str(cat.path))
                except BaseException:
                    cat.close()
                    raise
            except BaseException:
                self._file_lock.release()
                raise
            return
        if (self.path / "catalog.duckdb").exists():  # an embedded store's own directory (even one
            # made before embedded stores recorded their id)
            raise StoreFormatError(
                f"{self.path} is an embedded store's directory (it holds catalog.duckdb): a shared store's sweep "
                "would delete its bodies as orphans; give the shared store a directory of its own (bodies=DIR)",
                path=str(self.path),
            )
        (self.path / "bodies").mkdir(exist_ok=True)
        (self.path / "tmp").mkdir(exist_ok=True)
        claim_bodies_dir(self.path, pg_cat.store_id, pg_cat.describe(), pg_cat.copied_from)
        self._cat = pg_cat

    @property
    def shared(self) -> bool:
        """True for a PostgreSQL catalog shared by processes, False for the embedded store."""
        return self._cat.shared

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def removed(self) -> bool:
        """True when this embedded store's directory was removed or replaced while it was open (a
        cleaner of temporary files took it): the store is then closed, what it held is lost, and a
        new store may be opened at the same path. One ``stat``; False for a shared store."""
        if self._removed:
            return True
        if self._closed or self._catalog_at is None:
            return False
        try:
            self._check_here()
        except StoreClosedError:
            return True
        return False

    def track_count(self, future: Future[Any]) -> None:
        """A background exact token count that records itself here: ``close`` waits for it
        (``CLOSE_COUNT_WAIT_S`` at most), so a reopened store has the count, not the stub's bound."""
        with self._lock:
            self._counts = {f for f in self._counts if not f.done()}
            self._counts.add(future)

    def close(self) -> None:
        """Stop the sweeper, close the catalog and release the lock; idempotent. Waits up to
        ``CLOSE_COUNT_WAIT_S`` for exact token counts still running (a larger count than that
        leaves its lower bound)."""
        with self._lock:
            counts = [] if self._closed else list(self._counts)
        if counts:
            wait(counts, timeout=CLOSE_COUNT_WAIT_S)
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
                self._cat.close()
            finally:
                if self._file_lock is not None:
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
        if self.url is not None:
            return f"<ScratchStore {self._cat.describe()!r} bodies={str(self.path)!r} {state}>"
        return f"<ScratchStore {str(self.path)!r} {state}>"

    @property
    def temporary(self) -> bool:
        """A temporary store (``ScratchStore(None)``): its directory is removed when it closes."""
        return self._temporary

    def remove_temporary(self) -> None:
        """A temporary store's directory removed now, open or not: for a process about to end
        without closing it (a server's hard exit after a signal left it, bodies and all, in
        /tmp). Nothing for a store that is not temporary."""
        if self._temporary:
            shutil.rmtree(self.path, ignore_errors=True)

    def describe(self) -> str:
        """Where the store lives, for messages: the directory, or the catalog URL (no password)."""
        return str(self.path) if self.url is None else f"{self._cat.describe()} (bodies in {self.path})"

    @property
    def catalog(self) -> SqlCatalog:
        """The catalog (open): every statement the store runs goes through it."""
        if self._removed:
            raise self._gone()
        if self._closed:
            raise StoreClosedError(
                f"the scratch store at {self.describe()} is closed; open a new ScratchStore", path=str(self.path)
            )
        if self._catalog_at is not None:
            self._check_here()
        return self._cat

    def _check_here(self) -> None:
        """Refuse to go on when the embedded store's directory was removed or replaced while it is
        open (a cleaner of temporary files took the default store's): DuckDB would go on writing
        to a catalog file with no name on disk, every spill and note "stored" and lost at close,
        bodies written into a directory made again. One ``stat`` (about 2 µs)."""
        if self._catalog_at is None:  # (a shared store: its catalog is PostgreSQL's)
            return
        path, opened = self._catalog_at
        try:
            st = os.stat(path)
            here = not opened[1] or (st.st_dev, st.st_ino) == opened
        except (FileNotFoundError, NotADirectoryError):
            here = False
        except OSError as exc:  # (NFS: a stale handle is a directory removed by another client)
            here = exc.errno != errno.ESTALE
        if not here:
            self._abandon()
            raise self._gone()

    def _abandon(self) -> None:
        """Close a store whose directory was removed or replaced: its DuckDB database stays cached
        by its path in this process while a connection is open, so a new store opened at the same
        path (as the error says to) silently got the old, unlinked database, and lost what it was
        given at close. Nothing at the path is touched (it may be someone else's directory now)."""
        with self._lock:
            if self._closed:
                return
            self._closed = self._removed = True
            self._readers.clear()
        self._stop.set()
        try:
            self._cat.close_abandoned()  # (an embedded catalog: a shared one is never abandoned)
        except Exception:  # (closing what is gone: nothing more to lose)
            log.debug("closing the catalog of a removed store failed", exc_info=True)
        finally:
            if self._file_lock is not None:
                self._file_lock.release()

    def _gone(self) -> StoreClosedError:
        return StoreClosedError(
            f"the store directory {self.path} was removed or replaced while the store was open (by a cleaner of "
            "temporary files?): nothing more can be stored there, and what it held is lost; open a new store",
            path=str(self.path),
            removed=True,
        )

    def _make_dir(self, name: str) -> None:
        """Make ``bodies/`` or ``tmp/`` again when something outside the store removed it alone; an
        embedded store's directory itself is never made again (removed, the store is gone)."""
        directory = self.path / name
        if self.shared:
            directory.mkdir(parents=True, exist_ok=True)
            return
        try:
            os.mkdir(directory)
        except FileExistsError:
            pass
        except FileNotFoundError:
            raise self._gone() from None

    def now(self) -> float:
        """The store's clock, in epoch seconds: the injected one, else the catalog's (a shared
        store's is its database's, so all its processes agree; see ``__init__``)."""
        if self._clock is not None:
            return float(self._clock())
        return self._cat.now()

    # -- scopes ------------------------------------------------------------------------------

    def ensure_scope(self, run_id: str, agent_id: str) -> Scope:
        """Register ``agent_id`` and ``run_id`` (owned by that agent); refuse another's run."""
        run_id = validate_id(run_id, "run_id")
        agent_id = validate_id(agent_id, "agent_id")
        owner = self.catalog.ensure_scope(run_id, agent_id, self.now())
        if owner != agent_id:
            raise ScopeError(
                f"run {run_id!r} is owned by agent {owner!r}, not {agent_id!r}; each run "
                "belongs to one agent: use a new run_id for this agent",
                run_id=run_id,
                agent_id=agent_id,
                owner=owner,
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
        row = self.catalog.row(scope, kind, key, self.now())
        return Entry.from_row(row) if row else None

    def expired_entry(self, scope: Scope, kind: str, key: str) -> Entry | None:
        """The entry ``(kind, key)`` of ``scope`` when it has expired and is not swept yet (to say
        "expired" rather than "unknown"), else None."""
        entry = self._row_any_expiry(scope, kind, key)
        return entry if entry is not None and entry.expires_at is not None and entry.expires_at <= self.now() else None

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
        row = self.catalog.row_by_hash(scope, content_hash, self.now())
        return Entry.from_row(row) if row else None

    def entries(self, scope: Scope, kind: str | None = None) -> list[Entry]:
        """Live entries of ``scope``, oldest first."""
        return [Entry.from_row(r) for r in self.catalog.rows(scope, kind, self.now())]

    def list_entries(self, run_id: str, agent_id: str | None = None) -> list[dict[str, Any]]:
        """Metadata of the live entries of ``run_id`` (never bodies), as plain dicts."""
        return [Entry.from_row(r).as_dict() for r in self.catalog.run_rows(run_id, agent_id, self.now())]

    def run_owner(self, run_id: str) -> str | None:
        """The agent owning ``run_id`` (even with nothing live in it), or None: no such run."""
        return self.catalog.run_owner(run_id)

    def list_runs(self, agent_id: str | None = None) -> list[dict[str, Any]]:
        """The runs with a live handle or note, newest activity first: ``run_id``, ``agent_id``,
        ``handles``, ``notes``, ``tokens`` (of the handles) and ``last_created_at``.

        ``agent_id`` None lists every agent's runs of an embedded store; a shared store's
        row-level security shows an agent only its own runs, so there ``agent_id`` is required.
        """
        if agent_id is None and self.shared:
            raise InvalidArgumentError(
                "a shared store lists one agent's runs (row-level security): give agent_id", agent_id=None
            )
        if agent_id is not None:
            agent_id = validate_id(agent_id, "agent_id")
        names = ("run_id", "agent_id", "handles", "notes", "tokens", "last_created_at")
        return [dict(zip(names, r, strict=True)) for r in self.catalog.live_runs(agent_id, self.now())]

    def runs_holding(self, agent_id: str, handle: str) -> list[str]:
        """The runs of ``agent_id`` where ``handle`` is live, newest first (to say where it is)."""
        return self.catalog.runs_holding(agent_id, "handle", handle, self.now())

    def put_body(
        self,
        scope: Scope,
        *,
        handle: str,
        raw: bytes | Iterable[bytes],
        body: bytes | Iterable[bytes] | None,
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
        dedupe: bool = False,
    ) -> tuple[Entry, bool]:
        """Store a spilled output as entry ``handle``; returns ``(entry, created)``.

        The same content under the same handle in the same scope is not written twice: its
        expiry is refreshed instead. A different content under an existing handle replaces it
        when ``replace`` (a named capture), else raises. ``dedupe`` (an automatic spill): when
        another process of a shared store stores the same content in the scope first, its entry
        is returned and this body is dropped.
        """
        validate_handle(handle)
        ttl = self.ttl_s if ttl_s is None else validate_ttl(ttl_s)
        meta = {**(meta or {}), "ttl_s": ttl}  # the life each read renews (see slide)
        existing = self._row_any_expiry(scope, "handle", handle)
        if existing is not None and existing.content_hash == content_hash and not self.body_opens(existing):
            # its body was lost (removed outside the store, cut short by a crash): refreshing it
            # kept a handle no read could open alive for ever; the output is written anew
            self.delete_entry(scope, "handle", handle)
            existing = None
        for _ in range(8):  # the same content: refreshed, unless another process replaced it meanwhile
            if existing is None or existing.content_hash != content_hash:
                break
            refreshed = self._refresh(scope, existing, ttl, tokens, source_tool, server, meta)
            if refreshed is not None:
                return refreshed, False
            existing = self._row_any_expiry(scope, "handle", handle)
        if existing is not None and existing.content_hash == content_hash and not replace:
            raise written_concurrently(handle)
        # (a named capture: replaced again and again meanwhile, its own body is written below, last)
        if existing is not None and not replace and existing.expires_at > self.now():
            raise InvalidArgumentError(f"handle {handle!r} already holds other content", handle=handle)

        body_id = uuid.uuid4().hex
        tmp_dir = self.path / "tmp" / body_id
        with self._lock:
            self._inflight.add(body_id)
        winner: Entry | None = None
        try:
            # a shared store's body outlives this machine's page cache: tmp -> fsync -> rename
            try:
                stats = write_body_dir(tmp_dir, raw, body, durable=self.shared)
            except FileNotFoundError:
                if tmp_dir.parent.is_dir():
                    raise
                # tmp/ removed from outside (a tmp cleaner): made again, unless the store's own
                # directory is gone (nothing was written yet: write_body_dir makes its directory first)
                self._make_dir("tmp")
                stats = write_body_dir(tmp_dir, raw, body, durable=self.shared)
            now = self.now()
            entry = Entry(
                scope.run_id, scope.agent_id, "handle", handle, body_id, None, fmt, size_bytes,
                stats.body_bytes, stats.line_count, tokens, preview, source_tool, server, content_hash,
                {**meta, "longest_line": stats.longest_line}, now, now + ttl,
            )  # fmt: skip
            with self._lock:
                cat = self.catalog
                try:
                    os.rename(tmp_dir, self.path / "bodies" / body_id)
                except FileNotFoundError:  # bodies/ removed from outside (a tmp cleaner): made again
                    self._make_dir("bodies")
                    os.rename(tmp_dir, self.path / "bodies" / body_id)
                if self.shared:
                    fsync_dir(self.path / "bodies")
                try:
                    for attempt in range(4):
                        won, old_body = self._insert_handle(cat, entry, dedupe, replace)
                        if won is None:
                            break
                        # a shared store: another process stored the same content first; its
                        # entry, given this spill's expiry, unless replaced since with other content
                        winner = self._refresh(scope, Entry.from_row(won), ttl, tokens, source_tool, server, meta)
                        if winner is not None or not replace or attempt == 3:
                            remove_body_dir(self.path / "bodies" / body_id)
                            break
                        # a named capture comes last: this body, inserted again (it was in neither)
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
        if won is not None:
            if winner is None:  # replaced since, and this output is in neither body
                raise written_concurrently(handle)
            return winner, False
        if old_body:
            self._retire_body(old_body)
        return entry, True

    @staticmethod
    def _insert_handle(cat: Any, entry: Entry, dedupe: bool, replace: bool) -> tuple[Any, str | None]:
        """``cat.insert_handle``; a named capture (``replace``) that another process wrote with
        other content between this one's look and its insert replaces it (the last writer wins,
        as when they come one after the other), rather than failing "spill again"."""
        tries = 1
        while True:
            try:
                return cat.insert_handle(entry.as_row(), dedupe=dedupe)  # type: ignore[no-any-return]
            except StoreError as exc:
                if not (replace and exc.context.get("concurrent")) or tries == 4:
                    raise
                tries += 1

    def _refresh(
        self, scope: Scope, existing: Entry, ttl: float, tokens: int | None, source_tool: str | None,
        server: str | None, meta: dict[str, Any],
    ) -> Entry | None:  # fmt: skip
        """``existing`` (the same content) given a new expiry; None when the handle no longer
        holds that content (another process replaced or deleted it since it was read: the
        caller writes the output anew)."""
        now = self.now()
        done = self.catalog.refresh(
            scope, existing.key, existing.content_hash, now=now, expires=now + ttl, tokens=tokens,
            source_tool=source_tool, server=server, meta_json=json.dumps({**existing.meta, **meta}),
        )  # fmt: skip
        if not done:
            return None
        # (deleted by another process between the update and this read: it raised NotFoundError,
        # and the spill withheld the output it could have written again)
        entry = self.get_entry(scope, "handle", existing.key)
        return entry if entry is not None and entry.content_hash == existing.content_hash else None

    def _row_any_expiry(self, scope: Scope, kind: str, key: str) -> Entry | None:
        row = self.catalog.row(scope, kind, key, None)
        return Entry.from_row(row) if row else None

    def put_note(self, scope: Scope, key: str, value: Any, ttl_s: float | None = None) -> Entry:
        """Write (or overwrite) the note ``key`` of ``scope``."""
        key = validate_key(key)
        ttl = self.ttl_s if ttl_s is None else validate_ttl(ttl_s)
        try:
            value_json = json.dumps(value, ensure_ascii=False)
        except RecursionError:  # nested past json's limit: the same text, written without recursion
            value_json = dumps_compact(value)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"a note value must be JSON-serialisable: {exc}", key=key) from exc
        if not is_utf8_text(value_json):  # an unpaired surrogate: written as JSON's escape, read back the same
            try:
                value_json = json.dumps(value, ensure_ascii=True)
            except RecursionError:
                raise InvalidArgumentError(
                    "a note value nested this deep must be text without an unpaired surrogate", key=key
                ) from None
        now = self.now()
        preview = value_json if len(value_json) <= 200 else value_json[:197] + "..."
        entry = Entry(
            scope.run_id, scope.agent_id, "note", key, None, value_json, "json", len(value_json.encode()),
            None, None, None, preview, "scratch_write", None, None, {}, now, now + ttl,
        )  # fmt: skip
        self.catalog.put_note(entry.as_row())
        # what was written (read back, it failed when another process deleted the note meanwhile)
        return entry

    def touch(self, scope: Scope, kind: str, key: str, ttl_s: float | None = None) -> Entry:
        """Extend the life of a live entry to ``ttl_s`` from now."""
        ttl = self.ttl_s if ttl_s is None else validate_ttl(ttl_s)
        self.require_entry(scope, kind, key)
        self.catalog.set_expiry(scope, kind, key, self.now() + ttl)
        return self.require_entry(scope, kind, key)

    def slide(self, scope: Scope, entry: Entry, opened_at: float | None = None) -> float:
        """A handle that is read lives on: its expiry moves to ``now + its TTL`` (never earlier
        than it was, never later than ``max_ttl_s`` after its spill). Returns the new expiry.

        ``opened_at``: when the read found it live (the store's clock). A read that took longer
        than the handle had left still slides it, unless it was swept meanwhile (a 300 MB grep
        started 0.3 s before the expiry succeeded, and the next call found no handle).
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
        since = self.now() if opened_at is None else min(opened_at, self.now())
        self.catalog.slide(scope, entry.key, entry.content_hash, target, since)
        return target

    def set_tokens(self, scope: Scope, handle: str, content_hash: str, tokens: int) -> bool:
        """Record the exact token count of a handle counted after its spill (if it still holds
        that content); returns whether a row was updated."""
        return self.catalog.set_tokens(scope, handle, content_hash, tokens)

    def delete_entry(self, scope: Scope, kind: str, key: str) -> bool:
        """Delete one entry of ``scope`` (and its body); False when there was none."""
        gone = self.catalog.delete(scope, kind, key)
        if gone is None:
            return False
        if gone[0]:
            self._drop_bodies([gone[0]])
        return bool(gone[1] > self.now())

    def delete_run(self, run_id: str) -> int:
        """Delete a run with every entry and body of it, in one transaction; returns entries deleted."""
        count, bodies = self.catalog.delete_run(run_id)
        self._drop_bodies(bodies)
        return count

    def delete_agent(self, agent_id: str) -> int:
        """Delete an agent, its runs, and every entry and body of them; returns entries deleted."""
        count, bodies = self.catalog.delete_agent(agent_id)
        self._drop_bodies(bodies)
        return count

    # -- sweeping ----------------------------------------------------------------------------

    def sweep(self) -> int:
        """Delete expired entries and their bodies, and any orphan body; returns entries deleted.

        On a shared store any number of processes may sweep: one at a time does the work (a
        PostgreSQL advisory lock), the others return 0 at once.
        """
        swept = self.catalog.sweep_expired(self.now())
        if swept is None:
            return 0
        count, bodies = swept
        self._drop_bodies(bodies)  # after the rows are gone
        self._remove_orphans()
        return count

    def _remove_orphans(self) -> None:
        now = time.time()
        cutoff = now - self.orphan_grace_s
        with self._lock:
            self._retired = {b: at for b, at in self._retired.items() if at > now - RETIRED_GRACE_S}
            referenced = self.catalog.referenced_bodies()
            # Under the lock: a body renamed into bodies/ gets its row before the lock is released
            # (another process of a shared store: the grace period covers its rename-then-insert).
            for child in self._children("bodies"):
                busy = child.name in self._inflight or child.name in self._retired
                if child.name not in referenced and not busy and _older(child, cutoff):
                    remove_body_dir(child)
                    self._readers.pop(child.name, None)
            self._clear_tmp()

    def _clear_tmp(self) -> None:
        cutoff = time.time() - self.orphan_grace_s
        with self._lock:
            for child in self._children("tmp"):
                if child.name not in self._inflight and _older(child, cutoff):
                    remove_body_dir(child)

    def _children(self, name: str) -> list[Path]:
        """The entries of ``bodies/`` or ``tmp/``; the directory made again when something outside
        the store removed it alone (a tmp cleaner under /tmp), so spills and sweeps go on."""
        directory = self.path / name
        try:
            return list(directory.iterdir())
        except FileNotFoundError:
            self._make_dir(name)
            return []

    def _retire_body(self, body_id: str) -> None:
        """Leave a replaced body to the orphan sweep once ``RETIRED_GRACE_S`` have passed (its
        mtime set to now, so another process's sweep of a shared store waits its grace too)."""
        with self._lock:
            self._retired[body_id] = time.time()
        with contextlib.suppress(OSError):
            os.utime(self.path / "bodies" / body_id)

    def _drop_bodies(self, body_ids: Iterable[str]) -> None:
        for body_id in body_ids:
            with self._lock:
                self._readers.pop(body_id, None)
            remove_body_dir(self.path / "bodies" / body_id)

    def _sweep_loop(self, interval_s: float) -> None:
        away = False  # the shared store's database is unavailable: said once, not every interval
        while not self._stop.wait(interval_s):
            try:
                removed = self.sweep()
                if removed:
                    log.debug("swept %d expired scratch entries", removed)
                if away:
                    log.warning("background sweeps of %s run again", self.describe())
                    away = False
            except StoreClosedError:
                return
            except StoreUnavailableError as exc:
                if not away:
                    log.warning("background sweeps of %s wait for it: %s", self.describe(), exc.message[:300])
                away = True
            except Exception:
                log.exception("background sweep of %s failed", self.describe())

    # -- bodies ------------------------------------------------------------------------------

    def _named_by_row(self, entry: Entry) -> bool | None:
        """Whether the catalog row of handle ``entry`` (expired or not) still names its body;
        None when the catalog cannot say (a shared store's database away)."""
        try:
            row = self.catalog.row(Scope(entry.run_id, entry.agent_id), "handle", entry.key, None)
        except ScratchpadError:
            return None
        return row is not None and Entry.from_row(row).body_id == entry.body_id

    def _body_not_here(self, entry: Entry) -> ScratchpadError:
        """A body not found: removed since its entry was read, or (a shared store whose entry
        still names it) never in this directory, when processes were given different ones."""
        with contextlib.suppress(ScratchpadError):
            row = self.catalog.row(Scope(entry.run_id, entry.agent_id), "handle", entry.key, self.now())
            if row is not None and Entry.from_row(row).body_id == entry.body_id:  # still named: lost
                if self.shared:
                    return StoreError(
                        f"the body of {entry.key!r} is not in {self.path / 'bodies'}: either the process "
                        "that spilled it keeps this shared store's bodies in another directory (give every "
                        "process the same one: bodies=DIR, --bodies, $SCRATCHPAD_BODIES), or the files of "
                        "this directory were removed (the output is lost: delete the handle and spill it again)",
                        handle=entry.key,
                        damaged=True,
                    )
                return StoreError(
                    f"the body of {entry.key!r} is gone from {self.path / 'bodies'} (removed outside the store, "
                    "e.g. by a cleaner of temporary files); the output is lost: delete the handle and spill it again",
                    handle=entry.key,
                    damaged=True,
                )
        return removed_while_read()

    def body_opens(self, entry: Entry) -> bool:
        """Whether the body of handle ``entry`` is there and whole (a reader opens on it)."""
        try:
            self.reader(entry)
        except ScratchpadError:
            return False
        return True

    def reader(self, entry: Entry) -> BodyReader:
        """Random access to the body of a handle entry."""
        if entry.body_id is None:
            raise InvalidArgumentError(f"{entry.key!r} is a note, it has no body", key=entry.key)
        with self._lock:
            reader = self._readers.get(entry.body_id)
            if reader is not None and not os.path.exists(reader.raw_path):  # removed since: said below
                del self._readers[entry.body_id]
                reader = None
            if reader is None:
                reader = self._open_reader(entry, BodyReader)
                self._readers[entry.body_id] = reader
                while len(self._readers) > 64:
                    self._readers.popitem(last=False)
            else:
                self._readers.move_to_end(entry.body_id)
        return reader

    @contextlib.contextmanager
    def held_reader(self, entry: Entry) -> Iterator[BodyReader]:
        """A reader of the body of ``entry`` for one thread, whose files stay open until the block
        ends: a spill's stub is read whole from the body it stored even when another process
        deletes the handle meanwhile (its reads failed "removed while it was being read", and the
        stub named a handle that was gone). Not cached; ``reader`` otherwise."""
        if entry.body_id is None:
            raise InvalidArgumentError(f"{entry.key!r} is a note, it has no body", key=entry.key)
        reader = self._open_reader(entry, _HeldReader)
        try:
            yield reader
        finally:
            reader.close()

    def _open_reader(self, entry: Entry, kind: type[_R]) -> _R:
        try:
            return kind(self.path / "bodies" / str(entry.body_id), entry.size_bytes)
        except FileNotFoundError:  # (not damage: gone since the entry was read)
            raise self._body_not_here(entry) from None
        except (OSError, ValueError) as exc:
            if self._named_by_row(entry) is False:
                # a delete (rows first, then the files: one at a time) took it as it opened: its
                # pretty-printed body already gone read as "raw holds … where … were written"
                raise removed_while_read() from None
            raise StoreError(
                f"the body of {entry.key!r} is missing or damaged ({exc}: a machine crash before "
                "its bytes reached the disk, or a file changed outside the store); delete the "
                "entry and spill the output again",
                handle=entry.key,
                damaged=True,
            ) from exc

    def body_paths(self, entry: Entry) -> tuple[Path, Path]:
        """``(raw_path, body_path)`` of a handle entry, for DuckDB to read in place."""
        reader = self.reader(entry)
        return reader.raw_path, reader.body_path
