"""The stub that replaces a spilled output: a dict for programs, a short text for models.

The stub is the first thing a model reads about a spill, so its text is the leanest thing we
write: at most ``STUB_MAX_TOKENS`` (250) tokens of the model, whatever the output. It keeps what
answers questions without a call — totals, the schema sketch of JSON, the first and last lines of
text — says honestly what it cut, and names the next calls with the handle once.
"""

from __future__ import annotations

import itertools
import math
import re
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from ..explore._base import call_repr
from ..explore._csv import shorter_description
from ..explore._paths import LazyArray
from ..store import BodyReader, Entry
from ..store._jsonstream import SAMPLE_ITEMS
from ..store._jsontext import _attr, _key_name, _natural

__all__ = [
    "PREVIEW_LINE_CHARS",
    "STUB_MAX_TOKENS",
    "build_stub",
    "catalog_preview",
    "handle_for",
    "render_stub_text",
    "schema_sketch",
]

STUB_MAX_TOKENS = 250
PREVIEW_LINE_CHARS = 160
PREVIEW_MAX_CHARS = 2_000  # of the preview kept in the stub dict (the notebook card shows it)
SKETCH_MAX_LINES = 12
SKETCH_LINE_CHARS = PREVIEW_LINE_CHARS  # a sketch line (a key of 100,000 characters is clipped)
KEY_CHARS = 40  # of a key named in the sketch
_SLUG = re.compile(r"[^a-z0-9]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# names a handle cannot take, with why: each is a relation, catalog or schema name in the SQL
# sandbox (a handle named ``temp`` made every query naming it "Ambiguous reference to catalog or
# schema"); ``reserved_handle`` also refuses the attached tables' aliases, ``scratch_tables_<n>``
RESERVED_HANDLES = {
    "scratch_notes": "it is the SQL relation of the notes",
    **dict.fromkeys(
        ("temp", "system", "memory", "main", "information_schema", "pg_catalog"),
        "it names a DuckDB catalog or schema in SQL",
    ),
}
_TABLES_ALIAS = re.compile(r"scratch_tables_[0-9]+")


def reserved_handle(handle: str) -> str | None:
    """Why ``handle`` cannot name an entry (see ``RESERVED_HANDLES``), or None when it can."""
    if _TABLES_ALIAS.fullmatch(handle):
        return "it names the tables SQL attaches"
    return RESERVED_HANDLES.get(handle)


def handle_for(tool: str | None, content_hash: str, hash_chars: int = 12) -> str:
    """``<slug of tool>_<hash>``: ``[a-z0-9_]``, at most 64 characters, starting with a letter.

    A letter first keeps the handle usable unquoted as an SQL relation name.
    """
    slug = _SLUG.sub("_", (tool or "").lower()).strip("_")[:40].strip("_") or "output"
    if not slug[0].isalpha():
        slug = f"h_{slug}"[:40]
    return f"{slug}_{content_hash[:hash_chars]}"


def _kind(value: Any) -> str:
    """The JSON kind ``value`` is stored as, with its size when a container (``_json_kind``)."""
    kind, size = _json_kind(value)
    if kind == "object":
        return f"object({size:,} key{'' if size == 1 else 's'})"
    if kind == "array" and size is not None:
        return f"array({size:,} item{'' if size == 1 else 's'})"
    return kind


def _json_kind(value: Any) -> tuple[str, int | None]:
    """``(kind, size)``: the JSON type ``value`` is written as (see ``store/_jsontext``: numpy
    scalars as numbers, arrays, sets and tuples as arrays, bytes as text, NaN and infinity as null,
    dates as text, any other object as its text) and a container's length — found from the type,
    never by converting a large value (the spill wrote it once already). Never raises."""
    try:
        return _json_kind_of(value)
    except Exception:  # whatever the object does when looked at: it was written as its text
        return "string", None


def _json_kind_of(value: Any) -> tuple[str, int | None]:
    if value is None:
        return "null", None
    if isinstance(value, bool):
        return "bool", None
    if isinstance(value, float):
        return ("number" if math.isfinite(value) else "null"), None
    if isinstance(value, int):
        return "number", None
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return "string", None
    if isinstance(value, dict):
        return "object", len(value)
    if isinstance(value, (list, tuple, set, frozenset, LazyArray)):
        return "array", len(value)
    frame = _pandas_type("DataFrame")
    if frame is not None and isinstance(value, frame):  # written as its records
        return "array", len(value)  # type: ignore[arg-type]
    ndim = _attr(value, "ndim")
    if isinstance(ndim, int) and ndim > 0 and _attr(value, "dtype") is not None:  # numpy array, Series
        return "array", len(value)
    natural = _natural(value)  # (a scalar: cheap)
    if natural is value:
        return "string", None  # written as its text
    return _json_kind_of(natural)


def _pandas_type(name: str) -> type | None:
    pd = sys.modules.get("pandas")  # (the core never imports pandas: only a value it made is one)
    found = _attr(pd, name) if pd is not None else None
    return found if isinstance(found, type) else None


def _items_sample(value: Any, most: int = 2000) -> list[Any] | None:
    """Up to ``most`` first items of an array-kind value as they were written (cheap: a slice)."""
    try:
        if isinstance(value, list):
            return value[:most]
        if isinstance(value, (tuple, LazyArray)):
            return list(value[:most])
        if isinstance(value, (set, frozenset)):
            return list(itertools.islice(value, most))
        if _json_kind(value)[0] != "array":
            return None
        iloc = _attr(value, "iloc")  # pandas: the records (or values) of its first rows
        if iloc is not None:
            sample = _natural(iloc[:most])
            return sample if isinstance(sample, list) else None
        sample = value[:most].tolist()  # numpy
        return sample if isinstance(sample, list) else None
    except Exception:
        return None


def _short_scalar(value: Any) -> str | None:
    """A scalar worth showing in the sketch itself (it often answers a question outright), as it
    was stored: ``null`` for NaN, a numpy number as a number. Never raises, never writes out an
    int of thousands of digits (``repr`` raises past 4,300 of them)."""
    try:
        if not isinstance(value, (str, int, float, type(None))):
            if _json_kind(value)[0] in ("object", "array", "string"):
                return None
            value = _natural(value)  # a numpy scalar, a Decimal: the number written
        if value is None or isinstance(value, bool):
            return "null" if value is None else str(bool(value)).lower()
        if isinstance(value, int):
            if value.bit_length() > 80:  # (over 24 digits: not shown)
                digits = int(value.bit_length() * 0.30103) + 1
                return f"number (about {digits:,} digits)"
            text = int.__repr__(value)
            return text if len(text) <= 24 else None
        if isinstance(value, float):
            if not math.isfinite(value):
                return "null"  # (as JSON writes NaN and infinity)
            text = repr(value)
            return text if len(text) <= 24 else None
        if isinstance(value, str) and len(value) <= 40 and "\n" not in value:
            return '"' + str.__str__(value).replace('"', '\\"') + '"'
    except Exception:
        return None
    return None


def _key_of(key: Any) -> str:
    """The text a key was written as (never raises)."""
    if isinstance(key, str):
        return str.__str__(key)
    try:
        return _key_name(key)[0] if not (isinstance(key, int) and key.bit_length() > 256) else "<a long number>"
    except Exception:
        return f"<{type(key).__name__} key>"


def _item_keys(items: list[Any], max_keys: int) -> str | None:
    keys: dict[str, int] = {}
    objects = 0
    # the kinds of the first items, which a streamed spill keeps whole (of the next ones, it keeps
    # the keys alone): its stub says what a whole one says
    kinds = Counter(_json_kind(item)[0] for item in items[:SAMPLE_ITEMS])
    for item in items[:2000]:
        if isinstance(item, dict):
            objects += 1
            for k in item:
                name = _clip_key(_key_of(k))
                keys[name] = keys.get(name, 0) + 1
    if not objects:
        if not items:
            return None
        if len(kinds) == 1 and next(iter(kinds)) == "array":
            return _kind(items[0])
        return "|".join(kind for kind, _ in kinds.most_common())  # (as ``schema`` says it)
    shown = ", ".join(list(keys)[:max_keys])
    more = f" (+{len(keys) - max_keys} more)" if len(keys) > max_keys else ""
    return f"objects with keys {shown}{more}"


def schema_sketch(value: Any, max_keys: int = 10) -> list[str]:
    """A few lines on the top of a JSON value: its keys with kinds (short scalars inline), and the
    keys of array items. At most ``SKETCH_MAX_LINES`` lines, whatever the document.

    The kinds are those of the JSON stored (``value`` may be the caller's object: a numpy array is
    an array, NaN null, a set an array); the sketch never raises, whatever the value holds."""
    try:
        return _schema_sketch(value, max_keys)
    except Exception:  # (an object that raises when looked at): the root line alone
        return [f"$: {_kind(value)}"]


def _schema_sketch(value: Any, max_keys: int) -> list[str]:
    lines = [f"$: {_kind(value)}"]
    if not isinstance(value, dict):
        items = _items_sample(value)
        if items is not None:
            described = _item_keys(items, max_keys)
            if described:
                lines.append(f"$[*]: {described}")
        return [_clean(line, SKETCH_LINE_CHARS) for line in lines]
    for i, (key, child) in enumerate(value.items()):
        if len(lines) >= SKETCH_MAX_LINES - 1 and i < len(value) - 1:
            lines.append(f"… {len(value) - i} more keys")
            break
        path = _key_path(_key_of(key))
        scalar = _short_scalar(child)
        lines.append(f"{path}: {scalar}" if scalar is not None else f"{path}: {_kind(child)}")
        items = _items_sample(child) if not isinstance(child, (str, dict)) else None
        if items:
            described = _item_keys(items, max_keys)
            if described:
                lines.append(f"{path}[*]: {described}")
    return [_clean(line, SKETCH_LINE_CHARS) for line in lines[: SKETCH_MAX_LINES + 1]]


def _clip_key(key: str) -> str:
    """A key as the sketch names it: at most ``KEY_CHARS`` characters, cut with ``…``."""
    return key if len(key) <= KEY_CHARS else key[: KEY_CHARS - 1] + "…"


def _key_path(key: str) -> str:
    """``$.key``, or ``$["key"]`` for a key that is no identifier or is clipped (marked ``…``)."""
    if len(key) <= KEY_CHARS and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"$.{key}"
    return f"$[{_quote(key)}]"


def _quote(text: str) -> str:
    return '"' + text[:40].replace("\\", "\\\\").replace('"', '\\"') + ('…"' if len(text) > 40 else '"')


def _clean(line: str, limit: int = PREVIEW_LINE_CHARS) -> str:
    line = _CONTROL.sub("\ufffd", line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def catalog_preview(body: bytes, lines: int = 5, max_chars: int = 300) -> str:
    """The short preview the catalog keeps (``list_entries`` is metadata, not content)."""
    head = body[: lines * (PREVIEW_LINE_CHARS * 4 + 1)].decode("utf-8", errors="replace")
    text = "\n".join(_clean(line) for line in head.split("\n")[:lines])
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _pick_lines(total: int, preview_lines: int) -> tuple[list[int], list[int]]:
    """Line numbers of the head and the tail of a preview of ``preview_lines`` lines (2 : 1)."""
    if total <= preview_lines:
        return list(range(1, total + 1)), []
    tail_n = preview_lines // 3
    head_n = preview_lines - tail_n
    return list(range(1, head_n + 1)), list(range(total - tail_n + 1, total + 1))


def _fit_preview(head: list[tuple[int, str]], tail: list[tuple[int, str]], total: int) -> None:
    """Drop lines (the last of the head, the first of the tail: 2 : 1) until the preview fits
    ``PREVIEW_MAX_CHARS``: by the rows' lengths while far over (rendering it again per line was
    quadratic), then by rendering it."""
    length = len(_render_preview(head, tail, total))
    while head and length > PREVIEW_MAX_CHARS + 64:  # (the "… N lines omitted …" row varies less)
        n, line = tail.pop(0) if len(tail) * 2 > len(head) else head.pop()
        length -= len(str(n)) + len(line) + 2
    while head and len(_render_preview(head, tail, total)) > PREVIEW_MAX_CHARS:
        if len(tail) * 2 > len(head):
            tail.pop(0)  # keep the very last lines
        else:
            head.pop()


def _render_preview(head: list[tuple[int, str]], tail: list[tuple[int, str]], total: int) -> str:
    rows = [f"{n}\t{line}" for n, line in head]
    if tail:
        omitted = tail[0][0] - (head[-1][0] if head else 0) - 1
        if omitted > 0:
            rows.append(f"… {omitted:,} lines omitted …")
        rows += [f"{n}\t{line}" for n, line in tail]
    elif head and head[-1][0] < total:
        rows.append(f"… {total - head[-1][0]:,} more lines …")
    return "\n".join(rows)


def build_stub(
    entry: Entry,
    reader: BodyReader,
    *,
    preview_lines: int,
    value: Any = None,
    model: str,
    tokens_estimate: bool,
    tokens_exact: bool = True,
    relations: list[dict[str, Any]] | None = None,
    embedded: list[dict[str, Any]] | None = None,
    unwrapped: str | None = None,
) -> dict[str, Any]:
    """The stub of a spilled entry as plain data (``render_stub_text`` makes the model's text).

    ``preview`` holds the first and last lines of the body (2 : 1), clipped to
    ``PREVIEW_LINE_CHARS``; the text for a model keeps as many of them as fit its token bound.
    """
    total = entry.line_count or 0
    # no more lines than could fit (each shows as at least "N\t" and its newline): a notebook's
    # preview_lines of 30,000 read and re-rendered them all, a minute per spill
    head_nos, tail_nos = _pick_lines(total, min(preview_lines, PREVIEW_MAX_CHARS // 3 + 1))
    raw_head = reader.read_lines(head_nos[0], head_nos[-1]) if head_nos else []
    raw_tail = reader.read_lines(tail_nos[0], tail_nos[-1]) if tail_nos else []
    clipped = any(len(line) > PREVIEW_LINE_CHARS for line in raw_head + raw_tail)
    head = [(n, _clean(line)) for n, line in zip(head_nos, raw_head, strict=False)]
    tail = [(n, _clean(line)) for n, line in zip(tail_nos, raw_tail, strict=False)]
    _fit_preview(head, tail, total)
    bare_cr = entry.format in ("text", "markdown") and _bare_cr(reader, bool(entry.meta.get("utf8_errors")))
    stub: dict[str, Any] = {
        "handle": entry.key,
        "source_tool": entry.source_tool,
        "server": entry.server,
        "format": entry.format,
        "size": entry.size_bytes,
        "lines": total,
        "tokens": entry.tokens,
        "tokens_exact": tokens_exact,
        "tokens_model": model,
        "tokens_estimate": tokens_estimate,
        "preview": _render_preview(head, tail, total),
        "preview_head": [line for _, line in head],
        "preview_tail": [line for _, line in tail],
        "preview_tail_start": tail[0][0] if tail else None,
        "preview_lines": len(head) + len(tail),
        "preview_clipped": clipped,
        "note": _note(entry, head, tail, total, clipped, bare_cr),
        "expires_at": entry.expires_at,
    }
    if bare_cr:
        stub["bare_cr"] = True
    from ..explore._csv import shape_of

    shape = shape_of(entry.meta)
    if shape is not None:  # a CSV table: SQL reads its rows too (h.rows)
        stub["csv"] = shape.describe()
    if entry.format == "json" and value is not None:
        stub["schema"] = schema_sketch(value)
    if relations is None and entry.format == "json" and value is not None:
        from ..explore._relations import stub_relations  # the SQL relations: h, and h.items per array

        relations = stub_relations(entry.key, value)
    for doc in embedded or []:  # a document inside a string: its rows are the relation to query
        if doc.get("relation"):
            arrays = doc.get("arrays") or []
            name = arrays[0][0] if arrays else doc["relation"]
            relations = [
                *(relations or [{"name": entry.key, "rows": "the document"}]),
                {"name": f"{entry.key}.{name}", "path": doc["path"], "rows": "inside a string"},
            ]
            break
    if relations:
        stub["relations"] = relations
    if embedded:
        stub["embedded"] = embedded
    if unwrapped:
        stub["unwrapped"] = unwrapped
    stub["next"] = next_calls(stub)
    return stub


def _bare_cr(reader: BodyReader, utf8_errors: bool) -> bool:
    """Whether a text's lines were split at bare CRs (a body of its own: see ``normalise``)."""
    from ..store._format import has_bare_cr

    if reader.body_path == reader.raw_path:  # (the text as given: no line was split)
        return False
    return has_bare_cr(reader.read_raw(0, min(reader.raw_size, 1 << 20))) or not utf8_errors


def _note(
    entry: Entry,
    head: list[tuple[int, str]],
    tail: list[tuple[int, str]],
    total: int,
    clipped: bool,
    bare_cr: bool,
) -> str:
    if not head and not tail:
        note = f"no preview lines of the {total:,} lines"
    elif tail:
        note = f"preview: lines 1-{head[-1][0]:,} and {tail[0][0]:,}-{total:,} of {total:,}"
    else:
        note = f"preview: lines 1-{head[-1][0]:,} of {total:,}"
    if clipped:
        note += f", long lines clipped to {PREVIEW_LINE_CHARS} characters"
    if entry.format == "json":
        note += " (the body is pretty-printed, 2-space indent)"
    if entry.meta.get("utf8_errors"):
        note += "; not valid UTF-8 (read_handle returns the exact bytes)"
    if bare_cr:
        note += "; bare CR (\\r) line breaks read as new lines (read_handle returns the exact bytes)"
    return note


def _array_hint(stub: dict[str, Any]) -> str | None:
    """The array of records to go through next: the one SQL names as a relation (a Prometheus
    answer's ``$.data.result``; the sketch's first array was ``$.grid``, an array of arrays), else
    the sketch's first array."""
    for relation in stub.get("relations") or []:
        path = relation.get("path")
        if isinstance(path, str) and path.startswith("$") and relation.get("rows") != "inside a string":
            return path
    for line in stub.get("schema") or []:
        path, _, kind = str(line).partition(": ")
        if kind.startswith("array(") and "[*]" not in path and "…" not in path:  # (a clipped key: no path)
            return path
    return None


HOLE = "…"
"""An argument of a next step the caller fills in (a pattern, a path, fields); ``next_steps``
marks a number to choose with ``Hole`` (written ``start=…``)."""


class Hole:
    """A number the caller picks in a next step (``slice(start=…)``)."""

    def __repr__(self) -> str:
        return HOLE


def next_steps(stub: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls worth making next with a stub's handle, each ``(tool, arguments)``; an argument
    for the caller to fill in is ``Hole()`` or holds ``HOLE``. One list, written for a model
    (``stub["next"]``) and as command lines for a person (the CLI, which leaves out steps with a
    hole)."""
    h = stub["handle"]
    if stub.get("format") in ("json", "jsonl"):
        path = _array_hint(stub) or "$"
        rel = (stub.get("relations") or [{}])[-1].get("name") or h
        return [
            ("schema", {"handle": h}),
            ("item_schema", {"handle": h, "path": path}),
            ("iterate_over", {"handle": h, "path": path, "fields": HOLE, "limit": 20}),
            ("get_in", {"handle": h, "path": HOLE}),
            ("grep", {"handle": h, "pattern": HOLE}),
            ("sql", {"query": f"SELECT count(*) FROM {rel}"}),
        ]
    return [
        ("grep", {"handle": h, "pattern": HOLE}),
        ("slice", {"handle": h, "start": Hole(), "end": Hole()}),
        ("tail", {"handle": h, "lines": 50}),
        ("schema", {"handle": h}),
        ("sql", {"query": f"SELECT line_no, line FROM {h} WHERE line LIKE '%{HOLE}%' LIMIT 20"}),
    ]


def has_hole(arguments: dict[str, Any]) -> bool:
    """Whether a next step leaves an argument for its caller to fill in."""
    return any(isinstance(v, Hole) or (isinstance(v, str) and HOLE in v) for v in arguments.values())


def next_calls(stub: dict[str, Any]) -> list[str]:
    """The next steps as a model reads them: ``iterate_over(handle="h", path="$.items", fields="…",
    limit=20)``, ``slice(handle="h", start=…, end=…)``."""
    written = []
    for tool, arguments in next_steps(stub):
        holes = {k: v for k, v in arguments.items() if isinstance(v, Hole)}
        then = ", ".join(f"{k}={HOLE}" for k in holes)
        written.append(call_repr(tool, {k: v for k, v in arguments.items() if k not in holes}, then))
    return written


def _size(n: int) -> str:
    from ..explore._base import fmt_bytes

    return fmt_bytes(n)


def _tokens_text(stub: dict[str, Any]) -> str:
    tokens = stub.get("tokens")
    if tokens is None:
        return "tokens not counted yet"
    est = " (estimate)" if stub.get("tokens_estimate") else ""
    return f"{tokens:,} tokens{est}" if stub.get("tokens_exact", True) else f"≥ {tokens:,} tokens{est}"


def _next_line(
    stub: dict[str, Any],
    prefix: str = "",
    path_chars: int = SKETCH_LINE_CHARS,
    csv: str | None = None,
    brief: bool = False,
) -> str:
    """The next calls, in one line; the handle is named once (the header), SQL's relation once.
    ``prefix``: the tools were published with it (``sp_schema``), so the line names them so;
    a path longer than ``path_chars`` is clipped (marked ``…``); ``csv``: a CSV's description in
    place of the stub's (shorter); ``brief``: the tools alone (no path, relation or columns)."""
    h, x = stub["handle"], prefix
    if brief:
        sql = f"{x}sql over {h}" + (".rows" if stub.get("csv") else "")
        if stub["format"] in ("json", "jsonl"):
            return f"Next, with this handle: {x}schema → {x}item_schema / {x}get_in; {x}grep; {sql}."
        return f"Next, with this handle: {x}schema; {x}grep; {x}slice; {sql}."
    if stub["format"] in ("json", "jsonl"):
        path = _array_hint(stub)
        path = path if path and len(path) <= path_chars else None
        rel = str((stub.get("relations") or [{}])[-1].get("name") or h)
        steps = f"{x}item_schema / {x}get_in"
        if path:
            steps = f'{x}item_schema path="{path}" → {x}iterate_over / {x}get_in'
        inside = [e for e in stub.get("embedded") or [] if e.get("format") == "json"]
        if inside:  # the payload is inside a string: go through it
            p = _clean(str(inside[0]["path"]), path_chars)
            return (
                f'Next, with this handle: {x}schema path="{p}" (a JSON document inside a string) → {x}item_schema / '
                f"{x}get_in through it ({p}.…); {x}grep; {x}sql over {rel}."
            )
        return f"Next, with this handle: {x}schema → {steps}; {x}grep; {x}sql over {rel}."
    if stub.get("csv"):
        described = stub["csv"] if csv is None else csv
        return (
            f"Next, with this handle: {x}sql over {h}.rows ({described}) or {h}(line_no, line); {x}grep; {x}slice."
        )
    return (
        f"Next, with this handle: {x}grep; {x}slice; {x}tail; {x}sql over {h}(line_no, line)."
    )


def _embedded_lines(embedded: list[dict[str, Any]]) -> list[str]:
    """One line per path with the array indices as ``[*]`` and format: the documents in a list's
    strings (an issue list's bodies) said once, not as ``$[0].body``, ``$[1].body``, ``$[2].body``."""
    from ..explore._embedded import MAX_EMBEDDED

    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for e in embedded:
        groups.setdefault((re.sub(r"\[\d+\]", "[*]", str(e["path"])), str(e["format"])), []).append(e)
    out = []
    for (path, fmt), docs in groups.items():
        if len(docs) == 1:
            out.append(f"{docs[0]['path']}: embedded {fmt} ({docs[0]['lines']:,} lines)")
            continue
        lo, hi = min(d["lines"] for d in docs), max(d["lines"] for d in docs)
        each = f"{lo:,} lines each" if lo == hi else f"{lo:,}-{hi:,} lines"
        found = f"{len(docs)}+" if len(embedded) >= MAX_EMBEDDED else f"{len(docs)}"
        out.append(f"{path}: embedded {fmt} ({found} of these strings, {each})")
    return out


def render_stub_text(stub: dict[str, Any], count: Callable[[str], int] | None = None) -> str:
    """The stub as a model reads it; with ``count`` (the model's token counter) it is cut to fit
    ``STUB_MAX_TOKENS``: preview lines go first (tail, then head), then sketch lines. Every line is
    clipped (marked ``…``), and when even the fewest lines do not fit, the tool's name and the
    paths are clipped harder: the bound holds whatever the keys, names and paths hold."""
    origin = " (unwrapped from an MCP CallToolResult)" if stub.get("unwrapped") else ""
    stored = "already stored (same bytes)" if stub.get("reused") else "stored"
    cr = " (split at bare CRs)" if stub.get("bare_cr") else ""

    def header_of(tool_chars: int) -> str:
        tool = _clean(str(stub.get("source_tool") or "output"), tool_chars)
        return (
            f'[scratchpad] {tool} output{origin} {stored} as handle "{stub["handle"]}", not in context: '
            f"{stub['format']}, {_size(stub['size'])}, {stub['lines']:,} lines{cr}, {_tokens_text(stub)}."
        )

    header = header_of(60)
    sketch = [_clean(str(s), SKETCH_LINE_CHARS) for s in stub.get("schema") or []]
    extras = [_clean(line, SKETCH_LINE_CHARS) for line in _embedded_lines(stub.get("embedded") or [])][:3]
    head = list(stub.get("preview_head") or [])
    tail = list(stub.get("preview_tail") or [])
    tail_start = stub.get("preview_tail_start") or 0
    total = stub.get("lines") or 0
    show_lines = not sketch  # JSON: the sketch says more than its first lines

    def assemble(n_head: int, n_tail_cut: int, n_extras: int, n_sketch: int) -> str:
        parts = [header]
        if n_sketch:
            parts += ["Schema:", *("  " + s for s in sketch[:n_sketch])]
        parts += ["  " + e for e in extras[:n_extras]]
        kept_head, kept_tail = head[:n_head], tail[n_tail_cut:]
        if show_lines and (kept_head or kept_tail):
            numbered_head = list(enumerate(kept_head, start=1))
            numbered_tail = list(enumerate(kept_tail, start=tail_start + n_tail_cut))
            cut = " (long lines clipped)" if stub.get("preview_clipped") else ""
            parts.append(f"Preview{cut}:")
            parts.append(_render_preview(numbered_head, numbered_tail, total))
        parts.append(_next_line(stub))
        return "\n".join(parts)

    state = (len(head), 0, len(extras), len(sketch))
    text = assemble(*state)
    if count is None or count(text) <= STUB_MAX_TOKENS:
        return text
    # What goes, in order: tail lines (the first of them), head lines, extras, then sketch lines
    # down to two. Each cut only shortens the text, so the fewest cuts that fit are found by a
    # binary search over that sequence: a handful of counts, not one per line dropped.
    cuts = [state]
    while True:
        n_head, n_tail_cut, n_extras, n_sketch = state
        n_tail = len(tail) - n_tail_cut
        if show_lines and n_tail and n_tail * 2 >= n_head:
            state = (n_head, n_tail_cut + 1, n_extras, n_sketch)
        elif show_lines and n_head:
            state = (n_head - 1, n_tail_cut, n_extras, n_sketch)
        elif n_extras:
            state = (n_head, n_tail_cut, n_extras - 1, n_sketch)
        elif n_sketch > 2:
            state = (n_head, n_tail_cut, n_extras, n_sketch - 1)
        else:
            break
        cuts.append(state)
    low, high = 1, len(cuts) - 1  # cuts[0] is over the bound; if none fits, the last one is kept
    while low < high:
        mid = (low + high) // 2
        if count(assemble(*cuts[mid])) <= STUB_MAX_TOKENS:
            high = mid
        else:
            low = mid + 1
    text = assemble(*cuts[high]) if high else text
    if count(text) <= STUB_MAX_TOKENS:
        return text
    # even the fewest lines are too many tokens (keys, a tool name, paths or a CSV's column names
    # of dense characters): the root line alone, the tool's name and the paths clipped short, then
    # the column names clipped, then left out, then the sketch and the calls' details — counted
    # after every step; last, the text is clipped to fit (the handle, in the first line, kept whole)
    n_head, n_tail_cut, _, _ = cuts[-1]
    header = header_of(16)
    sketch = [_clean(s, 40) for s in sketch[:1]]
    body = assemble(n_head, n_tail_cut, 0, len(sketch)).split("\n")[:-1]
    csv = str(stub.get("csv") or "")
    steps = [
        (body, _next_line(stub, path_chars=16)),
        (body, _next_line(stub, path_chars=16, csv=shorter_description(csv, 40))),
        (body, _next_line(stub, path_chars=16, csv=shorter_description(csv, 0))),
        ([header], _next_line(stub, path_chars=16, csv=shorter_description(csv, 0), brief=True)),
    ]
    tried = ""
    for lines, next_line in steps:
        text = "\n".join([*lines, next_line])
        if text != tried and count(text) <= STUB_MAX_TOKENS:  # (a step that changed nothing: not counted again)
            return text
        tried = text
    return _clip_to_fit(text, f'"{stub["handle"]}"', count)


def _clip_to_fit(text: str, keep: str, count: Callable[[str], int]) -> str:
    """``text`` cut (marked ``…``) to at most ``STUB_MAX_TOKENS`` tokens, never before the end of
    ``keep`` (the handle): the longest prefix that fits, found by a binary search."""
    at = text.find(keep)
    low = at + len(keep) if at >= 0 else 0
    high = len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if count(text[:mid] + "…") <= STUB_MAX_TOKENS:
            low = mid
        else:
            high = mid - 1
    clipped = text[:low] + "…"
    if count(clipped) <= STUB_MAX_TOKENS:
        return clipped
    return f"[scratchpad] output stored as handle {keep}, not in context."  # (a handle: at most 64 ASCII characters)
