"""The pictures of a comparison: what outputs look like, and what each policy costs.

Panels, left to right:

1. **Output sizes**: how many calls returned how many tokens (log-spaced bins, log scale), with
   each candidate threshold drawn where it cuts: everything right of a line is spilled.
2. **Context vs. exploration**: per policy, the tokens that enter the context against the extra
   exploration calls it implies (at least one per spilled output, to read it back). Both axes
   start at zero, so a small difference looks small.
3. (a sweep only) **Against the threshold**: tokens kept out and spills per threshold.

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot): no global state, no
backend needed to render a PNG, and nothing is shown twice in a notebook.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["comparison_figure", "size_bins"]

TRADE_OFF_LABEL = "tokens kept out"
SPILLS_LABEL = "spills"
CONTEXT_LABEL = "context tokens"


def _thousands(value: float, _pos: int) -> str:
    return f"{value:,.0f}"


def size_bins(tokens: np.ndarray, per_decade: int = 4) -> np.ndarray:
    """Log-spaced bin edges covering every positive size (one bin when all are equal)."""
    positive = tokens[tokens > 0]
    if positive.size == 0:
        return np.array([1.0, 10.0])
    low = math.floor(math.log10(positive.min()))
    high = math.ceil(math.log10(positive.max())) or 1
    if high <= low:
        high = low + 1
    return np.logspace(low, high, (high - low) * per_decade + 1)


def _thresholds(table: pd.DataFrame, policies: dict[str, Any] | None) -> list[tuple[str, int]]:
    """``[(label, threshold in tokens)]``: the sweep's thresholds, or each policy's default."""
    if "threshold" in table.columns:
        return [(f"{int(t):,}", int(t)) for t in table["threshold"]]
    if policies:
        return [(str(name), int(p.min_tokens)) for name, p in policies.items() if p is not None]
    return []


def _sizes(ax: Any, rows: pd.DataFrame | None, thresholds: list[tuple[str, int]]) -> None:
    """A histogram of result sizes (one call counted once), the thresholds drawn on it."""
    if rows is not None and len(rows):
        calls = rows.drop_duplicates(subset=["source"]) if "source" in rows.columns else rows
        tokens = pd.to_numeric(calls["tokens"], errors="coerce").dropna().to_numpy(dtype=float)
    else:
        tokens = np.array([], dtype=float)
    ax.hist(tokens[tokens > 0], bins=size_bins(tokens), color="C7", alpha=0.7, label="calls")
    ax.set_xscale("log")
    for i, (label, value) in enumerate(thresholds):
        if value > 0:
            ax.axvline(value, color=f"C{i % 10}", linestyle="--", linewidth=1.2, label=f"threshold {label}")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("result size (tokens, log scale)")
    ax.set_ylabel("calls")
    ax.set_title("Output sizes, and where each threshold cuts")
    if thresholds:
        ax.legend(fontsize=7, loc="upper right")
    ax.grid(True, alpha=0.3)


def _context_vs_calls(ax: Any, table: pd.DataFrame, kind: str) -> None:
    """Context tokens against extra exploration calls (one per spill, at least), from zero."""
    from matplotlib.ticker import MaxNLocator

    calls = table["spills"].to_numpy()
    context = table["context_tokens"].to_numpy()
    if kind == "sweep":
        ax.plot(calls, context, marker="o", label=CONTEXT_LABEL)
        labels = [f"{t:,}" for t in table["threshold"]]
    else:
        ax.plot(calls, context, linestyle="none", marker="o", markersize=8, label=CONTEXT_LABEL)
        labels = [str(name) for name in table.index]
    for x, y, text in zip(calls, context, labels, strict=True):
        ax.annotate(text, (x, y), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlim(left=0, right=max(1.0, float(calls.max(initial=0)) * 1.15))
    ax.set_ylim(bottom=0, top=max(1.0, float(context.max(initial=0)) * 1.15))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("extra exploration calls (≥ 1 per spilled output)")
    ax.set_ylabel("tokens entering the context")
    ax.set_title("What each policy puts in the context, and the calls it adds")
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
    ax.set_ylim(bottom=0)
    twin = ax.twinx()
    twin.plot(thresholds, ordered["spills"].to_numpy(), marker="s", color="C1", label=SPILLS_LABEL)
    twin.set_ylabel("spills", color="C1")
    twin.set_ylim(bottom=0)
    twin.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Against the threshold")
    ax.grid(True, alpha=0.3)


def comparison_figure(
    table: pd.DataFrame,
    rows: pd.DataFrame | None = None,
    *,
    kind: str = "compare",
    policies: dict[str, Any] | None = None,
) -> Any:
    """A ``Figure``: output sizes with the thresholds, context vs. calls, and for a sweep the threshold."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter

    sweep = kind == "sweep" and "threshold" in table.columns
    panels = 3 if sweep else 2
    fig = Figure(figsize=(5.6 * panels, 4.2), layout="constrained")
    axes = list(fig.subplots(1, panels))
    _sizes(axes[0], rows, _thresholds(table, policies))
    _context_vs_calls(axes[1], table, "sweep" if sweep else "compare")
    if sweep:
        _by_threshold(axes[2], table)
    for ax in axes[1:]:
        ax.yaxis.set_major_formatter(FuncFormatter(_thousands))
    return fig
