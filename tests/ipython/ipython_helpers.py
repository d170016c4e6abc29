"""Helpers for the IPython tests: a shell whose ``run_cell`` re-raises, a pod listing, and a real
kernel in its own process.

A module of its own (not conftest): every test folder has a conftest, and ``from conftest import``
would find whichever was imported first.
"""

from __future__ import annotations

import atexit
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from jupyter_client.manager import KernelManager
from traitlets.config import Config


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
    """Forget the singleton shell (the subclass's own ``_instance`` too), and its exit handler:
    each shell registers one (``atexit_operations``: a reset and a full ``gc.collect``), which kept
    every test's shell and its outputs alive to the end, and then collected the whole heap once per
    shell: pytest took 4.5 minutes to exit after the suite (CI's gap before the benchmarks)."""
    for cls in (RaisingShell, InteractiveShell):
        if cls.initialized():
            atexit.unregister(cls.instance().atexit_operations)
    RaisingShell.clear_instance()
    InteractiveShell.clear_instance()


def pods(n: int = 3000) -> dict[str, Any]:
    """A Kubernetes-like listing, large enough to spill at the default threshold."""
    return {"kind": "PodList", "items": [
        {"metadata": {"name": f"pod-{i}", "namespace": "ns-a" if i % 2 else "ns-b"},
         "status": {"phase": "Failed" if i % 7 == 0 else "Running"}} for i in range(n)]}


START_TIMEOUT_S = 60
# Child processes import this checkout's package, whatever the environment has installed.
CHILD_ENV = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1",
             "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH")]))}


def message_text(msg: dict[str, Any]) -> str:
    """What a kernel message shows: a stream's text, a result's text/plain, an error's name."""
    content = msg["content"]
    if msg["msg_type"] == "stream":
        return str(content["text"])
    if msg["msg_type"] in ("execute_result", "display_data"):
        return str(content["data"].get("text/plain", ""))
    if msg["msg_type"] == "error":
        return "ERROR " + content["ename"] + ": " + content["evalue"]
    return ""


class RealKernel:
    """A python3 kernel in its own process (jupyter_client), run cell by cell."""

    def __init__(self, cwd: Path) -> None:
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=CHILD_ENV)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=START_TIMEOUT_S)

    def messages(self, code: str) -> list[dict[str, Any]]:
        """Run ``code``; the messages it sent (an error fails the test)."""
        out: list[dict[str, Any]] = []
        reply = self.client.execute_interactive(code, output_hook=out.append, timeout=START_TIMEOUT_S)
        assert reply["content"]["status"] == "ok", "".join(message_text(m) for m in out)
        return out

    def run(self, code: str) -> str:
        """Run ``code``; its stdout and its result's text (an error fails the test)."""
        return "".join(message_text(m) for m in self.messages(code))

    def restart(self) -> None:
        self.manager.restart_kernel(now=True)
        self.client.wait_for_ready(timeout=START_TIMEOUT_S)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


@contextmanager
def loaded_kernel(tmp_path: Path) -> Iterator[RealKernel]:
    """A real kernel with the extension loaded over a store in ``tmp_path``; shut down after."""
    k = RealKernel(tmp_path)
    try:
        k.run(f"%load_ext jupyter_scratchpad\n%config ScratchMagics.store_path = {str(tmp_path / 'store')!r}")
        yield k
    finally:
        k.close()


def iopub_until(kernel: RealKernel, until: str, timeout_s: float = 60) -> list[dict[str, Any]]:
    """The iopub messages that arrive after a cell, until one holds ``until`` (or the timeout)."""
    out: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            msg = kernel.client.get_iopub_msg(timeout=1)
        except Exception:  # (queue.Empty)
            continue
        out.append(msg)
        if until in message_text(msg):
            break
    return out
