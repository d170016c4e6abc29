"""Long work in a real kernel shows a progress line under the cell: a spill, a first SQL load."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ipython_helpers import RealKernel, loaded_kernel, message_text


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[RealKernel]:
    with loaded_kernel(tmp_path) as k:
        yield k


def _progress_lines(messages: list[dict[str, Any]]) -> tuple[str | None, list[str]]:
    """The display id of the progress line and its texts in order (the first display, then updates)."""
    shown = [
        m for m in messages
        if m["msg_type"] in ("display_data", "update_display_data")
        and "[scratchpad] " in m["content"]["data"].get("text/plain", "")
        and m["content"].get("transient", {}).get("display_id")
    ]  # fmt: skip
    ids = {m["content"]["transient"]["display_id"] for m in shown}
    assert len(ids) <= 1, ids  # one line, updated in place
    assert not shown or shown[0]["msg_type"] == "display_data"
    return (ids.pop() if ids else None), [m["content"]["data"]["text/plain"] for m in shown]


def test_a_spill_longer_than_a_second_shows_a_moving_progress_line(kernel: RealKernel) -> None:
    kernel.run(
        "import time\n"
        "from jupyter_scratchpad.store import _store\n"
        "_real = _store.write_body_dir\n"
        "def _slow(*args, **kwargs):  # a slow disk: the write takes 1.6 s\n"
        "    time.sleep(1.6)\n"
        "    return _real(*args, **kwargs)\n"
        "_store.write_body_dir = _slow\n"
    )
    messages = kernel.messages("print('a line of a long log\\n' * 100_000)")
    display_id, lines = _progress_lines(messages)
    assert display_id is not None and len(lines) >= 3
    assert all("storing the 2.0 MB output of cell_3_stdout: " in line for line in lines[:-1]), lines
    assert "write (3/5)" in lines[0] and "stored the 2.0 MB output of cell_3_stdout in 1." in lines[-1]
    stub = [m for m in messages if m["msg_type"] == "display_data" and "stored as handle" in message_text(m)]
    handle = message_text(stub[0]).split('"')[1]
    assert lines[-1].endswith(f" as {handle}")  # the line ends as a summary naming the handle
    # a quick spill after it: no progress line at all
    kernel.run("_store.write_body_dir = _real")
    assert _progress_lines(kernel.messages("print('another long log\\n' * 100_000)")) == (None, [])


def test_a_first_sql_over_a_large_json_shows_its_table_load(kernel: RealKernel) -> None:
    stub = kernel.run(
        "from jupyter_scratchpad.spill import _progress\n"
        "rows = [{'id': i, 'status': 'ok' if i % 3 else 'failed', 'note': 'x' * 40} for i in range(60_000)]\n"
        "{'kind': 'List', 'items': rows}\n"
    )
    handle = stub.split('"')[1]  # the cell's value spilled: its stub names the handle
    assert handle.startswith("cell_")
    kernel.run("_progress.TICK_AFTER_S, _progress.TICK_EVERY_S = 0.0, 0.02  # (this load is under a second)")
    messages = kernel.messages(f"%scratch sql SELECT count(*) AS n FROM {handle}.items WHERE status = 'failed'")
    display_id, lines = _progress_lines(messages)
    assert display_id is not None and len(lines) >= 2
    assert all(f"loading {handle} (" in line and "into DuckDB tables for SQL" in line for line in lines[:-1])
    assert f"loaded {handle} (" in lines[-1] and "later queries read them" in lines[-1]
    assert "20000" in "".join(message_text(m) for m in messages if m["msg_type"] == "execute_result")
    again = kernel.messages(f"%scratch sql SELECT count(*) AS n FROM {handle}.items")  # loaded: no line
    assert _progress_lines(again) == (None, [])

