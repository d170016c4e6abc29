"""Line and byte ranges of a huge body: ``head``/``slice``/``read_handle`` against reading the file.

The bodies (service logs, 100 MB and 1 GB in full mode) are streamed into the store with
``ScratchStore.put_body(raw=<iterable of chunks>)``, never held in memory. Every measurement runs
in a fresh interpreter (``_child.py``), so the peak RSS reported is the operation's own process.
Ours is a whole ``pad.call_tool`` (catalog lookup, line index, read, exact token count, budget
charge); the baselines only read: Python iterating the file's lines, ``sed -n``, ``seek``+``read``.
Both read the same file on disk (the store's body), warm in the page cache.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from benchmarks._data import put_log
from benchmarks._harness import check, median, result, run_child

RUN_ID, AGENT_ID = "bench-reads", "bench"
WINDOW = 50  # lines per slice, as head's default


def _fmt_size(n: int) -> str:
    return f"{n / (1 << 30):.0f} GB" if n >= 1 << 30 else f"{n / (1 << 20):.0f} MB"


def _store_bodies(root: Path, sizes: list[int]) -> dict[int, dict[str, Any]]:
    """Stream one log body per size into a store at ``root``; close it (children reopen it)."""
    from jupyter_scratchpad import ScratchStore

    bodies: dict[int, dict[str, Any]] = {}
    store = ScratchStore(root, sweep_interval_s=None)
    try:
        scope = store.ensure_scope(RUN_ID, AGENT_ID)
        for size in sizes:
            handle = f"log_{size}"
            entry = put_log(store, scope, handle, size, seed=size)
            reader = store.reader(entry)
            check(
                reader.raw_size == size, f"body of {handle} is {reader.raw_size} bytes, not {size}"
            )
            bodies[size] = {
                "handle": handle,
                "path": str(reader.raw_path),
                "lines": reader.line_count,
            }
    finally:
        store.close()
    return bodies


def _ours(root: Path, handle: str, tool: str, args: dict[str, Any], repeats: int) -> dict[str, Any]:
    return run_child(
        {
            "op": "tool",
            "store": str(root),
            "run_id": RUN_ID,
            "agent_id": AGENT_ID,
            "tool": tool,
            "args": {"handle": handle, **args},
            "repeats": repeats,
        }
    )


def _sed(path: str, start: int, end: int, repeats: int) -> dict[str, Any]:
    return run_child(
        {"op": "cmd", "argv": ["sed", "-n", f"{start},{end}p;{end}q", path], "repeats": repeats}
    )


def _row(
    name: str,
    ours: dict[str, Any],
    baseline: str,
    base: dict[str, Any],
    data: str,
    what: str,
    **extra: Any,
) -> dict[str, Any]:
    check(ours["digest"] == base["digest"], f"{name}: ours and {baseline} returned different text")
    before = ours["rss_before_mb"]
    notes = (
        f"{what}. Each side in its own process, warm page cache. Ours: a whole call_tool "
        f"(lookup, line index, read, token count: {ours.get('tokens', 0):,} tokens, budget); its "
        f"process was at {before:.0f} MB before the first call (interpreter, DuckDB, tokenizer "
        f"data), so the call added {ours['peak_rss_mb'] - before:.1f} MB."
    )
    if base.get("rss_before_mb") is not None:
        notes += f" Baseline process: {base['rss_before_mb']:.0f} MB before reading."
    else:
        notes += (
            f" Baseline: a whole `{baseline}` process per run (spawn included); its RSS is an "
            f"upper bound (a `true` launched the same way shows {base['floor_mb']:.0f} MB)."
        )
    return result(
        name,
        ours["seconds"],
        baseline,
        base["seconds"],
        data,
        notes=notes,
        peak_rss_mb=ours["peak_rss_mb"],
        baseline_rss_mb=base["peak_rss_mb"],
        **extra,
    )


def run(quick: bool) -> list[dict[str, Any]]:
    sizes = [4 << 20, 40 << 20] if quick else [100 << 20, 1 << 30]
    repeats = 3 if quick else 5
    rows: list[dict[str, Any]] = []
    mid_slices: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-reads-") as tmp:
        root = Path(tmp) / "store"
        bodies = _store_bodies(root, sizes)
        for size in sizes:
            body = bodies[size]
            handle, path, total = body["handle"], body["path"], body["lines"]
            data = f"service log, {_fmt_size(size)}, {total:,} lines"
            mid = total // 2

            ours = _ours(root, handle, "head", {"lines": WINDOW}, repeats)
            base = run_child(
                {"op": "py_lines", "path": path, "start": 1, "end": WINDOW, "repeats": repeats}
            )
            rows.append(
                _row(
                    f"head {WINDOW} lines, {_fmt_size(size)} body",
                    ours,
                    "Python: iterate the file",
                    base,
                    data,
                    f"first {WINDOW} lines",
                )
            )

            ours = _ours(root, handle, "slice", {"start": mid, "end": mid + WINDOW - 1}, repeats)
            base = run_child(
                {
                    "op": "py_lines",
                    "path": path,
                    "start": mid,
                    "end": mid + WINDOW - 1,
                    "repeats": repeats,
                }
            )
            mid_slices[size] = ours
            rows.append(
                _row(
                    f"slice {WINDOW} lines at the middle, {_fmt_size(size)} body",
                    ours,
                    "Python: iterate the file",
                    base,
                    data,
                    f"lines {mid:,}-{mid + WINDOW - 1:,}",
                )
            )

            last = total - WINDOW + 1
            ours = _ours(root, handle, "slice", {"start": last, "end": total}, repeats)
            base = _sed(path, last, total, repeats)
            rows.append(
                _row(
                    f"slice the last {WINDOW} lines, {_fmt_size(size)} body",
                    ours,
                    "sed -n 'a,bp;bq'",
                    base,
                    data,
                    f"lines {last:,}-{total:,}",
                )
            )

            start = size // 2
            ours = _ours(
                root, handle, "read_handle", {"start": start, "end": start + 4096}, repeats
            )
            base = run_child(
                {
                    "op": "py_bytes",
                    "path": path,
                    "start": start,
                    "end": start + 4096,
                    "repeats": repeats,
                }
            )
            rows.append(
                _row(
                    f"read_handle 4 KB at the middle, {_fmt_size(size)} body",
                    ours,
                    "Python: seek + read",
                    base,
                    data,
                    f"bytes {start:,}-{start + 4096:,}",
                )
            )
    small, big = sizes
    a, b = mid_slices[big], mid_slices[small]
    rows.append(
        result(
            f"slice cost vs body size: {_fmt_size(big)} vs {_fmt_size(small)}",
            a["seconds"],
            f"the same slice of a {_fmt_size(small)} body",
            b["seconds"],
            f"{big // small}x the body",
            goal="does not grow with the body (ratio <= 2 at 10x the size)",
            goal_ratio=2.0,
            peak_rss_mb=a["peak_rss_mb"],
            baseline_rss_mb=b["peak_rss_mb"],
            notes=(
                f"Ours against ours: {WINDOW} lines at the middle of each body. Median "
                f"{median(a['seconds']) * 1e3:.2f} ms vs {median(b['seconds']) * 1e3:.2f} ms; the "
                "line index bounds a seek to 256 lines or 64 KB whatever the size."
            ),
        )
    )
    return rows
