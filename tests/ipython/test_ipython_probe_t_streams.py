"""Probe T's stream findings, in real kernels (and a shell where the front end does not matter):
a thread still printing when its cell ends (3), the extension's own messages below a low
threshold (9), ``clear_output`` loops (10), ``%%scratch`` and fd output (5), CRLF text (11)."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ipython_helpers import RealKernel, iopub_until, loaded_kernel, message_text

from jupyter_scratchpad.ipython import ScratchSession

TIMEOUT_S = 120


def _cell(kernel: RealKernel, code: str) -> list[dict[str, Any]]:
    """Run ``code`` (an error is no failure here); the messages it sent."""
    out: list[dict[str, Any]] = []
    kernel.client.execute_interactive(code, output_hook=out.append, timeout=TIMEOUT_S)
    return out


def _cards(messages: list[dict[str, Any]]) -> list[str]:
    return [message_text(m) for m in messages if m["msg_type"] == "display_data" and "stored as handle" in
            message_text(m)]


def _stored(kernel: RealKernel) -> dict[str, Any]:
    """Every live entry of the kernel's store: handle -> its body (as ``pad.get`` gives it)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stored.json"
        kernel.run(
            "import json as _j\nfrom jupyter_scratchpad.ipython import get_session as _gs\n"
            "_d = {_e['handle']: _gs().pad.get(_e['handle']) for _e in _gs().pad.entries('handle')}\n"
            f"with open({str(path)!r}, 'w') as _f: _j.dump(_d, _f)"
        )
        return dict(json.loads(path.read_text()))


# -- 3. a thread still writing when its cell ends ------------------------------------------------

THREAD = (
    "import threading, time\n"
    "def _w():\n"
    "    for i in range({n}):\n"
    "        print('bg2', i)\n"
    "        if i % 1000 == 0: time.sleep(0.01)\n"  # (3 s at least: it outlasts the cell)
    "threading.Thread(target=_w).start()\n"
    "time.sleep(1.5)\n"
)


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RealKernel]:
    with loaded_kernel(tmp_path) as k:
        yield k


def test_a_thread_printing_as_its_cell_ends_is_gated_without_a_gap(kernel: RealKernel) -> None:
    n = 300_000
    messages = _cell(kernel, THREAD.format(n=n))
    [card] = _cards(messages)
    at = next(i for i, m in enumerate(messages) if m["msg_type"] == "display_data")
    before = "".join(m["content"]["text"] for m in messages[:at]
                     if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
    after = "".join(message_text(m) for m in messages[at + 1:] if m["msg_type"] == "stream")
    # about the threshold reaches the notebook (it was 66 KB before the card and 54 KB after it)
    assert len(before) + len(after) < 20_000, (len(before), len(after))
    said = re.search(r"held after the ([\d,]+) lines of it shown above", card)
    assert said is not None, card
    shown = re.findall(r"^bg2 \d+$", before, re.M)
    assert int(said.group(1).replace(",", "")) == len(shown)  # the card's count is true
    iopub_until(kernel, "stored as handle")  # the rest, once the thread is quiet: a background entry
    stored = _stored(kernel)
    numbers = {h: [int(x) for x in re.findall(r"^bg2 (\d+)$", body, re.M)] for h, body in stored.items()}
    [cell] = [h for h in numbers if h.startswith("cell_2_stdout")]
    background = [h for h in numbers if h.startswith("background_stdout")]
    assert background, list(numbers)
    together = numbers[cell] + [i for h in background for i in numbers[h]]
    assert together == list(range(n))  # every line once, in order: none lost between the two entries


# -- 9, 10, 11, 5: one kernel ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKernel]:
    with loaded_kernel(tmp_path_factory.mktemp("probe_t")) as k:
        yield k


def test_the_extensions_own_messages_are_never_spilled_below_a_low_threshold(shared_kernel: RealKernel) -> None:
    k = shared_kernel
    k.run("%config ScratchMagics.spill_threshold = 20")
    try:
        for code, expected in [
            ("%scratch lst", "UsageError: %scratch: unknown subcommand 'lst'"),
            ("%scratch head nohandle", "UsageError: %scratch head"),
            ("%config ScratchMagics.spill_threshold = 0", "Kept: ScratchMagics.spill_threshold = 20"),
            ("%scratch --help", "usage: %scratch SUBCOMMAND"),
            ("%%scratch --help\npass", "usage: %%scratch"),
            ("print('a short line of output, over twenty tokens but shorter than any card would be')",
             "shorter than any card"),
        ]:
            messages = _cell(k, code)
            shown = "".join(message_text(m) for m in messages)
            assert expected in shown and not _cards(messages), (code, shown[:300])
        assert _cards(_cell(k, "print('word ' * 2000)"))  # a large stream still spills at 20 tokens
    finally:
        k.run("%config ScratchMagics.spill_threshold = None")


def test_a_clear_output_loop_is_counted_from_its_last_clear(shared_kernel: RealKernel) -> None:
    code = ("from IPython.display import clear_output\n"
            "for i in range(3000):\n    clear_output(wait=True)\n    print(f'step {i} ' + 'x' * 40)")
    messages = _cell(shared_kernel, code)
    shown = "".join(message_text(m) for m in messages)
    assert not _cards(messages) and "step 2999 " in shown, shown[-300:]


def test_a_clear_output_loop_never_spills_in_a_shell(ip: Any, session: ScratchSession,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("from IPython.display import clear_output\n"
                "for i in range(3000):\n    clear_output(wait=True)\n    print(f'step {i} ' + 'x' * 40)")
    out = capsys.readouterr().out
    assert "[scratchpad]" not in out and "step 2999 " in out and session.pad.entries() == []


def test_a_printed_crlf_text_is_stored_as_printed(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("text = 'a,b\\r\\n1,2\\r\\n' * 50_000\nprint(text, end='')")
    [entry] = session.pad.entries("handle")
    assert session.pad.get(entry["handle"]) == ip.user_ns["text"]


def test_a_progress_bar_ending_in_crlf_is_stored_as_shown(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("import sys\nfor i in range(3000): sys.stdout.write(f'row {i}\\r\\n')\n"
                "sys.stdout.write('0%\\r50%\\r100%\\r\\n')")
    [entry] = session.pad.entries("handle")
    body = session.pad.get(entry["handle"])
    assert body.startswith("row 0\r\nrow 1\r\n") and body.endswith("row 2999\r\n100%\r\n")


def test_named_capture_stores_subprocess_output(shared_kernel: RealKernel) -> None:
    k = shared_kernel
    earlier = set(_stored(k))
    messages = _cell(k, "%%scratch --name sub\nimport subprocess\n_r = subprocess.run(['seq', '1', '200000'])")
    [card] = _cards(messages)
    assert '"sub"' in card, card
    assert "200000" in k.run("%scratch tail sub -n 1")
    assert set(_stored(k)) - earlier == {"sub"}  # not (also) in an automatic cell_N_stdout entry
    shown = k.run("%%scratch --name echoed --force\nimport subprocess\n_r = subprocess.run(['echo', 'hello from echo'])")
    assert "produced no output" not in shown and '"echoed"' in shown, shown
    assert _stored(k)["echoed"] == "hello from echo\n"
    # not stored (small): the message is shown after the output, not held or stored
    shown = k.run("%%scratch --name tiny\nimport subprocess\n_r = subprocess.run(['echo', 'hi'])")
    assert shown.index("hi\n") < shown.index("[scratchpad] not stored as tiny"), shown


# -- 4. a long line rewritten with \r: coalesced past the first 256 KB, the final state always shown --


def test_a_long_overwritten_line_is_coalesced_and_ends_in_its_last_state(ip: Any, session: ScratchSession,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("import sys\nfor i in range(1000): sys.stdout.write('\\r' + ('%06d' % i) * 2000)\n"
                "_ = sys.stdout.write('\\n')")
    out = capsys.readouterr().out
    assert session.pad.entries() == []  # (overwritten states still never count)
    assert len(out) < 2_000_000, len(out)  # it forwarded all 12 MB
    assert out.endswith("\r" + "000999" * 2000 + "\n")


def test_a_long_overwritten_line_left_open_shows_its_last_state(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("import sys\nfor i in range(1000): sys.stdout.write('\\r' + ('%06d' % i) * 2000)")
    out = capsys.readouterr().out
    assert len(out) < 2_000_000 and out.endswith("000999" * 2000)  # (forwarded when the cell ended)
