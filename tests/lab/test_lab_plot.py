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


def test_compare_plots_sizes_with_thresholds_and_context_vs_calls(known_trace: KnownTrace, tmp_path: Path) -> None:
    policies = {"aura": SpillPolicy(), "tight": SpillPolicy(min_tokens=500), "loose": SpillPolicy(min_tokens=20000)}
    result = compare(known_trace.path, policies, progress=False)
    fig = result.figure
    assert result.figure is fig  # built once
    sizes, context = fig.axes
    # The size distribution: every call once, on a log axis, a dashed line per policy's threshold.
    calls = result.replay("aura")["tokens"].to_numpy()
    assert sizes.get_xscale() == "log" and sizes.get_ylim()[0] == 0
    assert sum(p.get_height() for p in sizes.patches) == (calls > 0).sum()
    lines = {line.get_label(): line.get_xdata()[0] for line in sizes.lines}
    assert lines == {"threshold aura": 5120, "threshold tight": 500, "threshold loose": 20000}
    # Context tokens against extra exploration calls, one point per policy, both axes from zero.
    (points,) = context.lines
    np.testing.assert_array_equal(points.get_xdata(), result.table["spills"].to_numpy())
    np.testing.assert_array_equal(points.get_ydata(), result.table["context_tokens"].to_numpy())
    assert [t.get_text() for t in context.texts] == ["aura", "tight", "loose"]
    assert context.get_xlim()[0] == 0 and context.get_ylim()[0] == 0
    assert context.get_xlabel().startswith("extra exploration calls")
    assert context.get_ylabel() == "tokens entering the context"
    out = tmp_path / "compare.png"
    fig.savefig(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sweep_adds_both_series_against_the_threshold(known_trace: KnownTrace) -> None:
    thresholds = [100, 512, 2000, 5120, 8000]
    result = sweep(known_trace.path, thresholds, progress=False)
    table = result.table
    sizes, context, by_threshold, spills_axis = result.figure.axes
    assert sorted(line.get_xdata()[0] for line in sizes.lines) == thresholds
    (curve,) = context.lines
    np.testing.assert_array_equal(curve.get_xdata(), table["spills"].to_numpy())
    np.testing.assert_array_equal(curve.get_ydata(), table["context_tokens"].to_numpy())
    assert [t.get_text() for t in context.texts] == ["100", "512", "2,000", "5,120", "8,000"]
    (saved,) = by_threshold.lines
    (spills,) = spills_axis.lines
    np.testing.assert_array_equal(saved.get_xdata(), thresholds)
    np.testing.assert_array_equal(saved.get_ydata(), table["tokens_saved"].to_numpy())
    np.testing.assert_array_equal(spills.get_ydata(), table["spills"].to_numpy())
    assert (saved.get_label(), spills.get_label()) == ("tokens kept out", "spills")
    assert by_threshold.get_ylim()[0] == 0 and spills_axis.get_ylim()[0] == 0  # no hidden break
    assert by_threshold.get_xscale() == "log"  # 100 .. 8,000
    assert sweep(known_trace.path, [0, 1000, 100000], progress=False).figure.axes[2].get_xscale() == "symlog"
    assert sweep(known_trace.path, [5000, 6000], progress=False).figure.axes[2].get_xscale() == "linear"


def test_size_bins_cover_every_size() -> None:
    from jupyter_scratchpad.lab._plot import size_bins

    edges = size_bins(np.array([3.0, 40.0, 12_345.0, 0.0]))
    assert edges[0] <= 3 and edges[-1] >= 12_345 and np.all(np.diff(np.log10(edges)) > 0)
    assert list(size_bins(np.array([0.0]))) == [1.0, 10.0]


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
