"""JSON tools on a large streamed spill: answers without the whole document.

A JSON output of 8 MB or more that is one big array is spilled a segment at a time and never
held as Python objects. Reading it back must not undo that: a path outside the array
(``$.metadata``) is answered from the *skeleton* (the body's bytes around the array), a node that
holds the array (``$.items``) is refused from 64 sampled items, and the array's schema is merged
a segment at a time, never parsing the whole body first.

Each row: ours is the first such call in a fresh process that opens the store (a whole
``call_tool``); the baseline is what answering it from the whole value costs at the least:
``orjson.loads`` of the pretty body, also in a fresh process, with the cyclic GC paused during
the parse as ours pauses it (the value freed after the timer). Both report the RSS the operation
added. Goal: the call adds under 20 MB of RSS, whatever the size (as issue 14 asks of a read of a
1 GB body).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from benchmarks._data import pod_list
from benchmarks._harness import check, result, run_child

RUN_ID, AGENT_ID = "bench-streamed", "bench"


def run(quick: bool) -> list[dict[str, Any]]:
    from jupyter_scratchpad import ScratchStore

    size = 20_000_000 if quick else 100_000_000
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-streamed-") as tmp:
        root = Path(tmp) / "store"
        store = ScratchStore(root, sweep_interval_s=None)
        try:
            pad = store.scratchpad(run_id=RUN_ID, agent_id=AGENT_ID, context_window=1 << 40)
            spilled = pad.intercept(pod_list(size, seed=61), tool="kubectl")
            check(spilled.spilled, f"did not spill: {spilled.failure}")
            pad.wait_for_counts()
            entry = pad.entry(spilled.handle)
            body = store.reader(entry).body_path
            check((body.parent / "segments.json").exists(), "the spill was not streamed")
            handle, body_mb = spilled.handle, entry.body_bytes / 1e6
        finally:
            store.close()
        parse = run_child({"op": "orjson_parse", "path": str(body)})
        calls = [
            ("get_in", {"path": "$.metadata"}, None, "a path outside the array: from the skeleton"),
            ("get_in", {"path": "$.items"}, "get_in_too_large",
             "the array itself, for a model with a 200,000-token window: refused from 64 sampled items, "
             "its suggestions dry-run under the same limit"),
            ("schema", {"path": "$.items"}, None, "the array's shape, merged a segment at a time"),
        ]  # fmt: skip
        for tool, args, refusal, what in calls:
            task: dict[str, Any] = {
                "op": "tool", "store": str(root), "run_id": RUN_ID, "agent_id": AGENT_ID, "tool": tool,
                "args": {"handle": handle, **args}, "repeats": 1,
            }  # fmt: skip
            if refusal:
                task.update(refusal=refusal, context_window=200_000)
            ours = run_child(task)
            added = ours["peak_rss_mb"] - ours["rss_before_mb"]
            parse_added = parse["peak_rss_mb"] - parse["rss_before_mb"]
            row = result(
                f"{tool} {args['path']} on a streamed {size // 1_000_000} MB PodList, first call",
                ours["seconds"],
                "orjson.loads of the pretty body (the least a whole-value answer costs)",
                parse["seconds"],
                f"k8s PodList, {size / 1e6:.0f} MB JSON, {body_mb:.0f} MB pretty body",
                notes=(
                    f"{what}. Ours: the whole call_tool in a fresh process that opened the store "
                    f"(added {added:,.1f} MB of RSS = {added / body_mb:.3f} × the body); the baseline parsing "
                    f"the body (GC paused) added {parse_added:,.0f} MB = {parse_added / body_mb:.1f} ×. One run each "
                    "side (a fresh process each): the time ratio is one sample, the goal is the RSS."
                ),
                goal="the call adds under 20 MB of RSS",
                peak_rss_mb=ours["peak_rss_mb"],
                baseline_rss_mb=parse["peak_rss_mb"],
            )
            row["goal_met"] = added < 20
            rows.append(row)
    return rows
