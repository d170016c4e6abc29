"""A CSV (or TSV) export spilled as text: its rows are a SQL relation (h.rows), said by the stub
and by schema. A log whose lines hold commas is no table. (Probe M: a natural ``SELECT status,
count(*) FROM h`` failed on a CSV, and the columns were rebuilt with split_part in two more calls.)"""

from __future__ import annotations

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore

CSV = "order_id,customer_email,status,amount,created\n" + "\n".join(
    f'{i},user{i}@x.com,{["paid", "refunded", "open"][i % 3]},{i * 1.5},2024-01-{i % 28 + 1:02d}' for i in range(8000)
)


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """On both backends (embedded DuckDB, shared PostgreSQL)."""
    return backend_store


def test_a_csv_export_is_a_table_in_sql_and_said_so(pad: Scratchpad) -> None:
    r = pad.intercept(CSV, tool="export")
    h = r.handle
    assert f"sql over {h}.rows (CSV, 5 columns: order_id, customer_email, status, amount, created)" in r.content
    res = pad.call_tool("sql", {"query": f"SELECT status, count(*) AS n FROM {h}.rows GROUP BY status ORDER BY 1"})
    assert res.ok and res.data == [{"status": "open", "n": 2666}, {"status": "paid", "n": 2667},
                                   {"status": "refunded", "n": 2667}], res.error  # fmt: skip
    typed = pad.call_tool("sql", {"query": f"SELECT sum(amount) AS total, max(created) AS last FROM {h}.rows"})
    assert typed.ok and typed.data == [{"total": sum(i * 1.5 for i in range(8000)), "last": "2024-01-28"}]
    assert {"name": f"{h}.rows", "format": "CSV, 5 columns: order_id, customer_email, status, amount, created",
            "source_tool": "export"} in pad.sql_relations()  # fmt: skip
    lines = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {h}"})
    assert lines.data == [{"n": 8001}]  # the lines are still the handle's own relation
    schema = pad.call_tool("schema", {"handle": h})
    assert f"table: CSV, 5 columns: order_id, customer_email, status, amount, created; SQL reads its rows as {h}.rows" in (
        schema.text
    )


def test_a_tsv_with_quoted_fields_and_a_log_with_commas(pad: Scratchpad) -> None:
    tsv = "name\tnote\tn\n" + "\n".join(f'pod-{i}\t"a\tb, {i}"\t{i}' for i in range(3000))
    h = pad.intercept(tsv, tool="tsv", force=True).handle
    res = pad.call_tool("sql", {"query": f"SELECT note, n FROM {h}.rows WHERE n = 7"})
    assert res.ok and res.data == [{"note": "a\tb, 7", "n": 7}], res.error
    log = "\n".join(f"2024-01-01 INFO request {i}, took {i % 7} ms" + (", retried" if i % 5 == 0 else "")
                    for i in range(6000))  # fmt: skip
    h = pad.intercept(log, tool="log").handle
    assert ".rows" not in pad.intercept(log, tool="log").content
    missing = pad.call_tool("sql", {"query": f"SELECT * FROM {h}.rows"})
    assert not missing.ok  # no table made of a log
