"""Run every ``benchmarks/bench_*.py`` and write a Markdown report.

    python benchmarks/run.py                 # full mode: writes BENCHMARKS.md at the repo root
    python benchmarks/run.py --quick --output .ci-artifacts/BENCHMARKS-quick.md   # CI
    python benchmarks/run.py --quick --only grep,sql --output /tmp/b.md

Each module has ``run(quick: bool) -> list[dict]``; a dict is one row (``name``, ``ours_s``,
``baseline``, ``baseline_s``, ``ratio``, ``data``, ``runs``; optionally ``peak_rss_mb``,
``baseline_rss_mb``, ``notes``, ``goal``, ``goal_met``, ``baseline_failed``). A module that
raises, or returns a malformed row, is reported and makes the exit status 1, so that CI notices
when the harness or a benchmark rots. Missed goals are reported, not failures.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if (
    str(REPO_ROOT) not in sys.path
):  # ``python benchmarks/run.py`` puts benchmarks/ first, not the root
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks._report import machine_info, render_report, validate_row  # noqa: E402


def discover(only: list[str] | None = None) -> list[str]:
    """Module names ``benchmarks.bench_*`` (sorted), filtered by substrings of their names."""
    names = sorted(p.stem for p in (REPO_ROOT / "benchmarks").glob("bench_*.py"))
    if only:
        names = [n for n in names if any(o in n for o in only)]
    return [f"benchmarks.{n}" for n in names]


def run_module(name: str, quick: bool) -> tuple[list[dict[str, Any]], str | None, float]:
    """``(rows, error, seconds)`` of one benchmark module; never raises."""
    start = time.perf_counter()
    try:
        module = importlib.import_module(name)
        rows = module.run(quick)
        if not isinstance(rows, list):
            raise TypeError(f"{name}.run() returned {type(rows).__name__}, not a list of dicts")
        for row in rows:
            validate_row(row)
    except Exception:
        return [], traceback.format_exc(), time.perf_counter() - start
    return rows, None, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small data, for CI (well under 2 minutes)"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="where to write the report (default: BENCHMARKS.md at the repo root)",
    )
    parser.add_argument("--only", default=None, help="comma-separated substrings of module names")
    args = parser.parse_args(argv)
    output = args.output or (REPO_ROOT / "BENCHMARKS.md")
    only = [o.strip() for o in args.only.split(",")] if args.only else None
    modules = discover(only)
    if not modules:
        parser.error(f"no benchmark module matches {args.only!r}")
    command = "python benchmarks/run.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    started = time.time()
    load_start = os.getloadavg()[0]
    sections = []
    failed = False
    for name in modules:
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        rows, error, seconds = run_module(name, args.quick)
        failed = failed or error is not None
        sections.append({"module": name, "rows": rows, "error": error, "seconds": seconds})
        status = "FAILED" if error else f"{len(rows)} rows"
        print(f"[bench] {name}: {status} in {seconds:.1f} s", file=sys.stderr, flush=True)
        if error:
            print(error, file=sys.stderr)
    machine = machine_info()
    machine["load"] = f"{load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    report = render_report(
        sections,
        machine=machine,
        started=started,
        command=command,
        quick=args.quick,
        elapsed_s=time.time() - started,
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report, encoding="utf-8")
    print(report)
    print(f"[bench] wrote {output}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
