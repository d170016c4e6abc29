"""Unions of JSON shapes, built level by level over every value at a path.

The values of each key across all the objects at a path are gathered into one list (C-level
``map``/``itemgetter``) and summarised together: one step per value instead of one method call per
node, which is what makes ``schema`` and ``item_schema`` over 100,000 records affordable in Python.

Every pass is linear in the values it reads (objects that each have their own keys too: a key per
object made the gathering O(keys x objects), 33 s for 20,000 of them), and takes a ``check``: the
tool call's ``ctx.check_time`` (or the spill worker's own bound), called as the pass goes, so a
hostile input ends as the call's ``timeout``. Many distinct keys each held by few of the objects
(ids as keys, a key per record) are folded into one ``{*}`` entry, the union of their values, as a
map is: one row instead of a row per key.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from itertools import chain
from operator import itemgetter
from typing import Any

from .._bounded import sendable
from ._paths import kind_of

__all__ = ["MAX_ITEM_KEYS", "ItemKeyCounts", "Shape", "field_name", "item_key_counts", "map_name"]

MAX_ITEM_KEYS = 500
# more distinct keys than this among the objects at a path: those held by under 1 % of the objects
# are folded into one ``{*}`` entry (a map's values), not a row (and a Shape) each
SPARSE_MIN_KEYS = 200
RARE_SHARE = 100  # a key is rare when fewer than 1 in RARE_SHARE of the objects hold it
MAP_NAMES_KEPT = 100_000  # names of folded keys a Shape keeps (to count them across batches)
CHECK_EVERY = 4096  # objects between two checks of the time in a Python-level loop

Check = Callable[[], None] | None


_KINDS: dict[type, str] = {
    dict: "object",
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "bool",
    type(None): "null",
}


def _columns(dicts: list[dict[str, Any]], check: Check = None) -> dict[str, list[Any]]:
    """The values of each key across ``dicts``, in first-seen key order; linear in the values.

    A key every dict has (the common case): one C-level ``map``. A key some lack (an optional
    field): a scan of the dicts, while the scans cost at most twice the values; past that (a key
    per object, where a scan each was O(keys x objects): 33 s for 20,000 objects), one pass over
    the dicts appends each value of the keys left to its key's list."""
    keys = dict.fromkeys(chain.from_iterable(dicts))
    out: dict[str, list[Any]] = {}
    left: list[str] = []
    allowance: int | None = None  # dict steps the scans may still take (counted at the first miss)
    for key in keys:
        if left:
            left.append(key)
            continue
        try:
            out[key] = list(map(itemgetter(key), dicts))  # every dict has it: the common case
        except KeyError:
            if allowance is None:
                allowance = 2 * sum(map(len, dicts))
            allowance -= len(dicts)
            if allowance < 0:
                left.append(key)
                continue
            if check is not None:
                check()
            out[key] = [d[key] for d in dicts if key in d]
    if not left:
        return out
    found: dict[str, list[Any]] = {key: [] for key in left}
    get = found.get
    for start in range(0, len(dicts), CHECK_EVERY):
        if check is not None:
            check()
        for d in dicts[start : start + CHECK_EVERY]:
            for key, value in d.items():
                column = get(key)
                if column is not None:
                    column.append(value)
    return {key: out[key] if key in out else found[key] for key in keys}


def _rare_keys(columns: dict[str, list[Any]], objects: int) -> list[str]:
    """The keys to fold into ``{*}``: when there are more than ``SPARSE_MIN_KEYS``, those held by
    under 1 % of the ``objects`` (none otherwise)."""
    if len(columns) <= SPARSE_MIN_KEYS:
        return []
    return [key for key, column in columns.items() if len(column) * RARE_SHARE < objects]


def map_name(parent: str | None) -> str:
    """The name of the folded keys under ``parent`` (``{*}``, ``metadata.labels{*}``)."""
    return f"{parent}{{*}}" if parent else "{*}"


class Shape:
    """The union of every value seen at one path (arrays: over all their items).

    Built level by level over all the values at a path at once (``Shape.of``): the values of each
    key are gathered into one list and summarised together, which costs one dict step per node
    instead of one method call per node. Keys held by few of many objects are folded into
    ``rest`` (the union of their values; ``rest_names`` names them, ``MAP_NAMES_KEPT`` at most).
    """

    __slots__ = (
        "count",
        "items",
        "keys",
        "keys_hi",
        "keys_lo",
        "kinds",
        "len_hi",
        "len_lo",
        "objects",
        "rest",
        "rest_names",
        "rest_over",
    )

    def __init__(self) -> None:
        self.count = 0
        self.kinds: Counter[str] = Counter()
        self.keys: dict[str, Shape] = {}
        self.keys_lo = self.keys_hi = 0  # fewest / most keys of an object seen
        self.objects = 0
        self.items: Shape | None = None
        self.len_lo = self.len_hi = 0  # shortest / longest array seen
        self.rest: Shape | None = None  # the values of the keys folded into {*}
        self.rest_names: dict[str, None] = {}  # their names, first seen first
        self.rest_over = False  # more of them than MAP_NAMES_KEPT

    @classmethod
    def of(cls, values: list[Any], depth_left: int, check: Check = None) -> Shape:
        if check is not None:
            check()
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
                columns = _columns(dicts, check)
                rare = _rare_keys(columns, len(dicts))
                if rare:
                    folded = [columns.pop(k) for k in rare]
                    shape.rest = cls.of(list(chain.from_iterable(folded)), depth_left - 1, check)
                    shape._add_rest_names(rare)
                shape.keys = {k: cls.of(column, depth_left - 1, check) for k, column in columns.items()}
        if lists:
            lengths = list(map(len, lists))
            shape.len_lo, shape.len_hi = min(lengths), max(lengths)
            if depth_left > 0:
                shape.items = cls.of(list(chain.from_iterable(lists)), depth_left - 1, check)
        return shape

    def _add_rest_names(self, names: Any) -> None:
        room = MAP_NAMES_KEPT - len(self.rest_names)
        for name in names:
            if name in self.rest_names:
                continue
            if room <= 0:
                self.rest_over = True
                return
            self.rest_names[name] = None
            room -= 1

    def distinct_keys(self) -> int:
        """The distinct keys of the objects seen (the folded ones too; a lower bound past
        ``MAP_NAMES_KEPT`` of them)."""
        return len(self.keys) + sum(1 for k in self.rest_names if k not in self.keys)

    def _fold_rare(self) -> None:
        """Fold the listed keys now rare (batches merged), when there are more than
        ``SPARSE_MIN_KEYS`` of them or some are folded already (a last, small batch's own key)."""
        if len(self.keys) <= SPARSE_MIN_KEYS and self.rest is None:
            return
        rare = [k for k, child in self.keys.items() if child.count * RARE_SHARE < self.objects]
        for k in rare:
            child = self.keys.pop(k)
            self.rest = child if self.rest is None else self.rest.merge(child)
        self._add_rest_names(rare)

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
        if other.rest is not None:
            self.rest = other.rest if self.rest is None else self.rest.merge(other.rest)
            self._add_rest_names(other.rest_names)
            self.rest_over = self.rest_over or other.rest_over
        if other.items is not None:
            self.items = other.items if self.items is None else self.items.merge(other.items)
        self._fold_rare()
        return self

    def describe(self) -> str:
        parts = []
        for kind, _ in self.kinds.most_common():
            if kind == "object":
                lo, hi = self.keys_lo, self.keys_hi
                n = f"{lo}" if lo == hi else f"{lo}-{hi}"
                known = self.distinct_keys()
                over = "+" if self.rest_over else ""
                distinct = f", {known:,}{over} distinct" if known and (known != hi or over) else ""
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
    for v in values:  # stops at the ninth distinct value, or the first that is no string
        if type(v) is not str:  # (before the lookup: a list there raised "unhashable type")
            return None
        if v not in distinct:
            if len(distinct) >= ENUM_MAX_VALUES or len(v) > ENUM_MAX_CHARS:
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
    check: Check = None,
    parents: dict[str, str | None] | None = None,
) -> None:
    """Kinds per dotted key (``metadata.score``) over every value at ``name``, column by column.

    ``batch``: these values are one batch of many (``ItemKeyCounts``): ``enums`` gets the
    distinct values of any size of batch, and None for a key that cannot be an enum. Keys held
    by few of many objects are counted together as ``<name>{*}`` (``map_name``).
    """
    if check is not None:
        check()
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
    _nested_counts(nested, name, counts, depth, enums, batch, check, parents)


def _nested_counts(
    objects: list[dict[str, Any]],
    name: str | None,
    counts: dict[str, Counter[str]],
    depth: int,
    enums: Any,
    batch: bool,
    check: Check,
    parents: dict[str, str | None] | None = None,
) -> None:
    """``_flat_counts`` of each key's values over ``objects`` (under ``name``); the rare keys of
    many as one ``{*}`` column. ``parents``: gets the parent of each name counted."""
    columns = _columns(objects, check)
    rare = _rare_keys(columns, len(objects))
    folded = list(chain.from_iterable(columns.pop(k) for k in rare)) if rare else []
    for key, column in columns.items():
        child = field_name(name, key)
        if parents is not None and (child in counts or len(counts) < MAX_ITEM_KEYS):
            parents[child] = name
        _flat_counts(column, child, counts, depth + 1, enums, batch, check, parents)
    if folded:
        if parents is not None:
            parents[map_name(name)] = name
        _flat_counts(folded, map_name(name), counts, depth + 1, enums, batch, check, parents)


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
    items: list[Any],
    enums: dict[str, list[tuple[str, int]]] | None = None,
    batch: bool = False,
    check: Check = None,
    parents: dict[str, str | None] | None = None,
) -> dict[str, Counter[str]]:
    """Kinds per dotted key over ``items``; with ``enums``, also the distinct values (and how many
    items have each) of each string field that takes at most ``ENUM_MAX_VALUES`` of them. Keys
    held by few of many items are counted together as ``{*}`` (``map_name``). ``parents``: gets
    the parent of each name counted (None: an item's own key)."""
    counts: dict[str, Counter[str]] = {}
    objects = [v for v in items if isinstance(v, dict)]
    if len(objects) < len(items):
        counts["(item)"] = Counter()
        _count_kinds([v for v in items if not isinstance(v, dict)], counts["(item)"])
    _nested_counts(objects, None, counts, 0, enums, batch, check, parents)
    return counts


class ItemKeyCounts:
    """``item_key_counts`` (with enums) over items that come in batches: a large array read a
    segment at a time. The result is the same as over all the items at once."""

    def __init__(self) -> None:
        self.total = 0
        self.counts: dict[str, Counter[str]] = {}
        self._enums: dict[str, dict[str, int] | None] = {}
        self._objects = 0  # the items that are objects
        self._parents: dict[str, str | None] = {}  # each name's parent (None: an item's own key)

    def add(self, items: list[Any], check: Check = None) -> None:
        self.total += len(items)
        found: dict[str, list[tuple[str, int]] | None] = {}
        parents: dict[str, str | None] = {}
        counts = item_key_counts(items, found, batch=True, check=check, parents=parents)  # type: ignore[arg-type]
        self._objects += len(items) - sum(counts["(item)"].values()) if "(item)" in counts else len(items)
        for name, counter in counts.items():
            mine = self.counts.get(name)
            if mine is not None:
                mine.update(counter)
            elif len(self.counts) < MAX_ITEM_KEYS:
                self.counts[name] = counter
        for name, parent in parents.items():
            if name in self.counts:
                self._parents.setdefault(name, parent)
        for name, values in found.items():
            self._add_enum(name, values)
        self._fold_rare()

    def _add_enum(self, name: str, values: Any) -> None:
        if name in self._enums and self._enums[name] is None:
            return
        if values is None:
            self._enums[name] = None
            return
        acc = self._enums.setdefault(name, {})
        assert acc is not None
        for value, n in values.items() if isinstance(values, dict) else values:
            acc[value] = acc.get(value, 0) + n
        if len(acc) > ENUM_MAX_VALUES:
            self._enums[name] = None

    def _fold_rare(self) -> None:
        """Count together, as their parent's ``{*}``, the keys (with no keys under them) now rare
        where the batches so far fold some, or hold more than ``SPARSE_MIN_KEYS``: as one pass
        over all the items would (a last, small batch's own key was a row of its own)."""
        children: dict[str | None, list[str]] = {}
        for name, parent in self._parents.items():
            children.setdefault(parent, []).append(name)
        for parent, names in children.items():
            folded = map_name(parent)
            if folded not in self.counts and len(names) <= SPARSE_MIN_KEYS:
                continue
            objects = self._objects if parent is None else self.counts.get(parent, Counter())["object"]
            for name in names:
                counter = self.counts.get(name)
                if name == folded or name in children or counter is None:
                    continue
                if sum(counter.values()) * RARE_SHARE < objects:
                    self.counts.setdefault(folded, Counter()).update(self.counts.pop(name))
                    self._parents.pop(name, None)
                    self._parents[folded] = parent
                    self._add_enum(folded, self._enums.pop(name, {}))

    def enums(self) -> dict[str, list[tuple[str, int]]]:
        return {
            name: sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))
            for name, acc in self._enums.items()
            if acc is not None and sum(acc.values()) >= ENUM_MIN_ITEMS
        }


# -- the fields worth a first look -------------------------------------------------------------

SAMPLE_FOR_FIELDS = 50  # items a choice of fields looks at
# a field named so says what an item is: the exact word (case and "_"/"-" aside) first, by rank;
# a name ending in one (displayName, nodeName) after every exact one
_TELLING_WORDS = {
    **dict.fromkeys(("name", "title"), 0),
    **dict.fromkeys(("number", "state", "status", "phase"), 1),
    **dict.fromkeys(("namespace", "login", "type", "kind", "level", "severity", "reason", "code"), 2),
}
# an id, a URL, a hash: distinct for every item and meaningless to read (a name, or its last part)
_OPAQUE = re.compile(
    r"(?i:(?:^|[_\-.])(?:id|ids|uid|uuid|guid|url|uri|href|link|sha|sha1|sha256|hash|digest|etag|checksum|token)$"
    r"|^(?:resourceversion|selflink)$)"
    r"|[a-z0-9](?:Id|Uid|Url|Uri|Href|Link|Sha|Hash|Digest)$"  # (camelCase: userId, not "paid")
)
_LONG_TEXT = 120  # characters: a free-text field (an issue's body) is cut in every row


def _last_key(name: str) -> tuple[str, bool]:
    """The last key of a field name and whether it is a plain name (not one in brackets)."""
    if name.endswith('"]'):
        at = name.rfind('["')
        try:
            return str(json.loads(name[at + 1 : -1])), False
        except ValueError:
            return name, False
    return name.rsplit(".", 1)[-1], True


def _rank(key: str, plain: bool) -> int | None:
    """The tier of a field by its name: 0-2 an exact telling word, 3-5 a name ending in one."""
    if not plain:
        return None
    word = key.lower().strip("_-")
    if word in _TELLING_WORDS:
        return _TELLING_WORDS[word]
    for w, rank in _TELLING_WORDS.items():
        if len(word) > len(w) and word.endswith(w) and w in ("name", "title", "status", "state", "type"):
            return 3 + rank
    return None


def telling_fields(
    items: Any,
    names: list[str] | None = None,
    most: int = 4,
    values: dict[str, list[tuple[str, int]]] | None = None,
) -> list[str]:
    """Up to ``most`` scalar fields of ``items`` that say what each item is, for ``iterate_over``
    (or SQL): named like ``name``, ``title``, ``number``, ``state``, ``phase``, ``namespace``
    first, then fields taking several values; never one that holds a single value (``kind: Pod``
    in every item), an id, a URL or a hash, or long free text. In document order.

    ``items``: the items (the first ``SAMPLE_FOR_FIELDS`` are looked at); ``names``: the candidate
    fields in document order (else the scalar keys of those items, dotted); ``values``: a field's
    distinct values over the whole array, when counted (item_schema's), which say a field is
    constant better than a sample does. Empty when no field qualifies."""
    from ._paths import PathError, PathMiss, parse_path, resolve

    sample = [v for v in list(items[:SAMPLE_FOR_FIELDS]) if isinstance(v, dict)]
    if not sample:
        return []
    if names is None:
        counts = item_key_counts(sample)
        scalar = {"string", "number", "bool", "null"}
        names = [k for k, c in counts.items() if "{*}" not in k and k != "(item)" and set(c) <= scalar]
    scored: list[tuple[int, int, int, str]] = []
    for order, name in enumerate(names):
        key, plain = _last_key(name)
        if _OPAQUE.search(key):
            continue
        try:
            steps = parse_path(name)
        except PathError:
            continue
        seen: list[Any] = []
        for item in sample:
            try:
                seen.append(resolve(item, steps))
            except PathMiss:
                continue
        present = [v for v in seen if v is not None]
        if not present or any(isinstance(v, (dict, list)) for v in present):
            continue
        texts = [v for v in present if isinstance(v, str)]
        if texts and (
            any(t.startswith(("http://", "https://")) for t in texts)
            or sum(map(len, texts)) / len(texts) > _LONG_TEXT
        ):
            continue
        distinct = len({json.dumps(v, sort_keys=True, default=str) for v in present})
        whole = (values or {}).get(name)
        if (whole is not None and len(whole) == 1) or (whole is None and distinct == 1 and len(present) >= 5):
            continue  # one value in every item: says nothing of any one of them
        rank = _rank(key, plain)
        if rank is None:
            rank = 6 if 1 < distinct <= max(8, len(present) // 2) else 7
        scored.append((rank, name.count("."), order, name))
    chosen = sorted(scored)[:most]
    return [name for _rank_, _depth, _order, name in sorted(chosen, key=lambda s: s[2])]
