"""A real full disk (a small tmpfs mounted for the test): spills fail closed, nothing stored is lost.

Mounting needs root (or CAP_SYS_ADMIN); where the mount is refused the tests are skipped with the
reason printed. CI runs as root and mounts.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.spill._withheld import POINTER_MAX_BYTES


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        reason = f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode}); disk-full tests skipped"
        print(reason)
        pytest.skip(reason)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def lines(n: int, tag: str) -> str:
    return "\n".join(f"{tag} line {i} " + "x" * 60 for i in range(n))


def test_a_full_disk_fails_closed_and_loses_nothing_stored(small_disk: Path) -> None:
    with ScratchStore(small_disk / "store", sweep_interval_s=None) as store:
        pad = store.scratchpad("run-1", "agent-1")
        kept = pad.spill(lines(5_000, "kept"), tool="first")  # ~0.4 MB, fits
        assert kept.spilled, kept.failure
        other = store.scratchpad("run-2", "agent-2")
        theirs = other.spill(lines(2_000, "theirs"), tool="other")
        assert theirs.spilled

        big = lines(200_000, "flood")  # ~16 MB: cannot fit in 6 MB
        r = pad.intercept(big, tool="huge_listing")
        assert not r.spilled and r.failure and "No space left" in r.failure
        assert isinstance(r.content, str) and len(r.content.encode()) <= POINTER_MAX_BYTES
        assert "flood line 0 " in r.content and "flood line 199999 " in r.content
        assert str(small_disk) not in r.content
        assert list((store.path / "tmp").iterdir()) == []  # the partial body is gone

        # what was stored before is intact, for both agents
        assert pad.call_tool("grep", {"handle": kept.handle, "pattern": "kept line 4999 "}).data["total_matches"] == 1
        assert other.call_tool("head", {"handle": theirs.handle, "lines": 1}).ok
        # another agent's spill on the full disk also fails closed
        r2 = other.intercept(lines(200_000, "again"), tool="huge")
        assert r2.failure and len(r2.content.encode()) <= POINTER_MAX_BYTES

        # freeing space makes the store usable again without reopening it
        assert pad.delete(kept.handle)
        store.sweep()
        again = pad.spill(lines(5_000, "after"), tool="after")
        assert again.spilled, again.failure


def test_the_tools_still_answer_on_a_full_disk(small_disk: Path) -> None:
    with ScratchStore(small_disk / "store", sweep_interval_s=None) as store:
        pad = store.scratchpad("run-1", "agent-1")
        h = pad.spill(lines(20_000, "row"), tool="rows").handle
        filler = small_disk / "filler"
        with open(filler, "wb") as fh:  # fill what is left
            try:
                while True:
                    fh.write(b"\0" * (1 << 16))
                    fh.flush()
            except OSError:
                pass
        assert os.statvfs(small_disk).f_bavail == 0
        for name, args in (
            ("grep", {"handle": h, "pattern": "row line 12345 "}),
            ("slice", {"handle": h, "start": 100, "end": 120}),
            ("schema", {"handle": h}),
            ("scratch_list", {}),
        ):
            res = pad.call_tool(name, args)
            assert res.ok, (name, res.error)
        res = pad.call_tool("scratch_write", {"key": "plan", "value": "x" * 60_000})
        assert res.ok or res.error["error"] in ("store_error",), res.error
