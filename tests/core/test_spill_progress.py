"""A spill that runs longer than a second reports its phases; a quick one reports nothing."""

from __future__ import annotations

import time
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.spill import _progress


def test_a_slow_spill_reports_phases_then_done(pad: Scratchpad, monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_scratchpad.store import _store

    real = _store.write_body_dir

    def slow(*args: Any, **kwargs: Any) -> Any:  # a slow disk: the write phase takes 1.5 s
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(_store, "write_body_dir", slow)
    events: list[dict[str, Any]] = []
    pad.progress_listeners.append(events.append)
    r = pad.spill("line\n" * 100_000, tool="export")
    assert r.spilled
    phases = [e["phase"] for e in events]
    assert "write" in phases and phases[-1] == "done" and phases.count("done") == 1
    assert all(e["tool"] == "export" and e["size_bytes"] == 500_000 for e in events)
    assert events[-1]["handle"] == r.handle and events[-1]["elapsed_s"] >= 1.5
    ticks = [e for e in events if e["phase"] == "write"]
    assert len(ticks) >= 2  # the ticker kept the display moving during the long phase


def test_a_quick_spill_reports_nothing_and_a_failing_listener_is_harmless(pad: Scratchpad) -> None:
    events: list[dict[str, Any]] = []

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("display is gone")

    pad.progress_listeners += [events.append, broken]
    assert pad.spill("x" * 10_000, tool="t").spilled
    assert events == []


def test_the_notebook_progress_line_renders_each_phase() -> None:
    from jupyter_scratchpad.ipython._progress import ProgressLine

    event = {
        "tool": "cell_3",
        "handle": None,
        "phase": "write",
        "step": 3,
        "steps": len(_progress.PHASES),
        "size_bytes": 50_000_000,
        "elapsed_s": 2.25,
    }
    bundle = ProgressLine.bundle(event)
    assert "write (3/5), 2.2 s" in bundle["text/plain"] and "<progress" in bundle["text/html"]
    done = ProgressLine.bundle({**event, "phase": "done", "handle": "cell_3_abc"})
    assert "stored the 47.7 MB output of cell_3" in done["text/plain"] and "cell_3_abc" in done["text/plain"]


def test_a_persons_first_sql_over_a_large_json_reports_its_table_load(
    pad: Scratchpad, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sql_df loads a JSON handle into DuckDB tables in the kernel on its first query (a gigabyte:
    # ~13 s); the pad's listeners (the notebook's progress line) hear it like a long spill
    monkeypatch.setattr(_progress, "TICK_AFTER_S", 0.0)  # (a load here is quicker than a second)
    monkeypatch.setattr(_progress, "TICK_EVERY_S", 0.01)
    rows = [{"id": i, "status": "ok" if i % 3 else "failed", "note": "x" * 40} for i in range(60_000)]
    h = pad.spill({"kind": "List", "items": rows}, tool="list_things").handle
    size = pad.store.body_paths(pad.entry(h))[0].stat().st_size
    events: list[dict[str, Any]] = []
    pad.progress_listeners.append(events.append)
    assert pad.sql_df(f"SELECT count(*) AS n FROM {h}.items WHERE status = 'failed'").n.tolist() == [20_000]
    assert events and all(e["kind"] == "sql_tables" and e["handle"] == h and e["size_bytes"] == size for e in events)
    assert [e["phase"] for e in events].count("done") == 1 and events[-1]["phase"] == "done"
    ticks = [e for e in events if e["phase"] == "load"]
    assert ticks and all(e["percent"] is None or 0 <= e["percent"] <= 100 for e in ticks)
    events.clear()
    assert pad.sql_df(f"SELECT count(*) AS n FROM {h}").n.tolist() == [1]  # loaded: nothing to report
    assert events == []


def test_progress_reports_how_far_when_the_work_can_say() -> None:
    events: list[dict[str, Any]] = []
    answers = iter([-1.0, 42.04, 250.0, 12.0])

    def broken() -> float:
        raise RuntimeError("connection closed")

    with _progress.Progress([events.append], "sql", 10, kind="sql_tables", phases=_progress.LOAD_PHASES) as p:
        p.set_probe(lambda: next(answers))
        for _ in range(4):
            p.started -= 2  # past the first second: each phase call reports
            p.phase("load")
        p.set_probe(broken)
        p.phase("load")
    # unknown until said; out of range or a failure keeps the last figure; never back (a load's
    # next statement starts again at 0)
    assert [e.get("percent") for e in events] == [None, 42.0, 42.0, 42.0, 42.0, None]  # done has none
    assert [e["phase"] for e in events] == ["load"] * 5 + ["done"]
    assert events[0]["step"] == 1 and events[0]["steps"] == 2


def test_the_notebook_progress_line_renders_a_table_load() -> None:
    from jupyter_scratchpad.ipython._progress import ProgressLine

    event = {"kind": "sql_tables", "tool": "sql", "handle": "pods_1a2b", "phase": "load", "step": 1, "steps": 2,
             "size_bytes": 1 << 30, "elapsed_s": 6.14, "percent": 45.2}  # fmt: skip
    bundle = ProgressLine.bundle(event)
    assert "loading pods_1a2b (1.0 GB) into DuckDB tables" in bundle["text/plain"]
    assert "45 %, 6.1 s" in bundle["text/plain"] and 'value="45.2" max="100"' in bundle["text/html"]
    unknown = ProgressLine.bundle({**event, "percent": None})
    assert "%" not in unknown["text/plain"] and "<progress style" in unknown["text/html"]  # indeterminate
    done = ProgressLine.bundle({**event, "phase": "done", "elapsed_s": 13.2})
    assert "loaded pods_1a2b (1.0 GB) into DuckDB tables in 13.2 s" in done["text/plain"]
    assert "<progress" not in done["text/html"]


def test_letting_go_of_a_probe_waits_for_the_question_in_flight() -> None:
    # the table load closes its DuckDB connection after set_probe(None): never while the ticker
    # thread is asking it how far it is
    import threading

    asked, answered = threading.Event(), threading.Event()

    def slow() -> float:
        asked.set()
        time.sleep(0.3)
        answered.set()
        return 50.0

    p = _progress.Progress([], "sql", 10, kind="sql_tables", phases=_progress.LOAD_PHASES)
    p.set_probe(slow)
    asking = threading.Thread(target=p._event, args=("load",))
    asking.start()
    assert asked.wait(5)
    p.set_probe(None)
    assert answered.is_set()  # set_probe returned only after the probe did
    asking.join()
    assert p._event("load")["percent"] == 50.0  # (the last figure stands)
