"""Probe F's defects in the JSON writer, the withheld pointer and the policy, each held fixed.

#2 a value whose attributes raise (an attribute dict, a lazy proxy) is written, never raised on
(a small result was withheld as "too large"); #3 a DataFrame is stored as its rows, not its
printed cut-down table; #5 a misspelt key of ``[agent.scratchpad]`` is refused; #6 the withheld
pointer says what happened (a forced spill was not "too large") and advice that fits the cause;
#10 its preview never cuts a terminal escape and splits progress text at bare CRs; #11
``result_class`` is read without regard to case and a typo is refused; #8 keys written alike
(``3`` and ``"3"``) both keep their values.
"""

from __future__ import annotations

import datetime
import json
import logging
import subprocess
import sys
from typing import Any

import pytest

from jupyter_scratchpad import InvalidArgumentError, Scratchpad, ScratchStore, SpillPolicy
from jupyter_scratchpad.errors import StoreError, StoreUnavailableError
from jupyter_scratchpad.spill import SpillDecision
from jupyter_scratchpad.spill._withheld import POINTER_MAX_BYTES, withheld_pointer
from jupyter_scratchpad.store._format import as_text
from jupyter_scratchpad.store._jsontext import dumps_compact, dumps_pretty, render_json


def _all_writers(value: Any) -> list[Any]:
    """What each writer makes of ``value``, parsed back (they must agree)."""
    return [json.loads(dumps_compact(value)), json.loads(dumps_pretty(value)), json.loads(render_json(value))]


# -- #2: objects whose attributes raise are written, never raised on ---------------------------


class AttrDict(dict):  # type: ignore[type-arg]
    """The common "attribute dict": a missing attribute is a KeyError, not an AttributeError."""

    __getattr__ = dict.__getitem__


class Lazy:
    """A proxy whose attributes load on access and fail with something else than AttributeError."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"lazy attribute {name} not loaded")

    def __repr__(self) -> str:
        return "<Lazy>"


class Hopeless:
    """Nothing of it can be read: attributes, str and repr all raise."""

    def __getattr__(self, name: str) -> Any:
        raise KeyError(name)

    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_an_attribute_dict_holding_a_date_is_written() -> None:
    value = AttrDict(status="ok", at=datetime.datetime(2024, 1, 1))
    for parsed in _all_writers(value):  # dumps_compact raised KeyError: 'dtype'
        assert parsed == {"status": "ok", "at": "2024-01-01T00:00:00"}
    assert as_text(value) == '{"status": "ok", "at": "2024-01-01T00:00:00"}'


def test_objects_whose_attributes_str_or_repr_raise_are_written_as_what_can_be_read() -> None:
    value = {"rows": [1, 2], "obj": Lazy(), "gone": Hopeless(), "deep": [AttrDict(n=Lazy())]}
    for parsed in _all_writers(value):  # raised RuntimeError: lazy attribute dtype not loaded
        assert parsed == {"rows": [1, 2], "obj": "<Lazy>", "gone": "<unprintable Hopeless>", "deep": [{"n": "<Lazy>"}]}
    assert json.loads(dumps_compact(Lazy())) == "<Lazy>"
    assert json.loads(dumps_compact(Hopeless())) == "<unprintable Hopeless>"


def test_a_container_whose_iteration_fails_part_way_is_written_up_to_there() -> None:
    class Flaky(set):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            yield 1
            raise OSError("the cursor went away")

    class BadItems(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            raise RuntimeError("no items")

    value = {"flaky": Flaky([1, 2]), "bad": BadItems(a=1)}
    for parsed in _all_writers(value):  # json.dumps let the RuntimeError of items() out
        assert parsed == {"flaky": [1, "[iteration failed: OSError]"], "bad": "{'a': 1}"}


def test_a_small_result_holding_such_objects_passes_through(pad: Scratchpad) -> None:
    value = AttrDict(status="ok", at=datetime.datetime(2024, 1, 1))
    r = pad.intercept(value, tool="get_status")
    assert (r.spilled, r.failure, r.content) == (False, None, value)  # was withheld: "too large … KeyError"
    r = pad.intercept({"status": "ok", "obj": Lazy()}, tool="small_tool", is_error=True)
    assert r.failure is None and not r.spilled
    spilled = pad.spill({"rows": [1, 2, 3], "obj": Lazy()}, tool="lazy")
    assert spilled.spilled and pad.get(spilled.handle) == {"rows": [1, 2, 3], "obj": "<Lazy>"}


# -- #3: a DataFrame is its rows, as the notebook stores one --------------------------------------


def test_a_dataframe_is_written_as_its_records() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "a": [1.5, None, 3.0],
            "t": pd.to_datetime(["2024-01-01 00:00:00", None, "2024-01-03 10:00:01"]),
            "s": ["x", None, "z"],
            "n": pd.array([1, None, 3], dtype="Int64"),
        }
    )
    expected = [
        {"a": 1.5, "t": "2024-01-01T00:00:00", "s": "x", "n": 1},
        {"a": None, "t": None, "s": None, "n": None},
        {"a": 3.0, "t": "2024-01-03T10:00:01", "s": "z", "n": 3},
    ]
    for parsed in _all_writers(frame):  # was pandas' printed table, as one string
        assert parsed == expected
    # an index that is not the default is a first column, named as reset_index names it
    assert json.loads(dumps_compact(frame.set_index("s"))) == [
        {"s": r["s"], **{k: v for k, v in r.items() if k != "s"}} for r in expected
    ]
    assert json.loads(dumps_compact(pd.DataFrame({"x": [7]}, index=["r1"]))) == [{"index": "r1", "x": 7}]
    # inside a container too
    assert json.loads(dumps_compact({"df": frame.head(1)})) == {"df": expected[:1]}


def test_a_series_is_its_values_or_its_records() -> None:
    pd = pytest.importorskip("pandas")
    assert _all_writers(pd.Series([1.5, float("nan"), 3.0]))[0] == [1.5, None, 3.0]
    counts = pd.Series(["a", "b", "a"], name="col").value_counts()  # index named col, values count
    for parsed in _all_writers(counts):
        assert parsed == [{"col": "a", "count": 2}, {"col": "b", "count": 1}]
    assert json.loads(dumps_compact(pd.Series([1, 2], index=["x", "y"]))) == [
        {"index": "x", "value": 1},
        {"index": "y", "value": 2},
    ]


def test_a_spilled_dataframe_keeps_every_row(pad: Scratchpad) -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": range(50_000), "b": ["x"] * 50_000})
    r = pad.spill(frame, tool="frame")
    assert r.spilled and r.stub is not None and r.stub["format"] == "json"  # was text, 232 bytes
    rows = pad.get(r.handle)
    assert len(rows) == 50_000 and rows[0] == {"a": 0, "b": "x"} and rows[-1] == {"a": 49_999, "b": "x"}
    # the decision is made on the rows, not on the repr of 20 lines: it spills
    again = pad.intercept(frame.assign(c=1), tool="frame2")
    assert again.spilled and again.decision.rule == "threshold"


def test_the_core_does_not_import_pandas() -> None:
    code = (
        "import sys, datetime\n"
        "from jupyter_scratchpad.store._jsontext import dumps_compact\n"
        "dumps_compact({'a': [1, datetime.date(2024, 1, 1), object()]})\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- #8: keys written alike never lose a value ----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({3: "int three", "3": "str three"}, {"3 (int)": "int three", "3": "str three"}),
        ({"3": "str three", 3: "int three"}, {"3": "str three", "3 (int)": "int three"}),
        ({True: 1, "true": 2, None: 3, "null": 4}, {"true (bool)": 1, "true": 2, "null (NoneType)": 3, "null": 4}),
        ({3: "a", "3": "b", "3 (int)": "c"}, {"3 (int 2)": "a", "3": "b", "3 (int)": "c"}),
        ({3: "a", 4: "b"}, {"3": "a", "4": "b"}),  # no collision: as before
        ({(1, 2): "t", 1.5: "f"}, {"(1, 2)": "t", "1.5": "f"}),
    ],
)
def test_keys_that_collide_when_written_keep_both_values(value: dict[Any, Any], expected: dict[str, Any]) -> None:
    for writer in (dumps_compact, render_json, lambda v: dumps_pretty(v).decode()):
        text = writer(value)
        pairs = json.loads(text, object_pairs_hook=list)
        assert dict(pairs) == expected and len(pairs) == len(expected), text  # "3" was written twice


def test_a_spilled_dict_with_colliding_keys_reads_back_whole(pad: Scratchpad) -> None:
    r = pad.spill({3: "int three", "3": "str three", (1, 2): "tuple key"}, tool="t")
    assert pad.get(r.handle) == {"3 (int)": "int three", "3": "str three", "(1, 2)": "tuple key"}
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {r.handle}"})
    assert res.ok, res.text  # was "has duplicate key"


def test_repeated_dataframe_columns_are_made_unique_as_pandas_does() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame([[1, 2, 3]], columns=["a", "a", "a.1"])
    assert json.loads(dumps_compact(frame)) == [{"a": 1, "a.2": 2, "a.1": 3}]


# -- #6 and #10: the withheld pointer ----------------------------------------------------------


def test_a_forced_spill_that_fails_is_not_called_too_large(store: ScratchStore, caplog: Any) -> None:
    pad = store.scratchpad("r", "a")
    store.close()
    caplog.set_level(logging.CRITICAL, logger="jupyter_scratchpad")
    r = pad.spill("tiny body\n", tool="tiny")
    assert not r.spilled and r.failure and "StoreClosedError" in r.failure
    assert "too large" not in r.content  # a forced spill of 10 bytes
    assert "was not stored" in r.content and "tiny body" in r.content
    assert "open a new store" in r.content and "Run the tool again later" not in r.content
    big = pad.intercept("a line of words\n" * 20_000, tool="big")
    assert "too large for the context" in big.content and "open a new store" in big.content


def _decision(rule: str = "threshold") -> SpillDecision:
    return SpillDecision(True, rule, 6000, True, 5120, 100_000)


def test_the_advice_matches_the_cause() -> None:
    text = "row\n" * 10_000
    damaged = StoreError("the body of 'logs_ab12' is missing or damaged (...)", handle="logs_ab12", damaged=True)
    said = withheld_pointer(text, "logs", _decision(), f"StoreError: {damaged}", damaged)
    assert "delete handle 'logs_ab12'" in said and "Run the tool again later" not in said
    # from the reason alone (a caller without the exception)
    said = withheld_pointer(text, "logs", _decision(), f"StoreError: {damaged}")
    assert "delete handle 'logs_ab12'" in said
    lost = "the body of 'logs_cd34' is gone from <store>/bodies (…); the output is lost: delete the handle and …"
    assert "delete handle 'logs_cd34'" in withheld_pointer(text, "logs", _decision(), f"StoreError: {lost}")
    said = withheld_pointer(
        text, "logs", _decision(), "NotFoundError: the body of this handle was removed while it was being read (…)"
    )
    assert "scratch_list" in said and "delete" in said
    down = StoreUnavailableError("the shared store is unavailable")
    assert "once it is back" in withheld_pointer(text, "t", _decision(), f"StoreUnavailableError: {down}", down)
    full = withheld_pointer(text, "t", _decision(), "StoreError: could not write: [Errno 28] No space left on device")
    assert "free some space" in full
    transient = withheld_pointer(text, "t", _decision(), "RuntimeError: the disk is on fire")
    assert "Run the tool again later" in transient and "too large for the context" in transient
    undecided = withheld_pointer(None, "t", SpillDecision(True, "failed"), "MemoryError: ")
    assert "size unknown" in undecided and "too large" not in undecided and "could not decide" in undecided


def test_the_preview_never_cuts_a_terminal_escape() -> None:
    text = "\n".join("\x1b[31mERROR\x1b[0m " * 50 for _ in range(5000))
    said = withheld_pointer(text, "ansi", _decision(), "RuntimeError: x")
    assert "\x1b" not in said and "ERROR ERROR" in said  # ended in "…\x1b[3"
    assert len(said.encode()) <= POINTER_MAX_BYTES
    cut = withheld_pointer("\x1b]8;;http://x\x07link\x1b]8;;\x07 and \x1b[1;3", "t", _decision("forced"), "E: x")
    assert "\x1b" not in cut and "link and " in cut


def test_progress_text_shows_as_lines_ending_in_its_last_state() -> None:
    text = "\r".join(f"progress {i}" for i in range(300_000))
    said = withheld_pointer(text, "bar", _decision(), "RuntimeError: x")
    lines = said.split("\n")
    assert "\r" not in said and "  progress 0" in lines and lines[lines.index("Last lines:") + 3] == "  progress 299999"
    crlf = withheld_pointer("a\r\nb\r\nc\r\n", "t", _decision("forced"), "E: x")
    assert "\r" not in crlf and "Its text:\n  a\n  b\n  c\n" in crlf


# -- #11: result_class ---------------------------------------------------------------------------


FLOOD = "word " * 20_000


def test_result_class_is_read_without_regard_to_case() -> None:
    policy = SpillPolicy()
    assert policy.explain(FLOOD, tool="t", result_class="QUERY").spill  # was rule result_class: the flood passed
    assert policy.explain(FLOOD, tool="t", result_class="Workspace").spill
    assert policy.explain(FLOOD, tool="t", result_class="Effect").rule == "result_class"
    assert policy.explain(FLOOD, tool="t", result_class=None).spill  # None skips the rule
    custom = SpillPolicy(spill_classes=frozenset({"query", "Mutation"}))
    assert custom.explain(FLOOD, tool="t", result_class="mutation").spill
    assert custom.explain(FLOOD, tool="t", result_class="browser").rule == "result_class"


@pytest.mark.parametrize("bad", ["qeury", "", 5, "effects"])
def test_an_unknown_result_class_is_refused_naming_the_known_ones(bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match="browser, effect, query, workspace"):
        SpillPolicy().explain(FLOOD, tool="t", result_class=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="did you mean 'query'"):
        SpillPolicy().explain(FLOOD, tool="t", result_class="qeury")


def test_an_unknown_result_class_never_lets_the_flood_through(pad: Scratchpad, caplog: Any) -> None:
    caplog.set_level(logging.CRITICAL, logger="jupyter_scratchpad")
    try:
        r = pad.intercept(FLOOD, tool="t", result_class="qeury")
    except InvalidArgumentError:
        return  # (refused up front)
    assert not r.spilled and r.content != FLOOD and len(r.content.encode()) <= POINTER_MAX_BYTES
    assert "unknown result_class" in r.content and "too large" not in r.content


# -- #5: a misspelt key of [agent.scratchpad] ----------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "key", "close"),
    [
        ('[agent.scratchpad]\nenable = true\n[mcp.servers.k.scratchpad]\n"*" = { min_tokens = 10 }\n', "enable", "enabled"),
        ("[agent.scratchpad]\nenabled = true\nmin_token = 100\nopt_in = false\n", "min_token", "min_tokens"),
        ('[agent.scratchpad]\nenabled = true\n[agent.scratchpad.pattern]\n"*" = { min_tokens = 1 }\n', "pattern", "patterns"),
        ("[agent.scratchpad]\nenabled = true\ncontext_safety_margins = 0.3\n", "context_safety_margins",
         "context_safety_margin"),
    ],
)  # fmt: skip
def test_a_misspelt_agent_key_is_refused_naming_it(toml: str, key: str, close: str) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"unknown key '{key}'.*did you mean '{close}'") as caught:
        SpillPolicy.from_toml(toml)  # was accepted: enable = true left everything off
    assert caught.value.key == key  # type: ignore[attr-defined]


def test_every_documented_agent_key_is_still_read() -> None:
    toml = (
        "[agent.scratchpad]\nenabled = true\ncontext_safety_margin = 0.25\nmax_extraction_tokens = 8000\n"
        'turn_depth_bonus = 4\nopt_in = false\nmin_tokens = 100\nmin_bytes = 9000\nspill_classes = ["query"]\n'
        'oob_metadata_keys = ["artifact_id"]\ninternal_tools = ["x"]\nerror_max_bytes = 4096\n'
        '[agent.scratchpad.patterns]\n"k_*" = { min_tokens = 5 }\n'
    )
    policy = SpillPolicy.from_toml(toml)
    assert (policy.enabled, policy.min_tokens, policy.min_bytes, policy.patterns) == (True, 100, 9000, {"k_*": 5})
    assert SpillPolicy.from_toml(policy.to_toml()) == policy
