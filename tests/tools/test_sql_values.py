"""SQL answers show DuckDB's values as DuckDB holds them, where Python's types cannot: an infinite
date came back as 9999-12-31, an interval of a month as 30 days, a TIMESTAMP_NS without its
nanoseconds."""

from __future__ import annotations

from jupyter_scratchpad import Scratchpad


def _row(pad: Scratchpad, query: str) -> dict:
    res = pad.call_tool("sql", {"query": query})
    assert res.ok, res.error
    (row,) = res.data
    return row


def test_dates_timestamps_and_intervals_are_exact(pad: Scratchpad) -> None:
    row = _row(pad, "SELECT 'infinity'::DATE AS d, '-infinity'::TIMESTAMP AS t, 7 AS n, 'x' AS s")
    assert row == {"d": "infinity", "t": "-infinity", "n": 7, "s": "x"}
    row = _row(pad, "SELECT INTERVAL '1 month 3 days 4 microseconds' AS i;  -- a trailing comment")
    assert row == {"i": "1 month 3 days 00:00:00.000004"}
    row = _row(pad, "SELECT '2024-01-02 03:04:05.123456789'::TIMESTAMP_NS AS ns, DATE '2024-02-29' AS day")
    assert row == {"ns": "2024-01-02 03:04:05.123456789", "day": "2024-02-29"}


def test_nested_temporal_values_keep_their_structure(pad: Scratchpad) -> None:
    row = _row(pad, "SELECT [INTERVAL 1 MONTH, NULL] AS l, {'a': 'infinity'::DATE, 'b': 2} AS s, NULL::DATE AS nd")
    assert row == {"l": ["1 month", None], "s": {"a": "infinity", "b": 2}, "nd": None}


def test_a_spilled_document_dates_read_back_as_dates(pad: Scratchpad) -> None:
    doc = {"items": [{"name": f"pod-{i}", "started": f"2024-03-{i % 28 + 1:02d}"} for i in range(3000)]}
    h = pad.intercept(doc, tool="pods").handle
    res = pad.call_tool("sql", {"query": f"SELECT min(started) AS first, max(started) AS last FROM {h}.items"})
    assert res.ok and res.data == [{"first": "2024-03-01", "last": "2024-03-28"}], res.data
