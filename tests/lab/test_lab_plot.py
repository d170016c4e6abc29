"""The figures of ``compare`` and ``sweep`` carry the table's numbers; the notebook display shows both."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import matplotlib
import numpy as np
from lab_known import KnownTrace

from jupyter_scratchpad import SpillPolicy
from jupyter_scratchpad.lab import compare, sweep


def test_figures_are_rendered_with_the_agg_backend() -> None:
    assert matplotlib.get_backend().lower() == "agg"


def test_compare_plots_one_point_per_policy(known_trace: KnownTrace, tmp_path: Path) -> None:
    policies = {"aura": SpillPolicy(), "tight": SpillPolicy(min_tokens=500), "loose": SpillPolicy(min_tokens=20000)}
    result = compare(known_trace.path, policies, progress=False)
    fig = result.figure
    assert result.figure is fig  # built once
    (ax,) = fig.axes
    (line,) = ax.lines
    assert line.get_label() == "tokens kept out"
    np.testing.assert_array_equal(line.get_xdata(), result.table["spills"].to_numpy())
    np.testing.assert_array_equal(line.get_ydata(), result.table["tokens_saved"].to_numpy())
    assert [t.get_text() for t in ax.texts] == ["aura", "tight", "loose"]
    assert ax.get_xlabel().startswith("spills")
    assert ax.get_ylabel() == "tokens kept out of the context"
    out = tmp_path / "compare.png"
    fig.savefig(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_plots_the_trade_off_and_both_series_against_the_threshold(known_trace: KnownTrace) -> None:
    thresholds = [100, 512, 2000, 5120, 8000]
    result = sweep(known_trace.path, thresholds, progress=False)
    table = result.table
    trade_off, by_threshold, spills_axis = result.figure.axes
    (curve,) = trade_off.lines
    np.testing.assert_array_equal(curve.get_xdata(), table["spills"].to_numpy())
    np.testing.assert_array_equal(curve.get_ydata(), table["tokens_saved"].to_numpy())
    assert [t.get_text() for t in trade_off.texts] == ["100", "512", "2,000", "5,120", "8,000"]
    (saved,) = by_threshold.lines
    (spills,) = spills_axis.lines
    np.testing.assert_array_equal(saved.get_xdata(), thresholds)
    np.testing.assert_array_equal(saved.get_ydata(), table["tokens_saved"].to_numpy())
    np.testing.assert_array_equal(spills.get_xdata(), thresholds)
    np.testing.assert_array_equal(spills.get_ydata(), table["spills"].to_numpy())
    assert (saved.get_label(), spills.get_label()) == ("tokens kept out", "spills")
    assert by_threshold.get_xscale() == "log"  # 100 .. 8,000
    assert sweep(known_trace.path, [0, 1000, 100000], progress=False).figure.axes[1].get_xscale() == "symlog"
    assert sweep(known_trace.path, [5000, 6000], progress=False).figure.axes[1].get_xscale() == "linear"


def test_notebook_display_is_the_plot_beside_the_table(known_trace: KnownTrace) -> None:
    result = sweep(known_trace.path, [512, 5120], progress=False)
    html = result._repr_html_()
    assert "display:flex" in html
    found = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert found is not None
    assert base64.b64decode(found.group(1))[:4] == b"\x89PNG"
    assert "<table" in html
    assert "min_tokens=5,120" in html
    assert "tokens_saved" in repr(result)
