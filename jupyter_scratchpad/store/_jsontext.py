"""JSON text in and out: exact numbers, any depth, never an exception for a value we were handed.

The fast paths are C: orjson and the stdlib's scanner and encoder. Each refuses or changes some
documents, and those take the iterative, exact paths written here:

* orjson reads an integer beyond 64 bits or a decimal with more digits than a double holds as a
  float (``1000000000000000000000`` becomes ``1e+21``). Such numbers are kept exactly: big
  integers as ``int``, decimals that a float would change as ``ExactNumber`` (a ``float`` that
  remembers its source text and is written back as that text).
* orjson refuses nesting deeper than 1,024 levels when reading and 254 when writing, and the
  stdlib recurses (``RecursionError`` near 1,000). ``loads`` and the writers below walk with an
  explicit stack, so depth is bounded only by memory.
* A pretty-printed body indents every level by two spaces, which is quadratic in depth: 100,000
  levels would be ten gigabytes of spaces. Containers deeper than ``PRETTY_MAX_DEPTH`` are written
  compactly on one line instead (the raw bytes are kept exactly elsewhere).
* Values that are not JSON (tuple keys, sets, NaN, cycles, objects) are written as JSON anyway:
  keys and objects as their ``str``, sets and tuples as arrays, NaN and Infinity as ``null`` (as
  JavaScript's ``JSON.stringify`` and orjson do), a cycle as ``"[circular reference]"``. An object
  whose attributes, ``str`` or iteration raise is written as what can be read of it (its ``repr``,
  else ``"<unprintable TYPE>"``; a container whose iteration fails ends with an
  ``"[iteration failed: ERROR]"`` item): a writer never raises for a value it is handed.
* Keys that would collide once written (``3`` and ``"3"``, ``True`` and ``"true"``) never lose a
  value: a ``str`` key is always written as itself, and a key of another type whose text another
  key of that object already has is written with its type after it, ``"3 (int)"`` (then
  ``"3 (int 2)"``, ... should that be taken too).
* Values that stand for JSON values are written as those (``_natural``): numpy scalars and arrays
  as numbers, booleans and arrays (not ``"1"`` or ``"[1 2 3]"``), dates and times as ISO 8601
  text, a ``Decimal`` as its exact number, pandas' missing values as ``null``. A pandas
  ``DataFrame`` is written as its rows, as the notebook stores one: an array of records (one
  object per row, its index a first column unless it is the default 0..n-1, a repeated column
  name made unique as pandas' CSV reader does, ``a``, ``a.1``), NaN and NaT as ``null``,
  timestamps as ISO 8601 text, never its printed (cut-down) table. A ``Series`` with the default
  index is the array of its values; with another index, the records of its index and its values
  (a column named after the Series, or ``value``). Duck-typed: the core imports neither numpy
  nor pandas (pandas is used only for a value made by it, once it is loaded).
"""

from __future__ import annotations

import datetime as _dt
import gc
import json
import math
import re
import sys
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.encoder import encode_basestring
from typing import Any

import orjson
import re2

__all__ = [
    "PRETTY_MAX_DEPTH",
    "ExactNumber",
    "dumps_compact",
    "dumps_pretty",
    "loads",
    "raw_marks",
    "render_json",
]

PRETTY_MAX_DEPTH = 64
CIRCULAR = '"[circular reference]"'


def _re2_options() -> Any:
    options = re2.Options()
    options.never_capture = True
    options.log_errors = False
    return options


def _re2(pattern: bytes) -> Any:
    return re2.compile(pattern, _re2_options())


# A number token (after ``:``, ``[`` or ``,``) of 16 or more characters may not survive a double:
# such documents are read exactly. Digits inside strings (ids, hashes) rarely look like this.
# RE2 scans at several hundred MB/s where ``re`` manages thirty.
_LONG_NUMBER_PATTERN = rb"[:\[,]\s*-?[0-9][0-9.eE+-]{15,}"
_LONG_NUMBER = _re2(_LONG_NUMBER_PATTERN)
# a JSON text can only embed a document if its raw bytes show a string opening with { or [, or a
# heading after an escaped newline / at a string's start (``explore._embedded``: a cheap test
# before any walk for strings that hold JSON or markdown)
MAY_EMBED_PATTERN = rb'"\s*[\[{]|"(?: {0,3})#{1,6}[ \t]|\\n {0,3}#{1,6}[ \t]'


def _raw_marks_set() -> Any:
    marks = re2.Set.SearchSet(_re2_options())
    marks.Add(_LONG_NUMBER_PATTERN)  # 0
    marks.Add(MAY_EMBED_PATTERN)  # 1
    marks.Compile()
    return marks


_RAW_MARKS = _raw_marks_set()


def raw_marks(raw: bytes) -> tuple[bool, bool]:
    """``(long_numbers, may_embed)`` of a JSON text, in one RE2 pass over its bytes (a spill used to
    scan a 1 MB text twice, 1.5 ms each): whether a number token may not survive a double (``loads``
    then reads exactly), and whether a string may hold a document."""
    found = _RAW_MARKS.Match(raw) or ()  # (None when neither is there)
    return 0 in found, 1 in found


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class ExactNumber(float):
    """A JSON number that a float would change, kept as its source text.

    It behaves as the nearest float in arithmetic and comparisons, and is written back exactly.

    >>> n = ExactNumber("0.1000000000000000000001")
    >>> n == 0.1, n.text
    (True, '0.1000000000000000000001')
    """

    __slots__ = ("text",)
    text: str

    def __new__(cls, text: str) -> ExactNumber:
        obj = super().__new__(cls, text)
        obj.text = text
        return obj

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def _exact_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        return ExactNumber(text)
    try:
        if Decimal(text) == Decimal(repr(value)):
            return value
    except InvalidOperation:  # pragma: no cover - the scanner only hands us valid numbers
        pass
    return ExactNumber(text)


def _exact_int(text: str) -> int | float:
    if len(text) > 4000:  # beyond int()'s default digit limit: keep the text
        return ExactNumber(text)
    return int(text)


# -- reading ---------------------------------------------------------------------------------


def loads_any_depth(text: str) -> Any:
    """``json.loads`` (its plain floats), and past its recursion limit the parser above, which
    walks without recursing (a note or tool arguments nested 1,000+ levels)."""
    try:
        return json.loads(text)
    except RecursionError:
        return loads(text)


def loads(data: bytes | str, long_numbers: bool | None = None) -> Any:
    """Parse JSON exactly and at any depth; raises ``ValueError`` if it is not JSON.

    Integers keep every digit; decimals a double would change become ``ExactNumber``.
    ``long_numbers``: whether the text has a number token of 16 or more characters, when the
    caller has scanned for them already (``raw_marks``); None scans.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    # Millions of new containers would set off the cyclic GC again and again (2x the time);
    # parsed JSON has no cycles.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if long_numbers is None:
            long_numbers = _LONG_NUMBER.search(raw) is not None
        if not long_numbers:
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass  # too deep for orjson, or one of its stricter corners: the stdlib decides
        text = data if isinstance(data, str) else data.decode("utf-8", "surrogatepass")
        try:
            # NaN, Infinity, -Infinity (Python's json writes them; orjson refuses): written back
            # as they were, not as null, so get_in shows what SQL and the raw text show
            return json.loads(text, parse_float=_exact_float, parse_int=_exact_int, parse_constant=ExactNumber)
        except RecursionError:
            return _loads_iterative(text)
        except json.JSONDecodeError as exc:
            raise ValueError(str(exc)) from None
    finally:
        if was_enabled:
            gc.enable()


def _skip(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _key(text: str, i: int) -> tuple[str, int]:
    if text[i : i + 1] != '"':
        raise ValueError(f"expected a string key at char {i}")
    key, i = scanstring(text, i + 1)
    i = _skip(text, i)
    if text[i : i + 1] != ":":
        raise ValueError(f"expected ':' at char {i}")
    return key, _skip(text, i + 1)


_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}


def _loads_iterative(text: str) -> Any:
    """A JSON parser with an explicit stack (for documents nested deeper than C will recurse)."""
    n = len(text)
    stack: list[list[Any]] = []  # [container, pending key]
    i = _skip(text, 0)
    while True:
        c = text[i : i + 1]
        value: Any
        if c in ("{", "["):
            container: dict[str, Any] | list[Any] = {} if c == "{" else []
            i = _skip(text, i + 1)
            if text[i : i + 1] == ("}" if c == "{" else "]"):
                value, i = container, i + 1
            else:
                stack.append([container, None])
                if c == "{":
                    stack[-1][1], i = _key(text, i)
                continue
        elif c == '"':
            value, i = scanstring(text, i + 1)
        elif c in _LITERALS:
            word, value = _LITERALS[c]
            if text[i : i + len(word)] != word:
                raise ValueError(f"invalid literal at char {i}")
            i += len(word)
        else:
            m = _NUMBER.match(text, i)
            if m is None or m.end() == i:
                raise ValueError(f"expected a JSON value at char {i}")
            token = m.group(0)
            value = _exact_float(token) if m.group(1) or m.group(2) else _exact_int(token)
            i = m.end()
        # a value is complete: attach it, then close as many containers as end here
        while True:
            if not stack:
                if _skip(text, i) != n:
                    raise ValueError(f"extra data at char {_skip(text, i)}")
                return value
            frame = stack[-1]
            parent = frame[0]
            if type(parent) is dict:
                parent[frame[1]] = value
            else:
                parent.append(value)
            i = _skip(text, i)
            c = text[i : i + 1]
            if c == ",":
                i = _skip(text, i + 1)
                if type(parent) is dict:
                    frame[1], i = _key(text, i)
                break
            if c == ("}" if type(parent) is dict else "]"):
                stack.pop()
                value, i = parent, i + 1
                continue
            raise ValueError(f"expected ',' or a closing bracket at char {i}")


# -- writing ---------------------------------------------------------------------------------


def _big_int_text(value: int) -> str:
    """Decimal digits of an int beyond ``int.__str__``'s default limit (no global setting)."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    chunk = 10**1000
    parts: list[str] = []
    while value:
        value, low = divmod(value, chunk)
        parts.append(str(low).zfill(1000) if value else str(low))
    return sign + "".join(reversed(parts)) if parts else "0"


def _text_of(obj: Any) -> str:
    try:
        return str(obj)
    except Exception:
        try:
            return repr(obj)
        except Exception:
            return f"<unprintable {type(obj).__name__}>"


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None), dict, list, tuple, ExactNumber})
_NOT_PANDAS = object()


def _attr(value: Any, name: str) -> Any:
    """``getattr(value, name, None)`` that never raises: an attribute dict's ``__getattr__`` raises
    ``KeyError``, a lazy proxy's whatever it likes (``getattr`` with a default only swallows
    ``AttributeError``)."""
    try:
        return getattr(value, name, None)
    except Exception:
        return None


def _natural(value: Any) -> Any:
    """The JSON value a non-JSON Python value stands for (see the module docstring); ``value``
    itself when it stands for none (then written as its ``str``). Never raises."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return value
    try:
        return _natural_of(value, kind)
    except Exception:  # whatever the object does when looked at: written as its text
        return value


def _natural_of(value: Any, kind: type) -> Any:
    if "pandas" in sys.modules:
        natural = _from_pandas(value, kind)
        if natural is not _NOT_PANDAS:
            return natural
    dtype = _attr(value, "dtype")
    if dtype is not None and callable(tolist := _attr(value, "tolist")):  # numpy array or scalar
        try:
            if _attr(dtype, "kind") in ("M", "m"):  # datetime64/timedelta64: tolist() gives int nanoseconds
                if (_attr(value, "ndim") or 0) == 0:
                    return None if value != value else str(value)
                return [_natural(v) for v in value]
            return tolist()
        except Exception:
            return value
    if kind.__name__ in ("NAType", "NaTType"):  # pandas.NA, pandas.NaT
        return None
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        text = str(value)
        return ExactNumber(text) if _NUMBER.fullmatch(text) else value
    return value


# -- pandas (only for a value pandas made: the core never imports it) --------------------------


def _from_pandas(value: Any, kind: type) -> Any:
    """A DataFrame as its records, a Series as its values or records, a Timedelta as ISO 8601;
    ``_NOT_PANDAS`` for anything else."""
    pd: Any = sys.modules.get("pandas")
    frame_type, series_type = _attr(pd, "DataFrame"), _attr(pd, "Series")
    if isinstance(frame_type, type) and isinstance(value, frame_type):
        return _frame_or_text(value, pd, "DataFrame")
    if isinstance(series_type, type) and isinstance(value, series_type):
        if _default_index(_attr(value, "index"), pd):
            return _frame_or_text(value, pd, "Series", as_list=True)
        return _frame_or_text(value, pd, "Series")
    if kind.__name__ == "Timedelta" and kind.__module__.startswith("pandas"):
        return None if value != value else value.isoformat()  # (as DataFrame.to_json writes it)
    return _NOT_PANDAS


def _default_index(index: Any, pd: Any) -> bool:
    """The index pandas gives a frame that was not given one (0..n-1, unnamed): not a column."""
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None


def _frame_or_text(value: Any, pd: Any, what: str, as_list: bool = False) -> Any:
    try:
        if as_list:
            return value.tolist()
        if what == "Series":
            value = value.to_frame(name=value.name if value.name is not None else "value")
        return _frame_records(value, pd)
    except Exception as exc:  # never the printed table as if it were the data
        return (
            f"{_text_of(value)}\n[only the printed form of this {what} was written: its rows could not "
            f"be ({type(exc).__name__}: {_text_of(exc)[:200]})]"
        )


def _frame_records(frame: Any, pd: Any) -> list[dict[str, Any]]:
    """The rows of a DataFrame as JSON records, as the notebook stores one (``orient="records"``):
    the index first (as ``reset_index`` names it) unless it is the default, column names unique."""
    labels: list[Any] = []
    columns: list[list[Any]] = []
    index = frame.index
    if not _default_index(index, pd):
        if isinstance(index, pd.MultiIndex):
            labels += [n if n is not None else f"level_{i}" for i, n in enumerate(index.names)]
            columns += [index.get_level_values(i).tolist() for i in range(index.nlevels)]
        else:
            name = index.name
            labels.append(name if name is not None else "level_0" if "index" in frame.columns else "index")
            columns.append(index.tolist())
    labels += list(frame.columns)
    for i in range(frame.shape[1]):
        column = frame.iloc[:, i]
        values = column.tolist()
        if column.dtype.kind == "f" and column.hasnans:  # NaN as null here: the C writers then take it
            values = [None if v != v else v for v in values]
        columns.append(values)
    names = _unique_column_names([_key_name(label)[0] for label in labels])
    if not names:
        return [{} for _ in range(len(frame))]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _unique_column_names(names: list[str]) -> list[str]:
    """A repeated column name made unique as pandas' CSV reader does: ``a``, ``a.1``, ``a.2``."""
    if len(set(names)) == len(names):
        return names
    taken = set(names)
    seen: set[str] = set()
    out = []
    for name in names:
        if name in seen:
            n = 1
            while f"{name}.{n}" in taken:
                n += 1
            name = f"{name}.{n}"
            taken.add(name)
        seen.add(name)
        out.append(name)
    return out


def _orjson_default(value: Any) -> Any:
    natural = _natural(value)
    if natural is value:
        raise TypeError(type(value).__name__)  # (the exact writer below says it as its str)
    return natural


_SURROGATE = re.compile("[\ud800-\udfff]")


def _str_text(text: str) -> str:
    """A JSON string literal; a lone surrogate (which UTF-8 cannot hold) as its escape, ``\\ud800``,
    as the document wrote it: the body stays valid UTF-8 and a grep for ``ud800`` finds it."""
    out = encode_basestring(text)
    if _SURROGATE.search(out) is None:
        return out
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def _scalar(value: Any) -> str | None:
    """The JSON text of a non-container value; None for containers."""
    kind = type(value)
    if kind is str:
        return _str_text(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is ExactNumber:
        return str(value.text)
    if isinstance(value, int):
        try:
            return int.__repr__(value)
        except ValueError:
            return _big_int_text(value)
    if isinstance(value, float):
        return float.__repr__(value) if math.isfinite(value) else "null"
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        return None
    if isinstance(value, str):
        return _str_text(str.__str__(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return encode_basestring(bytes(value).decode("utf-8", errors="replace"))
        except Exception:  # a released memoryview
            return encode_basestring(_text_of(value))
    return encode_basestring(_text_of(value))


def _key_name(key: Any) -> tuple[str, bool]:
    """``(text, is_str)``: the text a key is written as (a number as JSON writes it, a date as ISO
    8601, anything else its ``str``) and whether it was a ``str`` (written as itself, always)."""
    if isinstance(key, str):
        return str.__str__(key), True
    natural = _natural(key)
    if natural is None or isinstance(natural, (bool, int, float)):
        return _scalar(natural) or "", False
    if isinstance(natural, str):
        return str.__str__(natural), False
    return _text_of(key), False


def _key_text(key: Any, owner: Any = None, used: set[str] | None = None) -> str:
    """The JSON text of a key of ``owner`` (a dict); ``used``: the texts its earlier non-``str``
    keys were written as. A non-``str`` key whose text ``owner`` has as a ``str`` key, or an
    earlier key was written as, gets its type after it (module docstring)."""
    text, is_str = _key_name(key)
    if not is_str and used is not None:
        if _taken(text, owner, used):
            base = f"{text} ({type(key).__name__}"
            text, n = f"{base})", 2
            while _taken(text, owner, used):
                text, n = f"{base} {n})", n + 1
        used.add(text)
    return _str_text(text)


def _taken(text: str, owner: Any, used: set[str]) -> bool:
    if text in used:
        return True
    try:
        return text in owner
    except Exception:
        return False


def _open(value: Any) -> tuple[bool, Iterator[Any]] | None:
    """``(is_dict, iterator)`` of a non-empty container; None for an empty one. Raises when the
    container cannot be looked into (a subclass whose ``__len__`` or ``items`` raises)."""
    if not value:
        return None
    if isinstance(value, dict):
        return True, iter(value.items())
    return False, iter(value)


def _iterencode(
    value: Any, indent: int | None, cut_depth: int | None, separators: tuple[str, str] = (", ", ": ")
) -> Iterator[str]:
    """JSON text of ``value`` in pieces, with an explicit stack (any depth, cycles marked)."""
    item_sep, key_sep = separators
    on_path: set[int] = set()
    # frame: [iterator, is_dict, ids on the path, pretty, first, converted, the dict, key texts used]
    stack: list[list[Any]] = []
    converted = 0  # frames on the stack that _natural made (an array's tolist())
    pending, have = value, True
    while True:
        if have:
            have = False
            # (the original is on the path too: an object array holding itself makes a new list
            # each time; a tolist() making a new object of its kind forever stops at 64 levels)
            original = pending
            if id(original) in on_path:
                text: str | None = CIRCULAR
            else:
                if converted < 64:
                    pending = _natural(pending)
                text = _scalar(pending)
            opened: tuple[bool, Iterator[Any]] | None = None
            if text is None and id(pending) not in on_path:
                try:
                    opened = _open(pending)
                except Exception:  # a container that cannot be looked into: its text
                    text = encode_basestring(_text_of(pending))
            if text is not None:
                yield text
            elif id(pending) in on_path:
                yield CIRCULAR
            elif opened is None:
                yield "{}" if isinstance(pending, dict) else "[]"
            else:
                is_dict, items = opened
                pretty = indent is not None and (cut_depth is None or len(stack) < cut_depth)
                ids = {id(pending), id(original)}
                on_path.update(ids)
                made = pending is not original
                converted += made
                yield "{" if is_dict else "["
                stack.append([items, is_dict, ids, pretty, True, made, pending if is_dict else None, set()])
        if not stack:
            return
        frame = stack[-1]
        failed: Exception | None = None
        try:
            item = next(frame[0])
        except StopIteration:
            item = _END
        except Exception as exc:  # iteration that raises part-way: said in the output, then closed
            failed, item = exc, _END
        if failed is not None and frame[1]:
            item = ("[iteration failed]", type(failed).__name__)
        elif failed is not None:
            item = f"[iteration failed: {type(failed).__name__}]"
        if failed is not None:
            frame[0] = iter(())
        if item is _END:
            stack.pop()
            on_path.difference_update(frame[2])
            converted -= frame[5]
            if frame[3]:
                yield "\n" + " " * (indent or 0) * len(stack)
            yield "}" if frame[1] else "]"
            continue
        if frame[4]:
            frame[4] = False
        else:
            yield "," if frame[3] else item_sep
        if frame[3]:
            yield "\n" + " " * (indent or 0) * len(stack)
        if frame[1]:
            try:
                key, pending = item
            except Exception as exc:  # an items() that yields something else than pairs
                key, pending = "[iteration failed]", type(exc).__name__
                frame[0] = iter(())
            yield _key_text(key, frame[6], frame[7])
            yield ": " if frame[3] else key_sep
        else:
            pending = item
        have = True


_END = object()


def _last_resort(value: Any) -> str:
    """The value as one JSON string of its text (when even the writer above failed)."""
    return encode_basestring(_text_of(value))


def _keys_all_text(value: Any) -> bool:
    """Whether every key in ``value`` is a ``str``, known fast: orjson refuses any other key (and
    a few values it cannot write: then ``_keys_collide`` decides)."""
    try:
        orjson.dumps(value, default=_orjson_default)
    except Exception:
        return False
    return True


_NUMBER_KEYS = frozenset({str, int, float, bool, type(None)})  # keys json and orjson write as we do


def _keys_collide(value: Any) -> bool:
    """Whether a dict in ``value`` has two keys written alike (``3`` and ``"3"``), which the C
    writers (json, orjson) would both write, as two equal keys. Walks containers only."""
    try:
        stack = [value]
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                if id(item) in seen:
                    continue
                seen.add(id(item))
                if not all(type(k) is str for k in item):
                    names: set[str] = set()
                    for key in item:
                        if type(key) not in _NUMBER_KEYS:  # (a date, a tuple: written as we write it)
                            return True
                        name = _key_name(key)[0]
                        if name in names:
                            return True
                        names.add(name)
                stack.extend(item.values())
            elif isinstance(item, (list, tuple)):
                if id(item) in seen:
                    continue
                seen.add(id(item))
                stack.extend(item)
    except Exception:  # (a container that cannot be looked into: the careful writer decides)
        return True
    return False


def dumps_compact(value: Any) -> str:
    """The JSON text of a Python value as it enters a model's context (``json.dumps`` style).

    Never raises: what JSON cannot say is written as described in the module docstring. (For
    values parsed by ``loads``, which may hold ``ExactNumber``, use ``render_json``.)
    """
    natural = _natural(value)  # (once: a DataFrame's rows are not made again by each C writer)
    try:
        # (json.dumps writes 3 and "3" alike, as two "3": a document where that happens is
        # written below)
        if _keys_all_text(natural) or not _keys_collide(natural):
            return json.dumps(natural, ensure_ascii=False, allow_nan=False, default=_orjson_default)
    except Exception:
        pass
    try:
        return "".join(_iterencode(value, None, None))
    except Exception:
        return _last_resort(value)


def render_json(value: Any, indent: bool = False) -> str:
    """JSON of a parsed value for display: orjson's format, exact numbers, any depth, never raises.

    Compact is ``{"a":1}`` (no spaces); ``indent=True`` is the pretty-body format.
    """
    if indent:
        return dumps_pretty(value)[:-1].decode("utf-8", "surrogatepass")
    natural = _natural(value)
    try:
        return orjson.dumps(natural, default=_orjson_default).decode()
    except Exception:
        pass
    try:
        if not _keys_collide(natural):  # (orjson writes 3 and "3" alike)
            return orjson.dumps(natural, default=_orjson_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except Exception:
        pass
    try:
        return "".join(_iterencode(value, None, None, (",", ":")))
    except Exception:
        return _last_resort(value)


def dumps_pretty(value: Any, base_depth: int = 0) -> bytes:
    """2-space indented JSON, newline-terminated; deeper than ``PRETTY_MAX_DEPTH``: one line.

    Byte-for-byte what ``orjson`` writes with ``OPT_INDENT_2`` for documents that are not deeper
    than that and hold only JSON values. ``base_depth``: the depth at which ``value`` sits in a
    larger document written in pieces (containers are cut that much sooner; the text itself is
    not indented). Never raises.
    """
    cut = max(1, PRETTY_MAX_DEPTH - base_depth)
    natural = _natural(value)
    out: bytes | None = None
    try:
        out = orjson.dumps(natural, default=_orjson_default, option=orjson.OPT_INDENT_2)
    except Exception:
        try:
            if not _keys_collide(natural):  # (orjson writes 3 and "3" alike: such keys take the path below)
                options = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
                out = orjson.dumps(natural, default=_orjson_default, option=options)
        except Exception:
            out = None
    # a container past the cut, as orjson indents it: where orjson's text and ours would differ
    if out is not None and b"\n" + b" " * (2 * cut + 2) not in out:
        return out + b"\n"
    try:
        text = "".join(_iterencode(value, 2, cut))
    except Exception:
        text = _last_resort(value)
    return text.encode("utf-8", "surrogatepass") + b"\n"
