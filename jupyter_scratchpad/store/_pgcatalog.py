"""The shared catalog: PostgreSQL, scoped by the database's own row-level security.

Who may see what is decided by PostgreSQL, not only by our ``WHERE`` clauses:

- every scratch table (``agents``, ``runs``, ``scratch_entries``) has row-level security with a
  policy ``agent_id = current_setting('scratchpad.agent_id')``, for reads and writes alike;
- each scoped statement runs in a transaction that first sets that setting (``set_config(...,
  true)``, i.e. ``SET LOCAL``): it ends with the transaction, a pooled connection never carries
  one agent's scope into another's transaction;
- the pool's connections act as the role ``scratchpad_app`` (``SET ROLE``), which owns nothing and
  cannot bypass row-level security; a connection that would bypass it is refused;
- the few reads and writes that must cross agents (who owns a run, the TTL sweep, which bodies
  are still named) go through ``SECURITY DEFINER`` functions that do exactly that and nothing else.

Layout versions are applied in order under an advisory lock (``MIGRATIONS``): a database with an
older layout is upgraded in place when a store opens it, a newer one is refused with a message.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import StoreError, StoreFormatError, StoreUnavailableError
from ._catalog import COLUMNS, Row, SqlCatalog, Tx, written_concurrently

APP_ROLE = "scratchpad_app"
PG_LAYOUT_VERSION = 4
_MIGRATE_LOCK = 0x5C7A_7C40  # pg_advisory_xact_lock key: one migration (or re-keying) at a time per database
_SWEEP_LOCK = 0x5C7A_7C41  # pg_try_advisory_xact_lock key: one sweeper at a time per database
POOL_MAX_IDLE_S = 30.0  # a pooled connection unused this long is closed (one per interval, down to one)
DEFAULT_WAIT_S = 5.0  # how long a call waits for a pooled connection, unless the URL's connect_timeout says
CLOCK_RESYNC_S = 60.0  # the offset to the database's clock is measured again after this long
_CLOCK_JUMP_S = 1.0  # ... or at once when the local clock moved this much more or less than time.monotonic()
log = logging.getLogger("jupyter_scratchpad.store")

#: Layout version -> statements that bring the previous layout to it.
MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE IF NOT EXISTS scratch_meta (
    name  text PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE IF NOT EXISTS agents (
    agent_id   text PRIMARY KEY,
    created_at double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id     text PRIMARY KEY,
    agent_id   text NOT NULL REFERENCES agents (agent_id),
    created_at double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS scratch_entries (
    run_id        text NOT NULL,
    agent_id      text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('handle', 'note')),
    key           text NOT NULL,
    body_id       text,
    value_json    text,
    format        text,
    size_bytes    bigint NOT NULL,
    body_bytes    bigint,
    line_count    bigint,
    tokens        bigint,
    preview       text,
    source_tool   text,
    server        text,
    content_hash  text,
    meta_json     text,
    created_at    double precision NOT NULL,
    expires_at    double precision NOT NULL,
    PRIMARY KEY (run_id, agent_id, kind, key)
);
CREATE INDEX IF NOT EXISTS scratch_entries_expiry ON scratch_entries (expires_at);
""",
    2: f"""
-- dedupe across processes by a constraint: an automatic spill names its content hash here
ALTER TABLE scratch_entries ADD COLUMN IF NOT EXISTS dedupe_hash text;
CREATE UNIQUE INDEX IF NOT EXISTS scratch_entries_dedupe
    ON scratch_entries (run_id, agent_id, dedupe_hash) WHERE dedupe_hash IS NOT NULL;
CREATE INDEX IF NOT EXISTS scratch_entries_body ON scratch_entries (body_id) WHERE body_id IS NOT NULL;

DO $$ BEGIN
    CREATE ROLE {APP_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;
DO $$ BEGIN
    EXECUTE format('GRANT {APP_ROLE} TO %I', current_user);
EXCEPTION WHEN OTHERS THEN NULL;  -- a superuser needs no membership to SET ROLE
END $$;
DO $$ BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO {APP_ROLE}', current_schema());
END $$;
GRANT SELECT ON scratch_meta TO {APP_ROLE};
GRANT SELECT, INSERT, UPDATE, DELETE ON agents, runs, scratch_entries TO {APP_ROLE};

ALTER TABLE agents ENABLE ROW LEVEL SECURITY;
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE scratch_entries ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS scoped ON agents;
DROP POLICY IF EXISTS scoped ON runs;
DROP POLICY IF EXISTS scoped ON scratch_entries;
CREATE POLICY scoped ON agents USING (agent_id = current_setting('scratchpad.agent_id', true))
    WITH CHECK (agent_id = current_setting('scratchpad.agent_id', true));
CREATE POLICY scoped ON runs USING (agent_id = current_setting('scratchpad.agent_id', true))
    WITH CHECK (agent_id = current_setting('scratchpad.agent_id', true));
CREATE POLICY scoped ON scratch_entries USING (agent_id = current_setting('scratchpad.agent_id', true))
    WITH CHECK (agent_id = current_setting('scratchpad.agent_id', true));

CREATE OR REPLACE FUNCTION scratchpad_run_owner(p_run_id text) RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
    AS $$ SELECT agent_id FROM runs WHERE run_id = p_run_id $$;
CREATE OR REPLACE FUNCTION scratchpad_sweep(p_now double precision) RETURNS TABLE (body_id text)
    LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT
    AS $$ DELETE FROM scratch_entries WHERE expires_at <= p_now RETURNING body_id $$;
CREATE OR REPLACE FUNCTION scratchpad_body_ids() RETURNS SETOF text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
    AS $$ SELECT body_id FROM scratch_entries WHERE body_id IS NOT NULL $$;
REVOKE ALL ON FUNCTION scratchpad_run_owner(text), scratchpad_sweep(double precision),
    scratchpad_body_ids() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION scratchpad_run_owner(text), scratchpad_sweep(double precision),
    scratchpad_body_ids() TO {APP_ROLE};
""",
    3: """
-- the sweep's "now" is never later than the database's own: a process whose clock ran ahead
-- (20 minutes) swept other agents' live entries, and any connection of the app role could
-- call scratchpad_sweep(1e12) and delete every agent's rows
CREATE OR REPLACE FUNCTION scratchpad_sweep(p_now double precision) RETURNS TABLE (body_id text)
    LANGUAGE sql SECURITY DEFINER SET search_path FROM CURRENT
    AS $$ DELETE FROM scratch_entries
          WHERE expires_at <= LEAST(p_now, extract(epoch FROM statement_timestamp()))
          RETURNING body_id $$;
""",
    4: f"""
-- the store id is bound to the database that holds it: a copy of the database (CREATE DATABASE
-- ... TEMPLATE, a restore beside the original) kept the original's id, so it used the original's
-- bodies directory, and its deletes and sweeps removed the original's live bodies. Every open
-- calls this: the same database (renamed or not) keeps its id; a copy whose original is still in
-- this cluster gets an id of its own (p_new_id); a database whose recorded one is gone from this
-- cluster, or that is in another cluster, is a restore of it: it adopts the id (the same bodies).
CREATE OR REPLACE FUNCTION scratchpad_store_identity(p_new_id text)
    RETURNS TABLE (store_id text, copied_from text, copy_of text)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT
    AS $$
DECLARE
    here_oid text := (SELECT d.oid::text FROM pg_database d WHERE d.datname = current_database());
    here_sysid text;
    rec_oid text;
    rec_name text;
    rec_sysid text;
BEGIN
    IF has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE') THEN
        here_sysid := (SELECT c.system_identifier::text FROM pg_control_system() c);
    END IF;
    FOR attempt IN 1..2 LOOP  -- (again under the lock, unless the record is this database's)
        store_id := (SELECT m.value FROM scratch_meta m WHERE m.name = 'store_id');
        copied_from := (SELECT m.value FROM scratch_meta m WHERE m.name = 'copied_from');
        rec_oid := (SELECT m.value FROM scratch_meta m WHERE m.name = 'database_oid');
        rec_name := (SELECT m.value FROM scratch_meta m WHERE m.name = 'database_name');
        rec_sysid := (SELECT m.value FROM scratch_meta m WHERE m.name = 'system_identifier');
        IF rec_oid = here_oid AND rec_name = current_database()
                AND (here_sysid IS NULL OR rec_sysid = here_sysid) THEN
            RETURN NEXT;
            RETURN;
        END IF;
        IF attempt = 1 THEN  -- two processes opening a fresh copy at once: one new id
            PERFORM pg_advisory_xact_lock({_MIGRATE_LOCK});
        END IF;
    END LOOP;
    IF rec_oid IS NOT NULL AND rec_oid <> here_oid
            AND (rec_sysid IS NULL OR here_sysid IS NULL OR rec_sysid = here_sysid)
            AND EXISTS (SELECT 1 FROM pg_database d WHERE d.oid::text = rec_oid AND d.datname = rec_name) THEN
        copied_from := store_id;
        copy_of := rec_name;
        store_id := p_new_id;
        INSERT INTO scratch_meta VALUES ('store_id', store_id), ('copied_from', copied_from)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value;
    END IF;
    INSERT INTO scratch_meta VALUES ('database_oid', here_oid), ('database_name', current_database())
        ON CONFLICT (name) DO UPDATE SET value = excluded.value;
    IF here_sysid IS NOT NULL THEN
        INSERT INTO scratch_meta VALUES ('system_identifier', here_sysid)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value;
    END IF;
    RETURN NEXT;
END $$;
REVOKE ALL ON FUNCTION scratchpad_store_identity(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION scratchpad_store_identity(text) TO {APP_ROLE};
""",
}


def redact_url(url: str) -> str:
    """The URL without its password (``user:pw@`` or libpq's ``?password=pw``), for messages."""
    # (a password holding "/", "@" or "?" unescaped: up to the last "@"; more hidden is no harm)
    url = re.sub(r"(://[^:/@?#]*):.*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url, flags=re.IGNORECASE)


# libpq's answers that a retry will not change: the URL is wrong, not the server away
_NOT_AN_OUTAGE = (
    "password authentication failed",
    "no password supplied",
    "does not exist",
    "invalid port",
    "invalid integer value",
    "invalid connection option",
    "invalid uri",
    "invalid sslmode",
    "requires a value",  # options=-c setting without one
    "unrecognized configuration parameter",
    "invalid value for parameter",
    "failed to resolve host",  # a misspelt host name
    "could not translate host name",
)


def _conninfo(url: str) -> dict[str, Any]:
    """libpq's parameters of ``url`` (host, port, connect_timeout, options…); empty when it does
    not parse (psycopg's own parse error is clear, and surfaces when connecting)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        return dict(conninfo_to_dict(url))
    except Exception:
        return {}


def _check_port(url: str, where: str) -> None:
    """A URL libpq cannot read, or a port that is not a number, is a typo in the URL: libpq
    calls the port a failure to resolve the host, which would read as an outage worth retrying,
    and an unreadable URL was a "catalog operation failed" with no word about the URL."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(url)
    except Exception as exc:
        said = " ".join(str(exc).split()).split(":")[0][:120]  # (not the token it quotes: maybe the password's)
        raise StoreError(
            f"the shared store's URL ({where}) cannot be read: {said}; write it as "
            "postgresql://user:password@host:5432/database (percent-encode %, @, : and / in the "
            "password; only libpq's parameters after ?)",
            url=where,
        ) from None
    ports = str(params.get("port") or "")
    bad = [p for p in ports.split(",") if p and not p.strip().isdigit()]
    if bad:
        raise StoreError(
            f"the shared store's URL ({where}) has port {bad[0]!r}, which is not a number; "
            "write it as postgresql://user:password@host:5432/database",
            url=where,
        )


def _url_connect_timeout(url: str) -> tuple[bool, float | None]:
    """Whether the URL names libpq's ``connect_timeout``, and its seconds when they bound the
    connect: a positive number. libpq takes 0 (or less) as "wait indefinitely" (its default too):
    that is no bound, not a 0 s wait (every open failed at once as "unavailable")."""
    given = _conninfo(url).get("connect_timeout")
    if given is None or str(given).strip() == "":
        return False, None
    try:
        seconds = float(str(given).strip())
    except ValueError:
        return True, None  # (libpq's own message about the value surfaces when connecting)
    return True, (seconds if 0 < seconds < float("inf") else None)


def _ident(name: str) -> str:
    """``name`` as an SQL identifier in a message (quoted when PostgreSQL needs it)."""
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'


def _local_clock() -> Callable[[], float]:
    """The local clock the database's is measured against: one nobody sets (Linux's
    ``CLOCK_BOOTTIME``, which also counts a suspend), so stepping the wall clock (NTP, an admin)
    between two measures moves no expiry; elsewhere the wall clock (a step is then noticed at the
    next call, see ``_CLOCK_JUMP_S``)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is not None:
        with contextlib.suppress(OSError):
            time.clock_gettime(boottime)
            return functools.partial(time.clock_gettime, boottime)
    return time.time


_ticks = _local_clock()  # (read ~0.1 us: no Python frame per call)


POOL_NAME = "jupyter-scratchpad"
_OUR_CONNECTIONS: weakref.WeakSet[Any] = weakref.WeakSet()  # the pool's, for _QuietPool


class _QuietPool(logging.Filter):
    """psycopg_pool warns at every failed reconnect try of our pool and at each connection it
    drops: with the database away that printed a line to a notebook's stderr per try (36 in a 20 s
    outage). The caller already gets a StoreUnavailableError and the sweeper says once that the
    database is away, so for this pool those lines are DEBUG; other pools are left as they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        ours = isinstance(args, tuple) and args and (args[0] == POOL_NAME or _is_ours(args[0]))
        if ours and record.levelno == logging.WARNING:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def _is_ours(thing: Any) -> bool:
    try:
        return thing in _OUR_CONNECTIONS
    except TypeError:  # not weakly referenceable: not a connection
        return False


def _quiet_pool_log() -> None:
    pool_log = logging.getLogger("psycopg.pool")
    if not any(isinstance(f, _QuietPool) for f in pool_log.filters):
        pool_log.addFilter(_QuietPool())


ANSWER_TIMEOUT_S = 30.0  # a statement's answer, unless the URL sets statement_timeout
_ANSWER_GRACE_S = 2.0  # past the server's own statement_timeout: it cancels first when it can


def answer_timeout(url: str) -> float:
    """How long a call waits for the server's answer: the URL's ``options=-c
    statement_timeout=…`` (PostgreSQL's own setting, which the server enforces too) plus a grace,
    else ``ANSWER_TIMEOUT_S``."""
    options = str(_conninfo(url).get("options") or "")
    found = re.search(r"statement_timeout\s*=\s*(\d+(?:\.\d+)?)\s*(ms|s|min)?\b", options)
    if not found or float(found.group(1)) <= 0:
        return ANSWER_TIMEOUT_S
    scale = {"s": 1.0, "min": 60.0}.get(found.group(2) or "ms", 0.001)
    return float(found.group(1)) * scale + _ANSWER_GRACE_S


class _Deadlines:
    """One thread that ends a connection whose statement has waited past its deadline.

    A server that stops answering without closing the connection (a frozen process, a network
    partition: TCP waits for hours) held a call forever; libpq has no read timeout. Shutting the
    socket down makes the blocked call fail at once, with a connection error the pool then
    discards. Cheap per call: a dict entry, and a notify only when it is the earliest deadline.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: dict[int, tuple[float, Any]] = {}
        self._severed: set[int] = set()
        self._next = 0
        self._thread: threading.Thread | None = None

    def watch(self, conn: Any, seconds: float) -> int:
        with self._cond:
            self._next += 1
            token = self._next
            deadline = time.monotonic() + seconds
            earliest = min((d for d, _ in self._watched.values()), default=None)
            self._watched[token] = (deadline, conn)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="scratchpad-pg-deadlines", daemon=True)
                self._thread.start()
            elif earliest is None or deadline < earliest:
                self._cond.notify()
        return token

    def done(self, token: int) -> bool:
        """Stop watching; True when the deadline passed and the connection was ended."""
        with self._cond:
            self._watched.pop(token, None)
            if token in self._severed:
                self._severed.discard(token)
                return True
        return False

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for token, (deadline, conn) in list(self._watched.items()):
                    if deadline <= now:
                        del self._watched[token]
                        self._severed.add(token)
                        _sever(conn)
                if not self._watched:
                    if not self._cond.wait(60.0) and not self._watched:
                        self._thread = None  # idle a minute: the next watch starts another
                        return
                    continue
                self._cond.wait(max(min(d for d, _ in self._watched.values()) - now, 0.001))


def _sever(conn: Any) -> None:
    """Shut the connection's socket down (the blocked libpq call then fails: server closed)."""
    try:
        fd = conn.pgconn.socket
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # already closed: nothing waits on it
        log.debug("could not shut down a PostgreSQL connection past its deadline", exc_info=True)


_DEADLINES = _Deadlines()


class _PgTx:
    """``execute`` with the store's ``?`` placeholders on a psycopg connection."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s"), list(params))


class PgCatalog(SqlCatalog):
    """The shared catalog on PostgreSQL (psycopg 3, a connection pool)."""

    shared = True
    _META_TOKENS_EXACT = "(coalesce(meta_json, '{}')::jsonb || '{\"tokens_exact\": true}'::jsonb)::text"

    def __init__(self, url: str, *, pool_size: int = 8, timeout_s: float | None = None) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise StoreError("a postgresql:// store needs psycopg: pip install 'jupyter-scratchpad[postgres]'") from exc
        self._psycopg = psycopg
        self._PoolClosed, self._PoolTimeout = PoolClosed, PoolTimeout
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error, PoolTimeout, PoolClosed)
        _quiet_pool_log()
        self.url = url
        self._where = redact_url(url)
        _check_port(url, self._where)
        # how long a call waits for a connection before StoreUnavailableError: the URL's
        # connect_timeout (libpq's own parameter) when it is a positive number, else 5 s. A URL's
        # connect_timeout=0 is libpq's "no connect timeout": the connects themselves then wait as
        # libpq does (psycopg stops them after 130 s), but a call still waits at most 5 s for a
        # pooled connection, and every answer at most answer_timeout(url).
        named, url_timeout = _url_connect_timeout(url)
        if timeout_s is None or not timeout_s > 0:
            timeout_s = url_timeout or DEFAULT_WAIT_S
        self._timeout_s = timeout_s
        # a connect is bounded by the URL's own connect_timeout when it names one, else by ours
        self._connect_kw: dict[str, Any] = {} if named else {"connect_timeout": max(2, int(timeout_s))}
        self._answer_s = answer_timeout(url)
        self._set_role = False
        self._schema = "public"  # the schema of the scratch tables (found by _migrate)
        self._search_path = 'SET search_path TO "public"'
        # "now" of every process sharing the catalog is the database's: the offset of its clock
        # to _ticks(), measured when the store opens, on every new pooled connection, and again
        # on a connection taken CLOCK_RESYNC_S later (see now())
        self._offset = time.time() - _ticks()  # (until the first measure: this machine's clock)
        self._synced = (float("-inf"), 0.0)  # (time.monotonic(), _ticks()) of the last measure
        # the id of the store this catalog was copied from (CREATE DATABASE ... TEMPLATE), if it was
        self.copied_from: str | None = None
        self.store_id = self._migrate()
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            # an idle process gives its connections back (psycopg_pool closes one per max_idle,
            # down to min_size): at the default 600 s a kernel left idle held all 8 for over an
            # hour, and a dozen such processes filled PostgreSQL's max_connections
            max_idle=POOL_MAX_IDLE_S,
            kwargs={"autocommit": True, **self._connect_kw},
            configure=self._configure,
            # no check= here: _getconn checks each connection itself. The pool's own check loop
            # slept a doubling back-off (1 s, 2 s, 4 s) after each failed check, and after a
            # restart of PostgreSQL every idle connection fails its check: with 4 of them the
            # first call failed after 5 s though the server was back (see _getconn)
            timeout=timeout_s,
            # the pool retries a lost connection with a doubling delay; uncapped, after a 40 s
            # outage its next try came up to 22 s after the server was back and every call in
            # between failed. It gives up after one wait instead, and the next call asks anew.
            reconnect_timeout=timeout_s,
            open=False,
            name=POOL_NAME,
        )
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except Exception as exc:
            self._pool.close()
            raise self._wrap(exc) from exc

    def describe(self) -> str:
        return self._where

    # -- connections -------------------------------------------------------------------------

    def _wrap(self, exc: BaseException) -> StoreError:
        psycopg = self._psycopg
        if isinstance(exc, StoreError):
            return exc
        said = " ".join(str(exc).split())[:300]  # libpq's messages span lines; ours are one
        if isinstance(exc, self._PoolClosed):
            return StoreError(f"the connection pool to {self._where} is closed; open a new ScratchStore")
        said = redact_url(said)
        if isinstance(exc, psycopg.OperationalError) and any(m in said.lower() for m in _NOT_AN_OUTAGE):
            return StoreError(
                f"cannot connect to the shared store's PostgreSQL ({self._where}): {said}; check the URL's "
                "user, password, database and port (a retry will not change this answer)",
                url=self._where,
            )
        if str(getattr(exc, "sqlstate", None) or "")[:2] in ("22", "54"):
            # a data exception or a program limit (an index row too large: psycopg calls class 54
            # an OperationalError): the same call gets the same answer, it is no outage
            return StoreError(
                f"the shared store's PostgreSQL ({self._where}) refused the data: {said} (a retry will not "
                "change this answer)",
                url=self._where,
            )
        if isinstance(exc, (self._PoolTimeout, psycopg.OperationalError, psycopg.InterfaceError)):
            return StoreUnavailableError(
                f"the shared store's PostgreSQL ({self._where}) is unavailable: {said}; "
                "nothing was changed, retry when it is back (the pool reconnects by itself)",
                url=self._where,
            )
        return StoreError(f"catalog operation failed on {self._where}: {said}", url=self._where)

    @contextmanager
    def _deadline(self, conn: Any) -> Iterator[None]:
        """Bound the wait for ``conn``'s answers: past ``_answer_s`` it is cut and the call fails."""
        token = _DEADLINES.watch(conn, self._answer_s)
        try:
            yield
        except self._errors as exc:
            if _DEADLINES.done(token):
                raise StoreUnavailableError(
                    f"the shared store's PostgreSQL ({self._where}) did not answer within {self._answer_s:g} s "
                    "(a frozen server or a lost network); the call was given up, retry when it answers "
                    "(the URL's options=-c statement_timeout=MS sets this wait)",
                    url=self._where,
                ) from exc
            raise
        finally:
            _DEADLINES.done(token)

    def _check(self, conn: Any) -> None:
        """The check of an idle connection before a call, bounded like a call."""
        with self._deadline(conn):
            self._pool.check_connection(conn)

    def _getconn(self) -> Any:
        """A pooled connection that passed its check, waiting at most ``_timeout_s`` for one.

        A connection that fails its check is handed back (the pool replaces a broken one), and
        at the first failure every idle connection is discarded with it: they idled as long, and
        what broke one (PostgreSQL restarted, the network dropped) broke them all. The next
        connection is then a fresh one, at once when the server is back; when it is down, the
        call fails after the usual wait with the pool's "couldn't get a connection".
        """
        deadline = time.monotonic() + self._timeout_s
        failed = 0
        while True:
            try:
                conn = self._pool.getconn(timeout=deadline - time.monotonic())
            except self._PoolTimeout:
                raise self._PoolTimeout(f"couldn't get a connection after {self._timeout_s:.2f} sec") from None
            try:
                self._check(conn)
            except BaseException as exc:
                self._pool.putconn(conn)  # (a broken one is closed and replaced by the pool)
                if not isinstance(exc, Exception):
                    raise  # KeyboardInterrupt and the like: no other try
                failed += 1
                log.debug("a pooled connection to %s failed its check: %s", self._where, exc)
                if failed == 1:
                    drain = getattr(self._pool, "drain", None)  # (psycopg_pool >= 3.3)
                    (drain or self._pool.check)()
                else:  # (fresh connections failing too: no busy loop)
                    time.sleep(max(min(0.05 * 2**failed, deadline - time.monotonic()), 0))
                continue
            return conn

    def _configure(self, conn: Any) -> None:
        """Every pooled connection acts as the application role (checked once, in ``_check_role``)
        and finds the scratch tables in their schema: after ``SET ROLE`` the default search path's
        ``"$user"`` names the role's schema, not the one PostgreSQL 15's per-user schema pattern
        (``CREATE SCHEMA app AUTHORIZATION app``) put the tables in."""
        _OUR_CONNECTIONS.add(conn)
        if self._set_role:
            conn.execute(f"SET ROLE {APP_ROLE}")
        conn.execute(self._search_path)
        self._measure_clock(conn)  # (a new connection: the measure costs one round trip more)

    # -- one clock: the database's -----------------------------------------------------------

    def now(self) -> float:
        """The database's clock, read locally: ``_ticks()`` plus the offset last measured.

        Every process sharing the catalog writes expiries, filters reads, slides handles and
        sweeps by this one clock, whatever its machine's own clock says: a machine 400 s behind
        wrote expiries the others' sweeps took as past (its live notes and handles deleted), and
        one ahead could not see a note written a moment before. The error is within half a round
        trip to the server plus the local clock's drift over ``CLOCK_RESYNC_S``.
        """
        return _ticks() + self._offset

    def _clock_due(self) -> bool:
        mono, ticks = time.monotonic(), _ticks()
        at_mono, at_ticks = self._synced
        return mono - at_mono > CLOCK_RESYNC_S or abs((ticks - at_ticks) - (mono - at_mono)) > _CLOCK_JUMP_S

    def _measure_clock(self, conn: Any) -> None:
        """Measure the offset of the database's clock to ``_ticks()`` on ``conn`` (autocommit,
        idle): one ``SELECT`` of ``clock_timestamp()``, taken at the middle of the round trip."""
        before = _ticks()
        row = conn.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
        after = _ticks()
        if after - before > 1.0 and self._synced[0] > float("-inf"):
            return  # a slow answer measures badly: the last offset stays (measured again later)
        self._offset = float(row[0]) - (before + after) / 2
        self._synced = (time.monotonic(), after)

    # -- roles and the layout ------------------------------------------------------------------

    def _check_role(self, conn: Any) -> None:
        """The role the store's statements run as must be subject to row-level security: not a
        superuser, not BYPASSRLS, not the tables' owner. ``SET ROLE scratchpad_app`` makes it so
        for any user granted that role (the migrating user is); any other user is refused, and
        so is a role that cannot use the tables (each with the fix that applies)."""
        psycopg = self._psycopg
        user = conn.execute("SELECT current_user").fetchone()[0]
        if user != APP_ROLE:
            member = True
            try:
                with conn.transaction():
                    try:
                        conn.execute(f"SET LOCAL ROLE {APP_ROLE}")
                    except psycopg.errors.InsufficientPrivilege:
                        member = False
                        raise
                    conn.execute(self._search_path.replace("SET ", "SET LOCAL ", 1))
                    self._assert_rls_applies(conn, user)
                    self._assert_usable(conn, user, acting=True)
                self._set_role = True
                return
            except psycopg.errors.InsufficientPrivilege:
                if member:
                    raise
                # not a member: the user itself must be subject to row-level security
        self._assert_rls_applies(conn, user)
        self._assert_usable(conn, user, acting=False)

    def _assert_rls_applies(self, conn: Any, user: str) -> None:
        row = conn.execute(
            "SELECT r.rolsuper OR r.rolbypassrls OR t.tableowner = current_user FROM pg_roles r, pg_tables t "
            "WHERE r.rolname = current_user AND t.tablename = 'scratch_entries' AND t.schemaname = %s",
            [self._schema],
        ).fetchone()
        if row is None:  # (found by _migrate a moment ago: dropped since)
            raise StoreError(
                f"the scratch tables of {self._where} are not in schema {self._schema!r} any more (dropped or "
                "moved while the store opened); open the store again",
                url=self._where,
            )
        if row[0]:
            raise StoreError(
                f"the role {user!r} of {self._where} is not subject to row-level security (a superuser, "
                f"BYPASSRLS, or the tables' owner) and may not act as {APP_ROLE}; GRANT {APP_ROLE} TO "
                f"{_ident(user)}, or connect as a role granted it",
                url=self._where,
            )

    def _assert_usable(self, conn: Any, user: str, *, acting: bool) -> None:
        """The role may read and write the scratch tables and call the store's functions (else
        every call failed later with "catalog operation failed: permission denied")."""
        row = conn.execute(
            "SELECT has_schema_privilege(n.oid, 'USAGE') AND coalesce(("
            "  SELECT bool_and(has_table_privilege(c.oid, p)) FROM pg_class c, "
            "  unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) p "
            "  WHERE c.relnamespace = n.oid AND c.relname IN ('agents', 'runs', 'scratch_entries')), false) "
            "AND coalesce((SELECT bool_and(has_function_privilege(f.oid, 'EXECUTE')) FROM pg_proc f "
            "  WHERE f.pronamespace = n.oid AND f.proname LIKE 'scratchpad\\_%%'), false) "
            "FROM pg_namespace n WHERE n.nspname = %s",
            [self._schema],
        ).fetchone()
        if row is not None and row[0]:
            return
        if acting:
            raise StoreError(
                f"the role {APP_ROLE} may not use the scratch tables in schema {self._schema!r} of {self._where} "
                f"(no USAGE on the schema, or a grant on a table or function missing); open the store once as "
                "the tables' owner (its migration grants them), or GRANT USAGE ON SCHEMA "
                f"{_ident(self._schema)} TO {APP_ROLE}",
                url=self._where,
            )
        raise StoreError(
            f"the role {user!r} of {self._where} may not use the shared store: it is not granted {APP_ROLE} "
            f"(and holds no rights of its own on the scratch tables); GRANT {APP_ROLE} TO {_ident(user)} "
            "(as a superuser or the role that created the store), then open it again",
            url=self._where,
        )

    def _migrate(self) -> str:
        """Create or upgrade the layout (one migrating process at a time); returns the store id."""
        psycopg = self._psycopg
        user, creating, elsewhere = "?", False, None
        try:
            conn_ctx = psycopg.connect(self.url, autocommit=True, **self._connect_kw)
            with conn_ctx as conn, self._deadline(conn):
                user = str(conn.info.user or "?")
                self._measure_clock(conn)
                version = self._layout(conn)
                if version < PG_LAYOUT_VERSION:
                    creating = True
                    if version == 0:  # none on this search path: one in a schema it does not name?
                        elsewhere = conn.execute(
                            "SELECT string_agg(schemaname, ', ') FROM pg_tables WHERE tablename = 'scratch_meta'"
                        ).fetchone()[0]
                    with conn.transaction():
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATE_LOCK])
                        version = self._layout(conn)
                        for step in range(version + 1, PG_LAYOUT_VERSION + 1):
                            conn.execute(MIGRATIONS[step])
                            conn.execute(
                                "INSERT INTO scratch_meta VALUES ('layout_version', %s) "
                                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                                [str(step)],
                            )
                        conn.execute(
                            "INSERT INTO scratch_meta VALUES ('store_id', %s) ON CONFLICT DO NOTHING",
                            [uuid.uuid4().hex],
                        )
                    creating = False
                    version = self._layout(conn)
                if version > PG_LAYOUT_VERSION:
                    raise StoreFormatError(
                        f"{self._where} has scratch layout {version}, this version reads up to "
                        f"{PG_LAYOUT_VERSION}; upgrade jupyter-scratchpad (pip install -U jupyter-scratchpad) "
                        "or use another database",
                        url=self._where,
                    )
                # the schema the tables are in (this user's search path found them): the pooled
                # connections name it, whatever their role's "$user" is
                self._schema = conn.execute(
                    "SELECT nspname FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid "
                    "WHERE c.oid = to_regclass('scratch_entries')"
                ).fetchone()[0]
                self._search_path = 'SET search_path TO "' + self._schema.replace('"', '""') + '"'
                self._check_role(conn)
                return self._store_identity(conn)
        except StoreError:
            raise
        except psycopg.errors.InsufficientPrivilege as exc:
            said = str(exc).strip().split("\n")[0][:200]  # (not its CONTEXT lines)
            if not creating:  # the layout is there: this role may not read it
                raise StoreError(
                    f"the role {user!r} of {self._where} may not use the shared store ({said}): it is not "
                    f"granted {APP_ROLE}; GRANT {APP_ROLE} TO {_ident(user)} (as a superuser or the role that "
                    "created the store), then open it again",
                    url=self._where,
                ) from exc
            needs = (
                f"the first open creates the role {APP_ROLE}: open the store once as a role with CREATEROLE "
                "(or a superuser) that owns the database"
                if "create role" in said.lower()
                else "open the store once as the database owner"
            )
            if elsewhere:
                needs = (
                    f"the scratch tables are in schema {elsewhere}, which this role's search_path does not name: "
                    f"add options=-c%20search_path%3D{elsewhere.split(',')[0]} to the URL, or {needs}"
                )
            raise StoreError(
                f"the user of {self._where} may not create the scratch layout ({said}); {needs}, then connect "
                f"as any role granted {APP_ROLE}",
                url=self._where,
            ) from exc
        except psycopg.Error as exc:
            raise self._wrap(exc) from exc

    def _store_identity(self, conn: Any) -> str:
        """The store id, bound to this database: a copy of a live store's database (CREATE
        DATABASE … TEMPLATE, a restore beside it) is given an id of its own at its first open, so
        its default bodies directory is its own and the original's is refused to it."""
        with conn.transaction():
            if self._set_role:  # (as the pool's connections act: the role holds the grant)
                conn.execute(f"SET LOCAL ROLE {APP_ROLE}")
            store_id, copied_from, copy_of = conn.execute(
                f"SELECT * FROM {_ident(self._schema)}.scratchpad_store_identity(%s)",
                [uuid.uuid4().hex],
            ).fetchone()
        self.copied_from = copied_from
        if copy_of is not None:
            log.warning(
                "%s is a copy of the scratch store in database %s (CREATE DATABASE ... TEMPLATE, or a restore "
                "beside it): it was given a store id of its own (%s..., was %s...), so its deletes and sweeps "
                "never touch the original's bodies; the handles it copied are not readable in the copy (their "
                "bodies are the original's), its notes are",
                self._where,
                _ident(copy_of),
                store_id[:12],
                copied_from[:12],
            )
        return str(store_id)

    @staticmethod
    def _layout(conn: Any) -> int:
        exists = conn.execute("SELECT to_regclass('scratch_meta') IS NOT NULL").fetchone()[0]
        if not exists:
            return 0
        row = conn.execute("SELECT value FROM scratch_meta WHERE name = 'layout_version'").fetchone()
        return int(row[0]) if row else 0

    @contextmanager
    def _tx(self, agent_id: str | None) -> Iterator[_PgTx]:
        try:
            conn = self._getconn()
            try:
                with conn, self._deadline(conn):  # (a pooled connection's exit does not close it)
                    if self._clock_due():  # once a minute (or after the local clock jumped): one SELECT
                        self._measure_clock(conn)
                    with conn.transaction():
                        if agent_id is not None:  # SET LOCAL: ends with this transaction
                            conn.execute("SELECT set_config('scratchpad.agent_id', %s, true)", [agent_id])
                        yield _PgTx(conn)
            finally:
                self._pool.putconn(conn)
        except self._errors as exc:  # the database's and the pool's: one wrapping
            raise self._wrap(exc) from exc

    # -- engine-specific statements ----------------------------------------------------------

    def _run_owner(self, tx: Tx, run_id: str) -> str | None:
        row = tx.execute("SELECT scratchpad_run_owner(?)", [run_id]).fetchone()
        return row[0] if row else None

    def _insert(self, tx: Tx, row: Any, dedupe: bool) -> Row | None:
        """A unique constraint on the content hash of automatic spills (and the primary key):
        the loser of a race between processes gets the winner's row, and stores nothing."""
        run_id, agent_id, key, content_hash = row[0], row[1], row[3], row[14]
        # an expired row not swept yet is gone for every read: it was revived here (same handle,
        # the new tool's name on it) where the embedded store makes a new entry; it goes first
        # (its body is an orphan for the sweep)
        tx.execute(
            "DELETE FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = 'handle' "
            "AND (key = ? OR dedupe_hash = ?) AND expires_at <= ?",
            [run_id, agent_id, key, content_hash, row[16]],
        )
        inserted = tx.execute(
            f"INSERT INTO scratch_entries ({COLUMNS}, dedupe_hash) VALUES ({', '.join('?' * 19)}) "
            "ON CONFLICT DO NOTHING RETURNING key",
            [*row, content_hash if dedupe else None],
        ).fetchone()
        if inserted is not None:
            return None
        winner = tx.execute(
            f"SELECT {COLUMNS} FROM scratch_entries WHERE run_id = ? AND agent_id = ? AND kind = 'handle' "
            "AND (key = ? OR dedupe_hash = ?) ORDER BY created_at LIMIT 1",
            [run_id, agent_id, key, content_hash],
        ).fetchone()
        if winner is None or winner[14] != content_hash:
            raise written_concurrently(key)
        return tuple(winner)

    def sweep_expired(self, now: float) -> tuple[int, list[str]] | None:
        with self._tx(None) as tx:
            got = tx.execute("SELECT pg_try_advisory_xact_lock(?)", [_SWEEP_LOCK]).fetchone()
            if not got[0]:
                return None
            gone = tx.execute("SELECT body_id FROM scratchpad_sweep(?)", [now]).fetchall()
        return len(gone), [r[0] for r in gone if r[0]]

    def referenced_bodies(self) -> set[str]:
        with self._tx(None) as tx:
            return {r[0] for r in tx.execute("SELECT scratchpad_body_ids()").fetchall()}

    def close(self) -> None:
        self._pool.close()
