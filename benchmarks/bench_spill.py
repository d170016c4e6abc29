"""Spill write throughput: ``pad.intercept`` of a large output against writing its bytes to a file.

Ours is the whole spill: the decision, normalising once (format detection; JSON parsed and
pretty-printed for the line tools), sha256 for the handle, the exact token count for
``usage()``, the raw and normalised bodies and the line index written to disk, and the catalog
row. The baseline writes the same text, UTF-8 encoded, to a file in the same directory. Neither
side calls fsync. Each run spills a different output (its first line differs), so the store's
de-duplication never short-circuits a run. A breakdown of where our time goes follows each row.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._data import log_text, pod_list
from benchmarks._harness import check, median, result, time_side_by_side


def _phases(text: str) -> str:
    """Time each phase of a spill once, with the core's own functions (a fresh text each)."""
    from jupyter_scratchpad.store import normalise
    from jupyter_scratchpad.store._bodies import write_body_dir
    from jupyter_scratchpad.tokens import tokenizer_for

    text = "phases\n" + text
    out = {}
    start = time.perf_counter()
    norm = normalise(text)
    out["normalise"] = time.perf_counter() - start
    start = time.perf_counter()
    hashlib.sha256(norm.raw).hexdigest()
    out["sha256"] = time.perf_counter() - start
    start = time.perf_counter()
    tokenizer_for("gpt-4o").count(text)
    out["token count"] = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        write_body_dir(Path(tmp) / "b", norm.raw, None if norm.body is norm.raw else norm.body)
        out["write bodies + line index"] = time.perf_counter() - start
    total = sum(out.values())
    return ", ".join(f"{k} {v * 1e3:,.0f} ms ({v / total:.0%})" for k, v in out.items())


def _row(label: str, text: str, runs: int, root: Path) -> dict[str, Any]:
    from jupyter_scratchpad import ScratchStore

    is_json = text.startswith("{")
    texts = [_vary_json(text, i) if is_json else f"{i}\n{text}" for i in range(runs)]
    size = len(texts[0].encode("utf-8"))
    root.mkdir(parents=True)
    store = ScratchStore(root / "store", sweep_interval_s=None)
    try:
        pad = store.scratchpad(run_id="bench-spill", agent_id="bench", context_window=1 << 40)

        def ours(i: int) -> Any:
            return pad.intercept(texts[i], tool="export_logs")

        def baseline(i: int) -> int:
            with open(root / f"plain-{i}.out", "wb") as fh:
                return fh.write(texts[i].encode("utf-8"))

        def both_wrote(r: Any, written: int) -> None:
            check(r.spilled, f"{label}: intercept did not spill ({r.failure or r.decision.detail})")
            check(written == size and r.stub["size"] == size, f"{label}: sizes differ")

        ours_s, base_s, failure = time_side_by_side(ours, baseline, runs, check_pair=both_wrote)
        fmt = pad.entries("handle")[0]["format"]
    finally:
        store.close()
    notes = (
        f"Format detected: {fmt}. Ours {size / median(ours_s) / 1e6:,.1f} MB/s, the plain write "
        f"{size / median(base_s) / 1e6:,.0f} MB/s. Where our time goes (one spill, phase by "
        f"phase): {_phases(text)}; the rest is the catalog and the stub. The exact full count "
        "feeds the stub and `usage()`; the decision itself needs only `count_upto`, so the core "
        "could count lazily (on first `usage()`/stub render, or in a background thread) and make a "
        "spill cost about its write."
    )
    return result(
        f"spill (intercept) {label}",
        ours_s,
        "write the bytes to a file",
        base_s,
        f"{label}, {size / 1e6:.1f} MB",
        notes=notes,
        failure=failure,
    )


def _vary_json(text: str, i: int) -> str:
    return text.replace('"9123456"', f'"{9123456 + i}"', 1)


def run(quick: bool) -> list[dict[str, Any]]:
    runs = 3 if quick else 5
    json_bytes = 2_000_000 if quick else 10_000_000
    log_bytes = 4_000_000 if quick else 100_000_000
    with tempfile.TemporaryDirectory(prefix="bench-spill-") as tmp:
        root = Path(tmp)
        return [
            _row("k8s PodList JSON text", pod_list(json_bytes, seed=21), runs, root / "json"),
            _row("service log text", log_text(log_bytes, seed=22), runs, root / "log"),
        ]
