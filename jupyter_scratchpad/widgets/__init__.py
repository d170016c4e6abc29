"""The interactive explorer over a pad's scratch store: one anywidget (the only place that imports it).

>>> # from jupyter_scratchpad.widgets import Explorer
>>> # Explorer(pad)                       # the newest spill; or Explorer(pad, handle="...")

Needs ``anywidget`` (``pip install 'jupyter-scratchpad[jupyter]'``).
"""

from __future__ import annotations

try:
    import anywidget as _anywidget  # noqa: F401
except ImportError as exc:  # pragma: no cover - the [jupyter] extra installs it
    raise ImportError("jupyter_scratchpad.widgets needs anywidget: pip install 'jupyter-scratchpad[jupyter]'") from exc

from ._explorer import CSS_CLASS, Explorer, live_explorer, open_explorers, refresh_all
from ._summary import EXPLORER_MIME

__all__ = ["CSS_CLASS", "EXPLORER_MIME", "Explorer", "live_explorer", "open_explorers", "refresh_all"]
