"""grep's ^ and $ anchor per line, as GNU grep's do (issue 17 §1): counts checked against GNU grep."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from jupyter_scratchpad import Scratchpad

LOG = "".join(
    f"2024-0{1 + i % 9}-1{i % 10}T10:00:{i % 60:02d} {('ERROR', 'INFO', 'WARN')[i % 3]} svc-{i % 4} "
    f"request {i} took {i * 7 % 1000}ms{' ' if i % 11 == 0 else ''}\n"
    + ("  at com.example.Worker.run(Worker.java:42)\n" if i % 3 == 0 else "")
    for i in range(6000)
)
PATTERNS = [
    r"^\S+ ERROR ",
    r"^2024",
    r"^2024-03",
    r"ms$",
    r"ms $",
    r"^  at ",
    r"^\S+ (WARN|ERROR) svc-[0-3] request [0-9]+ took [0-9]{3}ms$",
    r"0ms$",
    r"^$",
    r"svc-2",
    r"ERROR",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_grep_counts_match_gnu_grep(pad: Scratchpad, tmp_path: Path, pattern: str) -> None:
    gnu = shutil.which("grep")
    assert gnu, "GNU grep is needed for this comparison"
    body = tmp_path / "log.txt"
    body.write_text(LOG, encoding="utf-8")
    expected = int(
        subprocess.run(
            [gnu, "-c", "-E", pattern, str(body)], capture_output=True, text=True, env={"LC_ALL": "C"}
        ).stdout.strip()
    )
    h = pad.spill(LOG, tool="fetch_logs").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": pattern, "context": 0, "max_matches": 5})
    assert res.ok, res.text
    assert res.data["total_matches"] == expected, (pattern, expected)


def test_anchored_matches_are_the_right_lines(pad: Scratchpad) -> None:
    h = pad.spill(LOG, tool="fetch_logs").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": r"^\S+ ERROR ", "context": 0, "max_matches": 3})
    assert res.ok and res.data["total_matches"] > 1000
    assert all(" ERROR " in m["text"] and not m["text"].startswith(" ") for m in res.data["matches"])
    tail = pad.call_tool("grep", {"handle": h, "pattern": r"Worker\.java:42\)$", "context": 0, "max_matches": 2})
    assert tail.ok and tail.data["total_matches"] == 2000
