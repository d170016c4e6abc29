"""The notebook's store path: expanded, validated, kept across kernel restarts, clear when taken."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from ipython_helpers import CHILD_ENV, RealKernel

from jupyter_scratchpad.ipython import ScratchSession


def test_a_path_that_cannot_be_opened_is_put_back(ip: Any, session: ScratchSession, tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    store, pad = session.store, session.pad
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("x")
    with pytest.raises(UsageError) as info:
        session.magics.store_path = str(not_a_dir)
    message = str(info.value)
    assert f"ScratchMagics.store_path = {str(not_a_dir)!r} was not applied" in message
    assert f"Kept: a temporary store at {store.path} (ScratchMagics.store_path = None)" in message
    assert session.magics.store_path is None and session.store is store and session.pad is pad and not store.closed
    ip.run_cell(f"%config ScratchMagics.store_path = {str(not_a_dir)!r}")  # %config logs the same line
    assert "was not applied" in caplog.text and session.magics.store_path is None


@pytest.mark.parametrize("line", ["ScratchMagics.spill_threshold = -3", "ScratchMagics.store_path = 'A_FILE'"])
def test_a_refused_config_value_does_not_break_the_next_reload(ip: Any, session: ScratchSession, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str], line: str) -> None:
    """%config merges a value into the shell's config even when we refuse it; the next
    %reload_ext read it and failed (a traceback, %scratch gone, every later %load_ext too)."""
    (tmp_path / "a-file").write_text("x")
    ip.run_cell(f"%config {line.replace('A_FILE', str(tmp_path / 'a-file'))}")
    try:
        ip.run_line_magic("reload_ext", "jupyter_scratchpad")
        assert "scratch" in ip.magics_manager.magics["line"]
        assert "ignored ScratchMagics." in capsys.readouterr().err
        assert ip.run_cell("%scratch write k 1").success
    finally:
        ip.config.ScratchMagics.pop(line.split(".")[1].split(" ")[0], None)


def test_an_agent_that_cannot_own_the_run_is_put_back(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%scratch write k 1")
    with pytest.raises(UsageError, match=r"Kept: run 'notebook' of agent 'notebook'"):
        session.magics.agent_id = "other"
    assert session.magics.agent_id == "notebook" and session.pad.agent_id == "notebook"


@pytest.mark.parametrize("typed", ["~/scratch-home", "$SCRATCH_TEST_DIR/scratch-env", "${SCRATCH_TEST_DIR}/x"])
def test_home_and_variables_are_expanded(ip: Any, session: ScratchSession, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch, typed: str) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SCRATCH_TEST_DIR", str(tmp_path))
    session.magics.store_path = typed
    expected = tmp_path / typed.replace("~/", "").replace("$SCRATCH_TEST_DIR/", "").replace("${SCRATCH_TEST_DIR}/", "")
    assert session.store.path == expected and (expected / "catalog.duckdb").exists()
    assert not Path("~").exists() and not Path("$SCRATCH_TEST_DIR").exists()


# -- a real kernel: restart, and a second process on the same path ---------------------------------


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RealKernel]:
    k = RealKernel(tmp_path)
    try:
        yield k
    finally:
        k.close()


def test_a_persistent_store_survives_a_kernel_restart(kernel: RealKernel, tmp_path: Path) -> None:
    store = tmp_path / "kept-store"
    kernel.run(f"%load_ext jupyter_scratchpad\n%config ScratchMagics.store_path = {str(store)!r}")
    kernel.run("{'items': [{'id': i, 'name': f'item-{i}'} for i in range(3000)]}")
    handle = kernel.run("entries = %scratch list\nprint(entries['handle'][0])").strip()
    assert handle.startswith("cell_")
    kernel.restart()
    kernel.run(f"%load_ext jupyter_scratchpad\n%config ScratchMagics.store_path = {str(store)!r}")
    assert kernel.run("entries = %scratch list\nprint(list(entries['handle']))").strip() == repr([handle])
    assert kernel.run(f"frame = %scratch df {handle} items\nprint(len(frame))").strip() == "3000"


def test_a_second_process_on_the_same_path_is_told_who_holds_it(kernel: RealKernel, ip: Any,
                                                                session: ScratchSession, tmp_path: Path) -> None:
    store = tmp_path / "shared-store"
    kernel.run(f"%load_ext jupyter_scratchpad\n%config ScratchMagics.store_path = {str(store)!r}")
    pid = kernel.run("import os; print(os.getpid())").strip()
    with pytest.raises(UsageError) as info:
        session.magics.store_path = str(store)
    message = str(info.value)
    assert f"the store at {store} is open in process {pid}" in message
    assert f"ScratchMagics.store_path = '{store}-2'" in message and "shut process" in message
    assert session.magics.store_path is None and not session.store.closed


def test_loading_with_a_taken_path_says_who_holds_it(tmp_path: Path) -> None:
    store = tmp_path / "taken"
    holder_code = textwrap.dedent(f"""
        import sys
        from jupyter_scratchpad import ScratchStore
        s = ScratchStore({str(store)!r}); print("ready", flush=True); sys.stdin.read()
    """)
    loader_code = textwrap.dedent(f"""
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
        c = Config(); c.ScratchMagics.store_path = {str(store)!r}; c.HistoryManager.hist_file = ":memory:"
        shell = InteractiveShell.instance(config=c)
        try:
            shell.run_line_magic("load_ext", "jupyter_scratchpad")
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    with subprocess.Popen([sys.executable, "-c", holder_code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True, env=CHILD_ENV) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            out = subprocess.run([sys.executable, "-c", loader_code], capture_output=True, text=True, timeout=120,
                                 env=CHILD_ENV).stdout
        finally:
            holder.kill()
    assert f"UsageError jupyter-scratchpad: the store at {store} is open in process {holder.pid}" in out


@pytest.mark.parametrize("configured", [False, True])
def test_a_store_directory_removed_while_the_kernel_runs_is_opened_again(
    ip: Any, session: ScratchSession, tmp_path: Path, capsys: pytest.CaptureFixture[str], configured: bool
) -> None:
    # every spill after a tmp cleaner took the store was withheld ("the store is closed: %reload_ext")
    # until the user reloaded the extension; the next cell now opens it again, in one line
    if configured:
        session.magics.store_path = str(tmp_path / "kept")
    ip.run_cell("print('x' * 100_000)")
    old = session.store
    before = [e["handle"] for e in session.pad.entries("handle")]
    assert len(before) == 1 and not old.removed
    import shutil

    shutil.rmtree(old.path)
    assert old.removed
    capsys.readouterr()
    ip.run_cell("print('y' * 100_000)")
    said = capsys.readouterr()
    assert "was removed while the kernel ran" in said.err and said.err.count("\n") == 1, said.err
    assert session.store is not old and old.closed and not session.store.removed
    assert (session.store.path == tmp_path / "kept") is configured
    after = [e["handle"] for e in session.pad.entries("handle")]
    assert len(after) == 1 and after != before, (after, old.path, session.store.path)  # the new output, stored
    assert "withheld" not in said.out and "stored as handle" in said.out
    with pytest.raises(UsageError, match="directory was removed while the kernel ran"):  # (it said restarted)
        ip.run_line_magic("scratch", f"head {before[0]}")  # the old handle: why it is gone
