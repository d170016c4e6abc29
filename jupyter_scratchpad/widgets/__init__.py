"""The interactive explorer over a pad's scratch store (ipywidgets; the only place that imports it).

>>> # from jupyter_scratchpad.widgets import Explorer
>>> # Explorer(pad)                       # the newest spill; or Explorer(pad, handle="...")

Needs ``ipywidgets`` (``pip install 'jupyter-scratchpad[jupyter]'``).
"""

from __future__ import annotations

try:
    import ipywidgets as _ipywidgets  # noqa: F401
except ImportError as exc:  # pragma: no cover - the [jupyter] extra installs it
    raise ImportError(
        "jupyter_scratchpad.widgets needs ipywidgets: pip install 'jupyter-scratchpad[jupyter]'"
    ) from exc

from ._explorer import CSS_CLASS, Explorer, refresh_all

__all__ = ["CSS_CLASS", "Explorer", "refresh_all"]
