"""Agent SQL runs in a worker process with a hard memory ceiling, killed when it runs too long.

DuckDB's ``memory_limit`` governs its buffer manager, not every allocation: one query that
builds a few hundred 100 MB strings can take gigabytes before any size check in Python sees a
row. So the query runs in a child process whose address space is capped (``RLIMIT_AS``): an
allocation past it fails inside DuckDB as an ``OutOfMemoryException`` and the child lives on; a
query past its time limit is stopped by killing the child (a new one starts on the next call).
The kernel or agent process never holds more than the clipped rows it shows.

The worker is this module run as ``python -m jupyter_scratchpad.explore._sqlworker``; it reads
jobs from stdin and writes replies to stdout as length-prefixed pickles (a private pipe between
two processes of ours; nothing else speaks this protocol). It keeps a cache of inferred JSON
columns across jobs, so a handle's columns are inferred once per worker.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import decimal
import hashlib
import os
import pickle
import re
import struct
import subprocess
import sys
import threading
import time
import uuid
from typing import IO, Any

__all__ = ["SqlBusy", "SqlTimeout", "SqlWorkerError", "interrupt", "run_job", "shutdown"]

ADDRESS_SPACE_BYTES = 3 << 30  # the worker's whole address space, DuckDB included
# A worker whose address space passed this after a job is replaced by a fresh one. Its memory
# allocators keep the address space a job freed (resident memory goes back, the mappings stay):
# after a few dozen jobs a worker held ~2.9 of its 3 GiB with 140 MB resident, and the next load
# of a 57 MB handle failed (bad_alloc), leaving a readable handle "unreadable".
RETIRE_VM_BYTES = ADDRESS_SPACE_BYTES * 2 // 3
DUCKDB_MEMORY_LIMIT = "1GB"
CELL_CHARS = 200  # a cell longer than this is clipped, in the text and in the data alike
RESULT_MAX_BYTES = 4 << 20  # clipped rows past this are not fetched (far above any token cap)
# A result cut at max_rows is counted (count(*) over the query, on the same locked-down connection)
# for as long as the query itself took (at least COUNT_MIN_S, at most COUNT_MAX_S), never past the
# call's time less COUNT_MARGIN_S: a count stopped there says only "more than" the rows fetched.
# Results that fit are never counted.
COUNT_MIN_S = 0.25
COUNT_MAX_S = 1.0
COUNT_MARGIN_S = 0.5
TYPES_MAX_CHARS = 256 << 10  # of the relations' column types sent with a Binder error
_FRAME = struct.Struct("<Q")


class SqlTimeout(Exception):
    """The query ran past its time limit; the worker was killed."""


class SqlBusy(Exception):
    """Another query of this process held the worker for the whole time limit: this one never ran."""


class SqlWorkerError(Exception):
    """The worker died (or could not start) without answering."""


# -- the parent side ------------------------------------------------------------------------


def _send(stream: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_FRAME.pack(len(data)) + data)
    stream.flush()


def _recv(stream: IO[bytes]) -> Any:
    head = stream.read(_FRAME.size)
    if len(head) < _FRAME.size:
        raise EOFError("the SQL worker closed its pipe")
    (size,) = _FRAME.unpack(head)
    if size > 1 << 30:
        raise EOFError("a garbled reply from the SQL worker")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the SQL worker closed its pipe mid-reply")
    return pickle.loads(data)


class _Worker:
    def __init__(self) -> None:
        self.proc = _spawn()
        self.reply: Any = None
        self.failure: BaseException | None = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):  # a kill is not refused
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


def _popen(bound: bool) -> subprocess.Popen[bytes]:
    """The worker process; ``bound``: it is started by a thread that lives as long as this
    process, so the worker may ask the kernel to kill it when that thread ends (PDEATHSIG)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_scratchpad.explore._sqlworker",
            str(ADDRESS_SPACE_BYTES),
            str(RETIRE_VM_BYTES),
            str(os.getpid()),  # the parent it watches: it exits once that process is gone
            "1" if bound else "0",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        close_fds=True,
    )


# Linux sends PDEATHSIG when the *thread* that forked the child ends, not the process: a worker
# forked from a thread pool's thread (anyio's end after 10 s idle) would be killed under a live
# parent. So workers are forked by one daemon thread that never ends (it ends with the process).
_SPAWN_LOCK = threading.Lock()
_SPAWN_JOBS: Any = None  # queue.SimpleQueue of (threading.Event, list) once the spawner runs
_SPAWN_PID = 0  # the process that spawner runs in (a forked child has no such thread)


def _spawner(jobs: Any) -> None:  # pragma: no cover - a daemon thread
    while True:
        done, box = jobs.get()
        try:
            box.append(_popen(bound=True))
        except BaseException as exc:
            box.append(exc)
        done.set()


def _spawn() -> subprocess.Popen[bytes]:
    global _SPAWN_JOBS, _SPAWN_PID
    import queue

    try:
        with _SPAWN_LOCK:
            if _SPAWN_JOBS is None or os.getpid() != _SPAWN_PID:
                jobs: Any = queue.SimpleQueue()
                threading.Thread(target=_spawner, args=(jobs,), name="scratch-sql-spawner", daemon=True).start()
                _SPAWN_JOBS, _SPAWN_PID = jobs, os.getpid()
    except RuntimeError:  # no new thread (the interpreter is exiting): the watchdog alone binds it
        return _popen(bound=False)
    done = threading.Event()
    box: list[Any] = []
    _SPAWN_JOBS.put((done, box))
    done.wait()
    if isinstance(box[0], BaseException):
        raise box[0]
    proc: subprocess.Popen[bytes] = box[0]
    return proc


_LOCK = threading.Lock()
_WORKER: _Worker | None = None
_RUNNING: int | None = None  # the thread whose job the worker runs (held with _LOCK)


def interrupt(thread_ident: int) -> bool:
    """Stop the job the thread ``thread_ident`` is running, if it is running one: its worker is
    ended (that call then fails at once) and the next job starts a fresh one. For a caller that
    gave up on the call (an MCP client's cancellation): the query would otherwise run on to its
    time limit, and every other query of the process wait behind it."""
    worker = _WORKER
    if worker is None or thread_ident != _RUNNING:
        return False
    worker.kill()
    return True


def run_job(job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run ``job`` in the worker; its reply, ``SqlTimeout`` (the worker is then killed), or
    ``SqlBusy`` when another query held the worker all that time (this one never ran)."""
    global _WORKER, _RUNNING
    deadline = time.monotonic() + max(0.0, timeout_s)
    if not _LOCK.acquire(timeout=max(0.0, timeout_s)):
        raise SqlBusy(f"another SQL query of this process held the worker for {timeout_s:.1f} s")
    _RUNNING = threading.get_ident()
    try:
        if _WORKER is None or not _WORKER.alive():
            if _WORKER is not None:
                _WORKER.kill()  # a worker that died: reap it and close its pipes
            _WORKER = _Worker()
            _register_exit()
        worker = _WORKER
        assert worker.proc.stdin is not None and worker.proc.stdout is not None
        out, inp = worker.proc.stdin, worker.proc.stdout

        # (the worker bounds what it adds to a query, a count of its rows, by the time left)
        sent = {**job, "time_left_s": max(0.0, deadline - time.monotonic())}

        def exchange() -> None:
            try:
                _send(out, sent)
                worker.reply = _recv(inp)
            except BaseException as exc:
                worker.failure = exc

        worker.reply, worker.failure = None, None
        thread = threading.Thread(target=exchange, name="scratch-sql", daemon=True)
        thread.start()
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            worker.kill()
            thread.join(5)
            _WORKER = None
            raise SqlTimeout(f"the query ran longer than {timeout_s:.1f} s")
        if worker.failure is not None or worker.reply is None:
            code = worker.proc.poll()
            worker.kill()
            _WORKER = None
            raise SqlWorkerError(f"the SQL worker stopped (exit code {code}): {worker.failure}")
        reply: dict[str, Any] = worker.reply
        if reply.pop("retire", False):  # it is exiting: a fresh one, starting while the caller reads this
            worker.kill()
            _WORKER = _Worker()
        return reply
    finally:
        _RUNNING = None
        _LOCK.release()


_EXIT_REGISTERED = False


def _register_exit() -> None:
    global _EXIT_REGISTERED
    if not _EXIT_REGISTERED:
        import atexit

        atexit.register(shutdown)
        _EXIT_REGISTERED = True


def shutdown() -> None:
    """Stop the worker (it also ends with this process: its stdin closes)."""
    global _WORKER
    with _LOCK:
        if _WORKER is not None:
            _WORKER.kill()
            _WORKER = None


# -- the worker side ------------------------------------------------------------------------


def _clip(value: Any, roots: tuple[str, ...] = ()) -> Any:
    """A cell as the agent sees it: plain JSON types, and at most ``CELL_CHARS`` of text, host
    paths under ``roots`` redacted first (a path cut by the clip no longer matches whole)."""
    import json

    if roots:
        value = _redacted(value, roots)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return str(value) if len(str(value)) > 17 else float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)[: CELL_CHARS * 4].decode("utf-8", errors="replace")
    if isinstance(value, str):
        return value if len(value) <= CELL_CHARS else value[: CELL_CHARS - 1] + "…"
    plain = _plain(value)
    text = json.dumps(plain, ensure_ascii=False, default=str)
    return plain if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


# Python's date and time types cannot hold what DuckDB's can: 'infinity'::date came back as
# 9999-12-31, an interval of '1 month' as 30 days, a TIMESTAMP_NS without its nanoseconds
_TEMPORAL = ("DATE", "INTERVAL", "TIMESTAMP")
_TRAILING_SEMICOLON = re.compile(r";(?:\s|--[^\n]*|/\*.*?\*/)*\Z", re.DOTALL)


def _exact_temporal(conn: Any, query: str, cursor: Any, description: list[Any]) -> tuple[Any, set[int]]:
    """``(cursor, columns_as_json)``: a result with a date, timestamp or interval column (or one
    nested in a list or struct) is run again with those columns as DuckDB's own text (nested
    ones as its JSON, parsed back); any other result is the cursor as it was."""
    import duckdb

    from ._sqlviews import quote_ident

    types = [str(d[1]) for d in description]
    if not any(word in t for t in types for word in _TEMPORAL):
        return cursor, set()
    exprs, as_json = [], set()
    for n, (d, t) in enumerate(zip(description, types, strict=True)):
        name = quote_ident(str(d[0]))
        if not any(word in t for word in _TEMPORAL):
            exprs.append(f"#{n + 1} AS {name}")
        elif t.startswith(_TEMPORAL) and not t.endswith("]"):
            exprs.append(f"CAST(#{n + 1} AS VARCHAR) AS {name}")
        else:
            exprs.append(f"CAST(to_json(#{n + 1}) AS VARCHAR) AS {name}")
            as_json.add(n)
    body = _TRAILING_SEMICOLON.sub("", query)  # (inside the parentheses it is a syntax error)
    try:
        return conn.execute(f"SELECT {', '.join(exprs)} FROM (\n{body}\n)"), as_json
    except duckdb.Error:  # a statement that is no subquery: as DuckDB's Python types give it
        return conn.execute(query), set()


def _json_cell(value: Any) -> Any:
    import json

    try:
        return value if value is None else json.loads(value)
    except ValueError:
        return value


def _redacted(value: Any, roots: tuple[str, ...], depth: int = 0) -> Any:
    from .._bounded import redact_paths

    if isinstance(value, str):
        return redact_paths(value, roots) if any(r in value for r in roots) else value
    if depth > 32:
        return value
    if isinstance(value, dict):
        return {k: _redacted(v, roots, depth + 1) for k, v in list(value.items())[:64]}
    if isinstance(value, (list, tuple)):
        return [_redacted(v, roots, depth + 1) for v in list(value)[:64]]
    return value


def _plain(value: Any, depth: int = 0) -> Any:
    if depth > 32:
        return "…"
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in list(value.items())[:64]}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in list(value)[:64]]
    if isinstance(value, str):
        return value[:CELL_CHARS]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)[:CELL_CHARS]


def _size(row: list[Any]) -> int:
    return sum(len(v) if isinstance(v, str) else 16 for v in row) + 8


def _connect() -> Any:
    """A fresh in-memory DuckDB for one job (never reused: each job's sandbox is its own)."""
    import duckdb

    return duckdb.connect(
        ":memory:",
        config={
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
            "memory_limit": DUCKDB_MEMORY_LIMIT,
            "threads": "2",
            "temp_directory": "",
        },
    )


def _execute(
    job: dict[str, Any],
    inferred: dict[str, Any],
    conn: Any = None,
    close: bool = True,
    prepared: list[str] | None = None,
) -> dict[str, Any]:
    """Run one job on ``conn`` (a fresh, unused connection; made here when not given); closes it
    unless ``close`` is False (the caller closes it after replying). ``prepared``: ``conn`` already
    holds this job's relations and notes, locked down (the previous job's connection, reused for
    a job that names the same relations and notes); its value is the handles left unreadable."""
    import duckdb

    from ._sqlviews import TablesLoading, build_views, unreadable_reason

    # a handle's tables are loaded on a thread of this process, waited for until this deadline
    # (leaving the query the rest of the job's time); past it the job answers sql_loading
    wait = job.get("build_wait_s")
    received = time.monotonic()
    deadline = None if wait is None else received + float(wait)
    if conn is None:
        conn = _connect()
    try:
        if prepared is None:
            try:
                failed, fresh = build_views(conn, job["relations"], job["notes"], inferred, deadline)
            except TablesLoading as exc:
                return {"error": "sql_loading", "message": f"still loading {exc}", "loading": exc.loading}
            except duckdb.Error as exc:
                return {"error": "sql_error", "message": f"could not prepare the relations: {exc}".split("\n")[0]}
        else:
            failed, fresh = prepared, []
        why = {r["name"]: unreadable_reason(r) for r in job["relations"] if r["name"] in failed}
        info = {"unreadable": failed, "inferred_now": fresh, "unreadable_why": why}
        try:
            started = time.monotonic()
            cursor = conn.execute(job["query"])
            description = cursor.description
            if not description:
                return {"columns": [], "rows": [], "truncated": False, **info}
            columns = [str(d[0]) for d in description]
            if columns == ["explain_key", "explain_value"]:  # a plan: a row per line (one cell was clipped)
                return {**_plan_rows(cursor.fetchall(), job["max_rows"], _roots(job)), **info}
            cursor, as_json = _exact_temporal(conn, job["query"], cursor, description)
            rows: list[list[Any]] = []
            size = 0
            truncated = False
            want = job["max_rows"] + 1
            roots = _roots(job)
            while len(rows) < want:
                batch = cursor.fetchmany(min(256, want - len(rows)))
                if not batch:
                    break
                for raw in batch:
                    row = [_clip(_json_cell(v) if n in as_json else v, roots) for n, v in enumerate(raw)]
                    size += _size(row)
                    rows.append(row)
                if size > RESULT_MAX_BYTES:
                    truncated = True
                    break
            if len(rows) > job["max_rows"]:
                rows, truncated = rows[: job["max_rows"]], True
            total = None
            if truncated and "time_left_s" in job:
                now = time.monotonic()
                spend = min(COUNT_MAX_S, max(COUNT_MIN_S, now - started))  # (never doubling a slow query)
                until = min(now + spend, received + float(job["time_left_s"]) - COUNT_MARGIN_S)
                total = _count_rows(conn, job["query"], until)
            return {"columns": columns, "rows": rows, "truncated": truncated, "total_rows": total, **info}
        except duckdb.Error as exc:
            # (the query writes the message: error(repeat('x', 1e8)) added 300 MB to the caller)
            said = str(exc)
            message = said if len(said) <= MESSAGE_CHARS else said[:MESSAGE_CHARS] + "…"
            kind = _kind(exc)
            if kind == "sql_error" and said.startswith("Binder Error"):  # (which relation has the name)
                info["types"] = _column_types(conn)
            return {"error": kind, "message": message, "exception": type(exc).__name__, **info}
    finally:
        if close:
            conn.close()


FILE_REMOVED = "a file of a handle this query reads was removed while it was being read"
MESSAGE_CHARS = 4_000  # of an error's message sent back (the caller reads no more: _sql.error_text)


def _count_rows(conn: Any, query: str, until: float) -> int | None:
    """How many rows ``query`` returns: ``count(*)`` over it on ``conn`` (the job's own sandbox),
    stopped (``conn.interrupt()``) at ``until``; None when it was stopped, failed, or no time was
    left. DuckDB reads only the columns the count needs (a projection's cells are not built)."""
    import duckdb

    left = until - time.monotonic()
    if left <= 0.05:
        return None
    body = _TRAILING_SEMICOLON.sub("", query)  # (inside the parentheses it is a syntax error)
    timer = threading.Timer(left, conn.interrupt)
    timer.start()
    try:
        row = conn.execute(f"SELECT count(*) FROM (\n{body}\n)").fetchone()
    except (duckdb.Error, MemoryError):  # stopped, out of memory, or no subquery (SHOW, say)
        return None
    finally:
        timer.cancel()
        timer.join()
    return int(row[0]) if row and isinstance(row[0], int) else None


def _column_types(conn: Any) -> dict[str, list[list[str]]]:
    """The columns of the job's relations (``h``, ``h.items``, ``h.rows``) and their DuckDB types,
    for an error that names a column or key not there; at most ``TYPES_MAX_CHARS`` of types."""
    import duckdb

    try:
        found = conn.execute(
            "SELECT schema_name, table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE database_name = current_database() ORDER BY schema_name, table_name, column_index"
        ).fetchall()
    except duckdb.Error:
        return {}
    out: dict[str, list[list[str]]] = {}
    left = TYPES_MAX_CHARS
    for schema, table, column, kind in found:
        relation = str(table) if schema == "main" else f"{schema}.{table}"
        left -= len(str(column)) + len(str(kind))
        if left < 0:
            break
        out.setdefault(relation, []).append([str(column), str(kind)])
    return out


def _roots(job: dict[str, Any]) -> tuple[str, ...]:
    """The host paths a reply must not show (the store's, the home directory)."""
    return tuple(str(r) for r in job.get("redact") or () if str(r) not in ("", "/"))


def _plan_rows(fetched: list[tuple[Any, ...]], max_rows: int, roots: tuple[str, ...] = ()) -> dict[str, Any]:
    """EXPLAIN's ``(explain_key, explain_value)`` rows as one row per line of each plan, host
    paths redacted before a line is clipped (a long store path was cut, then no longer matched)."""
    plans = [str(value) for _key, value in fetched]
    lines = [[_clip(line.rstrip(), roots)] for plan in plans for line in plan.splitlines() if line.strip()]
    return {"columns": ["plan"], "rows": lines[:max_rows], "truncated": len(lines) > max_rows}


def _kind(exc: Exception) -> str:
    import duckdb

    if isinstance(exc, duckdb.PermissionException):
        return "sql_forbidden"
    if isinstance(exc, duckdb.OutOfMemoryException):
        return "sql_out_of_memory"
    if isinstance(exc, duckdb.InterruptException):
        return "sql_timeout"
    return "sql_error"


def _vm_bytes() -> int:
    """This process's address space (``VmSize``); 0 where ``/proc`` does not say."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _serve(limit: int, retire: int = 0) -> None:  # pragma: no cover - runs in the worker (tested through it)
    from ._sqlviews import building

    try:
        import resource
    except ImportError:  # Windows: no address-space limit (DuckDB's memory_limit still applies)
        resource = None  # type: ignore[assignment]
    if limit > 0 and resource is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # The replies get a descriptor of their own; fd 1 then points at stderr, so nothing else (a
    # print, or a C library writing to stdout) can ever write into the reply pipe.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    inp = sys.stdin.buffer
    inferred: dict[str, Any] = {}
    # Opening an in-memory DuckDB costs ~25 ms and closing one ~5 ms: the next job's connection is
    # opened, and the last one closed, while the worker waits for a job, not while a caller waits.
    spare: Any = None
    # A job of the same scope (run and agent) that names exactly the relations and notes of the
    # job before it runs on that job's connection: its views are the same, it is locked down, and
    # a read-only statement (all the parent sends) cannot change it. DuckDB's buffers stay warm:
    # a group-by over 352,000 rows took 30 ms right after ATTACH and 16 ms on the second run.
    kept: tuple[bytes, Any, list[str]] | None = None
    while True:
        if spare is None:
            with contextlib.suppress(Exception):
                spare = _connect()
        try:
            job = _recv(inp)
        except EOFError:
            return
        key = _reuse_key(job)
        if kept is not None and kept[0] == key:
            conn, prepared = kept[1], kept[2]
        else:
            if kept is not None:  # closed first: its buffers count against the address-space cap
                with contextlib.suppress(Exception):
                    kept[1].close()
            conn, spare, prepared = spare, None, None
        kept = None
        try:
            reply = _execute(job, inferred, conn, close=False, prepared=prepared)
        except MemoryError:
            reply = {"error": "sql_out_of_memory", "message": "the query needed more memory than the sandbox has"}
        except FileNotFoundError:  # a handle's file, removed while the job read it (not errno text, not a path)
            reply = {"error": "sql_error", "message": FILE_REMOVED, "file_removed": True}
        except Exception as exc:
            reply = {"error": "sql_error", "message": f"{type(exc).__name__}: {exc}"}
        # past the retire mark (and with no table load running): this job is its last
        last = retire > 0 and _vm_bytes() > retire and not building()
        if last:
            reply["retire"] = True
        _send(out, reply)
        if last:
            return
        # after the reply: the caller is not waiting for this
        if conn is not None and key is not None and "error" not in reply:
            kept = (key, conn, list(reply.get("unreadable") or []))
        elif conn is not None:
            with contextlib.suppress(Exception):
                conn.close()


def _reuse_key(job: dict[str, Any]) -> bytes | None:
    """What a connection holds for ``job``: its relations (body ids, paths), notes rows and scope
    (run and agent). A connection is kept for the next job of the same scope only: were anything
    ever to change one (a WITH … AS (INSERT …) once did), no other run or agent would read it."""
    try:
        held = pickle.dumps((job.get("scope"), job["relations"], job["notes"]), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return None
    # (its digest is kept, not the bytes: with the notes' values in it, a copy of every note
    # stayed in the worker beside the connection that holds them)
    return hashlib.sha256(held).digest()


PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_S = 0.25


def _die_with_parent(parent: int, bound: bool) -> None:  # pragma: no cover - runs in the worker
    """End this worker when the process ``parent`` that started it ends. Its time limit is kept by
    the parent killing it: a parent killed mid-query (an MCP client's SIGTERM or SIGKILL) left it
    spinning, reparented to PID 1, until DuckDB ran out of memory. On Linux the kernel sends
    SIGKILL (``bound``: the forking thread lives as long as the parent); everywhere a thread
    watches the parent pid (it needs the GIL, which a running query may hold)."""
    if bound and sys.platform.startswith("linux"):
        import ctypes
        import signal

        with contextlib.suppress(Exception):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # it died before the prctl (or while this module loaded)
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(PARENT_POLL_S)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="scratch-sql-parent", daemon=True).start()


if __name__ == "__main__":  # pragma: no cover
    if len(sys.argv) > 3:
        _die_with_parent(int(sys.argv[3]), len(sys.argv) > 4 and sys.argv[4] == "1")
    _serve(
        int(sys.argv[1]) if len(sys.argv) > 1 else ADDRESS_SPACE_BYTES,
        int(sys.argv[2]) if len(sys.argv) > 2 else RETIRE_VM_BYTES,
    )
