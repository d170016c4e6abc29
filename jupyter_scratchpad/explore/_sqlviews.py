"""The relations of a SQL sandbox, and the lock-down that follows them (worker and person alike).

A JSON or JSONL handle is a view over ``read_json`` of its body with its columns inferred once
from every record (so a key first seen in the last record is still a column); a text or markdown
handle is a view of ``(line_no, line)``; ``scratch_notes`` holds the caller's notes. Then DuckDB
itself is locked: ``allowed_paths`` names exactly those bodies, ``enable_external_access =
false`` shuts out every other file, URL, ATTACH, COPY and extension, and ``lock_configuration``
stops the query from undoing any of it. Statements are checked read-only before they get here
(``_sql.check_read_only``).

This module imports nothing of the store: the worker process builds the same views from plain
dicts (``relation_spec``).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..spill._progress import Listener, Progress

__all__ = ["TablesLoading", "build_views", "building", "quote_ident", "quote_literal", "tune_optimizer"]

INFERRED_MAX = 512


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _max_object(nbytes: int) -> int:
    return max(16 << 20, nbytes + 1)


def _infer_columns(conn: Any, rel: dict[str, Any]) -> tuple[str, str, str] | None:
    """Read every record once (our own files, before the lock-down) and pin the columns:
    ``(the file, its read_json options, the columns)``."""
    import duckdb

    raw, body = Path(rel["raw_path"]), Path(rel["body_path"])
    if rel["format"] == "jsonl":
        candidates = [(raw, "newline_delimited")]
    else:
        with open(raw, "rb") as fh:
            first = fh.read(4096).lstrip()[:1]
        # the original bytes first (compact: faster to scan); the pretty body when DuckDB's parser
        # refuses something Python's accepted (NaN, say)
        fmt = "array" if first == b"[" else "auto"
        candidates = [(raw, fmt), (body, fmt)]
    twins = []  # where DuckDB's detection met keys that differ only in case
    for path, fmt in candidates:
        try:
            cols = conn.execute(
                f"DESCRIBE SELECT * FROM read_json({quote_literal(str(path))}, format='{fmt}', "
                f"sample_size=-1, maximum_object_size={_max_object(path.stat().st_size)})"
            ).fetchall()
        except duckdb.Error as exc:
            if "duplicate name" in str(exc).lower():
                twins.append((path, fmt))
            continue
        if len(cols) == 1 and cols[0][0] == "json" and str(cols[0][1]).startswith("MAP("):
            # records DuckDB would not read as records: a key no column can be named (""), so
            # one MAP column, and h.items (the stub names it) "does not exist"
            twins.append((path, fmt))
            continue
        if _renamed_twins([str(c[0]) for c in cols]):
            twins.append((path, fmt))
            continue
        if cols:
            spec = "{" + ", ".join(f"{quote_literal(c[0])}: {quote_literal(c[1])}" for c in cols) + "}"
            return str(path), f"format='{fmt}'", spec
    for path, fmt in twins:
        found = _structure_columns(conn, path, fmt)
        if found is not None:  # (records: its columns, whichever keys were left out)
            return str(path), f"format='{fmt}', records='true'", found
    if twins:  # the records' own keys collide: each record whole, one JSON column ``item``
        path, fmt = twins[0]
        return str(path), f"format='{fmt}'", ITEM_COLUMN
    return None


ITEM_COLUMN = "item"  # the columns of records no STRUCT can hold: each record whole, as JSON


def _renamed_twins(names: list[str]) -> bool:
    """DuckDB's detection met record keys that differ only in case and renamed the later one
    (``id`` and ``ID`` read as ``id``, ``ID_1``): columns pinned from that name a key no record
    has, and its values read as NULL."""
    lower = {n.lower() for n in names}
    return any((m := re.fullmatch(r"(.+)_[0-9]+", n)) is not None and m.group(1).lower() in lower for n in names)


_STRUCT_MAX_KEYS = 200  # DuckDB's own map_inference_threshold: wider objects are maps, not structs
_STRUCT_MAX_DEPTH = 64
_SCALARS = {"BOOLEAN", "BIGINT", "UBIGINT", "HUGEINT", "DOUBLE", "VARCHAR", "JSON"}


def _duck_type(structure: Any, depth: int = 0) -> str:
    """The DuckDB type of a ``json_group_structure`` node; JSON where a STRUCT cannot hold it:
    keys that differ only in case (DuckDB's names are case-insensitive), a key ``""``, no keys, too
    many, too deep."""
    if isinstance(structure, str):
        return structure if structure in _SCALARS else "JSON"
    if depth >= _STRUCT_MAX_DEPTH:
        return "JSON"
    if isinstance(structure, list):
        return f"{_duck_type(structure[0], depth + 1)}[]" if len(structure) == 1 else "JSON[]"
    if isinstance(structure, dict):
        if (
            not structure
            or "" in structure  # (no field can be named so)
            or len(structure) > _STRUCT_MAX_KEYS
            or len({k.lower() for k in structure}) < len(structure)
        ):
            return "JSON"
        fields = ", ".join(f"{quote_ident(k)} {_duck_type(v, depth + 1)}" for k, v in structure.items())
        return f"STRUCT({fields})"
    return "JSON"


def _structure_columns(conn: Any, path: Path, fmt: str) -> str | None:
    """Columns from DuckDB's ``json_group_structure`` of every record, for the documents its
    read_json refuses to type: two keys of one object that differ only in case (HTTP headers
    ``Content-Type`` and ``content-type``, labels ``App`` and ``app`` across records) are a
    "Duplicate name" error there; here that object is one JSON column, queried with ``->>``.
    A record's key ``""`` is no column (get_in reads it: ``$[""]``). None when the records' own
    keys collide so (a column of each cannot be named)."""
    import json

    import duckdb

    try:
        row = conn.execute(
            f"SELECT json_group_structure(json) FROM read_json_objects({quote_literal(str(path))}, "
            f"format='{fmt}', maximum_object_size={_max_object(path.stat().st_size)})"
        ).fetchone()
        top = json.loads(row[0]) if row and row[0] else None
    except (duckdb.Error, OSError, ValueError, RecursionError):
        return None
    if isinstance(top, dict):
        top = {k: v for k, v in top.items() if k}
    if not isinstance(top, dict) or not top or len({k.lower() for k in top}) < len(top):
        return None
    return "{" + ", ".join(f"{quote_literal(k)}: {quote_literal(_duck_type(v))}" for k, v in top.items()) + "}"


def _view(conn: Any, rel: dict[str, Any], inferred: dict[str, Any], fresh: list[str]) -> tuple[str, str]:
    """``(the file it reads, the SELECT of the handle's relation)``."""
    if rel["format"] in ("json", "jsonl"):
        cols = inferred.get(rel["body_id"])
        if cols is None:
            fresh.append(rel["name"])
            cols = _infer_columns(conn, rel)
            if cols is not None:
                inferred[rel["body_id"]] = cols
                while len(inferred) > INFERRED_MAX:
                    inferred.pop(next(iter(inferred)), None)
        if cols is not None:
            path, options, spec = cols
            size = Path(path).stat().st_size
            if spec == ITEM_COLUMN:
                limit = _max_object(size)
                objects = f"read_json_objects({quote_literal(path)}, {options}, maximum_object_size={limit})"
                return path, f"SELECT json AS item FROM {objects}"
            source = (
                f"read_json({quote_literal(path)}, {options}, columns={spec}, maximum_object_size={_max_object(size)})"
            )
            return path, f"SELECT * FROM {source}"
        path = rel["body_path"]
        fmt = "newline_delimited" if rel["format"] == "jsonl" else "auto"
        size = rel["longest_line"] if rel["format"] == "jsonl" else rel["body_bytes"]
        source = (
            f"read_json({quote_literal(path)}, format='{fmt}', sample_size=-1, maximum_object_size={_max_object(size)})"
        )
        return path, f"SELECT * FROM {source}"
    path = rel["body_path"]
    source = (
        f"(SELECT line_no, CASE WHEN suffix(line, chr(13)) THEN line[:-2] ELSE line END AS line FROM "
        f"(SELECT CAST(generate_subscripts(parts, 1) AS BIGINT) AS line_no, unnest(parts) AS line FROM "
        f"(SELECT string_split(CASE WHEN suffix(content, chr(10)) THEN content[:-2] ELSE content END, "
        f"chr(10)) AS parts FROM read_text({quote_literal(path)}))))"
    )
    return path, f"SELECT * FROM {source}"


def _array_views(conn: Any, rel: dict[str, Any]) -> None:
    """``h.items``: the rows of ``$.items`` (a schema named like the handle, a view per array)."""
    import duckdb

    arrays = rel.get("arrays") or []
    if not arrays:
        return
    schema = quote_ident(rel["name"])
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    for name, keys in arrays:
        column = ".".join(quote_ident(k) for k in keys)
        try:
            conn.execute(
                f"CREATE VIEW {schema}.{quote_ident(name)} AS "
                f"SELECT u.* FROM (SELECT unnest({column}) AS u FROM main.{schema})"
            )
        except duckdb.Error:  # an array DuckDB typed otherwise (mixed items): the document still works
            continue


def _csv_view(conn: Any, rel: dict[str, Any], path: str) -> None:
    """``h.rows``: a text body that reads as a CSV table with a header, as DuckDB's ``read_csv``
    reads it (its types detected); nothing when it does not (see ``_csv``)."""
    import duckdb

    from ._csv import ROWS_RELATION, shape_of

    shape = shape_of(rel)  # (found at spill time)
    if shape is None:
        return
    schema = quote_ident(rel["name"])
    try:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        conn.execute(
            f"CREATE VIEW {schema}.{quote_ident(ROWS_RELATION)} AS SELECT * FROM read_csv({quote_literal(path)}, "
            f"header = true, delim = {quote_literal(shape.delimiter)}, quote = '\"', escape = '\"')"
        )
    except duckdb.Error:  # (rows DuckDB reads otherwise: the lines still work)
        with contextlib.suppress(duckdb.Error):
            conn.execute(f"DROP VIEW IF EXISTS {schema}.{quote_ident(ROWS_RELATION)}")


def _embedded_views(conn: Any, rel: dict[str, Any], path: str) -> None:
    """``h.content_0_text``: the JSON document inside a string of the body (one row, or a row per
    record when it is an array of records), and ``h.content_0_text__items`` per array of records
    in it. DuckDB reads the string out of our own file (a JSON Pointer) and types the document
    once, here, from all of it."""
    import duckdb

    docs = rel.get("embedded") or []
    if not docs:
        return
    schema = quote_ident(rel["name"])
    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    for doc in docs:
        pointer = quote_literal(doc["pointer"])
        # a string's text parsed as JSON; or (not in a string) an array of the document itself,
        # when DuckDB cannot type the whole document
        picked = (
            f"json(json_extract_string(content, {pointer}))"
            if doc.get("in_string", True)
            else f"json_extract(content, {pointer})"
        )
        source = f"(SELECT {picked} AS j FROM read_text({quote_literal(path)}))"
        parts: list[tuple[str, str, bool]] = [(doc["relation"], "", bool(doc.get("rows")))]
        parts += [(name, "/" + "/".join(str(k) for k in keys), True) for name, keys in doc.get("arrays") or []]
        for name, pointer, rows in parts:
            value = f"json_extract(j, {quote_literal(pointer)})" if pointer else "j"
            try:
                row = conn.execute(f"SELECT json_structure({value}) FROM {source}").fetchone()
                if row is None or row[0] is None:
                    continue
                typed = f"json_transform({value}, {quote_literal(str(row[0]))})"
                select = (
                    f"SELECT u.* FROM (SELECT unnest({typed}) AS u FROM {source})"
                    if rows
                    else f"SELECT unnest({typed}) FROM {source}"
                )
                conn.execute(f"CREATE VIEW {schema}.{quote_ident(name)} AS {select}")
            except duckdb.Error:  # a document DuckDB cannot type: the tools still read it by path
                continue


# beside a JSON body: its relations as DuckDB tables, built once. v2: the document's table is
# ``whole-doc`` (v1 named it ``doc``, which an array of records under the key "doc" met: h.doc
# read the document's one row). v3: records whose own keys differ only in case are one JSON column
# ``item`` (v2 pinned the name DuckDB 2 gave the second key, ``ID_1``, and read NULL in every row).
# An older file is left alone (removed with its body) and a v3 one built.
TABLES_FILE = "tables-v3.duckdb"
OOM_MARK_S = 600.0  # how long a handle DuckDB had no memory to read is left out of queries
_DOC = '"whole-doc"'  # the document's rows (internal names hold a "-": a relation's is an identifier)
TABLES_RETRY_S = 30.0  # after a failed build the views over read_json answer; the build is retried later
TABLES_RETRY_MAX_S = 3600.0
_clock = time.monotonic


def _tables_path(rel: dict[str, Any]) -> Path:
    return Path(rel["body_path"]).parent / TABLES_FILE


def _unreadable_path(rel: dict[str, Any]) -> Path:
    import duckdb

    # (a body never changes; another DuckDB may read it: the mark names the version that could not)
    return Path(rel["body_path"]).parent / f"sql-unreadable-{duckdb.__version__}"


def _known_unreadable(rel: dict[str, Any]) -> bool:
    """Whether an earlier query found that this DuckDB cannot read the handle (its mark beside the
    body): a query naming it then skips the tables and the views that failed (~10 s for an
    object of 200,000 keys, on every query). A mark for want of memory holds ``OOM_MARK_S``."""
    path = _unreadable_path(rel)
    try:
        said = path.read_text(encoding="utf-8", errors="replace")
        if said.startswith("memory:") and time.time() - path.stat().st_mtime > OOM_MARK_S:
            return False  # (another moment, a fresh worker, may read it)
    except OSError:
        return False
    return True


def unreadable_reason(rel: dict[str, Any]) -> str:
    """What the mark of an unreadable handle says ('memory: …' for want of memory), or ''."""
    try:
        return _unreadable_path(rel).read_text(encoding="utf-8", errors="replace").strip()
    except (OSError, KeyError, TypeError):
        return ""


def _mark_unreadable(rel: dict[str, Any], exc: BaseException) -> None:
    """Mark the handle unreadable: for good when DuckDB's error is about the data itself, for
    ``OOM_MARK_S`` when it ran out of memory (a handle this wide always does, but a worker short of
    address space once failed a readable 57 MB handle with bad_alloc); never for an interrupt."""
    import duckdb

    said = " ".join(str(exc).split())
    if isinstance(exc, (duckdb.InterruptException, duckdb.IOException)) or "interrupt" in said.lower():
        return
    memory = isinstance(exc, duckdb.OutOfMemoryException) or "bad_alloc" in said or "bad allocation" in said
    with contextlib.suppress(OSError):  # (a read-only bodies directory: found again next time)
        _unreadable_path(rel).write_text(("memory: " if memory else "") + said[:500] + "\n", encoding="utf-8")


def _copy_pieces(src: str, dst: Path, pieces: list[bytes | tuple[int, int]]) -> None:
    """A new file ``dst`` of ``pieces``: bytes as given, ``(start, end)`` ranges of ``src`` (copied
    by the kernel, or by reads and writes where the OS or the file systems do not offer that)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        for piece in pieces:
            fout.seek(0, os.SEEK_END)
            if isinstance(piece, bytes):
                fout.write(piece)
                fout.flush()
                continue
            offset, end = piece
            while offset < end:
                try:
                    n = os.copy_file_range(fin.fileno(), fout.fileno(), end - offset, offset)
                except (AttributeError, OSError):  # not this OS, or not across these file systems
                    fin.seek(offset)
                    fout.seek(0, os.SEEK_END)
                    n = fout.write(fin.read(min(end - offset, 1 << 22)))
                    fout.flush()
                if n <= 0:
                    raise OSError(f"copying {src} stopped at byte {offset} of {end}")
                offset += n


_SKELETON = '"skeleton-of-doc"'  # a streamed spill's document without its array: one row


def _streamed_tables(build: Any, rel: dict[str, Any], scratch: Path) -> None:
    """The tables of a streamed JSON spill (one big array inside an object) without handing
    DuckDB the whole document, which its reader holds as one value (a 200 MB PodList did not fit
    the 1 GB it is given). The array's bytes, copied out of the raw file, are read as records
    (DuckDB streams a top-level array an item at a time); the rest of the document, with ``[]``
    in the array's place, is the one-row ``skeleton-of-doc``; ``whole-doc`` is a view that puts the
    array back as a list column in its place, so ``h`` has the same columns, types and rows as a document
    read whole (tested), and a query that does not name the column never builds the list.
    Raises ``duckdb.Error`` (or ``OSError``, ``ValueError``) when it cannot: items that are not
    all objects, say; the caller then builds from the whole document."""
    spec = rel["streamed"]
    keys = [str(k) for k in spec["path"]]
    start, end = int(spec["start"]), int(spec["end"])
    raw = rel["raw_path"]
    named = {tuple(k): name for name, k in rel.get("arrays") or []}
    # (internal names hold a "-": a relation's name is an identifier, so they never collide)
    table = named.get(tuple(keys), "streamed-array")
    array_file, skeleton_file = (scratch.with_name(f"{scratch.name}.{part}.json") for part in ("array", "skeleton"))
    try:
        size = os.path.getsize(raw)
        _copy_pieces(raw, array_file, [(start, end)])
        _copy_pieces(raw, skeleton_file, [(0, start), b"[]", (end, size)])
        longest = _max_object(int(spec["longest_segment"]))
        build.execute(
            f"CREATE TABLE {quote_ident(table)} AS SELECT * FROM read_json({quote_literal(str(array_file))}, "
            f"format='array', records='true', sample_size=-1, maximum_object_size={longest})"
        )
        build.execute(
            f"CREATE TABLE {_SKELETON} AS SELECT * FROM read_json({quote_literal(str(skeleton_file))}, "
            f"format='auto', records='true', sample_size=-1, maximum_object_size={_max_object(size - (end - start))})"
        )
    finally:
        for leftover in (array_file, skeleton_file):
            with contextlib.suppress(OSError):
                leftover.unlink()
    # items in the order they were read (a parallel list() may interleave its inputs)
    items = f"(SELECT list(x ORDER BY rowid) FROM {quote_ident(table)} x)"
    if len(keys) == 1:
        column = items
    else:  # $.data.results: rebuild the struct ``data`` with ``results`` in its place
        described = build.execute(f"DESCRIBE SELECT unnest({quote_ident(keys[0])}) FROM {_SKELETON}").fetchall()
        fields = [r[0] for r in described]
        if keys[1] not in fields:
            raise ValueError(f"{keys[1]!r} is not a field of {keys[0]!r}")
        parts = (
            f"{quote_ident(f)} := " + (items if f == keys[1] else f"s.{quote_ident(keys[0])}.{quote_ident(f)}")
            for f in fields
        )
        column = f"struct_pack({', '.join(parts)})"
    build.execute(f"CREATE VIEW {_DOC} AS SELECT * REPLACE ({column} AS {quote_ident(keys[0])}) FROM {_SKELETON} s")
    _array_tables(build, rel, _SKELETON, skip=table)


def _array_tables(build: Any, rel: dict[str, Any], source: str, skip: str | None = None) -> None:
    """A table per array of records of ``rel``, its rows unnested from the one-row ``source``."""
    import duckdb

    for name, keys in rel.get("arrays") or []:
        if name == skip:
            continue
        column = ".".join(quote_ident(k) for k in keys)
        unnested = f"(SELECT unnest({column}) AS u FROM {source})"
        try:
            build.execute(f"CREATE TABLE {quote_ident(name)} AS SELECT u.* FROM {unnested}")
        except duckdb.Error:
            if _records_through_json(build, name, keys, source):
                continue
            # records DuckDB typed as a MAP (a key "" among them, say) or mixed: a row per item
            # still, the item whole in one column, so the relation the stub names is there
            with contextlib.suppress(duckdb.Error):
                build.execute(f"CREATE TABLE {quote_ident(name)} AS SELECT u AS item FROM {unnested}")


def _named(structure: Any) -> Any:
    """A ``json_structure`` without the keys no column can be named (``""``); an object left
    with none is JSON."""
    if isinstance(structure, dict):
        named = {k: _named(v) for k, v in structure.items() if k}
        return named or "JSON"
    if isinstance(structure, list):
        return [_named(v) for v in structure]
    return structure


def _records_through_json(build: Any, name: str, keys: list[str], source: str) -> bool:
    """The table of the array at ``keys`` read through JSON: on the way to it an object DuckDB
    typed as a MAP (it holds a key ``""``), where ``a.b`` does not reach ``b``. Its records'
    columns are their keys that can be named. False when that does not make records either."""
    import json

    import duckdb

    value = f"to_json({quote_ident(keys[0])})"
    if len(keys) > 1:
        pointer = "/" + "/".join(str(k).replace("~", "~0").replace("/", "~1") for k in keys[1:])
        value = f"json_extract({value}, {quote_literal(pointer)})"
    try:
        row = build.execute(f"SELECT json_structure({value}) FROM {source}").fetchone()
        shape = _named(json.loads(row[0])) if row and row[0] else None
        if not (isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], dict) and shape[0]):
            return False
        typed = f"json_transform({value}, {quote_literal(json.dumps(shape))})"
        unnested = f"(SELECT unnest({typed}) AS u FROM {source})"
        build.execute(f"CREATE TABLE {quote_ident(name)} AS SELECT u.* FROM {unnested}")
    except (duckdb.Error, ValueError):
        return False
    return True


def _build_connection(path: Path, progress: Progress | None = None) -> Any:
    """A connection that writes a tables file; with ``progress``, DuckDB's own measure of its
    running statement (``query_progress``: -1 before it knows) feeds it."""
    import duckdb

    conn = duckdb.connect(
        str(path),
        config={
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
            "memory_limit": "1GB",
            "threads": "2",
        },
    )
    if progress is not None:
        conn.execute("SET enable_progress_bar = true")  # tracked; never printed
        conn.execute("SET enable_progress_bar_print = false")
        conn.execute("SET progress_bar_time = 0")
        progress.set_probe(conn.query_progress)
    return conn


def _close_build(build: Any, progress: Progress | None) -> None:
    if progress is not None:
        progress.set_probe(None)  # no progress question in flight while it closes
    build.close()


def _whole_tables(build: Any, rel: dict[str, Any], inferred: dict[str, Any], fresh: list[str]) -> None:
    """``whole-doc`` from the whole document (or JSONL), then a table per array of records from it.

    A document that repeats a key (JSON allows it; DuckDB's reader refuses the object, so every
    query of ``h`` failed) is read from its body instead: written from the parsed document, it
    holds each key once, with its last value, as the JSON tools read it."""
    import duckdb

    try:
        _, select = _view(build, rel, inferred, fresh)
        build.execute(f"CREATE TABLE {_DOC} AS {select}")
    except duckdb.Error as exc:
        if "duplicate key" not in str(exc) or rel["format"] != "json" or rel["raw_path"] == rel["body_path"]:
            raise
        inferred.pop(rel["body_id"], None)  # (the columns read from the raw bytes)
        _, select = _view(build, {**rel, "raw_path": rel["body_path"]}, inferred, fresh)
        build.execute(f"CREATE TABLE {_DOC} AS {select}")
    _array_tables(build, rel, _DOC)


def _remove_database(path: Path) -> None:
    for leftover in (path, Path(f"{path}.wal")):
        with contextlib.suppress(OSError):
            leftover.unlink()


class TablesLoading(Exception):
    """Handles whose tables are still being loaded when the job's time to wait ran out."""

    def __init__(self, loading: list[dict[str, Any]]) -> None:
        super().__init__(", ".join(str(x["name"]) for x in loading))
        self.loading = loading  # [{"name", "size_bytes", "elapsed_s"}]


# body id -> (its build, when it was asked for). One thread of the worker builds, one body after
# another (two loads at once would share 2 cores and the worker's capped address space); a body
# of at most INLINE_BUILD_BYTES is loaded by the job that needs it, queued behind none
INLINE_BUILD_BYTES = 4 << 20
_BUILDS: dict[str, tuple[Future[Path | None], float]] = {}
_BUILDS_LOCK = threading.Lock()
_BUILDER: ThreadPoolExecutor | None = None


def _host_prefix() -> str:
    """How the build files of this host's processes begin: ``.tables-v3.duckdb.<host>.``, then the
    process id (so that one a killed process left is known) and a unique part."""
    import socket

    return f".{TABLES_FILE}.{socket.gethostname()}."


def _tmp_name(target: Path) -> Path:
    import uuid

    return target.with_name(f"{_host_prefix()}{os.getpid()}.{uuid.uuid4().hex}")


def _remove_leftovers(target: Path) -> None:
    """Build files of processes of this host that are gone (killed mid-build: a worker past its
    time limit)."""
    prefix = _host_prefix()
    for leftover in target.parent.glob(f"{prefix}*"):
        try:
            pid = int(leftover.name[len(prefix) :].split(".")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                leftover.unlink()
        except (ValueError, OSError):
            continue


def _build_now(
    rel: dict[str, Any], inferred: dict[str, Any], fresh: list[str], listeners: list[Listener] | None = None
) -> Path | None:
    """Build the tables file now (see ``_materialise``); None, with a back-off noted, if it fails.
    ``listeners`` (a person's pad's): told how the load goes once it runs longer than a second."""
    if not listeners:
        return _build_tables(rel, inferred, fresh, None)
    from ..spill._progress import LOAD_PHASES, Progress

    size = Path(rel["raw_path"]).stat().st_size
    with Progress(listeners, "sql", size, kind="sql_tables", phases=LOAD_PHASES, handle=rel["name"]) as progress:
        return _build_tables(rel, inferred, fresh, progress)


def _build_tables(
    rel: dict[str, Any], inferred: dict[str, Any], fresh: list[str], progress: Progress | None
) -> Path | None:
    import duckdb

    target = _tables_path(rel)
    failures, _ = inferred.get(f"tables_failed:{rel['body_id']}", (0, 0.0))
    _remove_leftovers(target)
    tmp = _tmp_name(target)
    try:
        build = _build_connection(tmp, progress)
        try:
            whole = True
            if rel.get("streamed"):
                try:
                    _streamed_tables(build, rel, tmp)
                    whole = False
                    fresh.append(rel["name"])
                except (duckdb.Error, OSError, ValueError):  # start again from the whole document
                    _close_build(build, progress)
                    _remove_database(tmp)
                    build = _build_connection(tmp, progress)
            if whole:
                _whole_tables(build, rel, inferred, fresh)
            build.execute("CHECKPOINT")
        finally:
            _close_build(build, progress)
        os.replace(tmp, target)
        with contextlib.suppress(OSError):
            os.unlink(f"{tmp}.wal")
        return target
    except (duckdb.Error, OSError, MemoryError):
        # often passing (memory other connections held): tried again after 30 s, 1 min, 2 min … 1 h
        backoff = min(TABLES_RETRY_MAX_S, TABLES_RETRY_S * 2**failures)
        inferred[f"tables_failed:{rel['body_id']}"] = (failures + 1, _clock() + backoff)
        _remove_database(tmp)
        return None


def building() -> bool:
    """Whether a table load of this process is running or waiting to."""
    with _BUILDS_LOCK:
        return any(not future.done() for future, _ in _BUILDS.values())


def _materialise(
    rel: dict[str, Any],
    inferred: dict[str, Any],
    fresh: list[str],
    deadline: float | None = None,
    listeners: list[Listener] | None = None,
) -> Path | None:
    """Load a JSON/JSONL body into DuckDB's own storage once: ``whole-doc`` (the document's rows) and a
    table per array of records (documents inside strings stay views), in a file beside the body
    (written whole, then renamed; bodies never change, so it never goes stale). Queries then
    scan columns instead of parsing the JSON text again. A streamed spill's tables are built
    from its array's bytes and the rest of the document (``_streamed_tables``); when DuckDB
    cannot, from the whole document. ``None`` when DuckDB cannot at all (the views over
    ``read_json`` still answer).

    With a ``deadline`` (``_clock()`` time: the worker, whose job has a time limit) the build
    runs on this process's build thread and is waited for until then; a build still running raises
    ``TablesLoading`` and goes on, so the next query finds it done or further along (a 1 GiB
    document takes longer than a call may: killing the worker at the limit threw the work away)."""
    target = _tables_path(rel)
    if target.exists():
        return target
    _failures, retry_at = inferred.get(f"tables_failed:{rel['body_id']}", (0, 0.0))
    if _clock() < retry_at:
        return None
    size = Path(rel["raw_path"]).stat().st_size
    if deadline is None or size <= INLINE_BUILD_BYTES:
        # (a small body is loaded here and now: queued, it waited behind another agent's 100 MB load)
        return _build_now(rel, inferred, fresh, listeners)
    global _BUILDER
    key = str(rel["body_id"])
    with _BUILDS_LOCK:
        running = _BUILDS.get(key)
        if running is None or running[0].done():
            if _BUILDER is None:
                _BUILDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scratch-sql-tables")
            running = _BUILDS[key] = (_BUILDER.submit(_build_now, rel, inferred, []), _clock())
    done, _ = wait([running[0]], timeout=max(0.0, deadline - _clock()))
    if not done:
        # (queued: the builder is loading another handle first; said so, not "this one is loading")
        queued = not running[0].running()
        raise TablesLoading(
            [{"name": rel["name"], "size_bytes": size, "elapsed_s": _clock() - running[1], "queued": queued}]
        )
    with _BUILDS_LOCK:
        if _BUILDS.get(key) is running:
            del _BUILDS[key]
    if target.exists():
        fresh.append(rel["name"])
        return target
    return None


def _attach_tables(conn: Any, rel: dict[str, Any], path: Path, alias: str) -> None:
    """``h`` and ``h.items`` as views over the tables of an attached (read-only) tables file."""
    conn.execute(f"ATTACH {quote_literal(str(path))} AS {quote_ident(alias)} (READ_ONLY)")
    name = quote_ident(rel["name"])
    conn.execute(f"CREATE VIEW {name} AS SELECT * FROM {quote_ident(alias)}.main.{_DOC}")
    tables = {
        r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = ?", [alias]).fetchall()
    }
    arrays = [a for a, _ in rel.get("arrays") or [] if a in tables]
    if arrays:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {name}")
        for array in arrays:
            conn.execute(
                f"CREATE VIEW {name}.{quote_ident(array)} AS "
                f"SELECT * FROM {quote_ident(alias)}.main.{quote_ident(array)}"
            )


# DuckDB optimizers our queries run faster without. DuckDB 2's distinct_aggregate_rewrite plans
# a query that mixes DISTINCT and plain aggregates as a CTE read by two aggregations, which on the
# 2 cores this runs on made a low-cardinality DISTINCT (count(DISTINCT status) by country) 1.2-2.7x
# slower and a high-cardinality one (count(DISTINCT id)) up to 17 % faster; seven such queries
# together run 1.13-1.27x faster without it at 20,000 and 352,000 records (benchmarks/bench_sql.py,
# "DISTINCT suite"). Results are the same.
SLOW_OPTIMIZERS = ("distinct_aggregate_rewrite",)
_known_optimizers: set[str] | None = None


def tune_optimizer(conn: Any) -> str:
    """Disable ``SLOW_OPTIMIZERS`` this DuckDB has (an older one has not); returns the setting."""
    global _known_optimizers
    if _known_optimizers is None:
        _known_optimizers = {row[0] for row in conn.execute("SELECT name FROM duckdb_optimizers()").fetchall()}
    names = ",".join(n for n in SLOW_OPTIMIZERS if n in _known_optimizers)
    if names:
        conn.execute(f"SET disabled_optimizers = {quote_literal(names)}")
    return names


def _insert_notes(conn: Any, notes: list[tuple[Any, ...]]) -> None:
    """Fill ``scratch_notes`` with ``notes`` (``(key, value_json, expires_at)``) in one statement.

    Bound as three lists and unnested: ``executemany`` ran one INSERT per note (20,000 notes of
    2 KB: ~8 s, past the call's time; this: ~0.6 s)."""
    if not notes:
        return
    keys, values, expires = (list(column) for column in zip(*notes, strict=True))
    conn.execute(
        "INSERT INTO scratch_notes SELECT unnest($1::VARCHAR[]), unnest($2::VARCHAR[])::JSON, "
        "unnest($3::TIMESTAMPTZ[])",
        [keys, values, expires],
    )


def build_views(
    conn: Any,
    relations: list[dict[str, Any]],
    notes: list[tuple[Any, ...]],
    inferred: dict[str, Any],
    deadline: float | None = None,
    listeners: list[Listener] | None = None,
) -> tuple[list[str], list[str]]:
    """Create the views and the notes table on ``conn``, then lock it down.

    Returns ``(failed, inferred_now)``: the handles whose view could not be made, and those whose
    columns were inferred by this call (not found in ``inferred``, the cache kept across calls).
    Raises ``TablesLoading`` when a handle's tables were still being loaded at ``deadline``
    (every other handle's were waited for, or started, first).

    A handle DuckDB cannot read (JSON nested deeper than its parser allows, say) fails alone:
    its view is left out and its name returned, so a query that names it gets DuckDB's "does not
    exist" while every other handle still works.
    """
    import duckdb

    paths: list[str] = []
    failed: list[str] = []
    fresh: list[str] = []
    loading: list[dict[str, Any]] = []
    for n, rel in enumerate(relations):
        # (found unreadable before: each query spent ~10 s finding it again)
        known_unreadable = rel["format"] in ("json", "jsonl") and _known_unreadable(rel)
        if rel["format"] in ("json", "jsonl") and not known_unreadable:
            try:
                tables = _materialise(rel, inferred, fresh, deadline, listeners)
            except TablesLoading as exc:
                loading += exc.loading
                continue
            if tables is not None:
                try:
                    _attach_tables(conn, rel, tables, f"scratch_tables_{n}")
                    if rel["format"] == "json":
                        _embedded_views(conn, rel, rel["raw_path"])
                        paths.append(rel["raw_path"])
                    continue
                except (duckdb.Error, OSError):  # fall back to the views over the JSON text
                    with contextlib.suppress(duckdb.Error):
                        conn.execute(f"DROP VIEW IF EXISTS {quote_ident(rel['name'])}")
        try:
            if known_unreadable:
                raise OSError("found unreadable by an earlier query")
            path, select = _view(conn, rel, inferred, fresh)
            conn.execute(f"CREATE VIEW {quote_ident(rel['name'])} AS {select}")
        except (duckdb.Error, OSError) as exc:
            failed.append(rel["name"])
            if rel["format"] in ("json", "jsonl") and isinstance(exc, duckdb.Error):
                _mark_unreadable(rel, exc)
            if rel["format"] == "json" and rel.get("arrays"):
                # the document is beyond DuckDB's types (nested thousands deep, say): its arrays of
                # records can still be rows, read out of the file by pointer
                arrays = [
                    {
                        "relation": name,
                        "pointer": "/" + "/".join(str(k) for k in keys),
                        "rows": True,
                        "in_string": False,
                    }
                    for name, keys in rel["arrays"]
                ]
                _embedded_views(conn, {**rel, "embedded": arrays}, rel["body_path"])
                paths.append(rel["body_path"])
            continue
        paths.append(path)
        _array_views(conn, rel)
        if rel["format"] == "json":
            _embedded_views(conn, rel, path)
        elif rel["format"] == "text":
            _csv_view(conn, rel, path)
    if loading:
        raise TablesLoading(loading)
    conn.execute("CREATE TABLE scratch_notes (key VARCHAR, value JSON, expires_at TIMESTAMPTZ)")
    _insert_notes(conn, notes)
    tune_optimizer(conn)
    # DuckDB's own progress bar: in a Jupyter kernel it draws an ipywidgets bar for any query over
    # 2 s, left under the cell (or in the log console, for the explorer's); loads report through
    # the pad's progress listeners instead
    conn.execute("SET enable_progress_bar_print = false")
    conn.execute(f"SET allowed_paths = [{', '.join(quote_literal(p) for p in paths)}]")
    conn.execute("SET allowed_directories = []")
    conn.execute("SET enable_external_access = false")
    conn.execute("SET lock_configuration = true")
    return failed, fresh
