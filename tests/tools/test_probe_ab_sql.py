"""SQL as a model meets it (probe AB): a query over a document or a CSV handle itself is pointed at
the relation of its records, struct keys are named when one is not found, DESCRIBE shows what
helps, and a result cut at max_rows says how many rows there are."""

from __future__ import annotations

import time
from typing import Any

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.explore import _sql


def _csv(pad: Scratchpad) -> str:
    text = "order_id,status,amount\n" + "".join(f"{i},{['paid', 'open', 'void'][i % 3]},{i}\n" for i in range(3000))
    handle = pad.intercept(text, tool="export_orders_csv", force=True).handle
    assert handle is not None
    return handle


def _first_runs(pad: Scratchpad, error: dict[str, Any]) -> Any:
    first = error["suggestions"][0]
    assert first["tool"] == "sql", error
    res = pad.call_tool("sql", first["arguments"])
    assert res.ok and res.data, res.text
    return res


def test_a_query_over_a_podlist_document_is_pointed_at_its_items(pad: Scratchpad, pods_handle: str) -> None:
    h = pods_handle
    res = pad.call_tool("sql", {"query": f"SELECT status.phase, count(*) AS n FROM {h} GROUP BY 1"})
    assert not res.ok and "status is a column of " + f"{h}.items" in res.error["message"], res.text
    assert (
        res.error["suggestions"][0]["arguments"]["query"]
        == f"SELECT status.phase, count(*) AS n FROM {h}.items GROUP BY 1"
    )
    assert sum(row["n"] for row in _first_runs(pad, res.error).data) == 3000
    # its columns are those of the items; listing the handles would tell nothing new
    assert [s["arguments"].get("query") for s in res.error["suggestions"][1:]] == [f"DESCRIBE {h}.items"]
    # a key the document's own struct lacks (its metadata is not the items')
    items = [{"metadata": {"name": f"p{i}"}, "status": {"phase": "Running"}} for i in range(1500)]
    listed = pad.spill({"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": items}, tool="k").handle
    keyed = pad.call_tool("sql", {"query": f"SELECT metadata.name FROM {listed} LIMIT 3"})
    assert not keyed.ok and keyed.error["message"] == (
        f'Binder Error: Could not find key "name" in struct (metadata.name is in {listed}.items)'
    ), keyed.text
    assert [r["name"] for r in _first_runs(pad, keyed.error).data] == ["p0", "p1", "p2"]


def test_a_query_over_a_csv_handle_is_pointed_at_its_rows(pad: Scratchpad) -> None:
    h = _csv(pad)
    res = pad.call_tool("sql", {"query": f"SELECT status, count(*) AS n FROM {h} GROUP BY 1 ORDER BY 1"})
    assert not res.ok and f"status is a column of {h}.rows" in res.error["message"], res.text
    assert (
        res.error["suggestions"][0]["arguments"]["query"]
        == f"SELECT status, count(*) AS n FROM {h}.rows GROUP BY 1 ORDER BY 1"
    )
    assert _first_runs(pad, res.error).data == [{"status": s, "n": 1000} for s in ("open", "paid", "void")]


def test_the_array_that_has_the_column_is_the_one_offered(pad: Scratchpad) -> None:
    doc = {
        "users": [{"id": i, "email": f"u{i}@x"} for i in range(1500)],
        "orders": [{"id": i, "total": i * 2} for i in range(1500)],
    }
    h = pad.spill(doc, tool="shop").handle
    for column, relation in (("total", "orders"), ("email", "users")):
        res = pad.call_tool("sql", {"query": f"SELECT max({column}) AS m FROM {h}"})
        assert res.error["suggestions"][0]["arguments"]["query"] == f"SELECT max({column}) AS m FROM {h}.{relation}"
        assert _first_runs(pad, res.error).data[0]["m"] == (2998 if column == "total" else "u9@x")
    # no relation has it: nothing is guessed
    none = pad.call_tool("sql", {"query": f"SELECT nosuch FROM {h}"})
    assert [s["arguments"]["query"] for s in none.error["suggestions"]] == [f"DESCRIBE {h}"]
    assert "is a column of" not in none.error["message"]


def test_scratch_list_is_offered_as_what_it_lists(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("sql", {"query": "SELECT * FROM nowhere"})
    listed = [s for s in res.error["suggestions"] if s["tool"] == "scratch_list"]
    assert listed and listed[0]["why"] == "see the live handles", res.error
    assert pad.call_tool("scratch_list", listed[0]["arguments"]).ok
    # a query over a live handle: its DESCRIBE, not a list of handles
    typo = pad.call_tool("sql", {"query": f"SELECT nosuch FROM {pods_handle}.items"})
    assert [s["tool"] for s in typo.error["suggestions"]] == ["sql"], typo.error


def test_describe_shows_names_and_types_only(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("sql", {"query": f"DESCRIBE {pods_handle}.items"})
    assert res.ok and res.text.startswith("| column_name | column_type |\n|---|---|\n"), res.text
    assert "YES" not in res.text and set(res.data[0]) == {"column_name", "column_type"}
    picked = pad.call_tool("sql", {"query": f'SELECT column_name, "null" FROM (DESCRIBE {pods_handle}.items)'})
    assert picked.ok and picked.data[0]["null"] == "YES"  # (asked for: shown)


def test_a_missing_struct_key_gets_the_structs_keys_closest_first(pad: Scratchpad, pods_handle: str) -> None:
    h = pods_handle
    res = pad.call_tool("sql", {"query": f"SELECT metadata.nam FROM {h}.items"})
    assert res.error["message"].endswith("(keys of metadata, closest first: name, namespace, labels)"), res.text
    wrong = pad.call_tool("sql", {"query": f"SELECT i.status.restartCount FROM {h}.items AS i"})
    assert wrong.error["message"].endswith("(keys of status, closest first: restarts, phase)"), wrong.text
    listed = {
        "items": [
            {"c": [{"restartCount": i, "name": "a", "state": {"reason": "x"}}], **{f"k{j}": j for j in range(50)}}
            for i in range(1500)
        ]
    }
    h2 = pad.spill(listed, tool="pods2").handle
    inner = pad.call_tool("sql", {"query": f'SELECT c[1]."restartCont" FROM {h2}.items'})
    assert "(keys of c[1], closest first: restartCount, state, name)" in inner.error["message"], inner.text
    wide = pad.call_tool(
        "sql",
        {"query": f"SELECT s.k1x FROM (SELECT {{{', '.join(f'k{j}: k{j}' for j in range(50))}}} AS s FROM {h2}.items)"},
    )
    assert wide.error is not None and "Candidate Entries" in wide.error["message"]  # (not a relation's: DuckDB's own)
    top = {"items": [{"s": {f"k{j}": j for j in range(50)}} for _ in range(1500)]}
    h3 = pad.spill(top, tool="wide").handle
    many = pad.call_tool("sql", {"query": f"SELECT s.zz FROM {h3}.items"})
    assert many.error["message"].endswith(", k29 … 20 more)"), many.text


def test_type_shapes_are_read_through_quotes_and_parentheses() -> None:
    shape = _sql._parse_type(
        'STRUCT("a, b(" VARCHAR, "x""y" STRUCT(z INTEGER, "w)" DECIMAL(18,3))[], m MAP(VARCHAR, INTEGER), '
        'u UNION("n(" INTEGER, s VARCHAR), d DOUBLE[3][])'
    )
    assert list(shape) == ["a, b(", 'x"y', "m", "u", "d"]
    assert shape['x"y'] == ({"z": None, "w)": None},) and shape["d"] == ((None,),)
    assert _sql._keys_at({"s": 'STRUCT("x""y" STRUCT(z INTEGER)[])'}, ["s", '"x""y"[2]']) == ["z"]
    assert _sql._keys_at({"s": "STRUCT(a INTEGER[])"}, ["s", "a[1:2]"]) is None  # (a slice is a list)


def test_a_cut_result_says_how_many_rows_there_are(pad: Scratchpad, pods_handle: str) -> None:
    query = f"SELECT metadata.name, status.phase FROM {pods_handle}.items WHERE status.phase <> 'Running'"
    res = pad.call_tool("sql", {"query": query, "max_rows": 50})
    assert res.ok and len(res.data) == 50 and res.meta["total_rows"] == 2000, res.meta
    assert res.text.splitlines()[-1].startswith("--- 50 of 2,000 rows × 2 columns (add LIMIT/OFFSET or aggregate)")
    fits = pad.call_tool("sql", {"query": query + " LIMIT 3"})
    assert fits.meta["total_rows"] == 3 and fits.meta["truncated"] is False


def test_a_count_that_takes_too_long_says_more_than(tmp_path: Any) -> None:
    # 10^10 rows: the first 200 stream at once, the count would take seconds; it is stopped within
    # the query's own time (and the call's), and the footer says what is known
    from jupyter_scratchpad import ScratchStore

    with ScratchStore(tmp_path / "s") as store:
        pad = store.scratchpad("r", "a", tool_timeout_s=1.0)
        started = time.monotonic()
        res = pad.call_tool("sql", {"query": "SELECT * FROM range(10000000000)"})
        took = time.monotonic() - started
        assert res.ok and res.meta["total_rows"] is None and res.meta["truncated"] is True, res.text
        assert "--- 200 of more than 200 rows × 1 columns (not counted; add LIMIT/OFFSET or aggregate)" in res.text
        assert took < 1.0 + 0.5, took
        assert pad.call_tool("sql", {"query": "SELECT 1 AS one"}).data == [{"one": 1}]  # (the worker lives on)
