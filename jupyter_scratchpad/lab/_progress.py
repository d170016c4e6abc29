"""Progress bars: tqdm's notebook widget inside a Jupyter kernel, its text bar anywhere else."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["progress_bar"]

AUTO_DELAY_S = 1.0  # with progress=None a bar appears only for a replay that lasts this long


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def in_kernel() -> bool:
    """Whether this code runs in a Jupyter kernel (ipykernel's shell), decided per call."""
    zmqshell = sys.modules.get("ipykernel.zmqshell")
    ipython = sys.modules.get("IPython")
    if zmqshell is None or ipython is None:
        return False
    return isinstance(ipython.get_ipython(), zmqshell.ZMQInteractiveShell)


def bar_class() -> Any:
    """``tqdm.notebook.tqdm`` in a kernel with ipywidgets, else ``tqdm.std.tqdm``."""
    if in_kernel():
        from tqdm import notebook

        if notebook.IProgress is not None:  # None when ipywidgets is missing
            return notebook.tqdm
    from tqdm import std

    return std.tqdm


def progress_bar(total: int, *, unit: str, desc: str, enabled: bool | None) -> Any:
    """A bar over ``total`` units; ``enabled`` None shows it only once AUTO_DELAY_S have passed."""
    if enabled is False:
        return _NoBar()
    return bar_class()(
        total=total,
        unit=unit,
        unit_scale=unit == "B",
        desc=desc,
        delay=0.0 if enabled else AUTO_DELAY_S,
        leave=bool(enabled),
    )
