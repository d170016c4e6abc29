"""What a query costs in notes: ``scratch_notes`` is filled only for a query that names it, and bounded.

Each of the scope's notes, values included, was read and shipped to the SQL worker for every query:
20,000 notes of 2 KB made even ``SELECT 1`` time out. The speed is a benchmark's; these tests
watch the mechanism (what the worker is sent, what the catalog is asked for) and the answers.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.explore import _sql
from jupyter_scratchpad.explore._sqlworker import run_job

NOTES = {"a": {"pod": "pod-1"}, "b": {"pod": "pod-2"}, "c": {"pod": "pod-5"}}


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """Both backends (embedded DuckDB, shared PostgreSQL)."""
    return backend_store


class Watch:
    """What the ``sql`` tool sent its worker (the notes of each job) and read of the catalog's notes."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, pad: Scratchpad) -> None:
        self.shipped: list[int] = []  # notes sent to the worker, one count per job
        self.note_reads = 0  # catalog reads that return notes (with their values)
        entries = pad.store.entries

        def recording_job(job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
            self.shipped.append(len(job["notes"]))
            return run_job(job, timeout_s)

        def recording_entries(scope: Any, kind: str | None = None) -> Any:
            self.note_reads += kind in (None, "note")
            return entries(scope, kind)

        monkeypatch.setattr(_sql, "run_job", recording_job)
        monkeypatch.setattr(pad.store, "entries", recording_entries)

    def clear(self) -> None:
        self.shipped.clear()
        self.note_reads = 0


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch, pad: Scratchpad, pods_handle: str) -> Watch:
    for key, value in NOTES.items():
        pad.scratch_write(key, value)
    return Watch(monkeypatch, pad)


def _ask(pad: Scratchpad, query: str) -> list[dict[str, Any]]:
    res = pad.call_tool("sql", {"query": query})
    assert res.ok, res.text
    return res.data  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT 1 AS one",
        "SELECT count(*) AS n FROM {h}.items",
        "WITH n AS (SELECT metadata.name AS key FROM {h}.items) SELECT count(*) AS n FROM n",
        "SELECT count(*) AS n FROM (SELECT * FROM {h}.items WHERE status.phase = 'Failed') AS q",
    ],
)
def test_a_query_that_does_not_name_scratch_notes_neither_reads_nor_ships_the_notes(
    pad: Scratchpad, pods_handle: str, watch: Watch, query: str
) -> None:
    _ask(pad, query.format(h=pods_handle))
    assert watch.shipped == [0] and watch.note_reads == 0


def test_show_tables_still_lists_scratch_notes_without_loading_them(pad: Scratchpad, watch: Watch) -> None:
    # the table is always there (SHOW TABLES, duckdb_columns() list it), only its rows are not
    assert _ask(pad, "SHOW TABLES") == [{"name": "scratch_notes"}]
    columns = "SELECT column_name FROM duckdb_columns() WHERE table_name = 'scratch_notes' ORDER BY column_index"
    assert [r["column_name"] for r in _ask(pad, columns)] == ["key", "value", "expires_at"]
    assert watch.shipped == [0, 3]  # (the second names it in a string: loaded, to be safe)


NAMING = [
    ("in a CTE", "WITH n AS (SELECT key FROM scratch_notes) SELECT count(*) AS n FROM n", [{"n": 3}]),
    ("quoted", 'SELECT count(*) AS n FROM "scratch_notes"', [{"n": 3}]),
    ("in upper case", "SELECT COUNT(*) AS n FROM SCRATCH_NOTES", [{"n": 3}]),
    ("quoted, mixed case", 'SELECT count(*) AS n FROM "Scratch_Notes"', [{"n": 3}]),
    ("qualified", "SELECT count(*) AS n FROM memory.main.scratch_notes", [{"n": 3}]),
    (
        "in a subquery",
        "SELECT count(*) AS n FROM {h}.items WHERE metadata.name IN (SELECT value->>'pod' FROM scratch_notes)",
        [{"n": 3}],
    ),
    (
        "joined with a handle",
        "SELECT n.key, p.status.phase AS phase FROM scratch_notes AS n JOIN {h}.items AS p "
        "ON p.metadata.name = n.value->>'pod' ORDER BY n.key",
        [{"key": "a", "phase": "Pending"}, {"key": "b", "phase": "Failed"}, {"key": "c", "phase": "Failed"}],
    ),
    ("described", "SELECT count(*) AS n FROM (DESCRIBE scratch_notes) AS d", [{"n": 3}]),
]


@pytest.mark.parametrize(("form", "query", "expected"), NAMING, ids=[n[0] for n in NAMING])
def test_a_query_naming_scratch_notes_anyhow_reads_them_and_one_beside_it_does_not(
    pad: Scratchpad, pods_handle: str, watch: Watch, form: str, query: str, expected: list[dict[str, Any]]
) -> None:
    assert _ask(pad, query.format(h=pods_handle)) == expected, form
    # the same relations without the name, right after (a connection holding the notes is not
    # reused for it, and one without them is not reused for the named query after it)
    assert _ask(pad, f"SELECT count(*) AS n FROM {pods_handle}.items") == [{"n": 3000}]
    pad.scratch_write("d", {"pod": "pod-7"})
    assert _ask(pad, "SELECT count(*) AS n, max(key) AS last FROM scratch_notes") == [{"n": 4, "last": "d"}]
    assert watch.shipped == [3, 0, 4]


def test_the_rows_loaded_on_demand_are_the_notes_exactly(pad: Scratchpad, watch: Watch) -> None:
    # (loaded in one statement now: keys, JSON values and expiry times come back as written)
    pad.scratch_write("é ü", {"deep": [1, {"x": "naïve"}], "n": 12345678901234567})
    pad.scratch_write("text", "plain words")
    # a query of JSON that names no relation loads nothing
    assert _ask(pad, "SELECT json_extract_string('{\"x\": \"naïve\"}', '$.x') AS x") == [{"x": "naïve"}]
    assert watch.shipped == [0] and watch.note_reads == 0
    rows = _ask(
        pad,
        "SELECT key, value->>'$.deep[1].x' AS x, value->>'n' AS n, json_type(value) AS t, "
        "epoch(expires_at) AS at FROM scratch_notes WHERE key IN ('é ü', 'text') ORDER BY key",
    )
    notes = {key: pad.store.get_entry(pad.scope, "note", key) for key in ("text", "é ü")}
    at = {key: entry.expires_at for key, entry in notes.items() if entry is not None}
    assert rows == [
        {"key": "text", "x": None, "n": None, "t": "VARCHAR", "at": pytest.approx(at["text"], abs=1e-5)},
        {"key": "é ü", "x": "naïve", "n": "12345678901234567", "t": "OBJECT", "at": pytest.approx(at["é ü"], abs=1e-5)},
    ]
    assert watch.shipped == [0, 5]


def test_notes_past_the_cap_are_refused_at_once_with_a_call_that_runs(
    pad: Scratchpad, pods_handle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(10):
        pad.scratch_write(f"big-{i}", "x" * 1000)
    monkeypatch.setattr(_sql, "SQL_NOTES_MAX_BYTES", 5_000, raising=False)
    watch = Watch(monkeypatch, pad)
    res = pad.call_tool("sql", {"query": "SELECT count(*) AS n FROM scratch_notes"})
    error = res.error
    assert not res.ok and error is not None and error["error"] == "sql_notes_too_large", res.text
    assert error["notes"] == 10 and error["notes_bytes"] > 5_000 and len(error["message"]) < 600
    assert "10 notes" in error["message"] and "scratch_list" in error["message"]
    assert watch.shipped == []  # refused before anything went to the worker
    offered = error["suggestions"][0]
    assert offered["tool"] == "scratch_list" and offered["arguments"] == {"kind": "note"}
    assert pad.call_tool(offered["tool"], offered["arguments"]).ok
    # what does not name the notes still runs
    assert _ask(pad, f"SELECT count(*) AS n FROM {pods_handle}.items") == [{"n": 3000}]
    assert watch.shipped == [0]


def test_sql_df_loads_the_notes_only_for_a_query_that_names_them(pad: Scratchpad, watch: Watch) -> None:
    assert pad.sql_df("SELECT 1 AS one")["one"].tolist() == [1]
    assert watch.note_reads == 0
    frame = pad.sql_df('WITH n AS (FROM "SCRATCH_NOTES") SELECT count(*) AS n FROM n')
    assert frame["n"].tolist() == [3] and watch.note_reads == 1
    # a person's query is not capped: their own notes are not rationed
    assert pad.sql_df("SELECT key FROM scratch_notes ORDER BY key")["key"].tolist() == ["a", "b", "c"]
