"""A spilled output as a file others can read: ``pad.export``, ``%scratch export`` and
``jupyter-scratchpad export HANDLE --to FILE``.

``.json`` is the output's own bytes (exact) or the value at ``--path``; ``.jsonl``, ``.parquet`` and
``.csv`` are rows: the records of an array (``--path``, by default the document itself when it is an
array, else its largest array of records), or ``(line_no, line)`` of a text handle. Parquet and CSV
are written by DuckDB, which types the columns from every row. The file appears whole or not at
all (written beside it, then renamed).
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import InvalidArgumentError

__all__ = ["export"]

FORMATS = (".json", ".jsonl", ".parquet", ".csv")


def _streamed_rows(pad: Any, entry: Any, path: str | None) -> tuple[Iterator[Any], int] | None:
    """The records of a streamed spill's big array, a segment at a time (never the whole document
    parsed), when ``path`` names it or, without a path, it is the largest array of records."""
    from .explore._base import ToolContext, ToolError
    from .explore._json import _node_at
    from .explore._segments import MISSING, SegmentedItems, holds_lazy, streamed_node
    from .tools import UNCHARGED_LIMIT_TOKENS

    ctx = ToolContext(pad, "export", UNCHARGED_LIMIT_TOKENS)
    doc = streamed_node(ctx, entry, "$", lazy=True)
    if doc is MISSING or not holds_lazy(doc):
        return None
    try:
        if path:
            items = _node_at(ctx, entry, path, whole_array=True)
        else:  # the largest array of records, as for a document parsed whole
            arrays = [_node_at(ctx, entry, "$." + ".".join(keys), whole_array=True)
                      for _n, keys in entry.meta.get("sql_arrays") or []]  # fmt: skip
            items = max(arrays, key=len) if arrays else doc
    except ToolError:  # a path that is not there: the ordinary way words the error
        return None
    if isinstance(items, SegmentedItems):
        return (item for part in items.each_segment() for item in part), len(items)
    if isinstance(items, list):  # an array outside the big one, from the skeleton
        return iter(items), len(items)
    return None


def _rows_of(pad: Any, handle: str, entry: Any, path: str | None) -> tuple[Iterable[Any], int]:
    """The rows to export and how many there are."""
    from .explore._paths import PathMiss, parse_path, resolve
    from .explore._relations import array_relations

    if entry.format in ("text", "markdown"):
        if path:
            raise InvalidArgumentError(f"--path needs a JSON handle; {handle} is {entry.format}")
        reader = pad.store.reader(entry)
        lines = [{"line_no": n, "line": line} for n, line in enumerate(reader.iter_lines(), start=1)]
        return lines, len(lines)
    if entry.format == "json":
        streamed = _streamed_rows(pad, entry, path)
        if streamed is not None:
            return streamed
    value = pad.get(handle)
    if path:
        try:
            value = resolve(value, parse_path(path), path)
        except PathMiss as miss:
            raise InvalidArgumentError(f"--path {path!r} is not in {handle}: {miss.reason}") from None
    elif isinstance(value, dict):
        arrays = array_relations(value)
        if not arrays:
            raise InvalidArgumentError(
                f"{handle} is one JSON object with no array of records: export it to a .json file, "
                "or name the array with --path"
            )
        keys = max(arrays, key=lambda a: len(resolve(value, parse_path(".".join(a[1])))))[1]
        value = resolve(value, parse_path(".".join(keys)))
    if not isinstance(value, list):
        raise InvalidArgumentError(f"the value at {path or '$'} is not an array: export it to a .json file")
    return value, len(value)


def export(
    pad: Any, handle: str, dest: Path, *, path: str | None = None, fmt: str | None = None, overwrite: bool = True
) -> dict[str, Any]:
    """Write ``handle`` to ``dest`` in ``fmt`` (else the format its suffix names); an existing
    file is replaced only with ``overwrite``. Returns ``{"path", "format", "rows", "bytes"}``."""
    from .store._jsontext import dumps_compact, dumps_pretty

    suffix = f".{str(fmt).lower().lstrip('.')}" if fmt is not None else dest.suffix.lower()
    if suffix not in FORMATS:
        said = f"the format {fmt!r}" if fmt is not None else repr(dest.name)
        raise InvalidArgumentError(f"export writes {', '.join(FORMATS)} files, not {said}: name one of those")
    entry = pad.entry(handle)
    dest = dest.expanduser()
    if not overwrite and dest.exists():
        raise InvalidArgumentError(f"{dest} exists and is kept: pass overwrite=True (--overwrite) to replace it")
    folder = dest.parent
    if not folder.is_dir():  # (it made any missing directories, wherever a typo pointed)
        said = "is not a directory" if folder.exists() else "does not exist"
        raise InvalidArgumentError(
            f"cannot write {dest}: the directory {folder} {said}; create it first "
            f"(mkdir -p {shlex.quote(str(folder))}) or name a file in a directory that exists"
        )
    while True:  # with the umask's permissions, as any file the user writes (mkstemp's were 0600)
        tmp = folder / f".{dest.name}.{secrets.token_hex(6)}"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
        except OSError as exc:  # (it named the temporary file beside it, not the file asked for)
            raise InvalidArgumentError(
                f"cannot write {dest}: {exc.strerror or exc} in {folder}; name a file in a directory you can write"
            ) from None
    rows: int | None = None
    try:
        if suffix == ".json":
            if path is None and entry.format == "json":
                reader = pad.store.reader(entry)
                tmp.write_bytes(reader.read_raw(0, reader.raw_size))  # the output's own bytes
            elif entry.format in ("json", "jsonl"):
                from .explore._paths import PathMiss, parse_path, resolve

                try:
                    value = resolve(pad.get(handle), parse_path(path or "$"), path or "$")
                except PathMiss as miss:
                    raise InvalidArgumentError(f"--path {path!r} is not in {handle}: {miss.reason}") from None
                tmp.write_bytes(dumps_pretty(value))
            else:  # a text handle as a JSON array of its lines
                tmp.write_bytes(dumps_pretty(_rows_of(pad, handle, entry, path)[0]))
        else:
            records, rows = _rows_of(pad, handle, entry, path)
            if suffix == ".jsonl":
                with open(tmp, "w", encoding="utf-8", errors="surrogatepass") as fh:
                    for record in records:
                        fh.write(dumps_compact(record) + "\n")
            else:
                _with_duckdb(records, tmp, "parquet" if suffix == ".parquet" else "csv")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return {"path": str(dest), "format": suffix[1:], "rows": rows, "bytes": dest.stat().st_size}


def _with_duckdb(records: Iterable[Any], out: Path, fmt: str) -> None:
    import duckdb

    from .store._jsontext import dumps_compact

    with tempfile.TemporaryDirectory() as scratch:
        lines = Path(scratch) / "rows.jsonl"
        with open(lines, "w", encoding="utf-8", errors="surrogatepass") as fh:
            for record in records:
                fh.write(dumps_compact(record if isinstance(record, dict) else {"value": record}) + "\n")
        conn = duckdb.connect()
        try:
            src = str(lines).replace("'", "''")
            dst = str(out).replace("'", "''")
            options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
            if not records:
                conn.execute(f"COPY (SELECT NULL AS value WHERE false) TO '{dst}' ({options})")
                return
            conn.execute(
                f"COPY (SELECT * FROM read_json('{src}', format='newline_delimited', sample_size=-1)) "
                f"TO '{dst}' ({options})"
            )
        finally:
            conn.close()
