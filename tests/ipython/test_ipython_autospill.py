"""Auto-spill in a plain IPython shell: results, displays and streams, each replaced by one stub."""

from __future__ import annotations

import html
import json
import sys
import threading
from typing import Any

import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from ipython_helpers import pods

from jupyter_scratchpad.ipython import STUB_MIME, ScratchSession, get_session
from jupyter_scratchpad.ipython._shown import StreamMeter, visible_text

BIG_LOG = "".join(f"2026-12-02T10:00:{i % 60:02d} worker-{i % 9} processed batch {i}\n" for i in range(4000))


def handles(session: ScratchSession) -> list[str]:
    return [e["handle"] for e in session.pad.entries("handle")]


# -- the last expression's value -------------------------------------------------------------


def test_a_large_value_shows_a_stub_and_keeps_the_object(ip: Any, session: ScratchSession,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["pods"] = pods
    result = ip.run_cell("pods()")
    out = capsys.readouterr().out
    [handle] = handles(session)
    assert handle.startswith("cell_1_") and f'"{handle}"' in out
    assert "pod-2999" not in out and "The value itself is still in Out[1] and _." in out
    assert result.result == pods() and ip.user_ns["_"] is result.result and ip.user_ns["Out"][1] is result.result
    assert session.pad.get(handle) == pods()


def test_the_stub_bundle_has_all_three_parts(ip: Any) -> None:
    data, metadata = ip.displayhook.compute_format_data(pods())
    assert set(data) == {"text/plain", "text/html", STUB_MIME} and metadata == {}
    stub = data[STUB_MIME]
    json.dumps(stub)  # plain JSON for the front end
    assert {"handle", "preview", "size", "tokens", "format", "note"} <= set(stub)
    assert stub["format"] == "json" and "jp-scratchpad-stub" in data["text/html"]
    assert stub["handle"] in data["text/html"] and "lines 1-14 and" in data["text/plain"]


def test_a_json_like_value_is_not_pretty_printed_when_it_spills(ip: Any) -> None:
    calls: list[Any] = []
    plain = ip.display_formatter.formatters["text/plain"]
    previous = plain.for_type(dict, lambda obj, p, cycle: calls.append(obj))
    try:
        ip.run_cell("{'rows': list(range(20000))}")
        assert calls == []
        ip.run_cell("{'rows': [1, 2]}")
        assert len(calls) == 1
    finally:
        plain.type_printers.pop(dict)
        if previous is not None:
            plain.for_type(dict, previous)


def test_small_values_are_untouched(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("{'a': 1, 'b': [1, 2, 3]}")
    assert capsys.readouterr().out == "Out[1]: {'a': 1, 'b': [1, 2, 3]}\n"
    assert session.pad.entries() == []


def test_a_large_string_is_stored_as_its_text(ip: Any, session: ScratchSession) -> None:
    ip.user_ns["log"] = BIG_LOG
    ip.run_cell("log")
    [handle] = handles(session)
    assert session.pad.get(handle) == BIG_LOG and session.pad.stub(handle)["format"] == "text"


class HugeRepr:
    def __repr__(self) -> str:
        return "HugeRepr(" + ", ".join(f"field_{i}={i}" for i in range(5000)) + ")"


class HugeHtml:
    def _repr_html_(self) -> str:
        return "<table>" + "".join(f"<tr><td>{i}</td></tr>" for i in range(5000)) + "</table>"


class Picture:
    def __repr__(self) -> str:
        return "Picture " + "x " * 20000

    def _repr_png_(self) -> bytes:
        return b"\x89PNG\r\n\x1a\n"


def test_other_objects_spill_their_largest_text(ip: Any, session: ScratchSession) -> None:
    ip.user_ns.update(HugeRepr=HugeRepr, HugeHtml=HugeHtml)
    ip.run_cell("HugeRepr()")
    ip.run_cell("HugeHtml()")
    first, second = handles(session)
    assert session.pad.get(first).startswith("HugeRepr(field_0=0")
    assert session.pad.get(second).startswith("<table><tr><td>0</td>")


def test_rich_visual_outputs_are_never_spilled_but_a_flood_of_text_beside_them_is(
    ip: Any, session: ScratchSession
) -> None:
    # _repr_png_ with a 20,000-line __repr__: the whole text went out beside a 96-byte image
    ip.user_ns["Picture"] = Picture
    data, _ = ip.displayhook.compute_format_data(Picture())
    assert data["image/png"] == b"\x89PNG\r\n\x1a\n" and STUB_MIME not in data  # the image is what shows
    [handle] = handles(session)
    assert session.pad.get(handle) == repr(Picture()) and f'"{handle}"' in data["text/plain"]
    assert len(data["text/plain"]) < 4000 and "Only the text/plain beside the image/png was stored" in data["text/plain"]
    ip.user_ns["SmallPicture"] = SmallPicture
    data, _ = ip.displayhook.compute_format_data(SmallPicture())
    assert data == {"text/plain": "a small picture", "image/png": b"\x89PNG\r\n\x1a\n"} and len(handles(session)) == 1


class SmallPicture:
    def __repr__(self) -> str:
        return "a small picture"

    def _repr_png_(self) -> bytes:
        return b"\x89PNG\r\n\x1a\n"


def test_values_returned_by_scratch_are_not_stored_again(ip: Any, spilled: str, session: ScratchSession,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    result = ip.run_cell(f"%scratch head {spilled} -n 900").result
    assert session.pad.tokenizer.count(result.text) > 5120  # over the spill threshold, but it is what was asked for
    out = capsys.readouterr().out
    assert "\n900\t" in out and handles(session) == [spilled]
    whole = ip.run_cell(f"%scratch get {spilled}")
    out = capsys.readouterr().out
    assert whole.result == pods() and f'"{spilled}"' in out and "already in the scratchpad" in out
    assert handles(session) == [spilled]


def test_a_part_of_a_handle_or_a_note_too_large_to_show_is_stored_not_printed(
    ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]
) -> None:
    # %scratch get H PATH of a 2 MB string and %scratch read of a 500 KB note printed them whole
    ip.run_cell("%%scratch --name blob --force\n{'blob': 'x' * 2_000_000, 'n': 1}")
    ip.run_cell("%%scratch write big\n" + "line\n" * 100_000)
    capsys.readouterr()
    for cell in ("%scratch get blob blob", "%scratch read big"):
        res = ip.run_cell(cell)
        out = capsys.readouterr().out
        assert len(res.result) > 400_000 and len(out) < 3_000, (cell, len(out))  # the value, not its print
        assert "was stored as handle" in out
    small = ip.run_cell("%scratch get blob n")
    assert small.result == 1 and "1" in capsys.readouterr().out
    assert ip.run_cell("%scratch get blob $").result["n"] == 1
    assert "blob" in capsys.readouterr().out  # the whole value again: the handle's own stub


def test_auto_off_lets_everything_through(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%scratch auto off")
    ip.user_ns["log"] = BIG_LOG
    ip.run_cell("print(log)\nlog")
    out = capsys.readouterr().out
    assert out.count("processed batch 3999") == 2 and session.pad.entries() == []


def test_a_failed_spill_shows_a_pointer_not_the_flood(ip: Any, session: ScratchSession, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    def disk_full(*args: Any, **kwargs: Any) -> Any:
        raise OSError("No space left on device")

    monkeypatch.setattr(session.store, "put_body", disk_full)
    ip.user_ns["log"] = BIG_LOG
    ip.run_cell("print(log)\nlog")
    out = capsys.readouterr().out
    # fail closed: two short pointers (stdout, the result), each with the first and last lines
    assert out.count("processed batch 2000") == 0 and out.count("was withheld") == 2 and len(out) < 5000
    assert "No space left on device" in caplog.text and session.pad.entries() == []


# A str whose len() raises: the scratchpad's own code fails on it (a bug stand-in that needs no
# patching); what the notebook gets must still be short.
LENLESS = "class Lenless(str):\n    def __len__(self):\n        raise RuntimeError('no len today')\n"


def test_when_our_own_code_fails_on_a_large_value_the_notebook_gets_a_pointer(
    ip: Any, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    ip.run_cell(LENLESS + "Lenless('processed batch\\n' * 20000)")
    out = capsys.readouterr().out
    assert "was withheld" in out and "no len today" in out and "Out[1]" in out
    assert out.count("processed batch") < 10 and len(out) < 5000  # was 400,000 characters
    assert str.__len__(ip.user_ns["Out"][1]) == 320_000  # the value itself kept whole
    assert "auto-spill of cell 1's result failed" in caplog.text


def test_when_our_own_code_fails_on_a_small_value_it_is_shown(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell(LENLESS + "Lenless('short')")
    assert "'short'" in capsys.readouterr().out


# -- display(...) ----------------------------------------------------------------------------


@pytest.fixture
def recorded(bare_shell: Any) -> tuple[Any, list[dict[str, Any]]]:
    """A shell whose display publisher records instead of printing (installed before loading)."""
    publisher = CapturingDisplayPublisher(shell=bare_shell)
    bare_shell.display_pub = publisher
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    return bare_shell, publisher.outputs


@pytest.mark.parametrize(("code", "fmt"), [
    ("display(JSON({'rows': list(range(20000))}))", "json"),
    ("display(HTML('<p>row</p>' * 20000))", "text"),
    ("display({'text/plain': 'line\\n' * 30000}, raw=True)", "text"),
    ("display(Markdown('# title\\n## part\\n' + 'word ' * 20000))", "markdown"),
])
def test_large_displays_are_replaced(recorded: tuple[Any, list[dict[str, Any]]], code: str, fmt: str) -> None:
    shell, outputs = recorded
    shell.run_cell(f"from IPython.display import display, JSON, HTML, Markdown\n{code}")
    [output] = outputs
    assert set(output["data"]) == {"text/plain", "text/html", STUB_MIME} and output["metadata"] == {}
    stub = output["data"][STUB_MIME]
    assert stub["format"] == fmt and stub["source_tool"] == "cell_1_display"
    assert len(json.dumps(output["data"])) < 12_000


def test_a_displayed_value_spills_as_itself(recorded: tuple[Any, list[dict[str, Any]]]) -> None:
    # display(big_dict) spilled IPython's pretty text, cut at 1,000 items: %scratch get gave back
    # that cut text, not the dict
    shell, outputs = recorded
    shell.run_cell("big = {f'key{i}': {'n': i} for i in range(50_000)}\ndisplay(big)\ndisplay({'small': 1})")
    large, small = outputs
    stub = large["data"][STUB_MIME]
    assert stub["format"] == "json" and stub["source_tool"] == "cell_1_display"
    assert get_session(shell).pad.get(stub["handle"]) == shell.user_ns["big"]  # the dict, whole
    assert small["data"]["text/plain"] == "{'small': 1}"
    shell.run_cell("display(big, include=['text/plain'])")  # a part of its display asked for: that text
    assert outputs[2]["data"][STUB_MIME]["format"] == "text"


def test_when_our_own_code_fails_on_a_large_display_it_is_withheld(recorded: tuple[Any, list[dict[str, Any]]]) -> None:
    shell, outputs = recorded
    shell.run_cell(LENLESS + "display({'text/plain': Lenless('row\\n' * 30000)}, raw=True)\n"
                   "display({'text/plain': Lenless('small')}, raw=True)")
    large, small = outputs
    assert list(large["data"]) == ["text/plain"] and "was withheld" in large["data"]["text/plain"]
    assert len(large["data"]["text/plain"]) < 3000 and small["data"]["text/plain"] == "small"


def test_a_flood_beside_a_rich_rendering_is_stored(recorded: tuple[Any, list[dict[str, Any]]]) -> None:
    # 20 MB of text/plain beside a tiny image went out whole (the bundle had a non-text part)
    shell, outputs = recorded
    png = "iVBORw0KGgo=" * 300_000  # a large image is left alone
    shell.run_cell(
        f"display({{'image/png': '{png}', 'text/plain': 'row\\n' * 500_000, 'text/html': '<b>small</b>'}}, raw=True)"
    )
    [output] = outputs
    data = output["data"]
    assert data["image/png"] == png and data["text/html"] == "<b>small</b>" and len(data["text/plain"]) < 4000
    [entry] = get_session(shell).pad.entries("handle")
    assert entry["source_tool"] == "cell_1_display" and entry["handle"] in data["text/plain"]


def test_small_and_visual_displays_pass(recorded: tuple[Any, list[dict[str, Any]]]) -> None:
    shell, outputs = recorded
    shell.run_cell("from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))\n"
                   "display({'image/png': 'iVBORw0KGgo=', 'text/plain': 'x' * 900}, raw=True)")
    assert outputs[0]["data"]["text/html"] == "<b>hi</b>"
    assert outputs[1]["data"]["image/png"] == "iVBORw0KGgo="
    assert get_session(shell).pad.entries() == []


def test_update_display_keeps_its_display_id(recorded: tuple[Any, list[dict[str, Any]]]) -> None:
    shell, outputs = recorded
    shell.run_cell("from IPython.display import update_display\n"
                   "update_display({'text/plain': 'y' * 90000}, raw=True, display_id='progress')")
    [output] = outputs
    assert output["update"] is True and output["transient"] == {"display_id": "progress"}
    assert STUB_MIME in output["data"]


# -- streams ---------------------------------------------------------------------------------


def test_a_held_streams_card_says_where_it_belongs(recorded: tuple[Any, list[dict[str, Any]]],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # stdout held, then a display and the cell's value, then the stdout card: nothing said why
    shell, outputs = recorded
    shell.user_ns["lines"] = BIG_LOG.splitlines()
    shell.run_cell("print('starting')\nfor line in lines:\n    print(line)\ndisplay('a later display')")
    shown = capsys.readouterr().out.split("[scratchpad]")[0]
    later, card = outputs
    assert later["data"]["text/plain"] == "'a later display'" and STUB_MIME in card["data"]
    lines = shown.count("\n")
    said = (f"This card belongs where the cell's stdout stopped: the rest of the stdout was held after the "
            f"{lines:,} lines of it shown above, and anything shown between there and here came later.")
    assert 1 < lines < 2000 and said in card["data"]["text/plain"] and html.escape(said) in card["data"]["text/html"]


def test_large_stdout_is_held_back_and_stored_whole(ip: Any, session: ScratchSession,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["lines"] = BIG_LOG.splitlines()
    ip.run_cell("print('starting')\nfor line in lines:\n    print(line)\nprint('done')")
    out = capsys.readouterr().out
    [handle] = handles(session)
    stored = session.pad.get(handle)
    assert stored == "starting\n" + BIG_LOG + "done\n"  # what was shown and what was held
    shown = out.split("[scratchpad]")[0]
    assert shown.startswith("starting\n") and stored.startswith(shown)
    assert "processed batch 2000" not in out and "done" not in shown
    assert session.pad.stub(handle)["source_tool"] == "cell_1_stdout"
    assert len(shown) < 30_000  # at most about the threshold's worth of text reached the front end


def test_stderr_is_gated_too(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["log"] = BIG_LOG
    ip.run_cell("import sys\nsys.stderr.write(log)\nprint('small')")
    captured = capsys.readouterr()
    [handle] = handles(session)
    assert session.pad.get(handle) == BIG_LOG and handle.startswith("cell_1_stderr_")
    assert captured.err == "" and captured.out.startswith("small\n[scratchpad]")


# A text progress bar (tqdm on stderr): one line rewritten after each \\r; 3,001 states, 80 KB.
BAR = ("import sys\nfor i in range(3001):\n"
       "    sys.stderr.write(f'\\r{i * 100 // 3000:3d}%|{\"#\" * (i // 300):<10}| {i}/3000')\n")
BAR_SHOWN = "100%|##########| 3000/3000"


def test_a_progress_bar_never_spills(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    # every \r update counted toward the threshold, though the front end shows only the line's last
    # state: a bar that ran 15 s was frozen and spilled, its stub showing the 0 % state
    ip.run_cell(BAR + "sys.stderr.write('\\n')")
    assert session.pad.entries() == []
    err = capsys.readouterr().err
    assert len(err) > 60_000 and err.endswith(f"\r{BAR_SHOWN}\n")  # passed through as written


def test_a_spilled_stream_stores_what_the_front_end_shows(ip: Any, session: ScratchSession,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["log"] = BIG_LOG
    ip.run_cell(BAR + "sys.stderr.write('\\n' + log)")
    [handle] = handles(session)
    assert session.pad.get(handle) == f"{BAR_SHOWN}\n{BIG_LOG}"  # the bar's latest state, every line
    preview = str(session.pad.stub(handle))
    assert BAR_SHOWN in preview and "| 0/3000" not in preview


@pytest.mark.parametrize(("written", "shown"), [
    ("plain\ntext\n", "plain\ntext\n"),
    ("abcdef\rxy", "xycdef"),  # overwritten from the line's start, the rest stays (as JupyterLab shows it)
    ("a\r\nb\r\n", "a\nb\n"),  # \r\n is a newline
    ("0%\r50%\r100%\ndone\r", "100%\ndone"),
    ("\r\r", ""),
])
def test_visible_text_is_what_the_front_end_shows(written: str, shown: str) -> None:
    assert visible_text(written) == shown
    meter = StreamMeter()
    for ch in written:  # written a character at a time: the meter follows the same line
        meter.feed(ch)
    assert "".join(meter.uncounted) + meter.line.text() == shown


def test_small_streams_pass_unchanged_and_in_order(ip: Any, session: ScratchSession,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("for i in range(200):\n    print(i, end=' ')")
    assert capsys.readouterr().out == "".join(f"{i} " for i in range(200))
    assert session.pad.entries() == []


def test_a_failing_cell_still_spills_what_it_printed(ip: Any, session: ScratchSession) -> None:
    ip.user_ns["log"] = BIG_LOG
    with pytest.raises(ZeroDivisionError):
        ip.run_cell("print(log)\n1 / 0")
    [handle] = handles(session)
    assert session.pad.get(handle) == BIG_LOG + "\n"


def test_writes_from_other_threads_belong_to_the_cell(ip: Any, session: ScratchSession,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns.update(log=BIG_LOG, threading=threading)
    ip.run_cell("t = threading.Thread(target=print, args=(log,))\nt.start()\nt.join()")
    assert "processed batch 2000" not in capsys.readouterr().out
    assert session.pad.get(handles(session)[0]) == BIG_LOG + "\n"


def test_no_tap_remains_between_cells(ip: Any) -> None:
    ip.run_cell("print('x')")
    write = getattr(sys.stdout, "__dict__", {}).get("write")
    assert write is None or "jupyter_scratchpad" not in type(write).__module__


class SlottedStream:
    """A stream whose ``write`` cannot be replaced on the instance."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_a_stream_that_cannot_be_tapped_is_proxied_for_the_cell(ip: Any, session: ScratchSession,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    stream = SlottedStream()
    monkeypatch.setattr(sys, "stdout", stream)
    taps = session.hooks.streams
    taps.begin_cell({"stdout": "cell_9_stdout", "stderr": "cell_9_stderr"})
    assert sys.stdout is not stream and sys.stdout.flush() is None
    print("shown")
    print(BIG_LOG, end="")
    taps.end_cell()
    assert sys.stdout is stream
    assert stream.parts[:2] == ["shown", "\n"] and "processed batch 2000" not in "".join(stream.parts)
    [handle] = handles(session)
    assert session.pad.get(handle) == "shown\n" + BIG_LOG


def test_rerunning_a_cell_reuses_its_entry(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["pods"] = pods
    ip.run_cell("pods()")
    first = capsys.readouterr().out
    [handle] = handles(session)
    before = session.pad.usage()
    ip.run_cell("pods()")
    second = capsys.readouterr().out
    assert handles(session) == [handle], "the same bytes in the same scope are one entry"
    assert f'"{handle}"' in second and "already stored (same bytes)" in second and "already stored" not in first
    after = session.pad.usage()
    assert after["tokens_intercepted"] == before["tokens_intercepted"]
    ip.run_cell("{**pods(), 'another': 1}")  # different bytes: a new entry
    assert len(handles(session)) == 2


def test_a_large_error_is_cut_even_when_bounding_it_fails(ip: Any, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("bounding is broken")

    monkeypatch.setattr("jupyter_scratchpad.spill.bound_error_text", broken)
    with pytest.raises(ValueError):
        ip.run_cell("raise ValueError('E' * 2_000_000)")
    out = capsys.readouterr()
    shown = out.out + out.err
    assert "ValueError" in shown and "sys.last_value is the whole exception" in shown
    assert 30_000 < len(shown) < 80_000  # the first 32,768 characters, not 2 MB (4 MB before)
    assert len(str(sys.last_value)) == 2_000_000


@pytest.mark.parametrize(("code", "kind"), [
    ("raise ValueError('v' * 500_000)", ValueError),  # str() from args: a copy of the same type
    ("raise KeyError('k' * 500_000)", Exception),  # str() is repr(args[0]): a stand-in of the same name
])
def test_the_cells_error_as_the_kernel_reply_carries_it_is_bounded(ip: Any, code: str, kind: type) -> None:
    with pytest.raises(Exception) as raised:  # what run_cell's result carries (ipykernel: str() -> evalue)
        ip.run_cell(code)
    assert isinstance(raised.value, kind) and type(raised.value).__name__ == code.split()[1].split("(")[0]
    assert len(str(raised.value)) < 10_000 and "the whole exception is sys.last_value" in str(raised.value)
    assert raised.value.__traceback__ is not None and len(str(sys.last_value)) >= 500_000


def test_a_persons_whole_read_is_displayed_bounded(ip: Any, session: ScratchSession,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # %scratch df with display.max_rows=None and %scratch iter --limit 200000 sent 41 MB to the browser
    ip.user_ns["big"] = {"items": [{"name": f"pod-{i}", "phase": "Running"} for i in range(60_000)]}
    ip.run_cell("big")
    [handle] = handles(session)
    capsys.readouterr()
    ip.run_cell("import pandas as pd\npd.set_option('display.max_rows', None)")
    try:
        for command in (f"%scratch df {handle} items", f"%scratch sql SELECT * FROM {handle}.items"):
            # a DataFrame %scratch returns: shown as pandas' defaults bound it (it sent 2 MB), the
            # value whole; bounded like any output, whatever display.max_rows says
            ip.run_cell(f"df = {command}\ndf")
            shown = capsys.readouterr().out
            assert len(shown) < 5_000 and "pandas' default head and tail" in shown and "Out[" in shown, command
            assert "pod-0" in shown and "pod-59999" in shown and len(ip.user_ns["df"]) == 60_000
        ip.run_cell(f"%scratch df {handle} items")
        bundle = ip.displayhook.compute_format_data(ip.user_ns["_"])[0]
        assert len(bundle["text/html"]) < 10_000 and "pod-59999" in bundle["text/html"]
        capsys.readouterr()
        ip.run_cell("pd.set_option('display.max_rows', 100)\nsmall = %scratch sql SELECT 1 AS one\nsmall")
        assert "default head and tail" not in capsys.readouterr().out  # a small result: as the options say
        ip.run_cell(f"rows = %scratch iter {handle} items --fields name,phase --limit 60000\nrows")
        shown = capsys.readouterr().out
        assert len(shown) < 1_100_000 and "characters not shown here" in shown and len(ip.user_ns["rows"]) == 60_000
        before = handles(session)
        for name in ("rows", "df"):  # shown again in a later cell: still ours, bounded, not stored again
            ip.run_cell(name)  # (it stored the display's bounded copy as a new entry, `rows` did)
            again = capsys.readouterr().out
            assert handles(session) == before, name
            assert len(again) < 1_100_000 and "stored as handle" not in again, name
    finally:
        ip.run_cell("pd.reset_option('display.max_rows')")


def test_a_displayed_dataframe_spills_as_its_rows(recorded: tuple[Any, list[dict[str, Any]]]) -> None:
    # display(df) of a frame pandas shows whole was stored as its printed table (text/plain),
    # while the same frame as the cell's value was stored as JSON records
    shell, outputs = recorded
    shell.run_cell("import pandas as pd\npd.set_option('display.max_rows', None)")
    try:
        shell.run_cell("frame = pd.DataFrame({'a': range(10_000), 'b': ['x'] * 10_000})\ndisplay(frame)")
        [output] = outputs
        stub = output["data"][STUB_MIME]
        assert stub["format"] == "json" and stub["source_tool"] == "cell_2_display"
        pad = get_session(shell).pad
        assert pad.get(stub["handle"])[9_999] == {"a": 9_999, "b": "x"}
        assert pad.dataframe(stub["handle"]).equals(shell.user_ns["frame"])
    finally:
        shell.run_cell("pd.reset_option('display.max_rows')")
    shell.run_cell("display(frame)")  # displayed cut to a few rows by pandas: nothing to spill
    assert STUB_MIME not in outputs[1]["data"] and "[10000 rows x 2 columns]" in outputs[1]["data"]["text/plain"]


def test_a_dataframe_shown_whole_spills_as_its_rows(ip: Any, session: ScratchSession,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    # with display.max_rows = None a large DataFrame spilled as its printed table: text, which
    # neither SQL nor %scratch df could read back as rows
    ip.run_cell("import pandas as pd\npd.set_option('display.max_rows', None)")
    try:
        ip.run_cell("frame = pd.DataFrame({'name': [f'pod-{i}' for i in range(30_000)], 'n': range(30_000)})\nframe")
        [handle] = handles(session)
        assert session.pad.entry(handle).format == "json" and len(capsys.readouterr().out) < 5_000
        ip.run_cell(f"back = %scratch df {handle}")
        assert ip.user_ns["back"].equals(ip.user_ns["frame"])
        res = ip.run_cell(f'%scratch sql SELECT count(*) AS n, max(n) AS top FROM {handle}').result
        assert res.to_dict("records") == [{"n": 30_000, "top": 29_999}]
        # an index of its own is a column; columns that repeat cannot be rows: the text spills
        ip.run_cell("frame.rename_axis('row')")
        ip.run_cell("pd.concat([frame, frame], axis=1)")
        _, indexed, doubled = handles(session)
        assert session.pad.get(indexed)[7] == {"row": 7, "name": "pod-7", "n": 7}
        assert session.pad.entry(doubled).format == "text"
        # floats exactly as they are (DataFrame.to_json wrote 0.123456789 for 0.12345678901234567)
        ip.run_cell("pd.DataFrame({'x': [0.12345678901234567 + i for i in range(30_000)]})")
        *_, floats = handles(session)
        assert session.pad.get(floats)[0] == {"x": 0.12345678901234567}
    finally:
        ip.run_cell("pd.reset_option('display.max_rows')")
    ip.run_cell("frame")  # displayed cut to a few rows by pandas: nothing to spill
    assert len(handles(session)) == 4  # (the frames above, and nothing more)


def test_an_exception_whose_str_fails_adds_no_traceback_of_ours(ip: Any, capsys: pytest.CaptureFixture[str],
                                                                caplog: pytest.LogCaptureFixture) -> None:
    # "bounding a traceback failed" and our own traceback were added to the cell's error
    with pytest.raises(RuntimeError):  # (IPython itself stores the RuntimeError as the cell's error)
        ip.run_cell("class Odd(ValueError):\n    def __str__(self):\n        raise RuntimeError('no str')\nraise Odd()")
    out = capsys.readouterr()
    assert "Odd" in out.out + out.err and "_hooks.py" not in out.out + out.err and "bounding" not in caplog.text
