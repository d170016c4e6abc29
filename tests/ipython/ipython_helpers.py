"""Helpers for the IPython tests: a shell whose ``run_cell`` re-raises, and a pod listing.

A module of its own (not conftest): every test folder has a conftest, and ``from conftest import``
would find whichever was imported first.
"""

from __future__ import annotations

from typing import Any

from IPython.core.interactiveshell import InteractiveShell
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
    """Forget the singleton shell (the subclass's own ``_instance`` too)."""
    RaisingShell.clear_instance()
    InteractiveShell.clear_instance()


def pods(n: int = 3000) -> dict[str, Any]:
    """A Kubernetes-like listing, large enough to spill at the default threshold."""
    return {"kind": "PodList", "items": [
        {"metadata": {"name": f"pod-{i}", "namespace": "ns-a" if i % 2 else "ns-b"},
         "status": {"phase": "Failed" if i % 7 == 0 else "Running"}} for i in range(n)]}
