"""The one JSON writer never raises and never runs away, whatever Python value it is handed:
values that stand for JSON values (numpy, pandas, dates) written as those, and the ways a
conversion could loop written once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jupyter_scratchpad.store._jsontext import dumps_compact, dumps_pretty


def test_an_object_array_holding_itself_is_a_circular_reference() -> None:
    np = pytest.importorskip("numpy")
    a = np.empty(1, dtype=object)
    a[0] = a  # its tolist() makes a new list holding it, each time: the writer grew without end
    assert json.loads(dumps_compact(a)) == ["[circular reference]"]
    assert json.loads(dumps_pretty({"a": a})) == {"a": ["[circular reference]"]}


def test_a_tolist_that_makes_a_new_one_forever_stops() -> None:
    class Fresh:
        dtype = "object"

        def tolist(self) -> list[Any]:
            return [Fresh()]

    text = dumps_compact({"x": Fresh()})
    value = json.loads(text)
    depth = 0
    node = value["x"]
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert 0 < depth <= 64 and isinstance(node, str) and "Fresh" in node


def test_numpy_scalars_and_arrays_inside_containers_are_numbers() -> None:
    np = pytest.importorskip("numpy")
    value = {"a": np.int64(1), "b": [1, {"c": np.arange(2)}], "d": np.float32(0.5), "e": np.bool_(False)}
    assert json.loads(dumps_compact(value)) == {"a": 1, "b": [1, {"c": [0, 1]}], "d": 0.5, "e": False}
    assert json.loads(dumps_pretty(value)) == json.loads(dumps_compact(value))
