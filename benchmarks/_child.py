"""One measured task in a fresh interpreter, so that its peak RSS is its own.

Run by ``_harness.run_child``: ``python benchmarks/_child.py '<task json>'``. Prints a JSON report:
``{"seconds": [...], "peak_rss_mb": ..., "rss_before_mb": ..., "digest": ..., ...}``.

Peak RSS is the kernel's high-water mark of this process's own memory map (``VmHWM``), read at
the end. ``ru_maxrss`` from ``wait4`` would not do: Linux carries the RSS of the forked copy of
the parent (the benchmark runner, a few hundred MB) across ``exec`` into the child's figure.
``rss_before_mb`` is the high-water mark after setup (interpreter, imports, an opened store), so
``peak - before`` is what the operation itself added.

Tasks:

* ``{"op": "tool", "store", "run_id", "agent_id", "tool", "args", "repeats"}``: ``pad.call_tool``
  (optional ``context_window``, default 2**40; ``refusal``: an error code that is the expected answer).
* ``{"op": "py_lines", "path", "start", "end", "repeats"}``: iterate the file's lines (itertools).
* ``{"op": "py_bytes", "path", "start", "end", "repeats"}``: ``seek`` + ``read``.
* ``{"op": "spill", "path", "store"}``: ``pad.intercept`` of the file's bytes (read first), after
  a small warm-up spill (imports, the tokenizer's tables).
* ``{"op": "orjson_parse", "path"}``: ``orjson.loads`` of the file's bytes (read first), with the
  cyclic GC paused during the parse (as the spill's own parse runs), the value freed untimed.
* ``{"op": "cmd", "argv", "repeats"}``: a command such as ``sed`` or ``grep``, spawned from this
  small process and reaped with ``wait4``; its ``ru_maxrss`` includes this launcher's pre-exec
  pages, so ``floor_mb`` (the same measure of ``true``) is reported beside it.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any


def _rss_mb() -> float:
    """This process's peak RSS in MB (VmHWM; ru_maxrss where /proc is missing)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _spawn(argv: list[str]) -> tuple[float, float, bytes]:
    """``(wall_seconds, ru_maxrss_mb, stdout)`` of one run of ``argv``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):  # grep exits 1 for "no match"
            err.seek(0)
            raise SystemExit(f"{argv[0]} exited with {proc.returncode}: {err.read()[-500:]!r}")
        out.seek(0)
        return elapsed, usage.ru_maxrss / 1024.0, out.read()


def _cmd(task: dict[str, Any]) -> dict[str, Any]:
    _, floor, _ = _spawn(["true"])
    seconds, peaks = [], []
    stdout = b""
    for _ in range(task["repeats"]):
        wall, rss, stdout = _spawn(task["argv"])
        seconds.append(wall)
        peaks.append(rss)
    text = stdout.decode("utf-8", "replace").removesuffix("\n")
    return {
        "seconds": seconds,
        "peak_rss_mb": max(peaks),
        "floor_mb": floor,
        "rss_before_mb": None,
        "digest": _digest(text),
        "stdout_lines": text.count("\n") + 1 if text else 0,
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _tool(task: dict[str, Any]) -> dict[str, Any]:
    from jupyter_scratchpad import ScratchStore

    store = ScratchStore(task["store"], sweep_interval_s=None)
    try:
        # A huge window by default: repeated calls measure the tool, not the budget refusing them.
        pad = store.scratchpad(
            run_id=task["run_id"],
            agent_id=task["agent_id"],
            model="gpt-4o",
            context_window=task.get("context_window", 1 << 40),
        )
        before = _rss_mb()
        seconds = []
        res = None
        for _ in range(task["repeats"]):
            start = time.perf_counter()
            res = pad.call_tool(task["tool"], task["args"])
            seconds.append(time.perf_counter() - start)
            if not res.ok and res.error and res.error.get("error") != task.get("refusal"):
                raise SystemExit(f"{task['tool']} failed: {res.error}")
        assert res is not None
        data = res.data if res.ok else {"text": res.text}
        text = "\n".join(data["lines"]) if "lines" in data else data.get("text", "")
        return {
            "seconds": seconds,
            "rss_before_mb": before,
            "peak_rss_mb": _rss_mb(),
            "digest": _digest(text),
            "tokens": res.tokens,
            "data": _small(data),
        }
    finally:
        store.close()


def _py_lines(task: dict[str, Any]) -> dict[str, Any]:
    before = _rss_mb()
    seconds = []
    lines: list[str] = []
    for _ in range(task["repeats"]):
        start = time.perf_counter()
        with open(task["path"], encoding="utf-8", errors="replace", newline="") as fh:
            lines = [ln.rstrip("\n") for ln in itertools.islice(fh, task["start"] - 1, task["end"])]
        seconds.append(time.perf_counter() - start)
    return {
        "seconds": seconds,
        "rss_before_mb": before,
        "peak_rss_mb": _rss_mb(),
        "digest": _digest("\n".join(lines)),
    }


def _py_bytes(task: dict[str, Any]) -> dict[str, Any]:
    before = _rss_mb()
    seconds = []
    chunk = b""
    for _ in range(task["repeats"]):
        start = time.perf_counter()
        with open(task["path"], "rb") as fh:
            fh.seek(task["start"])
            chunk = fh.read(task["end"] - task["start"])
        seconds.append(time.perf_counter() - start)
    return {
        "seconds": seconds,
        "rss_before_mb": before,
        "peak_rss_mb": _rss_mb(),
        "digest": _digest(chunk.decode("utf-8", errors="replace")),
    }


def _spill(task: dict[str, Any]) -> dict[str, Any]:
    """One spill of a file's bytes (read before the 'before' mark) into a fresh store."""
    from jupyter_scratchpad import ScratchStore

    with open(task["path"], "rb") as fh:
        data = fh.read()
    store = ScratchStore(task["store"], sweep_interval_s=None)
    try:
        pad = store.scratchpad(run_id="bench", agent_id="bench", context_window=1 << 40)
        # imports and the tokenizer's tables are loaded once per process, not per spill
        pad.intercept('{"warm": [' + "1," * 50_000 + "1]}", tool="warm")
        pad.wait_for_counts()
        before = _rss_mb()
        start = time.perf_counter()
        res = pad.intercept(data, tool="export")
        seconds = [time.perf_counter() - start]
        if not res.spilled:
            raise SystemExit(f"did not spill: {res.failure or res.decision.detail}")
        pad.wait_for_counts()
        return {"seconds": seconds, "rss_before_mb": before, "peak_rss_mb": _rss_mb()}
    finally:
        store.close()


def _orjson_parse(task: dict[str, Any]) -> dict[str, Any]:
    import orjson

    with open(task["path"], "rb") as fh:
        data = fh.read()
    before = _rss_mb()
    gc.disable()  # as the spill parses: the cyclic GC paused (parsed JSON has no cycles)
    start = time.perf_counter()
    value = orjson.loads(data)
    seconds = [time.perf_counter() - start]
    gc.enable()
    del value  # (freed after the timer, as the spill never frees a whole parsed document)
    return {"seconds": seconds, "rss_before_mb": before, "peak_rss_mb": _rss_mb()}


def _small(data: Any) -> Any:
    """The scalar fields of a tool's ``.data`` (counts for checks), not its lines."""
    if not isinstance(data, dict):
        return None
    return {
        k: v
        for k, v in data.items()
        if isinstance(v, (int, float, str, bool)) and len(str(v)) < 200
    }


def main(argv: list[str]) -> int:
    task = json.loads(argv[1])
    ops = {
        "tool": _tool,
        "py_lines": _py_lines,
        "py_bytes": _py_bytes,
        "cmd": _cmd,
        "spill": _spill,
        "orjson_parse": _orjson_parse,
    }
    if task.get("op") not in ops:
        print(f"unknown op {task.get('op')!r}; expected one of {sorted(ops)}", file=sys.stderr)
        return 2
    print(json.dumps(ops[task["op"]](task)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
