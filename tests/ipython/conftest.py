"""Fixtures for the IPython extension: a real ``InteractiveShell`` whose ``run_cell`` re-raises."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

# debugpy (imported by ipykernel) prints a frozen-modules notice on stderr without this.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from jupyter_scratchpad.ipython import ScratchSession, get_session


class RaisingShell(InteractiveShell):
    """``run_cell`` re-raises the cell's error, so a failing cell fails the test."""

    def run_cell(self, raw_cell: str, store_history: bool = True, *args: Any, **kwargs: Any) -> Any:
        result = super().run_cell(raw_cell, store_history, *args, **kwargs)
        result.raise_error()
        return result


def make_shell(config: Config | None = None) -> RaisingShell:
    cfg = config or Config()
    cfg.HistoryManager.hist_file = ":memory:"
    clear_shell()
    return RaisingShell.instance(config=cfg)


def clear_shell() -> None:
    """Forget the singleton shell (the subclass's own ``_instance`` too)."""
    RaisingShell.clear_instance()
    InteractiveShell.clear_instance()


@pytest.fixture
def bare_shell() -> Iterator[RaisingShell]:
    """A shell without the extension (tests load it themselves)."""
    shell = make_shell()
    yield shell
    if get_session(shell) is not None:
        shell.run_line_magic("unload_ext", "jupyter_scratchpad")
    InteractiveShell.clear_instance()


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


def pods(n: int = 3000) -> dict[str, Any]:
    """A Kubernetes-like listing, large enough to spill at the default threshold."""
    return {"kind": "PodList", "items": [
        {"metadata": {"name": f"pod-{i}", "namespace": "ns-a" if i % 2 else "ns-b"},
         "status": {"phase": "Failed" if i % 7 == 0 else "Running"}} for i in range(n)]}


@pytest.fixture
def spilled(ip: RaisingShell, session: ScratchSession) -> str:
    """The handle of a spilled pod listing (the last expression of a cell)."""
    ip.user_ns["pods"] = pods
    ip.run_cell("pods()")
    handles = [e["handle"] for e in session.pad.entries("handle")]
    assert len(handles) == 1
    return handles[0]
