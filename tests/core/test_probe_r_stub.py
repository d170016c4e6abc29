"""Probe R's defects in the stub, each held fixed.

#1 a CSV's stub stays within ``STUB_MAX_TOKENS`` whatever its column names hold (60 names of
U+A66E made 659 tokens: the "Next" line kept 8 names of 24 characters, never counted again);
#3 an int over 4,300 digits no longer breaks the stub (``repr`` raised after the entry was
stored), and a failure after the body is stored names the live handle instead of saying
"Nothing of it was stored"; #8 the schema sketch names the JSON types stored (an ndarray is an
array, NaN null, a set an array), not the Python types; and an object whose ``str`` and
``repr`` raise passes as a one-line text, not as an object no one can print.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.spill._stub import STUB_MAX_TOKENS, render_stub_text, schema_sketch
from jupyter_scratchpad.tokens import count_tokens

# -- #1: a CSV's stub within the bound, whatever its column names ------------------------------

DENSE_NAMES = {
    "cyrillic_multiocular_o": lambda j: "\ua66e" * 39 + chr(0x4E00 + j),
    "astronaut_zwj": lambda j: "\U0001f9d1\u200d\U0001f680" * 13 + str(j),
    "math_letters": lambda j: "".join(chr(0x1D400 + (j * 7 + k) % 52) for k in range(11)) + chr(0x4E00 + j),
    "rare_cjk": lambda j: "".join(chr(0x20000 + j * 24 + k) for k in range(24)),
}


def _csv(name: Any, columns: int = 60, rows: int = 3000) -> str:
    header = ",".join(name(j) for j in range(columns))
    return header + "\n" + "\n".join(",".join(str(i * j) for j in range(columns)) for i in range(rows))


@pytest.mark.parametrize("kind", list(DENSE_NAMES))
def test_csv_stub_within_bound_for_dense_column_names(pad: Scratchpad, kind: str) -> None:
    r = pad.intercept(_csv(DENSE_NAMES[kind]), tool="export")
    assert r.spilled and r.stub is not None and r.stub.get("csv")  # (read as a table: the case at hand)
    assert count_tokens(r.content, "gpt-4o") <= STUB_MAX_TOKENS, r.content
    assert f'"{r.handle}"' in r.content  # the handle, whole
    assert f"{r.handle}.rows" in r.content  # SQL over its rows is still named


def test_csv_stub_of_plain_names_keeps_them(pad: Scratchpad) -> None:
    r = pad.intercept(_csv(lambda j: f"column_{j:05d}"), tool="export")
    assert count_tokens(r.content) <= STUB_MAX_TOKENS
    assert "CSV, 60 columns: column_00000, column_00001" in r.content


def _stub(**over: Any) -> dict[str, Any]:
    stub: dict[str, Any] = {
        "handle": "export_0123456789ab",
        "source_tool": "export",
        "format": "text",
        "size": 1 << 20,
        "lines": 3001,
        "tokens": 5120,
        "tokens_exact": False,
        "preview_head": ["a,b"],
        "preview_tail": [],
        "csv": "CSV, 60 columns: " + ", ".join(["\ua66e" * 23 + "…"] * 8) + ", …",
    }
    stub.update(over)
    return stub


@pytest.mark.parametrize(
    "over",
    [
        {},
        {"source_tool": "\ua66e" * 5000},
        {"csv": "CSV, 2 columns: " + "\ua66e" * 5000},
        {"format": "json", "csv": None, "schema": ["$: object(1 key)"], "relations": [{"name": "h." + "\ua66e" * 900}]},
    ],
    ids=["dense_names", "dense_tool", "one_huge_name", "dense_relation"],
)
def test_render_stub_text_always_within_bound(over: dict[str, Any]) -> None:
    stub = _stub(**over)
    text = render_stub_text(stub, count_tokens)
    assert count_tokens(text) <= STUB_MAX_TOKENS, text
    assert f'"{stub["handle"]}"' in text


def test_render_stub_text_hard_clips_as_a_last_resort() -> None:
    """A counter under which nothing short fits: the text is clipped, the handle kept whole."""
    stub = _stub(csv=None, source_tool="t")
    text = render_stub_text(stub, lambda t: 2 * len(t))  # (two tokens a character: 125 characters)
    assert 2 * len(text) <= STUB_MAX_TOKENS and text.endswith("…")
    assert f'"{stub["handle"]}"' in text


# -- #3: an int of thousands of digits; a failure after the body is stored ---------------------


def test_bigint_value_spills_with_a_stub(pad: Scratchpad) -> None:
    r = pad.intercept({"n": 10**100_000}, tool="t")
    assert r.spilled and r.failure is None
    assert "$.n: number" in r.content
    assert count_tokens(r.content) <= STUB_MAX_TOKENS


@pytest.mark.parametrize("value", [10**5000, -(10**5000), 2**80, 10**30], ids=["big", "negative_big", "2_80", "10_30"])
def test_sketch_survives_any_int(value: int) -> None:
    lines = schema_sketch({"n": value, "xs": [value], value: 1})
    assert lines[1].startswith("$.n: number")
    assert lines[2:4] == ["$.xs: array(1 item)", "$.xs[*]: number"]


def test_sketch_survives_objects_that_raise() -> None:
    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("no")

        __str__ = __repr__

    class BadInt(int):
        def __repr__(self) -> str:
            raise RuntimeError("no")

    lines = schema_sketch({"bad": Bad(), "i": BadInt(3), Bad(): 1})
    assert lines[:3] == ["$: object(3 keys)", "$.bad: string", "$.i: 3"]


def test_failure_after_store_names_the_live_handle(
    pad: Scratchpad, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import jupyter_scratchpad._pad as pad_module

    def broken(*_a: Any, **_k: Any) -> dict[str, Any]:
        raise ValueError("the stub broke")

    monkeypatch.setattr(pad_module, "build_stub", broken)
    value = {"items": [{"i": i} for i in range(3000)]}
    with caplog.at_level(logging.CRITICAL, logger="jupyter_scratchpad"):
        r = pad.intercept(value, tool="t")
    assert not r.spilled and r.failure and "the stub broke" in r.failure
    assert "Nothing of it was stored" not in r.content
    live = [e["handle"] for e in pad.entries()]
    assert len(live) == 1 and r.handle == live[0]
    assert f'"{live[0]}"' in r.content
    assert pad.call_tool("schema", {"handle": live[0]}).ok  # (the handle it names works)
    assert "…" not in r.content.rsplit("\n", 1)[-1]  # (its Next line had placeholders: grep pattern=…)
    monkeypatch.undo()
    again = pad.intercept(value, tool="t")  # the same bytes, the same entry: now with its stub
    assert again.spilled and again.handle == live[0]


# -- #8: the sketch names the JSON types stored ------------------------------------------------


def test_sketch_names_stored_types_of_numpy_sets_bytes_nan(pad: Scratchpad) -> None:
    np = pytest.importorskip("numpy")
    value = {"arr": np.arange(100_000), "f": np.float32(1.5), "nan": float("nan"), "s": {1, 2}, "b": b"\x00" * 10}
    r = pad.intercept(value, tool="np")
    sketch = r.stub["schema"] if r.stub else []
    assert sketch[1:] == [
        "$.arr: array(100,000 items)",
        "$.arr[*]: number",
        "$.f: 1.5",
        "$.nan: null",
        "$.s: array(2 items)",
        "$.s[*]: number",
        "$.b: string",
    ]
    for word in ("ndarray", "float32", "set", "bytes", ": nan"):
        assert word not in r.content


def test_sketch_of_nan_items_is_null_as_stored(pad: Scratchpad) -> None:
    r = pad.intercept({"items": [float("nan"), float("inf")] * 20_000}, tool="nan")
    assert r.stub is not None and "$.items[*]: null" in r.stub["schema"]
    schema = pad.call_tool("schema", {"handle": r.handle}).text
    assert any(line.startswith("$.items[*]") and line.split()[1] == "null" for line in schema.splitlines())


def test_sketch_of_mixed_items_names_each_kind() -> None:
    lines = schema_sketch({"xs": [1, "a", None, True, 2]})
    assert lines[2] == "$.xs[*]: number|string|null|bool"


def test_sketch_of_pandas_values() -> None:
    pd = pytest.importorskip("pandas")
    lines = schema_sketch({"df": pd.DataFrame({"a": [1, 2], "b": ["x", "y"]}), "nat": pd.NaT})
    assert lines[1:] == ["$.df: array(2 items)", "$.df[*]: objects with keys a, b", "$.nat: null"]


# -- nit: an object whose str() and repr() raise ------------------------------------------------


def test_unprintable_object_passes_as_short_text(pad: Scratchpad) -> None:
    class B:
        def __repr__(self) -> str:
            raise RuntimeError("boom " + "Z" * 100_000)

        __str__ = __repr__

    r = pad.intercept(B(), tool="t")
    assert not r.spilled and r.failure is None
    assert isinstance(r.content, str) and "B" in r.content and len(r.content) < 200
    assert str(r) == r.content


def test_small_results_still_pass_unchanged(pad: Scratchpad) -> None:
    value = {"a": 1}
    assert pad.intercept(value, tool="t").content is value
    assert pad.intercept("<unprintable B>", tool="t").content == "<unprintable B>"
    assert json.loads(str(pad.intercept([1], tool="t"))) == [1]


def test_failure_after_store_in_a_notebook_names_percent_scratch_commands(
    pad: Scratchpad, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import jupyter_scratchpad._pad as pad_module
    from jupyter_scratchpad.spill._withheld import notebook_wording

    def broken(*_a: Any, **_k: Any) -> dict[str, Any]:
        raise ValueError("the stub broke")

    monkeypatch.setattr(pad_module, "build_stub", broken)
    with caplog.at_level(logging.CRITICAL, logger="jupyter_scratchpad"), notebook_wording():
        r = pad.intercept({"items": [{"i": i} for i in range(3000)]}, tool="cell_3")
    assert r.handle and f"%scratch schema {r.handle}" in r.content and "pattern=…" not in r.content
