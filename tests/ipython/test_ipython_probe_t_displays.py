"""Probe T: displays and rich parts bounded per cell, a failing store said in one line, write --ttl,
grep's footer as a command, choices in any case, a DataFrame shown whole decided before formatting."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from ipython_helpers import RealKernel, loaded_kernel

from jupyter_scratchpad.ipython import STUB_MIME, ScratchSession

# -- a real kernel (its displays, updates and log lines as the notebook receives them) ----------


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKernel]:
    with loaded_kernel(tmp_path_factory.mktemp("probe_t")) as k:
        yield k


def outputs(messages: list[dict[str, Any]], *types: str) -> list[dict[str, Any]]:
    wanted = types or ("stream", "display_data", "update_display_data", "execute_result", "error")
    return [m for m in messages if m["msg_type"] in wanted]


def cards(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["content"]["data"][STUB_MIME] for m in outputs(messages) if STUB_MIME in m["content"].get("data", {})]


def wire_bytes(messages: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(m["content"])) for m in outputs(messages))


def test_a_display_loop_has_a_per_cell_budget(kernel: RealKernel) -> None:
    # 20,000 display(i) sent 20,000 outputs (1.3 MB) and no card; the same prints gave one card
    messages = kernel.messages("for i in range(5000): display(i)")
    displays = outputs(messages, "display_data")
    assert len(displays) <= 41 and wire_bytes(messages) < 60_000
    [card] = cards(messages)
    assert card["source_tool"].endswith("_display")
    text = displays[-1]["content"]["data"]["text/plain"]
    assert "displays of this cell" in text and "held past its display budget" in text
    tail = kernel.run(f"%scratch tail {card['handle']} -n 3")
    assert "4999" in tail


def lab_outputs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cell's outputs as JupyterLab's model holds them: consecutive text of one stream is one."""
    merged: list[dict[str, Any]] = []
    for m in outputs(messages):
        last = merged[-1] if merged else None
        if m["msg_type"] == "stream" and last is not None and last["msg_type"] == "stream" and (
            last["content"]["name"] == m["content"]["name"]
        ):
            continue
        merged.append(m)
    return merged


@pytest.mark.parametrize(
    "cell",
    [
        "for i in range(1000): display({'i': i, 'pad': 'x' * 50})",  # probe X: the card was output 285
        "for i in range(300): print('group', i); display({'i': i})",  # a print between displays: 2 outputs each
        "import sys\nfor i in range(300): print(i); print(i, file=sys.stderr); display({'i': i})",
    ],
)
def test_a_display_loops_card_is_among_the_outputs_jupyterlab_shows(kernel: RealKernel, cell: str) -> None:
    # JupyterLab renders a cell's first 50 outputs and folds the rest behind "Show more outputs"
    shown = lab_outputs(kernel.messages(cell))
    at = [i for i, m in enumerate(shown) if STUB_MIME in m["content"].get("data", {})]
    assert at and at[0] < 50, (at, len(shown))
    card = shown[at[0]]["content"]["data"][STUB_MIME]
    assert card["source_tool"].endswith("_display")


def test_large_html_displays_give_one_card_not_one_each(kernel: RealKernel) -> None:
    messages = kernel.messages(
        "from IPython.display import HTML\nfor i in range(40): display(HTML('<pre>' + ('row %d ' % i) * 3000 + '</pre>'))"
    )
    assert len(cards(messages)) <= 2 and len(outputs(messages, "display_data")) <= 2
    assert wire_bytes(messages) < 20_000


def test_updates_of_one_display_are_throttled_and_the_last_state_shown(kernel: RealKernel) -> None:
    messages = kernel.messages(
        "h = display('start', display_id=True)\nfor i in range(20000): h.update('value %d' % i)"
    )
    updates = outputs(messages, "update_display_data")
    assert 1 <= len(updates) < 200
    assert updates[-1]["content"]["data"]["text/plain"] == "'value 19999'"


def test_a_huge_latex_or_svg_part_is_stored_not_sent(kernel: RealKernel) -> None:
    # a sympy-like object: 4 MB of LaTeX went to the notebook whole beside its stored text/plain
    messages = kernel.messages(
        "class Both:\n"
        "    def _repr_latex_(self): return '$' + ' + '.join(['x'] * 1_000_000) + '$'\n"
        "    def __repr__(self): return 'Both()'\n"
        "Both()"
    )
    [result] = outputs(messages, "execute_result")
    data = result["content"]["data"]
    assert "text/latex" not in data and wire_bytes(messages) < 10_000
    assert "text/latex part of this output (formula" in data["text/plain"] and "%scratch get " in data["text/plain"]
    messages = kernel.messages(
        "from IPython.display import SVG\n"
        "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\">' + '<circle cx=\"1\" cy=\"1\" r=\"1\"/>' * 100_000"
        " + '</svg>'))"
    )
    [shown] = outputs(messages, "display_data")
    assert "image/svg+xml" not in shown["content"]["data"] and wire_bytes(messages) < 10_000
    handle = shown["content"]["data"]["text/plain"].split('handle "')[1].split('"')[0]
    assert int(kernel.run(f"_svg = %scratch get {handle}\nlen(_svg)").strip()) > 2_500_000


FAILING_STORE = """
import time
from jupyter_scratchpad.errors import StoreUnavailableError
from jupyter_scratchpad.ipython import get_session
_store = get_session(get_ipython()).store
def _down(*args, **kwargs):
    time.sleep(1.3)
    raise StoreUnavailableError(
        "the shared store's PostgreSQL (postgresql://postgres@/scratch?host=/tmp/x) is unavailable: couldn't get a "
        "connection after 5.00 sec; nothing was changed, retry when it is back"
    )
_store.put_body = _down
"""


def test_a_failing_store_says_one_line_and_not_stored(kernel: RealKernel) -> None:
    # with the PostgreSQL store down: a 30-line internal traceback in every cell, a progress line
    # that said "stored ... in 5.0 s", and an agent's advice ("run the tool again")
    kernel.run(FAILING_STORE)
    try:
        messages = kernel.messages("list(range(200000))")
    finally:
        kernel.run("del _store.put_body")
    texts = [
        m["content"].get("text") or m["content"].get("data", {}).get("text/plain", "") for m in outputs(messages)
    ]
    everything = "\n".join(texts)
    assert "Traceback" not in everything and "File \"" not in everything
    logged = [t for m, t in zip(outputs(messages), texts, strict=True) if m["msg_type"] == "stream"]
    assert logged and all(t.count("\n") <= 1 for t in logged), logged
    assert any("spilling the output of" in t and "kernel's log at debug level" in t for t in logged)
    progress = [t for t in texts if t.startswith("[scratchpad]") and "output of cell_" in t and " s)" in t]
    assert progress and "was not stored: StoreUnavailableError" in progress[-1] and "postgresql://" not in progress[-1]
    assert not any("[scratchpad] stored the" in t for t in texts)
    [result] = outputs(messages, "execute_result")
    pointer = result["content"]["data"]["text/plain"]
    assert "re-run the cell once the store is back" in pointer and "run the tool again" not in pointer


def test_a_broken_store_directory_is_one_line_too(kernel: RealKernel, tmp_path: Path) -> None:
    # the simpler failing store: its bodies directory replaced by a file
    kernel.run(
        "import shutil, pathlib\n"
        "_bodies = pathlib.Path(get_session(get_ipython()).store.path) / 'bodies'\n"
        "shutil.move(str(_bodies), str(_bodies) + '.away'); _bodies.write_text('not a directory')"
    )
    try:
        messages = kernel.messages("[{'row': i, 'name': 'x' * 20} for i in range(40000)]")
    finally:
        kernel.run("_bodies.unlink(); shutil.move(str(_bodies) + '.away', str(_bodies))")
    everything = "\n".join(
        m["content"].get("text") or m["content"].get("data", {}).get("text/plain", "") for m in outputs(messages)
    )
    assert "Traceback" not in everything and "was withheld" in everything
    assert "Run the tool again" not in everything and "run the tool again" not in everything


# -- an IPython shell -------------------------------------------------------------------------


def test_scratch_help_teaches_ttl_before_key(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%scratch --help")
    out = capsys.readouterr().out
    assert "write [--ttl S] KEY VALUE" in out and "write KEY VALUE [--ttl S]" not in out


def test_a_ttl_after_the_value_is_refused(ip: Any, session: ScratchSession) -> None:
    with pytest.raises(UsageError) as info:
        ip.run_cell("%scratch write k v --ttl 5")
    said = str(info.value)
    assert "--ttl goes before KEY: %scratch write --ttl 5 k v" in said and "\n" not in said
    assert [e for e in session.pad.entries("note") if e["key"] == "k"] == []  # nothing saved
    ip.run_cell('%scratch write k "v --ttl 5"')  # as JSON: that text, as asked
    assert session.pad.scratch_read("k") == "v --ttl 5"


def test_the_cell_form_honours_a_ttl_after_the_key(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%%scratch write k2 --ttl 5\nbody")
    [note] = [e for e in session.pad.entries("note") if e["key"] == "k2"]
    assert (note["expires_at"] - note["created_at"]).total_seconds() <= 6  # (it kept the 1-hour TTL)
    assert str(session.pad.scratch_read("k2")).strip() == "body"
    with pytest.raises(UsageError, match="only --ttl SECONDS may follow KEY"):
        ip.run_cell("%%scratch write k3 extra words\nbody")


def test_grep_footer_names_the_next_ones_as_a_command(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("for i in range(30000): print(f'log line {i} ' + ('ERROR' if i % 1000 == 0 else 'ok'))")
    [handle] = [e["handle"] for e in session.pad.entries("handle")]
    result = ip.run_cell(f"%scratch grep {handle} ERROR --max 2").result
    footer = str(getattr(result, "text", result)).rstrip().rsplit("\n", 1)[-1]
    assert "the next ones: %scratch sql SELECT" in footer and "sql(query=" not in footer


def test_choices_are_read_in_any_case(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%scratch auto OFF")
    assert session.auto_spill is False
    ip.run_cell("%scratch auto On")
    assert session.auto_spill is True


def test_a_frame_shown_whole_is_decided_before_pandas_formats_it(
    ip: Any, session: ScratchSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    # display.max_rows = None: a 1,000,000-row frame was formatted (40 s, 2 GB) before it spilled
    pd = pytest.importorskip("pandas")
    formatted: list[str] = []
    monkeypatch.setattr(pd.DataFrame, "_repr_html_", lambda self: formatted.append("html") or "<table/>")
    monkeypatch.setattr(pd.DataFrame, "__repr__", lambda self: formatted.append("text") or "frame")
    ip.user_ns["df"] = pd.DataFrame({"a": range(50_000), "b": [f"s{i % 100}" for i in range(50_000)]})
    with pd.option_context("display.max_rows", None):
        ip.run_cell("df")
        ip.run_cell("display(df)")
    assert formatted == []
    [entry] = session.pad.entries("handle")  # (the display is the same bytes: the same entry)
    assert session.pad.get(entry["handle"])[49_999] == {"a": 49_999, "b": "s99"}


def test_replay_of_a_missing_file_is_one_usage_error(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match=r"trace file not found: '/nonexistent\.jsonl'"):
        ip.run_cell("%scratch replay /nonexistent.jsonl --model not-a-model")
    assert "TraceWarning" not in capsys.readouterr().err
