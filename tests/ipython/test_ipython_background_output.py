"""Output a thread or task writes after its cell ended, in a real kernel: a little passes as it is;
a flood is held from the threshold on, stored, and only its stub reaches the front end (20 MB a
second after the kernel went idle reached it whole)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ipython_helpers import RealKernel, iopub_until, loaded_kernel, message_text


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RealKernel]:
    with loaded_kernel(tmp_path) as k:
        yield k


THREAD = (
    "import threading, time, sys\n"
    "def later():\n"
    "    time.sleep(1)\n"
    "    for i in range({n}):\n"
    "        print(f'background line {{i}} ' + 'x' * 40)\n"
    "    print('background done', file=sys.stderr)\n"
    "threading.Thread(target=later).start()\n"
)


def test_a_background_flood_is_stored_and_its_stub_follows(kernel: RealKernel) -> None:
    kernel.messages(THREAD.format(n=100_000))  # 5.3 MB from a thread, a second after the cell ended
    later = iopub_until(kernel, "stored as handle")
    shown = "".join(message_text(m) for m in later)
    sent = sum(len(str(m["content"])) for m in later)
    assert "stored as handle" in shown and sent < 30_000, (sent, shown[-500:])
    assert "background line 50000 " not in shown  # the flood stayed in the kernel (the stub previews its ends)
    assert "background line 0 " in shown  # what came before the threshold passed as it was
    handle = shown.split('stored as handle "')[1].split('"')[0]
    assert handle.startswith("background_stdout")
    # a person's stub, as a cell's: the %scratch commands to run (it was the model's, grep(handle=…))
    assert f"%scratch grep {handle}" in shown and "(handle=" not in shown
    found = kernel.run(f"%scratch grep {handle} 'background line 99999 '")
    assert "background line 99999" in found, found[-500:]
    assert kernel.run("print('next cell')").strip() == "next cell"  # the next cell is as before


def test_a_little_background_output_passes_as_it_is(kernel: RealKernel) -> None:
    kernel.messages(THREAD.format(n=3))
    later = iopub_until(kernel, "background done", 20)
    shown = "".join(message_text(m) for m in later)
    assert "background line 2 " in shown and "background done" in shown and "[scratchpad]" not in shown


def test_auto_off_lets_background_output_through(kernel: RealKernel) -> None:
    kernel.run("%scratch auto off")
    kernel.messages(THREAD.format(n=20_000))
    later = iopub_until(kernel, "background done", 60)
    shown = "".join(message_text(m) for m in later)
    assert "background line 19999 " in shown and "[scratchpad]" not in shown
