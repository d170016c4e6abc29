"""The one-screen summary that ends ``./scripts/test``: tests, benchmark goals, where the details are.

    python scripts/summary.py --junit .work/pytest.xml --bench .ci-artifacts/BENCHMARKS-quick.md \\
        --bench-log .work/bench.log --seconds 412

Reads pytest's JUnit XML and the benchmark report's "## Goals" table; standard library only.
The last line is the plain "N passed, N failed, N skipped" line that CI reads.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

MAX_LISTED = 8


def test_counts(junit: Path) -> tuple[dict[str, int], list[str]]:
    """``({"tests", "failures", "errors", "skipped"}, [failed test ids])`` from a JUnit XML file."""
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
    failed = [f"{case.get('classname')}::{case.get('name')}" for case in root.iter("testcase")
              if case.find("failure") is not None or case.find("error") is not None]
    return counts, failed


def goals(report: Path) -> list[tuple[str, str, str, str]]:
    """``[(benchmark, goal, ratio, met)]`` from the report's Goals table."""
    text = report.read_text(encoding="utf-8")
    if "## Goals" not in text:
        return []
    rows = []
    for line in text.split("## Goals", 1)[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("benchmark", "") and not set(cells[0]) <= {"-"}:
            rows.append((cells[0], cells[1], cells[2], cells[3].strip("*")))
        elif rows and not line.startswith("|"):
            break
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--junit", type=Path, required=True)
    parser.add_argument("--bench", type=Path, required=True, help="the benchmark report (Markdown)")
    parser.add_argument("--bench-log", type=Path, default=None)
    parser.add_argument("--seconds", type=float, default=None, help="how long the whole run took")
    args = parser.parse_args(argv)
    print("\n" + "=" * 30 + " summary " + "=" * 30)
    if args.junit.is_file():
        counts, failed = test_counts(args.junit)
        passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
        bad = counts["failures"] + counts["errors"]
    else:
        passed, bad, counts, failed = 0, 1, {"skipped": 0}, [f"no test report at {args.junit}"]
    print(f"tests       {passed:,} passed, {bad:,} failed, {counts['skipped']:,} skipped")
    for name in failed[:MAX_LISTED]:
        print(f"  failed    {name}")
    if len(failed) > MAX_LISTED:
        print(f"  … {len(failed) - MAX_LISTED} more (pytest's output above)")
    if args.bench.is_file():
        rows = goals(args.bench)
        missed = [r for r in rows if r[3].lower() == "no"]
        judged = [r for r in rows if r[3].lower() in ("yes", "no")]  # n/a: a goal this mode cannot judge
        unjudged = f" ({len(rows) - len(judged)} judged in full mode only)" if len(judged) < len(rows) else ""
        met = len(judged) - len(missed)
        print(f"benchmarks  {met} of {len(judged)} goals met{unjudged}; full report: {args.bench}")
        for name, goal, ratio, _met in missed[:MAX_LISTED]:
            print(f"  missed    {name}: {goal} (ratio {ratio})")
    else:
        where = f" (log: {args.bench_log})" if args.bench_log else ""
        print(f"benchmarks  no report: the quick benchmarks failed{where}")
    if args.seconds is not None:
        print(f"took        {args.seconds / 60:.1f} min")
    print(f"{passed} passed, {bad} failed, {counts['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
