"""Measure the policy lab on a generated trace (not a test: ``python tests/lab/bench_replay.py --mb 100``).

Prints, for a trace of about ``--mb`` megabytes of tool results:

* ``replay`` with one policy, and a ``sweep`` over ``--thresholds`` (one pass, each result
  tokenized once), against the naive way (``policy.explain`` per call and per threshold, then
  an exact count for the table), with the characters each hands to the tokenizer;
* the cost of the stub of a spilled result rendered in memory (the lab's way) against spilling
  it into a temporary ``ScratchStore`` to read the real stub back.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_scratchpad import ScratchStore, SpillPolicy
from jupyter_scratchpad.lab import read_trace, render_stub, replay, sweep
from jupyter_scratchpad.store import as_text
from jupyter_scratchpad.tokens import Tokenizer, count_tokens, tokenizer_for


def make_trace(directory: Path, megabytes: float, seed: int = 1) -> Path:
    """Tool results of realistic shapes: many small, some medium JSON listings, a few large logs."""
    rnd = random.Random(seed)
    path = directory / "bench.jsonl"
    budget = int(megabytes * 1_000_000)
    written = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < budget:
            kind = rnd.random()
            if kind < 0.80:  # small answers: weather, a record, a status
                result: Any = {"id": rnd.randrange(10**9), "status": rnd.choice(["ok", "pending"]), "note": "x" * 400}
                tool = "get_record"
            elif kind < 0.97:  # listings of 100-2,000 items
                n = rnd.randint(100, 2000)
                result = {"items": [{"name": f"pod-{rnd.randrange(16**6):06x}", "phase": "Running", "restarts": i % 4}
                                    for i in range(n)]}  # fmt: skip
                tool = "k8s_list_pods"
            else:  # logs of 0.2-3 MB
                lines = rnd.randint(2_000, 30_000)
                result = "\n".join(f"2026-12-01T10:00:{i % 60:02d}Z INFO req={rnd.randrange(16**8):08x} ok"
                                   for i in range(lines))  # fmt: skip
                tool = "fetch_logs"
            line = json.dumps({"server": "bench", "tool": tool, "result": result})
            fh.write(line + "\n")
            written += len(line)
    return path


class TokenizedChars:
    """Counts the characters handed to tiktoken / bpe-openai (wraps the tokenizer, then restores it)."""

    def __enter__(self) -> TokenizedChars:
        self.chars = 0
        self._original = Tokenizer._raw_chunk
        original = self._original

        def counting(tok: Tokenizer, chunk: str) -> int:
            self.chars += len(chunk)
            return original(tok, chunk)

        Tokenizer._raw_chunk = counting  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Tokenizer._raw_chunk = self._original  # type: ignore[method-assign]


def fresh_tokenizer_cache() -> None:
    tokenizer_for("gpt-4o")._cache.clear()  # each measurement starts with nothing counted


def timed(label: str, fn: Any) -> Any:
    fresh_tokenizer_cache()
    with TokenizedChars() as chars:
        started = time.perf_counter()
        value = fn()
        seconds = time.perf_counter() - started
    print(f"{label:<58} {seconds:8.2f} s  {chars.chars / 1e6:9.1f} M chars tokenized")
    return value


def naive_sweep(path: Path, thresholds: list[int]) -> int:
    """What the lab avoids: every policy decides and counts on its own."""
    spills = 0
    for threshold in thresholds:
        policy = SpillPolicy(min_tokens=threshold)
        for call in read_trace(path):
            decision = policy.explain(call.result, tool=call.tool, server=call.server)
            spills += decision.spill
            count_tokens(as_text(call.result))  # the exact count the table reports
    return spills


def stub_costs(path: Path, limit: int = 300) -> None:
    calls = [c for c in read_trace(path) if c.tool == "k8s_list_pods"][:limit]
    counts = [count_tokens(as_text(c.result)) for c in calls]
    memory, store_times = [], []
    with ScratchStore() as store:
        pad = store.scratchpad(run_id="bench", agent_id="bench")
        for call, tokens in zip(calls, counts, strict=True):
            started = time.perf_counter()
            render_stub(call.result, tool=call.tool, server=call.server, tokens=tokens)
            memory.append(time.perf_counter() - started)
            started = time.perf_counter()
            pad.spill(call.result, tool=call.tool, server=call.server)
            store_times.append(time.perf_counter() - started)
    size_kb = statistics.median(len(as_text(c.result)) for c in calls) / 1000
    print(f"stub of a spilled listing (median {size_kb:.0f} KB, {len(calls)} results):")
    print(f"  rendered in memory (lab)      {statistics.median(memory) * 1000:7.2f} ms median")
    print(f"  spilled into a ScratchStore   {statistics.median(store_times) * 1000:7.2f} ms median")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=20.0, help="megabytes of tool results (default 20)")
    parser.add_argument("--thresholds", default="256,512,1024,2048,4096,8192,16384,65536")
    args = parser.parse_args()
    thresholds = [int(t) for t in args.thresholds.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        path = make_trace(Path(tmp), args.mb)
        calls = sum(1 for _ in read_trace(path))
        count_tokens("warm up: load the encoding before timing")
        print(f"trace: {path.stat().st_size / 1e6:.1f} MB, {calls:,} calls; {len(thresholds)} thresholds")
        df = timed("replay, one policy", lambda: replay(path, SpillPolicy(), progress=False))
        print(f"  {int(df['spilled'].sum()):,} spills, {int(df['tokens'].sum()):,} tokens")
        timed(f"sweep, {len(thresholds)} thresholds (lab: one pass)", lambda: sweep(path, thresholds, progress=False))
        timed(f"naive: explain + count per call, x{len(thresholds)} policies", lambda: naive_sweep(path, thresholds))
        stub_costs(path)


if __name__ == "__main__":
    main()
