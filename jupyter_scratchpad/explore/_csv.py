"""A text output that is a CSV (or TSV) table with a header: its rows are a SQL relation too.

A CSV export spilled as text was a relation of ``(line_no, line)`` only: ``SELECT status,
count(*) FROM h`` failed, and a model rebuilt the columns with ``split_part`` over two more calls.
When the first lines of a text body read as a table (one delimiter, the same number of fields on
every line, a header of distinct names), SQL gets ``h.rows`` (DuckDB's ``read_csv`` of the body,
its types detected) and the stub and ``schema`` say so. The test reads at most ``HEAD_BYTES`` of
the body, so it costs the same whatever the output's size.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

__all__ = ["HEAD_BYTES", "ROWS_RELATION", "CsvShape", "csv_meta", "csv_shape", "shape_of", "shorter_description"]

HEAD_BYTES = 64 << 10  # of the body read to decide
ROWS_RELATION = "rows"  # h.rows
_DELIMITERS = (",", "\t", ";", "|")
_MIN_LINES = 5  # a header and four rows at least
_MAX_LINES = 200
_HEADER_NAME = re.compile(r"[^\x00-\x1f]{1,64}")


@dataclass(frozen=True)
class CsvShape:
    delimiter: str
    columns: tuple[str, ...]

    def describe(self, most: int = 8) -> str:
        """``8 columns: id, name, …`` (at most ``most`` names, each at most 24 characters)."""
        names = [c if len(c) <= 24 else c[:23] + "…" for c in self.columns[:most]]
        more = ", …" if len(self.columns) > most else ""
        kind = "TSV" if self.delimiter == "\t" else "CSV"
        return f"{kind}, {len(self.columns)} columns: {', '.join(names)}{more}"


def shorter_description(description: str, names_chars: int) -> str:
    """``describe``'s text with its column names cut to ``names_chars`` characters (marked ``…``),
    or left out at 0 (``CSV, 60 columns``).

    ``describe`` sizes the names in characters, and a character may be several tokens (60 names of
    U+A66E made a stub of 659 tokens): a stub over its token bound shortens them with this."""
    head, sep, names = description.partition(": ")  # (the first ": " ends "CSV, N columns")
    if not sep or names_chars <= 0:
        return head
    return description if len(names) <= names_chars else f"{head}: {names[: names_chars - 1]}…"


def csv_shape(head: bytes) -> CsvShape | None:
    """The delimiter and header of ``head`` (the first bytes of a text body) when it reads as a
    table with a header; None otherwise."""
    text = head[:HEAD_BYTES].decode("utf-8", errors="replace")
    lines = text.split("\n")
    if len(head) >= HEAD_BYTES:
        lines = lines[:-1]  # (the last one may be cut)
    lines = [line.rstrip("\r") for line in lines[:_MAX_LINES]]
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) < _MIN_LINES:
        return None
    for delimiter in _DELIMITERS:
        if delimiter not in lines[0]:
            continue
        try:
            rows = list(csv.reader(io.StringIO("\n".join(lines)), delimiter=delimiter))
        except csv.Error:
            continue
        if len(rows) < _MIN_LINES:
            continue
        width = len(rows[0])
        if width < 2 or any(len(r) != width for r in rows):
            continue
        header = [name.strip() for name in rows[0]]
        if len(set(header)) < width or not all(_HEADER_NAME.fullmatch(n) for n in header):
            continue
        if all(_is_number(n) for n in header):  # (rows of numbers, no header)
            continue
        return CsvShape(delimiter, tuple(header))
    return None


def csv_meta(body: bytes) -> dict[str, object] | None:
    """What an entry's ``meta["csv"]`` keeps (found once, at spill time), or None."""
    shape = csv_shape(body[:HEAD_BYTES])
    return None if shape is None else {"delimiter": shape.delimiter, "columns": list(shape.columns)}


def shape_of(meta: object) -> CsvShape | None:
    """The table an entry's ``meta["csv"]`` records, or None (no table, or spilled before this)."""
    found = meta.get("csv") if isinstance(meta, dict) else None
    if not isinstance(found, dict) or not isinstance(found.get("delimiter"), str):
        return None
    columns = found.get("columns")
    return CsvShape(found["delimiter"], tuple(str(c) for c in columns)) if isinstance(columns, list) else None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
