"""What every benchmark shares: side-by-side timing, honest failures, child-process RSS.

A benchmark module ``bench_*.py`` has ``run(quick: bool) -> list[dict]``; each dict is one row of
the report (``result()`` builds it). Ours and the baseline are timed alternately in the same loop
(ours first on even runs, the baseline first on odd runs) so that drift in the machine hits both.
Before the loop each side makes one untimed warm-up call (first-call costs: imports, a fresh
pad's or connection's setup), and before every timed call of either side an untimed
``gc.collect()`` runs, so that neither side pays for the garbage the other left.

>>> ours, base, failure = time_side_by_side(lambda i: sum(range(100)), lambda i: None, runs=3)
>>> len(ours), len(base), failure
(3, 3, None)
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "REPO_ROOT",
    "BaselineFailed",
    "check",
    "median",
    "propose_if_missed",
    "profile_summary",
    "result",
    "run_child",
    "silenced_stderr",
    "time_side_by_side",
]

REPO_ROOT = Path(__file__).resolve().parent.parent


class BaselineFailed(Exception):
    """The baseline could not do the job (the report says so; the benchmark does not crash)."""


def check(condition: bool, message: str) -> None:
    """Fail the benchmark run when ours and the baseline disagree (CI runs the quick mode)."""
    if not condition:
        raise AssertionError(f"benchmark check failed: {message}")


def median(samples: Sequence[float]) -> float:
    return float(statistics.median(samples))


class silenced_stderr:
    """Send file descriptor 2 to a temporary file (Rust panics print there), keep its text."""

    def __enter__(self) -> silenced_stderr:
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._file = tempfile.TemporaryFile()
        os.dup2(self._file.fileno(), 2)
        self.text = ""
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode("utf-8", "replace")
        self._file.close()


def _timed(fn: Callable[[int], Any], i: int) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn(i)
    return time.perf_counter() - start, value


def time_side_by_side(
    ours: Callable[[int], Any],
    baseline: Callable[[int], Any] | None,
    runs: int,
    *,
    check_pair: Callable[[Any, Any], None] | None = None,
    baseline_errors: tuple[type[BaseException], ...] = (),
    before_each: Callable[[], object] | None = None,
    warmup: bool = True,
) -> tuple[list[float], list[float], str | None]:
    """Time ``ours(i)`` and ``baseline(i)`` for ``i`` in ``range(runs)``, alternating the order.

    Returns ``(our_seconds, baseline_seconds, baseline_failure)``. A baseline that raises one of
    ``baseline_errors`` (which may be ``BaseException``, for pyo3's ``PanicException``) is
    recorded as failed and not run again; any other exception, and ``KeyboardInterrupt`` or
    ``SystemExit`` always, propagates: a mistake in a benchmark is not the baseline failing.
    ``check_pair`` gets both results of each run to verify they agree. ``before_each``: called
    (untimed) before every timed call of either side: a pause between a real caller's calls, or
    waiting for the previous call's background work. After it, untimed, ``gc.collect()``: the
    garbage of the call before (either side's) is collected before the timer starts.

    ``warmup``: first, one untimed call of each side (ours, then the baseline) with ``i = runs``,
    so a caller whose inputs differ per run (to defeat a cache) prepares ``runs + 1`` of them;
    its pair is checked too. A baseline that fails in its warm-up is recorded as failed.
    """
    our_s: list[float] = []
    base_s: list[float] = []
    failure: str | None = None

    def call_baseline(i: int) -> tuple[float, Any] | None:
        nonlocal failure
        assert baseline is not None
        try:
            with silenced_stderr() as err:
                return _timed(baseline, i)
        except (KeyboardInterrupt, SystemExit):
            raise
        except baseline_errors as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            panic = next((ln for ln in err.text.splitlines() if "panicked" in ln), "")
            failure = f"{type(exc).__name__}: {first or panic}".strip().rstrip(":")
            return None

    def settle() -> None:
        if before_each is not None:
            before_each()
        gc.collect()

    if warmup:
        settle()
        warm_ours = ours(runs)
        if baseline is not None:
            settle()
            warm_base = call_baseline(runs)
            if warm_base is not None and check_pair is not None:
                check_pair(warm_ours, warm_base[1])
        del warm_ours
    for i in range(runs):
        order = ("ours", "base") if i % 2 == 0 else ("base", "ours")
        values: dict[str, Any] = {}
        for side in order:
            if side == "ours":
                settle()
                seconds, values["ours"] = _timed(ours, i)
                our_s.append(seconds)
            elif baseline is not None and failure is None:
                settle()
                timed = call_baseline(i)
                if timed is None:
                    continue
                seconds, values["base"] = timed
                base_s.append(seconds)
        if check_pair is not None and "base" in values:
            check_pair(values["ours"], values["base"])
    return our_s, base_s, failure


def result(
    name: str,
    ours_s: Sequence[float],
    baseline: str,
    baseline_s: Sequence[float] | None,
    data: str,
    *,
    notes: str = "",
    failure: str | None = None,
    goal: str | None = None,
    goal_ratio: float | None = None,
    peak_rss_mb: float | None = None,
    baseline_rss_mb: float | None = None,
) -> dict[str, Any]:
    """One report row. ``goal_ratio``: the goal is met when ours/baseline <= it."""
    ours = median(ours_s)
    base = median(baseline_s) if baseline_s else None
    row: dict[str, Any] = {
        "name": name,
        "ours_s": ours,
        "baseline": baseline,
        "baseline_s": base,
        "ratio": (ours / base) if base else None,
        "data": data,
        "runs": len(ours_s),
        "notes": notes,
    }
    if failure:
        row["baseline_failed"] = failure
    if goal is not None:
        row["goal"] = goal
        # a baseline that failed partway leaves a ratio of the runs it finished: shown, not judged
        if goal_ratio is not None and row["ratio"] is not None and not failure:
            row["goal_met"] = row["ratio"] <= goal_ratio
    if peak_rss_mb is not None:
        row["peak_rss_mb"] = peak_rss_mb
    if baseline_rss_mb is not None:
        row["baseline_rss_mb"] = baseline_rss_mb
    return row


def run_child(task: dict[str, Any]) -> dict[str, Any]:
    """Run ``benchmarks/_child.py`` on ``task`` in a fresh interpreter; returns its JSON report.

    The report holds the child's own timings and peak RSS (see ``_child.py`` for how RSS is
    measured honestly).
    """
    argv = [sys.executable, str(REPO_ROOT / "benchmarks" / "_child.py"), json.dumps(task)]
    proc = subprocess.run(argv, capture_output=True, cwd=REPO_ROOT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"benchmark child {task.get('op')} failed ({proc.returncode}): "
            f"{proc.stderr.decode(errors='replace')[-1500:]}"
        )
    report: dict[str, Any] = json.loads(proc.stdout.decode())
    return report


def profile_summary(fn: Callable[[], Any], top: int = 4) -> str:
    """Where one call of ``fn`` spends its time: the ``top`` functions by own time (cProfile)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    stats = pstats.Stats(profiler)
    entries = []
    for (filename, line, func), (_, _, own_s, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = func if filename == "~" else f"{Path(filename).name}:{line} {func}"
        entries.append((own_s, where))
    entries.sort(reverse=True)
    total = sum(s for s, _ in entries) or 1.0
    return "; ".join(f"`{w}` {s * 1e3:,.0f} ms ({s / total:.0%})" for s, w in entries[:top])


def propose_if_missed(rows: list[dict[str, Any]], proposal: str) -> list[dict[str, Any]]:
    """Append ``proposal`` (what the core could change) to the notes of rows that miss their goal."""
    for row in rows:
        if row.get("goal_met") is False:
            row["notes"] = f"{row['notes']} **Goal missed. Proposal:** {proposal}".strip()
    return rows
