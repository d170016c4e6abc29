"""Strings that hold documents (issue 11 §5): Aura's companion files, done as paths.

MCP servers and APIs return JSON or markdown inside a JSON string (an MCP ``CallToolResult`` is
``{"content": [{"type": "text", "text": "<the real JSON>"}]}``). A string that holds JSON is
walked through as if it were parsed in place: ``content[0].text.items[3].name`` (see
``_paths.resolve``). At spill time the large ones (``EMBED_MIN_BYTES`` or ``EMBED_MIN_LINES``) are
listed in the entry (``find_embedded``) so that the stub, ``schema`` and ``key_path_not_found``
can point at them.

Markdown is detected as Aura does: an ATX heading (1-6 ``#``, then a space or a tab, up to three
spaces of indent) in the first 50 lines.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from threading import Lock
from typing import Any

from ..store._jsontext import MAY_EMBED_PATTERN, _re2, loads
from ._paths import Step, format_path

__all__ = [
    "EMBED_MIN_BYTES",
    "EMBED_MIN_LINES",
    "MAX_EMBEDDED",
    "embedded_json",
    "embedded_relations",
    "find_embedded",
    "is_markdown",
    "may_embed",
]

EMBED_MIN_BYTES = 2048
EMBED_MIN_LINES = 10
MAX_EMBEDDED = 20
WALK_MAX_NODES = 2_000_000  # a spill's walk for embedded documents looks at no more nodes than this

_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]")
_MAY_EMBED = _re2(MAY_EMBED_PATTERN)

_CACHE: OrderedDict[int, tuple[str, Any]] = OrderedDict()
_CACHE_LOCK = Lock()
_CACHE_MAX = 32


_ATX_AT = re.compile(r" {0,3}#{1,6}[ \t]")  # (matched at a line's start: no copy of the line)


def is_markdown(text: str) -> bool:
    """Aura's rule: any ATX heading in the first 50 lines. Reads only the lines' starts (a split
    copied the whole text: an 80 KB string seen a million times took 24 s)."""
    start = 0
    for _ in range(50):
        if _ATX_AT.match(text, start):
            return True
        start = text.find("\n", start) + 1
        if start == 0:
            break
    return False


def embedded_json(text: str) -> Any | None:
    """The object or array a string holds as JSON text, else ``None`` (parsed once, cached)."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "[{":
        return None
    key = id(text)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit[0] is text:
            _CACHE.move_to_end(key)
            return hit[1]
    try:
        value = loads(text)
    except (ValueError, UnicodeError):
        value = None
    if not isinstance(value, (dict, list)):
        value = None
    with _CACHE_LOCK:
        _CACHE[key] = (text, value)  # the string is held: its id cannot be reused while cached
        while len(_CACHE) > _CACHE_MAX:
            _CACHE.popitem(last=False)
    return value


def may_embed(raw: bytes) -> bool:
    """A cheap test before any walk (RE2 over the raw bytes: ~13 ms for 9 MB, Python's re 160 ms)."""
    return _MAY_EMBED.search(raw) is not None


def _embedded_format(text: str) -> str | None:
    short = len(text) < EMBED_MIN_BYTES and len(text.encode("utf-8", "surrogatepass")) < EMBED_MIN_BYTES
    if short and text.count("\n") + 1 < EMBED_MIN_LINES:
        return None
    if embedded_json(text) is not None:
        return "json"
    if is_markdown(text):
        return "markdown"
    return None


def find_embedded(value: Any, limit: int = MAX_EMBEDDED) -> list[dict[str, Any]]:
    """``[{"path", "format", "lines", "bytes"}, …]``: the large strings of ``value`` (at any depth)
    that hold JSON or markdown, in document order, at most ``limit``. Iterative (any depth)."""
    found: list[dict[str, Any]] = []
    path: list[Step] = []  # the steps to the container being walked: O(depth) memory
    iters: list[Any] = [iter([(None, value)])]
    inside: list[int] = []  # ids of the containers being walked (a value that holds itself: a cycle)
    visited = 0
    while iters and len(found) < limit and visited < WALK_MAX_NODES:
        try:
            key, node = next(iters[-1])
        except StopIteration:
            iters.pop()
            if path:
                path.pop()
            if inside:
                inside.pop()
            continue
        visited += 1
        step = None if key is None else Step(key) if isinstance(key, int) else Step(str(key), True)
        if isinstance(node, (dict, list)):
            if id(node) in inside:  # (walked round its cycle until the node cap: 1,000,000 nodes)
                continue
            if step is not None:
                path.append(step)
            inside.append(id(node))
            iters.append(iter(node.items()) if isinstance(node, dict) else enumerate(node))
        elif isinstance(node, str):
            fmt = _embedded_format(node)
            if fmt is not None:
                found.append(
                    {
                        "path": format_path([*path, step] if step is not None else path),
                        "format": fmt,
                        "lines": node.count("\n") + 1,
                        "bytes": len(node.encode("utf-8", "surrogatepass")),
                    }
                )
    return found


_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]+")


def _pointer(steps: list[Step]) -> str:
    """A JSON Pointer (RFC 6901), which DuckDB's JSON functions take as a path."""
    return "".join("/" + str(s.value).replace("~", "~0").replace("/", "~1") for s in steps)


def embedded_relations(value: Any, embedded: list[dict[str, Any]]) -> None:
    """Give each JSON document inside a string its SQL relations, in place: ``relation``
    (``h.content_0_text``: the document's row, or its rows when it is an array of records) and
    ``arrays`` (``h.content_0_text__items``: each array of records in it, as for a document)."""
    from ._paths import parse_path, resolve
    from ._relations import array_relations

    taken: set[str] = set()
    for e in embedded:
        if e.get("format") != "json":
            continue
        try:
            steps = parse_path(e["path"])
            doc = embedded_json(resolve(value, steps))
        except Exception:  # a path we wrote ourselves: never expected, never fatal
            continue
        if doc is None:
            continue
        name = _NOT_IDENT.sub("_", "_".join(str(s.value) for s in steps)).strip("_")[:40] or "document"
        while name in taken:
            name += "_"
        taken.add(name)
        e["relation"] = name
        e["pointer"] = _pointer(steps)
        e["rows"] = isinstance(doc, list)
        e["arrays"] = [[f"{name}__{n}", keys] for n, keys in array_relations(doc)[:5]]
