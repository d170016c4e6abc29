"""SQL over spills, in a sandbox.

Each call gets a fresh in-memory DuckDB connection that knows nothing but the caller's live
handles: a JSON or JSONL handle is a view over ``read_json`` of its body (every record read for
schema inference, so a key that first appears in the last record is still a column), a text or
markdown handle is a view of ``(line_no, line)``, and ``scratch_notes`` holds the caller's notes.
Then, before the query runs, DuckDB itself is locked down: ``allowed_paths`` names exactly those
bodies, ``enable_external_access = false`` shuts out every other file, URL, ATTACH, COPY and
extension, and ``lock_configuration = true`` stops the query from undoing any of it. The catalog
database is never attached, so no other run's or agent's rows exist in there to be found.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import threading
import uuid
from pathlib import Path
from typing import Any

import duckdb

from ..store import Entry
from ._base import Output, ToolContext, ToolError, suggestion
from ._text import budget_footer

__all__ = ["SQL_MAX_ROWS", "relation_names", "sql"]

SQL_MAX_ROWS = 200
SQL_TIMEOUT_S = 30.0
SQL_MEMORY_LIMIT = "2GB"
CELL_CHARS = 200
MAX_QUERY_CHARS = 20_000


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def relation_names(ctx: ToolContext) -> list[dict[str, Any]]:
    """The relations a query of this caller can see, with their formats."""
    out = [
        {"name": e.key, "format": e.format, "source_tool": e.source_tool}
        for e in ctx.store.entries(ctx.pad.scope, "handle")
    ]
    out.append({"name": "scratch_notes", "format": "notes", "source_tool": None})
    return out


# body_id -> (path, format, columns spec) inferred once from every record: bodies never change, so
# each query then parses the file once, with no sampling pass (and no key first seen late is lost).
_INFERRED: dict[str, tuple[str, str, str]] = {}


def _max_object(nbytes: int) -> int:
    return max(16 << 20, nbytes + 1)


def _infer_columns(entry: Entry, raw: Path, body: Path) -> tuple[str, str, str] | None:
    """Read every record once (our own files, before any sandbox exists) and pin the columns."""
    if entry.format == "jsonl":
        candidates = [(raw, "newline_delimited")]
    else:
        with open(raw, "rb") as fh:
            first = fh.read(4096).lstrip()[:1]
        # the original bytes first (compact: faster to scan); the pretty body when DuckDB's parser
        # refuses something Python's accepted (NaN, say)
        candidates = [(raw, "array" if first == b"[" else "auto"), (body, "array" if first == b"[" else "auto")]
    conn = duckdb.connect(
        ":memory:", config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}
    )
    try:
        for path, fmt in candidates:
            try:
                cols = conn.execute(
                    f"DESCRIBE SELECT * FROM read_json({_quote_literal(str(path))}, format='{fmt}', "
                    f"sample_size=-1, maximum_object_size={_max_object(path.stat().st_size)})"
                ).fetchall()
            except duckdb.Error:
                continue
            if cols:
                spec = "{" + ", ".join(f"{_quote_literal(c[0])}: {_quote_literal(c[1])}" for c in cols) + "}"
                return str(path), fmt, spec
    finally:
        conn.close()
    return None


def _view_sql(ctx: ToolContext, entry: Entry) -> tuple[str, str]:
    reader = ctx.reader(entry)
    name = _quote_ident(entry.key)
    if entry.format in ("json", "jsonl"):
        assert entry.body_id is not None
        inferred = _INFERRED.get(entry.body_id)
        if inferred is None:
            inferred = _infer_columns(entry, reader.raw_path, reader.body_path)
            if inferred is not None:
                _INFERRED[entry.body_id] = inferred
                while len(_INFERRED) > 512:
                    _INFERRED.pop(next(iter(_INFERRED)), None)
        if inferred is not None:
            path, fmt, spec = inferred
            size = Path(path).stat().st_size
            source = (
                f"read_json({_quote_literal(path)}, format='{fmt}', columns={spec}, "
                f"maximum_object_size={_max_object(size)})"
            )
            return path, f"CREATE VIEW {name} AS SELECT * FROM {source}"
        path = str(reader.body_path)
        fmt = "newline_delimited" if entry.format == "jsonl" else "auto"
        size = reader.longest_line if entry.format == "jsonl" else reader.body_bytes
        source = (
            f"read_json({_quote_literal(path)}, format='{fmt}', sample_size=-1, "
            f"maximum_object_size={_max_object(size)})"
        )
        return path, f"CREATE VIEW {name} AS SELECT * FROM {source}"
    path = str(reader.body_path)
    source = (
        f"(SELECT CAST(generate_subscripts(parts, 1) AS BIGINT) AS line_no, unnest(parts) AS line FROM "
        f"(SELECT string_split(CASE WHEN suffix(content, chr(10)) THEN content[:-2] ELSE content END, "
        f"chr(10)) AS parts FROM read_text({_quote_literal(path)})))"
    )
    return path, f"CREATE VIEW {name} AS SELECT * FROM {source}"


def _connect(ctx: ToolContext, entries: list[Entry]) -> duckdb.DuckDBPyConnection:
    conn = duckdb.connect(
        ":memory:",
        config={
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
            "memory_limit": SQL_MEMORY_LIMIT,
            "threads": "2",
            "temp_directory": "",
        },
    )
    paths = []
    views = []
    for entry in entries:
        path, view = _view_sql(ctx, entry)
        paths.append(path)
        views.append(view)
    conn.execute(f"SET allowed_paths = [{', '.join(_quote_literal(p) for p in paths)}]")
    for view in views:
        conn.execute(view)
    notes = [
        (e.key, e.value_json, _dt.datetime.fromtimestamp(e.expires_at, tz=_dt.timezone.utc))
        for e in ctx.store.entries(ctx.pad.scope, "note")
    ]
    conn.execute("CREATE TABLE scratch_notes (key VARCHAR, value JSON, expires_at TIMESTAMPTZ)")
    if notes:
        conn.executemany("INSERT INTO scratch_notes VALUES (?, ?, ?)", notes)
    conn.execute("SET enable_external_access = false")
    conn.execute("SET lock_configuration = true")
    return conn


def _cell(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(k): _cell(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cell(v) for v in value]
    return value


def _show(value: Any) -> str:
    import json

    text = "NULL" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def _table(columns: list[str], rows: list[list[Any]]) -> str:
    head = "| " + " | ".join(c.replace("|", "\\|") for c in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_show(v) for v in row) + " |" for row in rows]
    return "\n".join([head, rule, *body])


def _unique(names: list[str]) -> list[str]:
    """Column names made unique (``a``, ``a_2``), so that rows as dicts lose nothing."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in seen:
            seen[name] += 1
            candidate = f"{name}_{seen[name]}"
            while candidate in seen:
                seen[name] += 1
                candidate = f"{name}_{seen[name]}"
            name = candidate
        seen.setdefault(name, 1)
        out.append(name)
    return out


def _error_kind(exc: duckdb.Error) -> str:
    if isinstance(exc, duckdb.PermissionException):
        return "sql_forbidden"
    if isinstance(exc, duckdb.InterruptException):
        return "sql_timeout"
    return "sql_error"


def sql(ctx: ToolContext, query: str, max_rows: int = SQL_MAX_ROWS) -> Output:
    if not isinstance(query, str) or not query.strip():
        raise ToolError("invalid_argument", "'query' must be a non-empty SQL string", argument="query")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError("invalid_argument", f"'query' is longer than {MAX_QUERY_CHARS:,} characters", argument="query")
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= 10_000:
        raise ToolError("invalid_argument", "'max_rows' must be an integer in 1..10000", argument="max_rows")
    entries = list(ctx.store.entries(ctx.pad.scope, "handle"))
    try:
        conn = _connect(ctx, entries)
    except duckdb.Error as exc:
        raise ToolError("sql_error", f"could not prepare the relations: {exc}") from None
    timer = threading.Timer(SQL_TIMEOUT_S, conn.interrupt)
    timer.start()
    try:
        cursor = conn.execute(query)
        description: list[Any] | None = cursor.description
        if not description:
            columns, fetched = [], []
        else:
            columns = _unique([str(d[0]) for d in description])
            fetched = cursor.fetchmany(max_rows + 1)
    except duckdb.Error as exc:
        kind = _error_kind(exc)
        names = [e.key for e in entries]
        sugg = [suggestion("sql", "list the columns of a relation", query=f"DESCRIBE {names[0]}")] if names else []
        sugg.append(suggestion("scratch_list", "see the relations (one per handle)"))
        message = str(exc).split("\n")[0]
        if kind == "sql_forbidden":
            message = (
                "this is a sandbox: only the relations named by your handles (and scratch_notes) "
                f"can be read; no files, URLs, ATTACH, COPY, extensions or settings. ({message})"
            )
        elif kind == "sql_timeout":
            message = f"the query ran longer than {SQL_TIMEOUT_S:.0f} s and was stopped; add filters or a LIMIT"
        raise ToolError(kind, message, sugg, relations=names) from None
    finally:
        timer.cancel()
        conn.close()
    truncated = len(fetched) > max_rows
    rows = [[_cell(v) for v in row] for row in fetched[:max_rows]]
    if not columns:
        return Output("(statement ran; it returns no rows)", [], budget_footer("0 rows"))
    text = _table(columns, rows)
    more = (
        f" (more rows exist: only the first {max_rows} are shown; add LIMIT/OFFSET or aggregate)" if truncated else ""
    )
    data = [dict(zip(columns, row, strict=True)) for row in rows]
    meta = {"columns": columns, "rows": len(rows), "truncated": truncated, "max_rows": max_rows}
    return Output(text, data, budget_footer(f"{len(rows):,} rows × {len(columns)} columns{more}"), meta)


def sql_suggestions(args: dict[str, Any], estimated: int, limit: int, rows: int | None) -> list[dict[str, Any]]:
    query = str(args.get("query") or "").rstrip().rstrip(";")
    fit = max(1, int((rows or SQL_MAX_ROWS) * limit * 0.8 / max(estimated, 1)))
    return [
        suggestion("sql", f"about {fit} rows fit", query=f"SELECT * FROM ({query}) AS q LIMIT {fit}"),
        suggestion("sql", "aggregate instead of listing", query=f"SELECT count(*) FROM ({query}) AS q"),
    ]
