"""The stub that replaces a spilled output: a dict for programs, a short text for models.

The stub is the first thing a model reads about a spill, so its text is the leanest thing we
write: at most ``STUB_MAX_TOKENS`` (250) tokens of the model, whatever the output. It keeps what
answers questions without a call — totals, the schema sketch of JSON, the first and last lines of
text — says honestly what it cut, and names the next calls with the handle once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..explore._base import call_repr
from ..explore._paths import kind_of
from ..store import BodyReader, Entry

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
    if isinstance(value, dict):
        return f"object({len(value):,} key{'' if len(value) == 1 else 's'})"
    if isinstance(value, list):
        return f"array({len(value):,} item{'' if len(value) == 1 else 's'})"
    return kind_of(value)


def _short_scalar(value: Any) -> str | None:
    """A scalar worth showing in the sketch itself (it often answers a question outright)."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 24 else None
    if isinstance(value, str) and len(value) <= 40 and "\n" not in value:
        return '"' + value.replace('"', '\\"') + '"'
    return None


def _item_keys(items: list[Any], max_keys: int) -> str | None:
    keys: dict[str, int] = {}
    objects = 0
    for item in items[:2000]:
        if isinstance(item, dict):
            objects += 1
            for k in item:
                name = _clip_key(str(k))
                keys[name] = keys.get(name, 0) + 1
    if not objects:
        return _kind(items[0]) if items else None
    shown = ", ".join(list(keys)[:max_keys])
    more = f" (+{len(keys) - max_keys} more)" if len(keys) > max_keys else ""
    return f"objects with keys {shown}{more}"


def schema_sketch(value: Any, max_keys: int = 10) -> list[str]:
    """A few lines on the top of a JSON value: its keys with kinds (short scalars inline), and the
    keys of array items. At most ``SKETCH_MAX_LINES`` lines, whatever the document."""
    lines = [f"$: {_kind(value)}"]
    if isinstance(value, list):
        items = _item_keys(value, max_keys)
        if items:
            lines.append(f"$[*]: {items}")
        return lines
    if not isinstance(value, dict):
        return lines
    for i, (key, child) in enumerate(value.items()):
        if len(lines) >= SKETCH_MAX_LINES - 1 and i < len(value) - 1:
            lines.append(f"… {len(value) - i} more keys")
            break
        path = _key_path(str(key))
        scalar = _short_scalar(child)
        lines.append(f"{path}: {scalar}" if scalar is not None else f"{path}: {_kind(child)}")
        if isinstance(child, list) and child:
            items = _item_keys(child, max_keys)
            if items:
                lines.append(f"{path}[*]: {items}")
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
    stub["next"] = next_calls(entry, stub)
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
    for line in stub.get("schema") or []:
        path, _, kind = str(line).partition(": ")
        if kind.startswith("array(") and "[*]" not in path and "…" not in path:  # (a clipped key: no path)
            return path
    return None


def next_calls(entry: Entry, stub: dict[str, Any]) -> list[str]:
    """The calls worth making next, as a model would write them."""
    h = entry.key
    if entry.format in ("json", "jsonl"):
        path = _array_hint(stub) or "$"
        rel = (stub.get("relations") or [{}])[-1].get("name") or h
        return [
            f'schema(handle="{h}")',
            call_repr("item_schema", {"handle": h, "path": path}),
            call_repr("iterate_over", {"handle": h, "path": path, "fields": "…", "limit": 20}),
            f'get_in(handle="{h}", path="…")',
            f'grep(handle="{h}", pattern="…")',
            f'sql(query="SELECT count(*) FROM {rel}")',
        ]
    return [
        f'grep(handle="{h}", pattern="…")',
        f'slice(handle="{h}", start=…, end=…)',
        f'tail(handle="{h}", lines=50)',
        f'schema(handle="{h}")',
        f"sql(query=\"SELECT line_no, line FROM {h} WHERE line LIKE '%…%' LIMIT 20\")",
    ]


def _size(n: int) -> str:
    from ..explore._base import fmt_bytes

    return fmt_bytes(n)


def _tokens_text(stub: dict[str, Any]) -> str:
    tokens = stub.get("tokens")
    if tokens is None:
        return "tokens not counted yet"
    est = " (estimate)" if stub.get("tokens_estimate") else ""
    return f"{tokens:,} tokens{est}" if stub.get("tokens_exact", True) else f"≥ {tokens:,} tokens{est}"


def _next_line(stub: dict[str, Any], prefix: str = "", path_chars: int = SKETCH_LINE_CHARS) -> str:
    """The next calls, in one line; the handle is named once (the header), SQL's relation once.
    ``prefix``: the tools were published with it (``sp_schema``), so the line names them so;
    a path longer than ``path_chars`` is clipped (marked ``…``)."""
    h, x = stub["handle"], prefix
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
                f"{x}get_in through it ({p}.…); {x}grep path=…; {x}sql over {rel}."
            )
        return f"Next, with this handle: {x}schema → {steps}; {x}grep; {x}sql over {rel}."
    if stub.get("csv"):
        return (
            f"Next, with this handle: {x}sql over {h}.rows ({stub['csv']}) or {h}(line_no, line); "
            f"{x}grep pattern=…; {x}slice start=… end=…."
        )
    return (
        f"Next, with this handle: {x}grep pattern=…; {x}slice start=… end=…; {x}tail; {x}sql over {h}(line_no, line)."
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
    # even the fewest lines are too many tokens (keys, a tool name or paths of dense characters):
    # the root line alone, the tool's name and the paths clipped short
    n_head, n_tail_cut, _, _ = cuts[-1]
    header = header_of(16)
    sketch = [_clean(s, 40) for s in sketch[:1]]
    text = assemble(n_head, n_tail_cut, 0, len(sketch))
    parts = text.split("\n")
    parts[-1] = _next_line(stub, path_chars=16)
    return "\n".join(parts)
