"""Reads for a person: whole results as DataFrames, nothing charged to an agent's budget.

The budget models what a *model* may read into its context. A person in a notebook reading
their own data is not rationed: ``sql_df`` returns every row of a query (up to a size that
needs saying so) and ``dataframe`` the array at a path, both as pandas DataFrames. They run
in the same sandbox as the ``sql`` tool and read the same parsed values as the JSON tools.

>>> df = pad.sql_df("SELECT count(*) AS n FROM h")            # doctest: +SKIP
>>> pods = pad.dataframe("k8s_list_pods_3f2a9c1b0d4e", "items")  # doctest: +SKIP

pandas is imported only when one of these is called.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import InvalidArgumentError
from .explore._base import ToolContext, ToolError
from .tools import UNCHARGED_LIMIT_TOKENS

if TYPE_CHECKING:
    from ._pad import Scratchpad

__all__ = ["SQL_DF_MAX_ROWS", "dataframe", "sql_df", "sql_relations"]

# Past this many rows a query must say how many it wants (a LIMIT, ``limit=N``) or that it wants
# them all (``max_rows=None``): a million rows is a DataFrame of a few hundred MB, not an accident.
SQL_DF_MAX_ROWS = 1_000_000
_FETCH_VECTORS = 64  # rows per fetch: 64 DuckDB vectors of 2,048


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise InvalidArgumentError("DataFrames need pandas: pip install 'jupyter-scratchpad[jupyter]'") from None
    return pandas


def _as_error(exc: ToolError) -> InvalidArgumentError:
    return InvalidArgumentError(exc.message, code=exc.code, suggestions=exc.suggestions, **exc.fields)


T = TypeVar("T")
INTERRUPT_WAIT_S = 10.0  # for a query to stop once interrupted (then the caller gets control back)


class QueryTimeout(InvalidArgumentError):
    """A person's query stopped at the time limit it was given (``sql_df(time_limit_s=…)``)."""


def _interruptible(conn: Any, work: Callable[[], T], time_limit_s: float | None = None) -> T:
    """``work()`` (a query on ``conn``) in a thread while this one waits in Python, so Ctrl-C
    (the kernel's interrupt) reaches it at once and stops the query (``conn.interrupt()``).

    Run in the calling thread, a SIGINT was seen only when DuckDB polled for it, and it lost
    some: in 2 of 4 runs a query over range(1e14) ran on through a Ctrl-C every half second.
    Off the main thread (no signal arrives there) the work runs where it is. ``time_limit_s``:
    the query is interrupted then, and ``QueryTimeout`` raised (the explorer's queries run in a
    comm handler, where the kernel's Interrupt never arrives: a slow one held the kernel for minutes).
    """
    if time_limit_s is None:
        return _interruptible_now(conn, work)
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        conn.interrupt()

    timer = threading.Timer(time_limit_s, stop)
    timer.daemon = True
    timer.start()
    try:
        return _interruptible_now(conn, work)
    except BaseException:
        if fired.is_set():
            raise QueryTimeout(
                f"the query ran longer than {time_limit_s:g} s and was stopped",
                code="timeout",
                time_limit_s=time_limit_s,
            ) from None
        raise
    finally:
        timer.cancel()


def _interruptible_now(conn: Any, work: Callable[[], T]) -> T:
    if threading.current_thread() is not threading.main_thread():
        return work()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # (re-raised in the caller's thread)
            box["error"] = exc

    worker = threading.Thread(target=target, name="scratch-person-sql", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        conn.interrupt()
        deadline = time.monotonic() + INTERRUPT_WAIT_S
        while worker.is_alive() and time.monotonic() < deadline:
            with contextlib.suppress(KeyboardInterrupt):  # (Ctrl-C pressed again while it stops)
                worker.join(0.05)
        raise KeyboardInterrupt from None
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _check_rows(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InvalidArgumentError(f"{name} must be a non-negative integer or None, not {value!r}")


def sql_df(
    pad: Scratchpad,
    query: str,
    limit: int | None = None,
    *,
    params: Mapping[str, Any] | Sequence[Any] | None = None,
    max_rows: int | None = SQL_DF_MAX_ROWS,
    time_limit_s: float | None = None,
) -> Any:
    """Every row of ``query`` (DuckDB SQL over the pad's handles) as a pandas DataFrame.

    ``limit`` keeps the first N rows (``df.attrs["truncated"]`` says whether there were more);
    without it, a result of more than ``max_rows`` rows is refused with what to do instead
    (``max_rows=None``: no bound at all). ``params`` are bound as DuckDB parameters (``$name``
    with a mapping, ``?`` with a sequence), never pasted into the text. Nothing is charged.
    ``time_limit_s``: the query is stopped then (``QueryTimeout``); none by default (Ctrl-C stops it).
    """
    import duckdb

    from .explore import _sql

    if not isinstance(query, str) or not query.strip():
        raise InvalidArgumentError("query must be a non-empty SQL string")
    _check_rows("limit", limit)
    _check_rows("max_rows", max_rows)
    pd = _pandas()
    ctx = ToolContext(pad, "sql", UNCHARGED_LIMIT_TOKENS)
    # only the handles the query names are loaded: a first query of a small handle never waits
    # for a gigabyte one beside it to be loaded into DuckDB tables
    live = pad.store.entries(pad.scope, "handle")
    entries = _sql.named_entries(ctx, query, live)
    every, relations = _sql.relations_to_show(ctx, [e.key for e in entries], live)
    try:
        _sql.check_read_only(query)  # the person's SQL is read-only too: the store is not theirs to edit
    except ToolError as exc:
        raise InvalidArgumentError(exc.message, code=exc.code, relations=relations) from None
    try:
        conn, unreadable = _sql._connect(ctx, entries, query)
    except duckdb.Error as exc:
        raise InvalidArgumentError(f"could not prepare the relations: {exc}", relations=relations) from None
    def run() -> tuple[Any, bool]:
        cursor = conn.execute(query, params) if params is not None else conn.execute(query)
        if not cursor.description:
            return pd.DataFrame(), False
        return _fetch(pd, cursor, limit if limit is not None else max_rows)

    try:
        frame, more = _interruptible(conn, run, time_limit_s)
    except duckdb.Error as exc:
        raise _query_error(exc, query, every, relations, ctx, unreadable) from None
    except RuntimeError as exc:  # Ctrl-C: DuckDB's "Query interrupted" is an interrupt, not a bug of ours
        if "interrupted" in str(exc).lower():
            raise KeyboardInterrupt from None
        raise
    finally:
        with contextlib.suppress(duckdb.Error):  # (still busy: a query that did not stop in time)
            conn.close()
    if more and limit is None:
        raise InvalidArgumentError(
            f"the query returns more than {max_rows:,} rows; ask for fewer (a LIMIT, or limit=N) or "
            "for all of them (max_rows=None)",
            rows_over=max_rows,
        )
    frame.attrs.update({"rows": len(frame), "truncated": more, "limit": limit})
    return frame


def _query_error(
    exc: Exception, query: str, every: list[str], relations: list[str], ctx: Any, unreadable: list[str]
) -> InvalidArgumentError:
    """A failed query as the ``sql`` tool words it: what went wrong, the relations, a next step
    (the same query over the relation meant, when it named one that is not there; the JSON tools,
    for a handle DuckDB cannot read)."""
    from .explore import _sql
    from .explore._base import suggestion

    kind = _sql._error_kind(exc)
    message = _sql.error_text(str(exc))
    fixed = None
    if kind == "sql_forbidden":
        message = f"{_sql.SANDBOX_RULES} ({message})"
    elif unreadable:  # its view is left out: "does not exist", and DESCRIBE of it fails alike
        message = f"{', '.join(unreadable)}: DuckDB cannot read this handle; use the JSON and text tools on it"
        instead = [s for handle in unreadable[:2] for s in _sql._instead_of_sql(ctx, handle)]
        return InvalidArgumentError(message, code=kind, relations=relations, suggestions=instead)
    elif kind == "sql_error":
        try:  # a handle that expired: said as the tools say it ("expired 4 s ago … spill it again")
            _sql._raise_if_expired(ctx, query, message)
        except ToolError as gone:
            return InvalidArgumentError(
                gone.message, code=gone.code, relations=relations, suggestions=gone.suggestions, **gone.fields
            )
        message, fixed = _sql.missing_relation(query, message, every, relations)
    read = _sql._relation_read(query, every) or relations[0]
    suggestions = [suggestion("sql", "list the columns of a relation", query=f"DESCRIBE {read}")]
    if fixed is not None:
        suggestions.insert(0, fixed)
    return InvalidArgumentError(message, code=kind, relations=relations, suggestions=suggestions)


def _fetch(pd: Any, cursor: Any, cap: int | None) -> tuple[Any, bool]:
    """``(DataFrame of at most cap rows, whether more rows exist)``; ``cap`` None: all rows."""
    if cap is None:
        return cursor.df(), False
    chunks: list[Any] = []
    count = 0
    while count <= cap:
        chunk = cursor.fetch_df_chunk(_FETCH_VECTORS)
        if len(chunk) == 0:
            if not chunks:
                chunks.append(chunk)  # keeps the columns of an empty result
            break
        chunks.append(chunk)
        count += len(chunk)
    frame = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
    more = len(frame) > cap
    return (frame.iloc[:cap].reset_index(drop=True) if more else frame), more


def dataframe(pad: Scratchpad, handle: str, path: str = "$") -> Any:
    """The array at ``path`` of a JSON/JSONL handle as a DataFrame (nested objects flattened).

    Objects become one row each, their nested keys dotted columns (``metadata.name``); an
    array of scalars is one ``value`` column. A text or markdown handle (only at ``$``) is its
    lines: ``line_no`` and ``line``. Nothing is charged.
    """
    from .explore import _json

    pd = _pandas()
    entry = pad.entry(handle)
    ctx = ToolContext(pad, "dataframe", UNCHARGED_LIMIT_TOKENS)
    if entry.format not in ("json", "jsonl"):
        if path not in ("", "$"):
            raise InvalidArgumentError(f"{handle} is {entry.format}, not JSON: it has no path {path!r}")
        lines = ctx.reader(entry).read_lines(1, entry.line_count or 0) if entry.line_count else []
        return pd.DataFrame({"line_no": range(1, len(lines) + 1), "line": lines})
    from .explore._segments import SegmentedItems

    try:
        items = _json._items_at(ctx, entry, path or "$")
    except ToolError as exc:
        raise _as_error(exc) from None
    if isinstance(items, SegmentedItems):  # a streamed array: a segment at a time, never the whole document
        frames = []
        for part in items.each_segment():
            if not all(isinstance(item, dict) for item in part):
                break
            frames.append(pd.json_normalize(part))
        else:
            # (a column all None in one segment is object there: the types are inferred over the whole)
            return pd.concat(frames, ignore_index=True, sort=False).infer_objects() if frames else pd.DataFrame()
        items = list(items)
    if items and all(isinstance(item, dict) for item in items):
        return pd.json_normalize(items)
    return pd.DataFrame({"value": items})


def sql_relations(pad: Scratchpad) -> list[dict[str, Any]]:
    """What a query can read: ``{"name", "format", "source_tool"}`` per relation, notes last."""
    from .explore import _sql

    return _sql.relation_names(ToolContext(pad, "sql", UNCHARGED_LIMIT_TOKENS))
