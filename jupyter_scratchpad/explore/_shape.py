"""Unions of JSON shapes, built level by level over every value at a path.

The values of each key across all the objects at a path are gathered into one list (C-level
``map``/``itemgetter``) and summarised together: one step per value instead of one method call per
node, which is what makes ``schema`` and ``item_schema`` over 100,000 records affordable in Python.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from itertools import chain
from operator import itemgetter
from typing import Any

from .._bounded import sendable
from ._paths import kind_of

__all__ = ["MAX_ITEM_KEYS", "ItemKeyCounts", "Shape", "field_name", "item_key_counts"]

MAX_ITEM_KEYS = 500


_KINDS: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "bool",
    type(None): "null",
}


def _columns(dicts: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The values of each key across ``dicts``, in first-seen key order (C-level loops)."""
    out: dict[str, list[Any]] = {}
    for key in dict.fromkeys(chain.from_iterable(dicts)):
        try:
            out[key] = list(map(itemgetter(key), dicts))  # every dict has it: the common case
        except KeyError:
            out[key] = [d[key] for d in dicts if key in d]
    return out


class Shape:
    """The union of every value seen at one path (arrays: over all their items).

    Built level by level over all the values at a path at once (``Shape.of``): the values of each
    key are gathered into one list and summarised together, which costs one dict step per node
    instead of one method call per node.
    """

    __slots__ = ("count", "items", "keys", "keys_hi", "keys_lo", "kinds", "len_hi", "len_lo", "objects")

    def __init__(self) -> None:
        self.count = 0
        self.kinds: Counter[str] = Counter()
        self.keys: dict[str, Shape] = {}
        self.keys_lo = self.keys_hi = 0  # fewest / most keys of an object seen
        self.objects = 0
        self.items: Shape | None = None
        self.len_lo = self.len_hi = 0  # shortest / longest array seen

    @classmethod
    def of(cls, values: list[Any], depth_left: int) -> Shape:
        shape = cls()
        shape.count = len(values)
        types = _type_counts(values)
        if all(t in _KINDS for t in types):
            for t, n in types.items():
                shape.kinds[_KINDS[t]] += n
            dicts = ([v for v in values if type(v) is dict] if len(types) > 1 else values) if dict in types else []
            lists = ([v for v in values if type(v) is list] if len(types) > 1 else values) if list in types else []
        else:  # subclasses of dict/list, or other objects: the slow, general way
            shape.kinds.update(kind_of(v) for v in values)
            dicts = [v for v in values if isinstance(v, dict)]
            lists = [v for v in values if isinstance(v, list)]
        if dicts:
            sizes = list(map(len, dicts))
            shape.objects, shape.keys_lo, shape.keys_hi = len(dicts), min(sizes), max(sizes)
            if depth_left > 0:
                shape.keys = {k: cls.of(column, depth_left - 1) for k, column in _columns(dicts).items()}
        if lists:
            lengths = list(map(len, lists))
            shape.len_lo, shape.len_hi = min(lengths), max(lengths)
            if depth_left > 0:
                shape.items = cls.of(list(chain.from_iterable(lists)), depth_left - 1)
        return shape

    def merge(self, other: Shape) -> Shape:
        """Add ``other`` (the shape of more values at the same path, same depth) to this one: the
        union of two batches is the shape of both (a large array is read a segment at a time)."""
        if self.objects and other.objects:
            self.keys_lo, self.keys_hi = min(self.keys_lo, other.keys_lo), max(self.keys_hi, other.keys_hi)
        elif other.objects:
            self.keys_lo, self.keys_hi = other.keys_lo, other.keys_hi
        if self.kinds["array"] and other.kinds["array"]:
            self.len_lo, self.len_hi = min(self.len_lo, other.len_lo), max(self.len_hi, other.len_hi)
        elif other.kinds["array"]:
            self.len_lo, self.len_hi = other.len_lo, other.len_hi
        self.count += other.count
        self.objects += other.objects
        self.kinds.update(other.kinds)
        for key, shape in other.keys.items():
            mine = self.keys.get(key)
            self.keys[key] = shape if mine is None else mine.merge(shape)
        if other.items is not None:
            self.items = other.items if self.items is None else self.items.merge(other.items)
        return self

    def describe(self) -> str:
        parts = []
        for kind, _ in self.kinds.most_common():
            if kind == "object":
                lo, hi = self.keys_lo, self.keys_hi
                n = f"{lo}" if lo == hi else f"{lo}-{hi}"
                distinct = f", {len(self.keys)} distinct" if self.keys and len(self.keys) != hi else ""
                parts.append(f"object({n} key{'' if n == '1' else 's'}{distinct})")
            elif kind == "array":
                lo, hi = self.len_lo, self.len_hi
                n = f"{lo}" if lo == hi else f"{lo}-{hi}"
                parts.append(f"array({n} items)")
            else:
                parts.append(kind)
        return "|".join(parts)


def _type_counts(values: list[Any]) -> dict[type, int]:
    distinct = set(map(type, values))
    return {distinct.pop(): len(values)} if len(distinct) == 1 else Counter(map(type, values))


def _objects_to_descend(values: list[Any]) -> list[dict[str, Any]]:
    """The non-empty objects among ``values`` (C-level in the common all-objects case)."""
    types = set(map(type, values))
    if types == {dict}:
        return values if all(values) else [v for v in values if v]
    if not any(issubclass(t, dict) for t in types):
        return []
    return [v for v in values if isinstance(v, dict) and v]


def _count_kinds(values: list[Any], counter: Counter[str]) -> None:
    for t, n in _type_counts(values).items():
        kind = _KINDS.get(t)
        counter[kind if kind is not None else kind_of(next(v for v in values if type(v) is t))] += n


ENUM_MAX_VALUES = 8  # a string field with at most this many distinct values lists them
ENUM_MIN_ITEMS = 20
ENUM_MAX_CHARS = 40


def _enum_values(values: list[Any], min_items: int = ENUM_MIN_ITEMS) -> list[tuple[str, int]] | None:
    """The distinct values of a string field that takes few of them (a phase, a namespace)."""
    if len(values) < min_items or type(values[0]) is not str:
        return None
    distinct: dict[Any, int] = {}
    for v in values:  # stops at the ninth distinct value
        if v not in distinct:
            if len(distinct) >= ENUM_MAX_VALUES or type(v) is not str or len(v) > ENUM_MAX_CHARS:
                return None
            distinct[v] = 0
        distinct[v] += 1
    return sorted(distinct.items(), key=lambda kv: (-kv[1], kv[0]))


def _flat_counts(
    values: list[Any],
    name: str,
    counts: dict[str, Counter[str]],
    depth: int,
    enums: dict[str, list[tuple[str, int]] | None] | None = None,
    batch: bool = False,
) -> None:
    """Kinds per dotted key (``metadata.score``) over every value at ``name``, column by column.

    ``batch``: these values are one batch of many (``ItemKeyCounts``): ``enums`` gets the
    distinct values of any size of batch, and None for a key that cannot be an enum.
    """
    nested = _objects_to_descend(values) if depth < 8 else []
    counter = counts.get(name)
    if counter is None and len(counts) < MAX_ITEM_KEYS:
        counter = counts[name] = Counter()
    if counter is not None:
        if nested:  # the parent's own row (metadata  object  2/2) before its children
            counter["object"] += len(nested)
        if len(nested) < len(values):  # the values that are not objects to descend into count here
            rest = [v for v in values if not (isinstance(v, dict) and v)] if nested else values
            _count_kinds(rest, counter)
            if enums is not None and not nested:
                found = _enum_values(rest, 0 if batch else ENUM_MIN_ITEMS)
                if found is not None or batch:
                    enums[name] = found
        if batch and enums is not None and nested:
            enums[name] = None  # objects here: not an enum in any batch
    for key, column in _columns(nested).items():
        _flat_counts(column, field_name(name, key), counts, depth + 1, enums, batch)


# a key a dot path cannot hold as written: dots, brackets, quotes, the comma between fields, "*",
# a leading "$", edge spaces, an index, a control character (a newline broke item_schema's table)
_NEEDS_BRACKETS = re.compile(r"[.\[\]\"',*\x00-\x1f\x7f\\\ud800-\udfff]|^\$|^\s|\s$|^\d+$|^$")


def field_name(parent: str | None, key: Any) -> str:
    """The field name of ``key`` under ``parent`` as iterate_over reads it back: ``metadata.name``,
    and a key a dot would split in brackets: ``metadata.labels["app.kubernetes.io/name"]``
    (``$["a.b"]`` at the top: a name that starts with ``[`` reads as a JSON list of names)."""
    key = str(key)
    if not _NEEDS_BRACKETS.search(key):
        return f"{parent}.{key}" if parent else key
    # (a lone surrogate as its escape, ``\\ud800``: what a model copies is what parse_path reads back)
    return f"{parent or '$'}[{sendable(json.dumps(key, ensure_ascii=False))}]"


def item_key_counts(
    items: list[Any], enums: dict[str, list[tuple[str, int]]] | None = None, batch: bool = False
) -> dict[str, Counter[str]]:
    """Kinds per dotted key over ``items``; with ``enums``, also the distinct values (and how many
    items have each) of each string field that takes at most ``ENUM_MAX_VALUES`` of them."""
    counts: dict[str, Counter[str]] = {}
    objects = [v for v in items if isinstance(v, dict)]
    if len(objects) < len(items):
        counts["(item)"] = Counter()
        _count_kinds([v for v in items if not isinstance(v, dict)], counts["(item)"])
    for key, column in _columns(objects).items():
        _flat_counts(column, field_name(None, key), counts, 1, enums, batch)  # type: ignore[arg-type]
    return counts


class ItemKeyCounts:
    """``item_key_counts`` (with enums) over items that come in batches: a large array read a
    segment at a time. The result is the same as over all the items at once."""

    def __init__(self) -> None:
        self.total = 0
        self.counts: dict[str, Counter[str]] = {}
        self._enums: dict[str, dict[str, int] | None] = {}

    def add(self, items: list[Any]) -> None:
        self.total += len(items)
        found: dict[str, list[tuple[str, int]] | None] = {}
        counts = item_key_counts(items, found, batch=True)  # type: ignore[arg-type]
        for name, counter in counts.items():
            mine = self.counts.get(name)
            if mine is not None:
                mine.update(counter)
            elif len(self.counts) < MAX_ITEM_KEYS:
                self.counts[name] = counter
        for name, values in found.items():
            if name in self._enums and self._enums[name] is None:
                continue
            if values is None:
                self._enums[name] = None
                continue
            acc = self._enums.setdefault(name, {})
            assert acc is not None
            for value, n in values:
                acc[value] = acc.get(value, 0) + n
            if len(acc) > ENUM_MAX_VALUES:
                self._enums[name] = None

    def enums(self) -> dict[str, list[tuple[str, int]]]:
        return {
            name: sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))
            for name, acc in self._enums.items()
            if acc is not None and sum(acc.values()) >= ENUM_MIN_ITEMS
        }
