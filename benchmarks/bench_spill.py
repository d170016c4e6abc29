"""Spill latency and memory: ``pad.intercept`` of a large output against the floor of its work.

Ours is the whole spill as a caller waits for it: the decision (counting only up to the
threshold), normalising once (format detection; JSON parsed and pretty-printed for the line
tools), sha256 for the handle, the raw and normalised bodies and the line index written, the
catalog row and the stub. The exact token count of an output over 64 KiB is *not* in it: it runs on a
worker thread afterwards (``Scratchpad.wait_for_counts``), and the rows say so.

Baselines, same input bytes, no fsync of the output's bytes on either side (ours commits its
catalog row with DuckDB, whose WAL is fdatasynced: one small sync per spill that the baselines
do not pay); before each run of either side (untimed) the page cache's dirty pages are written
back (``os.sync``) and the garbage of the run before is collected (``gc.collect``), so no write
waits on another's writeback and neither side pays for the other's garbage:

* text: write the bytes to a file in the same directory;
* JSON: ``orjson.loads`` of the bytes plus writing them to a file (the least any JSON spill
  does: read the document once, put it on disk). The same GC policy as ours: the cyclic GC is
  paused during the parse (ours pauses it for its parse too), and the parsed value is freed
  after the timer stops (untimed, before the next run), as ours keeps its parsed value (under
  8 MB) or never builds the whole document (from 8 MB);
* a dict (a notebook cell's value, no goal set): ``json.dumps`` of it plus writing the text to a
  file (the least a spill of a value does: serialise it once, put it on disk).

Goal (issue 14): ours ≤ 3 × the baseline at 1, 10 and 100 MB. Each run spills a different output
(its first bytes differ), so de-duplication never short-circuits a run. JSON rows also report
where the time goes, phase by phase, on the JSON itself; a memory row reports the peak RSS of a
JSON spill in a fresh process against the input's size (goal ≤ 3 ×: the whole process's peak,
as issue 14 measures it, judged at 100 MB in full mode; quick mode's 10 MB judges the RSS the
spill added, and the row says which).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks._data import log_text, pod_list
from benchmarks._harness import check, median, result, run_child, time_side_by_side

GOAL = "≤ 3 × the baseline"


def _phases(text: str) -> str:
    """Time each phase of one spill with the core's own functions (on a fresh copy of the text)."""
    from jupyter_scratchpad.store import normalise
    from jupyter_scratchpad.store._bodies import write_body_dir
    from jupyter_scratchpad.tokens import tokenizer_for

    text = text.replace("{", '{"phase": 1, ', 1) if text.startswith("{") else "phases\n" + text
    out = {}
    start = time.perf_counter()
    tokenizer_for("gpt-4o").count_upto(text, 5120)
    out["decide (count to the threshold)"] = time.perf_counter() - start
    start = time.perf_counter()
    norm = normalise(text, stream=True)  # as a spill does (a big array: by segment)
    streamed = norm.streamed is not None
    name = "normalise (parse + pretty-print)" if norm.format == "json" else "normalise"
    out["normalise (find the big array, parse the skeleton)" if streamed else name] = time.perf_counter() - start
    start = time.perf_counter()
    hashlib.sha256(norm.raw).hexdigest()
    out["sha256"] = time.perf_counter() - start
    body = norm.streamed.body_chunks() if norm.streamed else None if norm.body is norm.raw else norm.body
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        write_body_dir(Path(tmp) / "b", norm.raw, body)
        label = "parse, pretty-print and write by segment, line index" if streamed else "write bodies + line index"
        out[label] = time.perf_counter() - start
    total = sum(out.values())
    return ", ".join(f"{k} {v * 1e3:,.0f} ms ({v / total:.0%})" for k, v in out.items())


def _floor(texts: list[str], root: Path) -> str:
    """The least a text spill of this design must do, timed side by side with the baseline: the
    sha256 (one output, one entry: dedupe and the handle's name) and the newline offsets (reads of a
    line range in O(range)) of the bytes, then the body and its line index written to a new
    directory; no catalog row, no stub, no decision."""
    import numpy as np

    sha_s: list[float] = []

    def floor(i: int) -> int:
        raw = texts[i].encode("utf-8")
        started = time.perf_counter()
        hashlib.sha256(raw).hexdigest()
        sha_s.append(time.perf_counter() - started)
        offsets = np.flatnonzero(np.frombuffer(raw, np.uint8) == 10).astype(np.int64)
        directory = root / f"floor-{i}"
        directory.mkdir()
        with open(directory / "raw", "wb") as fh:
            written = fh.write(raw)
        with open(directory / "index", "wb") as fh:
            fh.write(offsets.tobytes())
        return written

    def baseline(i: int) -> int:
        with open(root / f"floor-plain-{i}.out", "wb") as fh:
            return fh.write(texts[i].encode("utf-8"))

    floor_s, base_s, _ = time_side_by_side(floor, baseline, len(texts) - 1, before_each=os.sync)
    ratio = median(floor_s) / median(base_s)
    sha = median(sha_s[1:])  # (not the warm-up call's)
    return (
        f"The floor of this design, side by side in this run: the sha256 and newline offsets of the bytes, "
        f"then the body and its line index written to a new directory (no catalog row, no stub, no decision) "
        f"take {median(floor_s) * 1e3:.2f} ms, {ratio:.1f}× the baseline's {median(base_s) * 1e3:.2f} ms; the "
        f"sha256 alone took {sha * 1e3:.2f} ms of it ({sha / median(base_s):.1f}× the baseline's write). "
    )


def _page_price(root: Path) -> tuple[float, float, float]:
    """``(min, median, max)`` ms of writing 1 MB to a new file, 60 times in a row."""
    data = b"x" * 1_000_000
    times = []
    for i in range(60):
        start = time.perf_counter()
        with open(root / f"page-price-{i}", "wb") as fh:
            fh.write(data)
        times.append((time.perf_counter() - start) * 1e3)
    for i in range(60):
        (root / f"page-price-{i}").unlink()
    return min(times), median(times), max(times)


def _vary(text: str, i: int) -> str:
    """The text with the run's number in front (the same size for every run up to 999)."""
    if text.startswith("{"):
        return text.replace("{", f'{{"run": "{i:03d}", ', 1)
    return f"{i:03d}\n{text}"


def _fresh_pad(root: Path) -> tuple[Any, Any]:
    """A new store under ``root`` and its pad (a window no spill row can exhaust)."""
    from jupyter_scratchpad import ScratchStore

    root.mkdir(parents=True)
    store = ScratchStore(root / "store", sweep_interval_s=None)
    return store, store.scratchpad(run_id="bench-spill", agent_id="bench", context_window=1 << 40)


def _row(label: str, text: str, runs: int, root: Path) -> dict[str, Any]:
    is_json = text.startswith("{")
    texts = [_vary(text, i) for i in range(runs + 1)]  # (the last: the harness's warm-up call)
    size = len(texts[0].encode("utf-8"))
    store, pad = _fresh_pad(root)
    try:
        pending: list[bool] = []  # ours just spilled: its background work is still to come
        parsed: list[Any] = []  # the baseline's parsed value, freed before the next run (untimed)

        def ours(i: int) -> Any:
            pending.append(True)
            return pad.intercept(texts[i], tool="export")

        def baseline(i: int) -> int:
            data = texts[i].encode("utf-8")
            if is_json:
                # ours parses with the cyclic GC paused (parsed JSON has no cycles): the same here
                was_enabled = gc.isenabled()
                gc.disable()
                try:
                    parsed.append(orjson.loads(data))
                finally:
                    if was_enabled:
                        gc.enable()
            with open(root / f"plain-{i}.out", "wb") as fh:
                return fh.write(data)

        def both_wrote(r: Any, written: int) -> None:
            check(r.spilled, f"{label}: intercept did not spill ({r.failure or r.decision.detail})")
            check(written == size and r.stub["size"] == size, f"{label}: sizes differ")

        waits: list[float] = []

        def settle() -> None:  # the last spill's background work (exact count, schema): untimed
            parsed.clear()
            started = time.perf_counter()
            pad.wait_for_counts()
            if pending:  # (after ours only: how long its workers ran on after the stub)
                waits.append(time.perf_counter() - started)
                pending.clear()
            # and the page cache's dirty pages written back, so that neither side's write() waits
            # on the writeback of the other's bytes (a 10 MB write took 3 ms or 34 ms depending on
            # what ran before it, which decided this row's verdict on its own)
            os.sync()

        ours_s, base_s, failure = time_side_by_side(ours, baseline, runs, check_pair=both_wrote, before_each=settle)
        settle()
        after_s = median(waits[1:])  # (not the warm-up spill's)
        fmt = pad.entries("handle")[0]["format"]
    finally:
        store.close()
    spread = (
        f"Spread over the {len(ours_s)} runs: ours {min(ours_s) * 1e3:,.2f}-{max(ours_s) * 1e3:,.2f} ms, the baseline "
        f"{min(base_s) * 1e3:,.2f}-{max(base_s) * 1e3:,.2f} ms. "
    )
    if size <= 2_000_000 and not is_json:
        spread += _floor(texts, root)
    if size <= 2_000_000:
        lo, mid, hi = _page_price(root)
        spread += (
            "At this size both sides pay mostly for fresh pages, and on a VM a page's price is chance: in this "
            f"run, writing 1 MB to a new file 60 times in a row took {lo:.2f}-{hi:.2f} ms (median {mid:.2f}): "
            "the low end is pages the kernel had just freed, the high end pages the host must back again (free "
            "page reporting gives idle guest memory back to it). Which side meets which is chance, so this "
            "row's ratio moves between runs more than the code does. "
        )
    streamed = is_json and size >= 8_000_000
    if not is_json:
        after = "the exact token count of outputs over 64 KiB runs afterwards on a worker thread"
    elif streamed:
        after = (
            "the exact token count, and the schema and item counts, run afterwards on worker threads; at this "
            "size the spill reads the array a segment at a time and never holds it parsed, so the schema worker "
            "reads the raw body's segments back and parses them a second time (not parse once: that second "
            "parse is in the background time, not in the timed spill)"
        )
    else:
        after = (
            "the exact token count, and the schema and item counts built from the value the spill parsed "
            "(parse once), run afterwards on worker threads"
        )
    gc_note = (
        " The baseline parses with the cyclic GC paused, as ours does, and its parsed value is freed after its "
        "timer stops; an untimed gc.collect() precedes every run of either side."
        if is_json
        else ""
    )
    notes = (
        f"Format detected: {fmt}. Ours {size / median(ours_s) / 1e6:,.1f} MB/s, the baseline "
        f"{size / median(base_s) / 1e6:,.0f} MB/s. Ours includes the decision, normalising, sha256, "
        f"bodies + line index and the catalog row; {after}. Each run of either side starts once they are done "
        f"(untimed): they went on for a median {after_s * 1e3:,.0f} ms after ours returned its stub, so the spill's "
        f"whole work (stub plus background) took about {(median(ours_s) + after_s) * 1e3:,.0f} ms of wall time."
        f"{gc_note} Where one spill's time goes: {_phases(text)}; the rest is the catalog row (one DuckDB INSERT, "
        "its WAL synced) and the stub. " + spread
    )
    baseline_name = "orjson.loads + write the bytes to a file" if is_json else "write the bytes to a file"
    return result(
        f"spill (intercept) {label}",
        ours_s,
        baseline_name,
        base_s,
        f"{label}, {size / 1e6:.1f} MB",
        notes=notes,
        failure=failure,
        goal=GOAL,
        goal_ratio=3.0,
    )


def _dict_row(label: str, text: str, runs: int, root: Path) -> dict[str, Any]:
    """A dict spilled as a notebook cell's value is: serialised once, then stored as its text would be."""
    from jupyter_scratchpad.explore._segments import SEGMENTS_FILE

    value = json.loads(text)
    # (shallow copies: the items are shared; the last one is the harness's warm-up call)
    values = [{"run": f"{i:03d}", **value} for i in range(runs + 1)]
    size = len(json.dumps(values[0], ensure_ascii=False).encode("utf-8"))
    store, pad = _fresh_pad(root)
    try:

        def ours(i: int) -> Any:
            return pad.intercept(values[i], tool="export")

        def baseline(i: int) -> int:
            with open(root / f"plain-{i}.json", "wb") as fh:
                return fh.write(json.dumps(values[i], ensure_ascii=False).encode("utf-8"))

        def both_wrote(r: Any, written: int) -> None:
            check(r.spilled, f"{label}: intercept did not spill ({r.failure or r.decision.detail})")
            check(written == size and r.stub["size"] == size, f"{label}: sizes differ")

        ours_s, base_s, failure = time_side_by_side(
            ours, baseline, runs, check_pair=both_wrote, before_each=lambda: pad.wait_for_counts()
        )
        directory = store.reader(pad.entry(pad.entries("handle")[0]["handle"])).directory
        check((directory / SEGMENTS_FILE).exists(), f"{label}: the value was not stored a segment at a time")
    finally:
        store.close()
    return result(
        f"spill (intercept) {label}",
        ours_s,
        "json.dumps + write the text to a file",
        base_s,
        f"{label}, {size / 1e6:.1f} MB of JSON text",
        notes=(
            "Both sides serialise the value once with json.dumps (the text a model would see, and the raw bytes "
            "kept). Ours then stores it as that JSON text would be stored: over 8 MB, one big array is parsed and "
            "pretty-printed a segment at a time as the body is written (so its SQL tables load the array as "
            "records), where the baseline only writes. The decision, sha256, line index, catalog row and stub are "
            "in ours; the exact token count and the schema run afterwards on worker threads, untimed (each run "
            "starts once they are done). No goal: issue 14 sets "
            "goals for text and JSON text; this row shows what a value costs beside them."
        ),
        failure=failure,
    )


def _memory_row(text: str, root: Path, quick: bool) -> dict[str, Any]:
    """Peak RSS of one JSON spill in a fresh interpreter, against the input's size."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "input.json"
    path.write_text(text, encoding="utf-8")
    size_mb = path.stat().st_size / 1e6
    spill = run_child({"op": "spill", "path": str(path), "store": str(root / "mem-store")})
    parse = run_child({"op": "orjson_parse", "path": str(path)})
    total = spill["peak_rss_mb"]
    added = total - spill["rss_before_mb"]
    parse_added = parse["peak_rss_mb"] - parse["rss_before_mb"]
    # Issue 14: "peak RSS of a 100 MB JSON spill ≤ 3× the input": the process's whole peak (its
    # anchor, 1,164 MiB for 100 MB, is one), judged where the issue sets it: 100 MB, full mode.
    # Quick mode's 10 MB input is smaller than the interpreter, DuckDB and the tokenizer the
    # process holds anyway, so there the row judges what the spill added instead, and says so.
    if quick:
        goal = (
            f"added RSS ≤ 3 × the input (quick mode, {size_mb:.0f} MB; issue 14's total peak ≤ 3 × is judged at "
            f"100 MB in full mode; measured added {added / size_mb:.1f} ×, total {total / size_mb:.1f} ×)"
        )
        met = added / size_mb <= 3.0
    else:
        goal = (
            f"peak RSS ≤ 3 × the input (issue 14: the whole process's peak; measured {total / size_mb:.1f} ×, "
            f"added {added / size_mb:.1f} ×)"
        )
        met = total / size_mb <= 3.0
    row = result(
        "peak RSS of a JSON spill",
        spill["seconds"],
        "orjson.loads of the same bytes (memory of the parsed value; GC paused during the parse)",
        parse["seconds"],
        f"k8s PodList JSON, {size_mb:.0f} MB, read from a file as bytes in a fresh process",
        notes=(
            f"The spill process's peak RSS: {total:,.0f} MB = {total / size_mb:.1f} × the input (issue 14's "
            f"measure: interpreter, imports, DuckDB, the tokenizer and the input bytes included); of it, the "
            f"spill added {added:,.0f} MB = {added / size_mb:.1f} × the input over the high-water mark after "
            f"loading the input and a small warm-up spill. Judged here: "
            + ("the added RSS (quick mode). " if quick else "the total peak (full mode, 100 MB). ")
            + f"orjson's parsed value alone adds {parse_added:,.0f} MB = {parse_added / size_mb:.1f} ×. "
            "The input bytes themselves are in the 'before' figure of both. A JSON text of 8 MB or more "
            "that is one big array is read a segment at a time (a NumPy scan finds the array, each ~0.5 MB "
            "segment is parsed and pretty-printed on its own): the spill holds the raw bytes, the scan's "
            "arrays and one segment's objects, never the document as Python objects. Below 8 MB the "
            "value is parsed whole (the JSON tools then reuse it). One run each side (a fresh process each): "
            "the time ratio is one sample."
        ),
        goal=goal,
        peak_rss_mb=total,
        baseline_rss_mb=parse["peak_rss_mb"],
    )
    row["goal_met"] = met
    return row


def run(quick: bool) -> list[dict[str, Any]]:
    runs = 3 if quick else 5
    sizes = [1_000_000, 10_000_000] if quick else [1_000_000, 10_000_000, 100_000_000]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-spill-") as tmp:
        root = Path(tmp)
        for n in sizes:
            mb = f"{n // 1_000_000} MB"
            many = runs * 3 if n <= 10_000_000 else runs  # (a run takes milliseconds: its noise is larger; a
            # 10 MB write takes 3 ms or 40 ms by what the kernel has to reclaim: nine runs, not three)
            rows.append(_row(f"k8s PodList JSON text ({mb})", pod_list(n, seed=21), many, root / f"json-{n}"))
            rows.append(_row(f"service log text ({mb})", log_text(n, seed=22), many, root / f"log-{n}"))
            if n >= 10_000_000:  # (a value streams from 8 MB on)
                rows.append(_dict_row(f"k8s PodList as a dict ({mb})", pod_list(n, seed=24), runs, root / f"dict-{n}"))
        rows.append(_memory_row(pod_list(sizes[-1], seed=23), root / "memory", quick))
    json.dumps(rows)  # the rows are plain data
    return rows
