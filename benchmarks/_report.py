"""The Markdown report: machine, date, command, and one table per benchmark module.

>>> validate_row({"name": "x", "ours_s": 0.5, "baseline": "y", "baseline_s": 1.0, "ratio": 0.5,
...               "data": "1 MB", "runs": 3})
>>> fmt_ratio(0.04)
'0.040 (25× faster)'
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["fmt_ratio", "fmt_seconds", "machine_info", "render_report", "validate_row"]

REPO_ROOT = Path(__file__).resolve().parent.parent
REQUIRED = {"name": str, "ours_s": float, "baseline": str, "data": str, "runs": int}
OPTIONAL_NUMBERS = ("baseline_s", "ratio", "peak_rss_mb", "baseline_rss_mb")
OPTIONAL_TEXT = ("notes", "goal", "baseline_failed")


def validate_row(row: Any) -> None:
    """Raise ``ValueError`` naming what is wrong with a benchmark row."""
    if not isinstance(row, dict):
        raise ValueError(f"a benchmark row must be a dict, not {type(row).__name__}")
    for key, kind in REQUIRED.items():
        value = row.get(key)
        ok = (
            isinstance(value, (int, float)) and not isinstance(value, bool)
            if kind is float
            else (isinstance(value, kind) and not isinstance(value, bool))
        )
        if not ok:
            raise ValueError(
                f"row {row.get('name')!r}: {key!r} must be {kind.__name__}, got {value!r}"
            )
    if not math.isfinite(row["ours_s"]) or row["ours_s"] < 0:
        raise ValueError(f"row {row['name']!r}: ours_s must be a finite number of seconds >= 0")
    if row["runs"] < 1:
        raise ValueError(f"row {row['name']!r}: runs must be >= 1")
    for key in OPTIONAL_NUMBERS:
        value = row.get(key)
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            raise ValueError(
                f"row {row['name']!r}: {key!r} must be a finite number or None, got {value!r}"
            )
    for key in OPTIONAL_TEXT:
        if row.get(key) is not None and not isinstance(row[key], str):
            raise ValueError(f"row {row['name']!r}: {key!r} must be a string")
    if "goal_met" in row and not isinstance(row["goal_met"], bool):
        raise ValueError(f"row {row['name']!r}: 'goal_met' must be a bool")


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.2f} s"


def fmt_ratio(ratio: float | None) -> str:
    """``ours / baseline`` with words: below 1 we are faster."""
    if ratio is None:
        return "—"
    if ratio <= 0:
        return f"{ratio:.3g}"
    shown = f"{ratio:.2g}" if ratio < 0.001 else f"{ratio:.3f}" if ratio < 1 else f"{ratio:.2f}"
    if abs(ratio - 1) < 0.005:
        return f"{shown} (same)"
    words = f"{1 / ratio:.3g}× faster" if ratio < 1 else f"{ratio:.3g}× slower"
    return f"{shown} ({words})"


def _rss(row: dict[str, Any]) -> str:
    ours, base = row.get("peak_rss_mb"), row.get("baseline_rss_mb")
    if ours is None and base is None:
        return "—"
    return (
        f"{ours:,.0f} / {base:,.0f} MB"
        if ours is not None and base is not None
        else (f"{ours:,.0f} MB / —" if ours is not None else f"— / {base:,.0f} MB")
    )


def _run(argv: list[str]) -> str:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=10, check=False, cwd=REPO_ROOT
        ).stdout.strip()
    except OSError:
        return ""


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_info() -> dict[str, str]:
    """Cores, memory, CPU, OS and the versions that matter to these numbers."""
    mem_kb = 0
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    os_name = platform.platform()
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    commit = _run(["git", "rev-parse", "--short", "HEAD"])
    dirty = (
        " (uncommitted changes)"
        if _run(["git", "status", "--porcelain", "--untracked-files=no"])
        else ""
    )
    grep = _run(["grep", "--version"]).splitlines()
    return {
        "cores": str(cores),
        "memory": f"{mem_kb / (1 << 20):.1f} GiB" if mem_kb else "unknown",
        "cpu": cpu,
        "os": os_name,
        "python": platform.python_version(),
        "versions": ", ".join(
            f"{d} {_version(d)}"
            for d in (
                "jupyter-scratchpad",
                "duckdb",
                "tiktoken",
                "bpe-openai",
                "google-re2",
                "genson",
            )
        )
        + (f", {grep[0]}" if grep else ""),
        "commit": (commit + dirty) if commit else "unknown",
    }


def _table(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| benchmark | ours | baseline | baseline time | ratio (ours / baseline) | data | runs "
        "| peak RSS ours / baseline |",
        "|---|---:|---|---:|---|---|---:|---:|",
    ]
    for r in rows:
        base_time = (
            fmt_seconds(r.get("baseline_s")) if not r.get("baseline_failed") else "**failed**"
        )
        ratio = fmt_ratio(r.get("ratio")) if not r.get("baseline_failed") else "baseline failed"
        out.append(
            f"| {r['name']} | {fmt_seconds(r['ours_s'])} | {r['baseline']} | {base_time} | {ratio} "
            f"| {r['data']} | {r['runs']} | {_rss(r)} |"
        )
    return out


def _goals(sections: list[dict[str, Any]]) -> list[str]:
    rows = [r for s in sections for r in s["rows"] if r.get("goal")]
    if not rows:
        return []
    out = ["## Goals", "", "| benchmark | goal | ratio | met |", "|---|---|---|---|"]
    for r in rows:
        met = {True: "yes", False: "**no**"}.get(r.get("goal_met"), "n/a")  # type: ignore[arg-type]
        out.append(f"| {r['name']} | {r['goal']} | {fmt_ratio(r.get('ratio'))} | {met} |")
    return [*out, ""]


def render_report(
    sections: list[dict[str, Any]],
    *,
    machine: dict[str, str],
    started: float,
    command: str,
    quick: bool,
    elapsed_s: float,
) -> str:
    """The whole Markdown report."""
    date = datetime.fromtimestamp(started, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mode = "quick (small data, as CI runs it)" if quick else "full"
    lines = [
        "# Benchmarks",
        "",
        f"- **Command:** `{command}` ({mode} mode, {elapsed_s:.0f} s in all)",
        f"- **Date:** {date} · **commit:** {machine['commit']}",
        f"- **Machine:** {machine['cores']} cores ({machine['cpu']}), {machine['memory']} memory, "
        f"{machine['os']}, Python {machine['python']}",
        f"- **Versions:** {machine['versions']}",
        f"- **Load average (1 min):** {machine.get('load', 'not recorded')}; on {machine['cores']} "
        "cores the benchmark itself accounts for about 1; more means other work shared the machine",
        "",
        "Times are medians of the runs shown; ours and the baseline are measured side by side in "
        "one run (alternating). Ratio = ours / baseline: below 1 we are faster. Peak RSS is "
        "measured in a child process where shown. What each side includes is in the notes under "
        "each table.",
        "",
    ]
    lines += _goals(sections)
    for section in sections:
        title = section["module"].removeprefix("benchmarks.").removeprefix("bench_")
        lines += [f"## {title}", "", f"_{section['seconds']:.1f} s_", ""]
        if section["error"]:
            lines += ["**This benchmark failed:**", "", "```", section["error"].rstrip(), "```", ""]
            continue
        lines += _table(section["rows"])
        notes = [r for r in section["rows"] if r.get("notes") or r.get("baseline_failed")]
        if notes:
            lines.append("")
        for r in notes:
            failed = (
                f" **Baseline failed:** {r['baseline_failed']}." if r.get("baseline_failed") else ""
            )
            lines.append(f"- **{r['name']}**: {r.get('notes', '')}{failed}".rstrip())
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
