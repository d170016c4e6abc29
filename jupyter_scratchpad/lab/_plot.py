"""The picture of a comparison: tokens kept out of the context against the number of spills.

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot): no global state, no
backend needed to render a PNG, and nothing is shown twice in a notebook.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["comparison_figure"]

TRADE_OFF_LABEL = "tokens kept out"
SPILLS_LABEL = "spills"


def _thousands(value: float, _pos: int) -> str:
    return f"{value:,.0f}"


def _trade_off(ax: Any, table: pd.DataFrame, kind: str) -> None:
    from matplotlib.ticker import MaxNLocator

    spills = table["spills"].to_numpy()
    saved = table["tokens_saved"].to_numpy()
    if kind == "sweep":
        ax.plot(spills, saved, marker="o", label=TRADE_OFF_LABEL)
        labels = [f"{t:,}" for t in table["threshold"]]
    else:
        ax.plot(spills, saved, linestyle="none", marker="o", markersize=8, label=TRADE_OFF_LABEL)
        labels = [str(name) for name in table.index]
    for x, y, text in zip(spills, saved, labels, strict=True):
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.margins(x=0.12, y=0.08)  # room for the labels of the outermost points
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("spills (calls replaced by a stub)")
    ax.set_ylabel("tokens kept out of the context")
    ax.set_title("What each policy keeps out, and at how many spills")
    ax.grid(True, alpha=0.3)


def _by_threshold(ax: Any, table: pd.DataFrame) -> None:
    from matplotlib.ticker import MaxNLocator

    ordered = table.sort_values("threshold")
    thresholds = ordered["threshold"].to_numpy()
    ax.plot(thresholds, ordered["tokens_saved"].to_numpy(), marker="o", color="C0", label=TRADE_OFF_LABEL)
    ax.set_xlabel("threshold (tokens, min_tokens)")
    ax.set_ylabel("tokens kept out of the context", color="C0")
    if len(thresholds) > 1 and thresholds.min() >= 0 and thresholds.max() > 10 * max(thresholds.min(), 1):
        ax.set_xscale("symlog" if thresholds.min() == 0 else "log")
    twin = ax.twinx()
    twin.plot(thresholds, ordered["spills"].to_numpy(), marker="s", color="C1", label=SPILLS_LABEL)
    twin.set_ylabel("spills", color="C1")
    twin.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Against the threshold")
    ax.grid(True, alpha=0.3)


def comparison_figure(table: pd.DataFrame, *, kind: str = "compare") -> Any:
    """A ``Figure``: the trade-off, and for a sweep the same against the threshold."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    sweep = kind == "sweep" and "threshold" in table.columns
    fig = Figure(figsize=(11.5, 4.2) if sweep else (6.4, 4.2), layout="constrained")
    axes = fig.subplots(1, 2) if sweep else [fig.subplots()]
    _trade_off(axes[0], table, "sweep" if sweep else "compare")
    if sweep:
        _by_threshold(axes[1], table)
    for ax in (axes[0], *(axes[1:] if sweep else [])):
        ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
    return fig
