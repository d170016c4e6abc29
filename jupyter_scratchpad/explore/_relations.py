"""SQL relations that match the data's shape (issue 15 §1).

A spilled JSON document is one row in SQL (``FROM h``). The most common payload wraps an array of
records (``{"items": [...]}``), so each such array gets a relation of its own, one row per record
with nested objects as STRUCT columns: ``h.items`` for ``$.items``, ``h.data__results`` for
``$.data.results`` (one level of nesting; keys that are SQL identifiers). A top-level array is
already rows in ``h``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_ARRAY_RELATIONS", "array_relations", "stub_relations"]

MAX_ARRAY_RELATIONS = 20
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")


def _records(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    head = value[:50]
    return all(type(v) is dict for v in head)


def array_relations(value: Any) -> list[tuple[str, list[str]]]:
    """``[(relation name under the handle's schema, [key, key…]), …]`` for the arrays of records."""
    out: list[tuple[str, list[str]]] = []
    if not isinstance(value, dict):
        return out
    for key, child in value.items():
        if len(out) >= MAX_ARRAY_RELATIONS:
            break
        if not isinstance(key, str) or not _IDENT.fullmatch(key):
            continue
        if _records(child):
            out.append((key, [key]))
        elif isinstance(child, dict):
            for key2, grandchild in child.items():
                if len(out) >= MAX_ARRAY_RELATIONS:
                    break
                if isinstance(key2, str) and _IDENT.fullmatch(key2) and _records(grandchild):
                    out.append((f"{key}__{key2}", [key, key2]))
    return out


def stub_relations(handle: str, value: Any) -> list[dict[str, Any]]:
    """The relations a stub names: the document, then each array of records (the last is used)."""
    rels: list[dict[str, Any]] = [{"name": handle, "rows": "the document" if isinstance(value, dict) else "items"}]
    for name, keys in array_relations(value)[:3]:
        rels.append({"name": f"{handle}.{name}", "path": "$." + ".".join(keys), "rows": len(_at(value, keys))})
    if len(rels) > 2:  # the stub's next line names the last one: make it the largest array
        rels[1:] = sorted(rels[1:], key=lambda r: r["rows"])
    return rels


def _at(value: Any, keys: list[str]) -> Any:
    for k in keys:
        value = value[k]
    return value
