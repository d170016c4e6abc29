"""Fixtures for the IPython extension: a real ``InteractiveShell`` whose ``run_cell`` re-raises."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# debugpy (imported by ipykernel) prints a frozen-modules notice on stderr without this.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

from ipython_helpers import RaisingShell, clear_shell, make_shell, pods

from jupyter_scratchpad.ipython import ScratchSession, get_session


@pytest.fixture
def bare_shell() -> Iterator[RaisingShell]:
    """A shell without the extension (tests load it themselves)."""
    shell = make_shell()
    yield shell
    if get_session(shell) is not None:
        shell.run_line_magic("unload_ext", "jupyter_scratchpad")
    clear_shell()


@pytest.fixture
def ip(bare_shell: RaisingShell) -> RaisingShell:
    """A shell with ``%load_ext jupyter_scratchpad`` done."""
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    return bare_shell


@pytest.fixture
def session(ip: RaisingShell) -> ScratchSession:
    found = get_session(ip)
    assert found is not None
    return found


@pytest.fixture
def spilled(ip: RaisingShell, session: ScratchSession) -> str:
    """The handle of a spilled pod listing (the last expression of a cell)."""
    ip.user_ns["pods"] = pods
    ip.run_cell("pods()")
    handles = [e["handle"] for e in session.pad.entries("handle")]
    assert len(handles) == 1
    return handles[0]
