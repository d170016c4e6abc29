"""SQL over spills, and the sandbox around it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """Every tool works unchanged on both backends (embedded DuckDB, shared PostgreSQL)."""
    return backend_store


def test_json_array_is_rows_with_columns(pad: Scratchpad) -> None:
    r = pad.intercept(
        [{"id": i, "team": "ab"[i % 2], "meta": {"score": i / 10}, "tags": ["x"] * (i % 3)} for i in range(2000)],
        tool="list_things",
    )
    res = pad.call_tool(
        "sql",
        {"query": f"SELECT team, count(*) AS n, max(meta.score) AS top FROM {r.handle} GROUP BY team ORDER BY team"},
    )
    assert res.ok, res.error
    assert res.data == [{"team": "a", "n": 1000, "top": 199.8}, {"team": "b", "n": 1000, "top": 199.9}]
    assert res.text.startswith("| team | n | top |")
    lens = pad.call_tool("sql", {"query": f"SELECT sum(len(tags)) AS t FROM {r.handle}"})
    assert lens.data == [{"t": sum(i % 3 for i in range(2000))}]


def test_distinct_aggregates_run_without_duckdbs_rewrite_and_answer_the_same(pad: Scratchpad) -> None:
    # DuckDB 2's distinct_aggregate_rewrite is off in every sandbox (slower on 2 cores, see
    # tune_optimizer); the query cannot turn it back on, and the answers are what Python computes
    records = [{"id": f"o{i}", "status": "abc"[i % 3], "country": f"c{i % 7}", "amount": i} for i in range(3000)]
    h = pad.intercept(records, tool="orders").handle
    query = (
        f"SELECT status, count(*) AS n, sum(amount) AS total, count(DISTINCT country) AS countries, "
        f"count(DISTINCT id) AS ids FROM {h} GROUP BY status ORDER BY status"
    )
    expected = [
        {
            "status": s,
            "n": 1000,
            "total": sum(r["amount"] for r in records if r["status"] == s),
            "countries": len({r["country"] for r in records if r["status"] == s}),
            "ids": 1000,
        }
        for s in "abc"
    ]
    assert pad.call_tool("sql", {"query": query}).data == expected
    assert pad.sql_df(query).to_dict("records") == expected  # the person's connection too
    # nor draws DuckDB's own progress widget under a notebook cell (a query over 2 s did)
    assert pad.sql_df("SELECT current_setting('enable_progress_bar_print') AS p")["p"].tolist() == [False]
    # (a person's query may read the settings; a model's may not: they name the store's paths)
    setting = pad.sql_df(f"SELECT current_setting('disabled_optimizers') AS d FROM {h} LIMIT 1")
    assert "distinct_aggregate_rewrite" in setting["d"][0]
    undo = pad.call_tool("sql", {"query": "SET disabled_optimizers = ''"})
    assert not undo.ok and undo.error["error"] == "sql_not_read_only"


def test_a_persons_query_loads_only_the_handles_it_names(pad: Scratchpad) -> None:
    # a first %scratch sql over a small handle never waits for a large one beside it to load
    from jupyter_scratchpad.explore._sqlviews import TABLES_FILE

    small, large = (
        pad.intercept([{"n": i, "of": tool} for i in range(size)], tool=tool).handle
        for tool, size in (("small", 1500), ("large", 30_000))
    )
    tables = {h: pad.store.body_paths(pad.entry(h))[0].parent / TABLES_FILE for h in (small, large)}
    assert pad.sql_df(f"SELECT count(*) AS n FROM {small}")["n"].tolist() == [1500]
    assert tables[small].exists() and not tables[large].exists()
    both = pad.sql_df(f"SELECT (SELECT count(*) FROM {small}) + (SELECT count(*) FROM {large}) AS n")
    assert both["n"].tolist() == [31_500] and tables[large].exists()
    with pytest.raises(Exception, match="does not exist"):  # a handle the query does not name is not there
        pad.sql_df("SELECT count(*) FROM nope_handle")


def test_object_with_array_unnests(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool(
        "sql",
        {
            "query": f"SELECT i.status.phase AS phase, count(*) AS n FROM "
            f"(SELECT unnest(items) AS i FROM {pods_handle}) GROUP BY 1 ORDER BY 1"
        },
    )
    assert res.data == [
        {"phase": "Failed", "n": 1000},
        {"phase": "Pending", "n": 1000},
        {"phase": "Running", "n": 1000},
    ]


def test_text_handle_is_line_no_and_line(pad: Scratchpad, log_handle: str) -> None:
    res = pad.call_tool(
        "sql", {"query": f"SELECT line_no, line FROM {log_handle} WHERE line LIKE '%ERROR%' ORDER BY line_no LIMIT 2"}
    )
    assert [r["line_no"] for r in res.data] == [1, 51]
    count = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {log_handle}"})
    assert count.data == [{"n": 5000}]


def test_jsonl_and_notes(pad: Scratchpad) -> None:
    jl = pad.intercept("\n".join(json.dumps({"n": i}) for i in range(3000)), tool="stream")
    pad.scratch_write("plan", {"step": 2})
    res = pad.call_tool("sql", {"query": f"SELECT sum(n) AS s FROM {jl.handle}"})
    assert res.data == [{"s": sum(range(3000))}]
    notes = pad.call_tool("sql", {"query": "SELECT key, value->>'step' AS step FROM scratch_notes"})
    assert notes.data == [{"key": "plan", "step": "2"}]


def test_inference_sees_every_record(pad: Scratchpad) -> None:
    records = [{"id": i} for i in range(100_000)]
    records[-1]["only_in_the_last"] = "here"
    r = pad.intercept(records, tool="big")
    res = pad.call_tool(
        "sql", {"query": f"SELECT id, only_in_the_last FROM {r.handle} WHERE only_in_the_last IS NOT NULL"}
    )
    assert res.ok, res.error
    assert res.data == [{"id": 99_999, "only_in_the_last": "here"}]


def test_rows_are_bounded(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("sql", {"query": "SELECT * FROM range(1000)"})
    assert res.ok and len(res.data) == 200 and "200 of 1,000 rows" in res.text
    big = pad.call_tool("sql", {"query": "SELECT repeat('word ', 200) AS w FROM range(5000)", "max_rows": 5000})
    assert big.error["error"] == "sql_too_large"
    assert "LIMIT" in big.error["suggestions"][0]["arguments"]["query"]


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_json('/etc/hostname')",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM '/etc/passwd'",
        "COPY (SELECT 1) TO '/tmp/escape.csv'",
        "ATTACH '/tmp/escape.duckdb' AS x",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "RESET enable_external_access",
        "SET lock_configuration = false",
        "SELECT * FROM read_parquet('https://example.com/x.parquet')",
        "EXPORT DATABASE '/tmp/escape_dir'",
        "PRAGMA enable_external_access",
    ],
)
def test_sandbox_refuses_escapes(pad: Scratchpad, pods_handle: str, query: str) -> None:
    res = pad.call_tool("sql", {"query": query})
    assert not res.ok, query
    assert res.error["error"] in ("sql_forbidden", "sql_error", "sql_not_read_only")
    assert not Path("/tmp/escape.csv").exists() and not Path("/tmp/escape.duckdb").exists()
    assert not Path("/tmp/escape_dir").exists()


def test_sandbox_hides_the_catalog_and_other_scopes(store: ScratchStore, pad: Scratchpad, pods_handle: str) -> None:
    other = store.scratchpad("run-other", "mallory")
    secret = other.intercept([{"secret": "mallory's"}] * 3000, tool="secret_tool")
    other.scratch_write("mallory-note", "hidden")
    for query in [
        "SELECT * FROM scratch_entries",
        "SELECT * FROM runs",
        "SELECT * FROM agents",
        f"SELECT * FROM {secret.handle}",
    ]:
        res = pad.call_tool("sql", {"query": query})
        assert not res.ok and res.error["error"] == "sql_error", query
    relations = (
        "SELECT DISTINCT table_name FROM duckdb_columns() "
        "WHERE NOT internal AND database_name = 'memory' AND table_name <> 'scratch_notes'"
    )
    views = pad.call_tool("sql", {"query": relations})
    assert views.ok and views.data == []  # a view exists only for the handles a query names
    named = pad.call_tool("sql", {"query": f"{relations} AND EXISTS (SELECT 1 FROM {pods_handle})"})
    assert sorted(v["table_name"] for v in named.data) == sorted([pods_handle, "items"])  # h and h.items
    databases = "SELECT DISTINCT database_name FROM duckdb_schemas() WHERE database_name NOT IN ('system', 'temp')"
    dbs = pad.call_tool("sql", {"query": databases})
    assert [d["database_name"] for d in dbs.data] == ["memory"]  # (no catalog attached, no other body)
    notes = pad.call_tool("sql", {"query": "SELECT count(*) AS n FROM scratch_notes"})
    assert notes.data == [{"n": 0}]
    # and the other agent's body path cannot be read even when guessed
    body = store.reader(store.get_entry(other.scope, "handle", secret.handle)).body_path
    res = pad.call_tool("sql", {"query": f"SELECT * FROM read_json('{body}')"})
    assert res.error["error"] == "sql_forbidden"


def test_one_agent_cannot_see_anothers_handle_through_any_tool(store: ScratchStore, pad: Scratchpad) -> None:
    other = store.scratchpad("run-other", "mallory")
    h = other.intercept("secret line\n" * 3000, tool="secret").handle
    calls = {
        "head": {},
        "tail": {},
        "slice": {"start": 1, "end": 2},
        "grep": {"pattern": "secret"},
        "read_handle": {"start": 0, "end": 10},
        "read": {},
        "schema": {},
        "item_schema": {"path": "$"},
        "get_in": {"path": "$"},
        "iterate_over": {"path": "$", "fields": "x"},
        "scratch_delete": {},
    }
    for tool, args in calls.items():
        res = pad.call_tool(tool, {"handle": h, **args})
        assert res.error["error"] == "unknown_handle", tool
    assert other.call_tool("head", {"handle": h, "lines": 1}).ok  # still there for its owner
    listing = pad.call_tool("scratch_list", {})
    assert h not in listing.text


def test_writes_are_refused_before_they_run(pad: Scratchpad, pods_handle: str) -> None:
    for query in ("CREATE TABLE t AS SELECT 1 AS x", f"DROP VIEW {pods_handle}", f"DROP TABLE {pods_handle}"):
        res = pad.call_tool("sql", {"query": query})
        assert not res.ok and res.error["error"] == "sql_not_read_only", query
        assert "is of type View" not in res.text and "SELECT" in res.error["message"]
    assert pad.call_tool("sql", {"query": "SELECT * FROM t"}).error["error"] == "sql_error"
    assert pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {pods_handle}"}).data == [{"n": 1}]


def test_bad_sql_is_a_result_with_suggestions(pad: Scratchpad, pods_handle: str) -> None:
    res = pad.call_tool("sql", {"query": "SELEC nonsense"})
    assert res.error["error"] == "sql_error" and res.error["relations"] == [
        pods_handle,
        f"{pods_handle}.items",
        "scratch_notes",
    ]
    assert res.error["suggestions"][0]["arguments"]["query"] == f"DESCRIBE {pods_handle}"
    assert pad.call_tool("sql", {"query": ""}).error["error"] == "invalid_argument"


def test_sql_meta_says_when_rows_were_cut(pad: Scratchpad) -> None:
    res = pad.call_tool("sql", {"query": "SELECT * FROM range(300)", "max_rows": 100})
    assert res.meta == {
        "columns": ["range"], "rows": 100, "truncated": True, "total_rows": 300, "max_rows": 100, "inferred_now": []
    }  # fmt: skip
    assert pad.call_tool("sql", {"query": "SELECT 1 AS one"}).meta["truncated"] is False


def test_duplicate_and_empty_columns_survive(pad: Scratchpad) -> None:
    res = pad.call_tool("sql", {"query": "SELECT 1 AS a, 2 AS a, 3 AS a_2"})
    assert res.data == [{"a": 1, "a_3": 2, "a_2": 3}] or res.data == [{"a": 1, "a_2": 2, "a_2_2": 3}]
    assert len(res.data[0]) == 3 and res.meta["columns"] == list(res.data[0])
    empty = pad.call_tool("sql", {"query": "SELECT 1 AS x, 'y' AS y WHERE false"})
    assert empty.data == [] and empty.meta["columns"] == ["x", "y"]


@pytest.mark.parametrize(
    "doc, relation, key",
    [
        ({"": 1, "rows": [{"id": i, "pad": "x" * 40} for i in range(3000)]}, "{h}.rows", '$[""]'),
        ([{"": i, "id": i, "pad": "x" * 40} for i in range(3000)], "{h}", '$[0][""]'),
        ({"data": {"": 0, "items": [{"": i, "id": i, "m": {"": 1}} for i in range(3000)]}}, "{h}.data__items",
         '$.data.items[0].m[""]'),
    ],
)
def test_a_key_no_column_can_be_named_leaves_the_relations_the_stub_names(pad: Scratchpad, doc: object,
                                                                        relation: str, key: str) -> None:
    # a key "" made DuckDB read the records as one MAP column: h.rows "does not exist" (the stub
    # named it, the error listed it), and the only suggestion listed it again
    r = pad.intercept(json.dumps(doc), tool="t")
    res = pad.call_tool("sql", {"query": f"SELECT count(*) AS n, max(id) AS top FROM {relation.format(h=r.handle)}"})
    assert res.ok and res.data == [{"n": 3000, "top": 2999}], res.text
    assert pad.call_tool("get_in", {"handle": r.handle, "path": key}).ok  # (the key itself: by path)


def test_json_duckdb_cannot_parse_raw_falls_back_to_the_body(pad: Scratchpad) -> None:
    text = "[" + ", ".join(f'{{"a": NaN, "b": {i}}}' for i in range(3000)) + "]"  # Python reads NaN
    r = pad.intercept(text, tool="t", force=True)
    assert pad.entry(r.handle).format == "json"
    res = pad.call_tool("sql", {"query": f"SELECT count(*) AS n, sum(b) AS s FROM {r.handle}"})
    assert res.ok, res.error
    assert res.data == [{"n": 3000, "s": sum(range(3000))}]


def test_second_query_reuses_the_inferred_columns(pad: Scratchpad, monkeypatch: pytest.MonkeyPatch) -> None:
    r = pad.intercept([{"k": i} for i in range(3000)], tool="t")
    first = pad.call_tool("sql", {"query": f"SELECT max(k) AS m FROM {r.handle}"})
    assert first.data == [{"m": 2999}] and first.meta["inferred_now"] == [r.handle]
    again = pad.call_tool("sql", {"query": f"SELECT min(k) AS m FROM {r.handle}"})
    assert again.data == [{"m": 0}] and again.meta["inferred_now"] == []  # the worker kept the columns


def test_an_array_of_records_is_a_relation_of_its_own(pad: Scratchpad, pods_handle: str) -> None:
    h = pods_handle
    assert pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {h}"}).data == [{"n": 1}]  # the document
    rows = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {h}.items"})
    assert rows.ok and rows.data[0]["n"] == len(pad.get(h)["items"])
    nested = pad.intercept({"data": {"results": [{"x": i} for i in range(3000)]}}, tool="api").handle
    total = pad.call_tool("sql", {"query": f"SELECT sum(x) AS s FROM {nested}.data__results"})
    assert total.ok and total.data == [{"s": sum(range(3000))}]
    stub = pad.stub(h)
    assert [r["name"] for r in stub["relations"]] == [h, f"{h}.items"]
    assert f"sql over {h}.items" in pad.intercept(pad.get(h), tool="k8s_list_pods", server="k8s").content
    bad = pad.call_tool("sql", {"query": f"SELECT * FROM {h}.nope"})
    assert not bad.ok and h in bad.text


def test_json_is_loaded_into_duckdb_tables_once_and_kept_beside_the_body(pad: Scratchpad) -> None:
    from jupyter_scratchpad.explore import _sqlworker
    from jupyter_scratchpad.explore._sqlviews import TABLES_FILE

    rows = [{"id": i, "kind": "a" if i % 2 else "b", "nested": {"v": i}} for i in range(3000)]
    h = pad.spill({"count": 3000, "items": rows}, tool="list_things").handle
    raw, _body = pad.store.body_paths(pad.entry(h))
    tables = raw.parent / TABLES_FILE
    assert not tables.exists()
    first = pad.call_tool("sql", {"query": f"SELECT count(*) AS n, sum(nested.v) AS s FROM {h}.items"})
    assert first.data == [{"n": 3000, "s": sum(range(3000))}] and first.meta["inferred_now"] == [h]
    assert tables.exists()
    built = tables.stat().st_mtime_ns
    _sqlworker.shutdown()  # a new worker (another process) finds the tables and infers nothing
    again = pad.call_tool("sql", {"query": f"SELECT kind, count(*) AS n FROM {h}.items GROUP BY ALL ORDER BY kind"})
    assert again.data == [{"kind": "a", "n": 1500}, {"kind": "b", "n": 1500}] and again.meta["inferred_now"] == []
    assert tables.stat().st_mtime_ns == built
    doc = pad.call_tool("sql", {"query": f"SELECT count FROM {h}"})
    assert doc.data == [{"count": 3000}]
    # the tables are the agent's data, read-only, and their host path never shows
    dbs = pad.call_tool("sql", {"query": f"SELECT database, name FROM (SHOW ALL TABLES), (SELECT 1 FROM {h} LIMIT 1) x"})
    assert dbs.ok and str(raw.parent) not in dbs.text and "scratch_tables_0" in dbs.text
    paths = pad.call_tool("sql", {"query": "SELECT * FROM duckdb_databases()"})
    assert paths.error["error"] == "sql_forbidden" and str(raw.parent) not in paths.text
    write = pad.call_tool("sql", {"query": f'INSERT INTO scratch_tables_0.main."whole-doc" SELECT * FROM {h}'})
    assert write.error["error"] == "sql_not_read_only"
    assert pad.delete(h)


def test_an_array_under_the_key_doc_is_its_own_relation(pad: Scratchpad) -> None:
    # the tables file once named the document's table "doc": h.doc then read the document's one
    # row instead of the array's rows (a right-looking, wrong answer)
    rows = [{"id": i, "name": f"n{i}"} for i in range(3000)]
    h = pad.spill({"kind": "List", "doc": rows}, tool="list_docs").handle
    items = pad.call_tool("sql", {"query": f"SELECT count(*) AS n, max(id) AS top FROM {h}.doc"})
    assert items.data == [{"n": 3000, "top": 2999}]
    whole = pad.call_tool("sql", {"query": f"SELECT kind, len(doc) AS n FROM {h}"})
    assert whole.data == [{"kind": "List", "n": 3000}]


def test_a_failed_table_build_is_retried_later_not_never(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a build that fails (out of memory while other connections held it, say) leaves the handle on
    # views over read_json; the worker tries again after a back-off instead of for its whole life
    import duckdb

    from jupyter_scratchpad.explore import _sqlviews

    body = tmp_path / "body"
    body.write_text(json.dumps({"items": [{"a": i, "b": str(i)} for i in range(50)]}))
    rel = {
        "name": "h", "format": "json", "body_id": "b1", "body_path": str(body), "raw_path": str(body),
        "body_bytes": body.stat().st_size, "arrays": [["items", ["items"]]],
    }  # fmt: skip
    now = [1000.0]
    monkeypatch.setattr(_sqlviews, "_clock", lambda: now[0])
    real_connect = duckdb.connect
    attempts: list[str] = []

    def failing_connect(*args: object, **kwargs: object) -> object:
        attempts.append("build")
        raise duckdb.OutOfMemoryException("could not allocate")

    inferred: dict[str, object] = {}
    monkeypatch.setattr(duckdb, "connect", failing_connect)
    assert _sqlviews._materialise(rel, inferred, []) is None
    assert _sqlviews._materialise(rel, inferred, []) is None  # within the back-off: not tried again
    assert attempts == ["build"]
    now[0] += _sqlviews.TABLES_RETRY_S + 1
    assert _sqlviews._materialise(rel, inferred, []) is None  # tried again, failed again: a longer wait
    assert attempts == ["build", "build"]
    now[0] += _sqlviews.TABLES_RETRY_S + 1
    assert _sqlviews._materialise(rel, inferred, []) is None and len(attempts) == 2
    monkeypatch.setattr(duckdb, "connect", real_connect)  # the pressure is gone
    now[0] += 2 * _sqlviews.TABLES_RETRY_S
    built = _sqlviews._materialise(rel, inferred, [])
    assert built is not None and built.exists()
    with duckdb.connect(str(built), read_only=True) as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (50,)


def test_a_handle_duckdb_cannot_read_is_answered_with_the_tools_that_can(pad: Scratchpad) -> None:
    # DuckDB cannot read a document nested 100,000 deep (nor, in the sandbox's memory, a ~200 MB
    # JSON document that is not one big array): the error says so and its suggestions are the JSON
    # tools, which run
    deep = pad.spill('{"deep": ' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}", tool="deep").handle
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {deep}"})
    assert not res.ok and "DuckDB cannot read this handle" in res.error["message"]
    instead = [s for s in res.error["suggestions"] if s["arguments"].get("handle") == deep]
    assert [s["tool"] for s in instead] == ["schema"]
    assert pad.call_tool(instead[0]["tool"], instead[0]["arguments"]).ok
    # a document with records: their keys and values (the worker's reply, as it comes)
    from jupyter_scratchpad.explore import _sql
    from jupyter_scratchpad.explore._base import ToolContext, ToolError

    pods = pad.spill({"kind": "PodList", "items": [{"name": f"p{i}", "n": i} for i in range(50)]}, tool="k").handle
    with pytest.raises(ToolError) as caught:
        _sql._raise_query_error(
            ToolContext(pad, "sql", 10_000), {"error": "sql_error", "message": "m", "unreadable": [pods]}, [pods]
        )
    first = caught.value.suggestions[0]
    assert (first["tool"], first["arguments"]) == ("item_schema", {"handle": pods, "path": "$.items"})
    assert pad.call_tool(first["tool"], first["arguments"]).ok


def test_a_document_too_large_to_unnest_points_at_its_array_relation(pad: Scratchpad) -> None:
    # unnest(items) over a ~250 MB PodList builds the whole list in the sandbox's memory; h.items
    # has the same rows without it. The out-of-memory error says so, and its first suggestion runs
    from jupyter_scratchpad.explore import _sql
    from jupyter_scratchpad.explore._base import ToolContext, ToolError

    pods = pad.spill({"kind": "PodList", "items": [{"name": f"p{i}", "n": i} for i in range(50)]}, tool="k").handle
    oom = {"error": "sql_out_of_memory", "message": "Out of Memory Error: could not allocate block"}
    ctx = ToolContext(pad, "sql", 10_000)
    with pytest.raises(ToolError) as caught:
        _sql._raise_query_error(ctx, oom, [pods], f"SELECT i.name FROM (SELECT unnest(items) AS i FROM {pods})")
    assert f"its rows are the relation {pods}.items (a row per record of $.items)" in caught.value.message
    first = caught.value.suggestions[0]
    assert first["arguments"] == {"query": f"DESCRIBE {pods}.items"}
    assert pad.call_tool(first["tool"], first["arguments"]).ok
    with pytest.raises(ToolError) as caught:  # the query used the relation already: nothing to point at
        _sql._raise_query_error(ctx, oom, [pods], f"SELECT * FROM {pods}.items ORDER BY name")
    assert "its rows are" not in caught.value.message
    # (its columns, as for any error: those of the relation the query reads, once; no pointer)
    assert [s["arguments"] for s in caught.value.suggestions].count({"query": f"DESCRIBE {pods}.items"}) == 1


def test_a_load_longer_than_the_call_goes_on_and_the_next_call_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the first query of a large handle loads its tables, which may take longer than a call's time
    # (a 1 GiB document: ~15 s, the default limit is 10 s). The worker waits for the load until
    # the call's time less a reserve for the query, then answers sql_loading (suggestions that
    # run) while the load goes on in the worker; a later call finds the tables and answers
    from jupyter_scratchpad.explore import _sql
    from jupyter_scratchpad.explore._sqlviews import TABLES_FILE

    # 1.5 s calls leave no time for the load (the call's time less the 2 s reserve) and the worker
    # waits the floor, here none: a 16 MB handle streamed by segment loads in well under the
    # default floor of 0.2 s on a fast machine, which made this test a race
    monkeypatch.setattr(_sql, "MIN_BUILD_WAIT_S", 0.0)
    store = ScratchStore(tmp_path / "s", sweep_interval_s=None)
    try:
        pad = store.scratchpad(run_id="r", agent_id="a", tool_timeout_s=1.5, context_window=1 << 30)
        items = [{"name": f"p{i}", "phase": ["Running", "Pending"][i % 2], "pad": "x" * 200} for i in range(60_000)]
        h = pad.spill({"kind": "PodList", "items": items}, tool="k").handle  # ~16 MB
        assert pad.wait_for_counts(60)
        query = {"query": f"SELECT phase, count(*) AS n FROM {h}.items GROUP BY 1 ORDER BY 1"}
        first = pad.call_tool("sql", query)
        assert not first.ok and first.error["error"] == "sql_loading", first.text
        assert f"{h} (" in first.error["message"] and "Ask again in a few seconds" in first.error["message"]
        tools = [s["tool"] for s in first.error["suggestions"]]
        assert tools == ["item_schema", "scratch_list"]  # no SQL: it would wait for the same load
        assert all(pad.call_tool(s["tool"], s["arguments"]).ok for s in first.error["suggestions"])
        assert first.tokens < 400  # short, and charged like any error
        answered = None
        for _ in range(120):
            res = pad.call_tool("sql", query)
            if res.ok:
                answered = res
                break
            assert res.error["error"] == "sql_loading", res.text
        assert answered is not None
        assert answered.data == [{"phase": "Pending", "n": 30_000}, {"phase": "Running", "n": 30_000}]
        directory = store.reader(pad.entry(h)).directory
        assert (directory / TABLES_FILE).exists()
        assert not [p for p in directory.iterdir() if p.name.startswith(f".{TABLES_FILE}")]  # no build files left
    finally:
        store.close()


def test_build_files_of_a_killed_process_are_removed_by_the_next_build(tmp_path: Path) -> None:
    # a worker killed at a call's time limit mid-build leaves its build file; the next build of
    # that body removes build files of this host's processes that are gone, not of live ones
    import os
    import socket
    import subprocess
    import sys

    from jupyter_scratchpad.explore import _sqlviews

    body = tmp_path / "body"
    body.write_text(json.dumps({"items": [{"a": i} for i in range(50)]}))
    rel = {
        "name": "h", "format": "json", "body_id": "b2", "body_path": str(body), "raw_path": str(body),
        "body_bytes": body.stat().st_size, "arrays": [["items", ["items"]]],
    }  # fmt: skip
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    prefix = f".{_sqlviews.TABLES_FILE}.{socket.gethostname()}"
    dead = tmp_path / f"{prefix}.{int(gone.stdout)}.0123abcd"
    dead_wal = tmp_path / f"{prefix}.{int(gone.stdout)}.0123abcd.wal"
    alive = tmp_path / f"{prefix}.{os.getpid()}.4567ef01"
    for p in (dead, dead_wal, alive):
        p.write_bytes(b"half a build")
    assert _sqlviews._materialise(rel, {}, []) is not None
    assert not dead.exists() and not dead_wal.exists() and alive.exists()


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_the_byte_range_copy_of_a_streamed_load_works_without_copy_file_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_copy: bool
) -> None:
    # the array's bytes are copied out of the raw file by the kernel (copy_file_range); where the
    # OS or the file systems do not offer it, by reads and writes, with the same bytes
    import os

    from jupyter_scratchpad.explore import _sqlviews

    if not kernel_copy:
        monkeypatch.delattr(os, "copy_file_range", raising=False)
    src = tmp_path / "raw"
    data = bytes(range(256)) * 40_000  # 10 MB: several reads of 4 MB
    src.write_bytes(data)
    dst = tmp_path / "out"
    _sqlviews._copy_pieces(str(src), dst, [b"<", (1_000, len(data) - 7), b">"])
    assert dst.read_bytes() == b"<" + data[1_000:-7] + b">"


def test_a_worker_past_its_retire_mark_is_replaced_after_answering(
    pad: Scratchpad, pods_handle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a worker's allocators keep the address space its jobs freed; past the mark (2/3 of its cap)
    # it answers, exits, and a fresh one (started at once) takes the next query
    from jupyter_scratchpad.explore import _sqlworker

    _sqlworker.shutdown()
    monkeypatch.setattr(_sqlworker, "RETIRE_VM_BYTES", 1)  # every worker is past it after one job
    try:
        pids = []
        for _ in range(3):
            res = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {pods_handle}.items"})
            assert res.ok and res.data[0]["n"] > 0, res.text
            worker = _sqlworker._WORKER
            assert worker is not None
            pids.append(worker.proc.pid)
        assert len(set(pids)) == 3  # each answered by a fresh worker, none lost a query
    finally:
        _sqlworker.shutdown()


@pytest.mark.parametrize("written", ['"{h}.items"', "{h}_items", "{h}.item", "items", "nothing_like_it"])
def test_a_relation_name_a_little_off_comes_back_as_the_query_that_runs(pad: Scratchpad, written: str) -> None:
    rows = [{"id": i, "kind": "a" if i % 2 else "b"} for i in range(3000)]
    h = pad.spill({"count": 3000, "items": rows}, tool="list_things").handle
    res = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {written.format(h=h)} WHERE kind = 'a'"})
    assert res.error is not None and res.error["error"] == "sql_error"
    meant = f"SELECT count(*) AS n FROM {h}.items WHERE kind = 'a'"
    queries = [s["arguments"].get("query") for s in res.error["suggestions"]]
    if written == "nothing_like_it":  # no guess: the columns and the relations
        assert meant not in queries and queries[0] == f"DESCRIBE {h}"
        return
    assert queries[0] == meant
    assert pad.call_tool("sql", {"query": meant}).data == [{"n": 1500}]


@pytest.mark.parametrize("written", ['"{h}.items"', "{h}_items", "{h}.item", "items", "nothing_like_it"])
def test_a_persons_query_a_little_off_gets_the_same_corrected_query(pad: Scratchpad, written: str) -> None:
    # sql_df (%scratch sql, the explorer) words a failed query as the agent's sql tool does
    from jupyter_scratchpad.errors import InvalidArgumentError

    rows = [{"id": i, "kind": "a" if i % 2 else "b"} for i in range(3000)]
    h = pad.spill({"count": 3000, "items": rows}, tool="list_things").handle
    with pytest.raises(InvalidArgumentError) as caught:
        pad.sql_df(f"SELECT count(*) AS n FROM {written.format(h=h)} WHERE kind = 'a'")
    err = caught.value
    assert err.code == "sql_error" and f"(relations: {h}, {h}.items, scratch_notes)" in str(err)
    assert err.context["relations"] == [h, f"{h}.items", "scratch_notes"]  # the array's relation too
    meant = f"SELECT count(*) AS n FROM {h}.items WHERE kind = 'a'"
    queries = [s["arguments"]["query"] for s in err.context["suggestions"]]
    if written == "nothing_like_it":
        assert meant not in queries and queries == [f"DESCRIBE {h}"]
        return
    assert queries[0] == meant
    assert pad.sql_df(queries[0])["n"].tolist() == [1500]


def test_a_missing_column_points_at_the_columns_of_the_relation_read(pad: Scratchpad) -> None:
    h = pad.spill({"items": [{"meta": {"name": f"n{i}"}} for i in range(3000)]}, tool="list_things").handle
    res = pad.call_tool("sql", {"query": f"SELECT name FROM {h}.items LIMIT 2"})
    assert res.error is not None
    assert res.error["suggestions"][0]["arguments"]["query"] == f"DESCRIBE {h}.items"  # not the document's
    # DuckDB's own close match is kept; the query it echoes back with a caret is not
    misspelt = pad.call_tool("sql", {"query": f"SELECT meat FROM {h}.items LIMIT 2"})
    assert misspelt.error is not None and 'Candidate bindings: "meta"' in misspelt.error["message"]
    assert "LINE 1" not in misspelt.error["message"] and "^" not in misspelt.error["message"]
    with pytest.raises(Exception, match='Candidate bindings: "meta"'):
        pad.sql_df(f"SELECT meat FROM {h}.items LIMIT 2")
    assert "meta" in pad.call_tool("sql", res.error["suggestions"][0]["arguments"]).text


def test_records_duckdb_types_as_a_map_still_have_their_relation(pad: Scratchpad) -> None:
    # a key "" made DuckDB type the records as a MAP: the stub named h.items, and the query said
    # 'schema "h" does not exist' with scratch_list() as the only way on
    res = pad.intercept({"items": [{"": 2, "m": "y" * 30, "i": i} for i in range(3000)]}, tool="odd")
    assert res.spilled and f"{res.handle}.items" in str(res.content)
    count = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {res.handle}.items"})
    assert count.ok and count.data == [{"n": 3000}], count.text
    described = pad.call_tool("sql", {"query": f"DESCRIBE {res.handle}.items"})
    # a column per key that can be named (it was one column "item", each record whole)
    assert described.ok and [r["column_name"] for r in described.data] == ["m", "i"], described.text


@pytest.mark.parametrize("size", ["small", "streamed"])
def test_objects_whose_keys_differ_only_in_case_are_json_columns(pad: Scratchpad, size: str) -> None:
    # DuckDB's names are case-insensitive: labels "App" on one pod and "app" on another (or headers
    # Content-Type and content-type in one response) were "Duplicate name" in read_json, and the
    # whole handle was left out of SQL ("DuckDB cannot read this handle")
    n = 3000 if size == "small" else 40_000
    items = [
        {
            "name": f"pod-{i}",
            "labels": {"App": "web"} if i % 2 else {"app": "db", "tier": "back"},
            "headers": {"Content-Type": "text/plain", "content-type": "text/html"},
            "pad": "x" * (200 if size == "streamed" else 0),
        }
        for i in range(n)
    ]
    h = pad.intercept({"kind": "PodList", "items": items}, tool="k8s").handle
    assert h is not None
    if size == "streamed":
        assert pad.entry(h).size_bytes >= 8 << 20
    res = pad.call_tool(
        "sql",
        {
            "query": f"SELECT count(*) AS n, count(labels->>'App') AS app_upper, count(labels->>'app') AS app_lower, "
            f"min(headers->>'content-type') AS lower_type FROM {h}.items"
        },
    )
    assert res.ok, res.text
    assert res.data == [{"n": n, "app_upper": n // 2, "app_lower": n // 2, "lower_type": "text/html"}]
    names = pad.call_tool("sql", {"query": f"SELECT name FROM {h}.items ORDER BY name LIMIT 1"})
    assert names.ok and names.data == [{"name": "pod-0"}], names.text
    doc = pad.call_tool("sql", {"query": f"SELECT kind, len(items) AS n FROM {h}"})
    assert doc.ok and doc.data == [{"kind": "PodList", "n": n}], doc.text


def test_jsonl_records_with_case_twins_nested_are_rows(pad: Scratchpad) -> None:
    lines = "\n".join(json.dumps({"id": i, "h": {"X-Id": str(i), "x-id": "low"}}) for i in range(2000))
    h = pad.intercept(lines, tool="log").handle
    assert h is not None and pad.entry(h).format == "jsonl"
    res = pad.call_tool("sql", {"query": f"SELECT max(id) AS m, min(h->>'x-id') AS low FROM {h}"})
    assert res.ok and res.data == [{"m": 1999, "low": "low"}], res.text



def test_ctrl_c_stops_a_persons_query_as_an_interrupt() -> None:
    # DuckDB answers SIGINT with RuntimeError('Query interrupted'), which %scratch called a bug of
    # ours; in a process of its own (a SIGINT under pytest is pytest's)
    import subprocess
    import sys

    script = """
import os, signal, threading, time
from jupyter_scratchpad import ScratchStore
stopped = threading.Event()
def press():  # a person presses again when the first Ctrl-C lands before the query runs
    while not stopped.wait(0.5):
        os.kill(os.getpid(), signal.SIGINT)
with ScratchStore() as store:
    pad = store.scratchpad(run_id="r", agent_id="a")
    threading.Thread(target=press, daemon=True).start()
    try:
        pad.sql_df("SELECT count(*) FROM range(100000000000000) a")
    except KeyboardInterrupt:
        stopped.set()
        time.sleep(0.6)  # (a press already on its way)
        print("interrupted", pad.sql_df("SELECT 1 AS one")["one"].tolist())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "interrupted [1]", (done.stdout, done.stderr[-2000:])


def test_an_error_not_about_names_lists_no_relations(pad: Scratchpad) -> None:
    # with 400 handles, an out-of-memory error carried 800 relation names and DESCRIBE of the
    # first handle (nothing to do with the query): ~450 of its 549 tokens
    handles = [pad.spill({"items": [{"a": j, "i": i} for j in range(300)]}, tool=f"t{i}").handle for i in range(30)]
    oom = pad.call_tool("sql", {"query": "SELECT repeat('x', 100000000) AS x FROM range(201)"})
    assert oom.error["error"] == "sql_out_of_memory" and "relations" not in oom.error
    assert [s["tool"] for s in oom.error["suggestions"]] == ["scratch_list"]
    typo = pad.call_tool("sql", {"query": f"SELECT a FROM {handles[3]}.items WHERE"})
    assert typo.error["error"] == "sql_error" and "relations" not in typo.error
    assert typo.error["suggestions"][0]["arguments"] == {"query": f"DESCRIBE {handles[3]}.items"}
    missing = pad.call_tool("sql", {"query": "SELECT * FROM nosuch"})
    assert len(missing.error["relations"]) == 21 and missing.error["relations_total"] == 61
    # DuckDB's advice to SET a setting is not passed on: SET is refused here
    deep = pad.call_tool("sql", {"query": "SELECT " + "(" * 3000 + "1" + ")" * 3000})
    assert "SET" not in deep.error["message"] and "settings are fixed" in deep.error["message"]


def test_a_document_that_repeats_a_key_is_queried_as_the_json_tools_read_it(pad: Scratchpad) -> None:
    # DuckDB's reader refuses an object with a repeated key: every query of h failed ("JSON
    # transform error ... has duplicate key"); JSON allows it and the JSON tools take the last value
    h = pad.spill('{"a": 1, "a": 2, "items": [' + ",".join(f'{{"x": {i}}}' for i in range(300)) + "]}", tool="d").handle
    assert pad.call_tool("get_in", {"handle": h, "path": "$.a"}).data == 2
    res = pad.call_tool("sql", {"query": f"SELECT a, len(items) AS n FROM {h}"})
    assert res.ok and res.data == [{"a": 2, "n": 300}], res.text
    rows = '[' + ",".join(f'{{"x": 0, "x": {i}}}' for i in range(300)) + "]"
    h2 = pad.spill(rows, tool="e").handle
    assert pad.call_tool("sql", {"query": f"SELECT sum(x) AS s FROM {h2}"}).data == [{"s": sum(range(300))}]


def test_show_tables_says_the_handles_are_relations_too(pad: Scratchpad, pods_handle: str) -> None:
    # SHOW TABLES listed scratch_notes alone: a model concluded there was nothing to query
    res = pad.call_tool("sql", {"query": "SHOW TABLES"})
    assert res.ok and res.data == [{"name": "scratch_notes"}]
    assert "1 handle: each is a relation, made when a query names it; scratch_list lists them" in res.text
    named = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {pods_handle}"})
    assert "scratch_list lists them" not in named.text


@pytest.mark.parametrize(
    "body",
    [
        '{"id": 1, "ID": "A"}\n{"id": 2}\n',  # JSONL records
        '[{"id": 1, "ID": "A"}, {"id": 2}]',  # a top-level array of records
        '{"id": 1, "ID": "A"}',  # one document
    ],
)
def test_records_whose_own_keys_differ_only_in_case_keep_every_value(pad: Scratchpad, body: str) -> None:
    # DuckDB 2 renames the second key ("ID_1") instead of refusing it; the columns pinned from that
    # named a key no record has, and "A" read as NULL in every row
    h = pad.spill(body, tool="t").handle
    res = pad.call_tool("sql", {"query": f"SELECT item->>'ID' AS upper, item->>'id' AS lower FROM {h}"})
    assert res.ok, res.text
    assert res.data[0] == {"upper": "A", "lower": "1"}, res.text


def test_a_key_no_column_can_name_beside_case_twins_leaves_the_handle_readable(pad: Scratchpad) -> None:
    h = pad.spill('{"a": {"": 1, "b": 2}, "arr": [{"k": 1, "K": 2}, {"k": 3}]}', tool="q").handle
    doc = pad.call_tool("sql", {"query": f"SELECT a->>'b' AS b FROM {h}"})
    assert doc.ok and doc.data == [{"b": "2"}], doc.text
    rows = pad.call_tool("sql", {"query": f"SELECT item->>'K' AS k FROM {h}.arr ORDER BY k NULLS LAST"})
    assert rows.ok and rows.data == [{"k": "2"}, {"k": None}], rows.text


def test_the_text_null_is_told_apart_from_sql_null(pad: Scratchpad) -> None:
    res = pad.call_tool("sql", {"query": "SELECT NULL AS a, 'NULL' AS b, 'x\rz' AS c"})
    assert res.ok and res.text.splitlines()[2] == '| NULL | "NULL" | x\\rz |', res.text
    assert res.data == [{"a": None, "b": "NULL", "c": "x\rz"}]


def test_crlf_lines_of_a_text_handle_compare_as_their_text(pad: Scratchpad) -> None:
    h = pad.spill("alpha\r\nbeta\r\n" + "gamma\n" * 2000, tool="t").handle
    res = pad.call_tool("sql", {"query": f"SELECT line_no, length(line) AS n FROM {h} WHERE line IN ('alpha', 'beta')"})
    assert res.ok and res.data == [{"line_no": 1, "n": 5}, {"line_no": 2, "n": 4}], res.text


def test_integers_beyond_64_bits_are_said_to_be_rounded_in_sql(pad: Scratchpad) -> None:
    # DuckDB reads an integer past UBIGINT's range as DOUBLE: 12345678901234567890123 came back as
    # 1.2345678901234568e+22 with no word of it; get_in has the exact value
    rows = [{"id": 12345678901234567890123 + i, "n": -9223372036854775809, "ok": i} for i in range(400)]
    h = pad.spill({"recs": rows}, tool="w").handle
    res = pad.call_tool("sql", {"query": f"SELECT id FROM {h}.recs LIMIT 1"})
    assert res.ok and f"{h} holds integers beyond 64 bits" in res.text, res.text
    exact = pad.call_tool("get_in", {"handle": h, "path": "$.recs[0].id"})
    assert exact.data == 12345678901234567890123
    plain = pad.spill({"recs": [{"id": 18446744073709551615, "ns": 1733443200000000000 + i} for i in range(400)]}, tool="p")
    fine = pad.call_tool("sql", {"query": f"SELECT id, ns FROM {plain.handle}.recs LIMIT 1"})
    assert fine.ok and "64 bits" not in fine.text and fine.data == [{"id": 18446744073709551615, "ns": 1733443200000000000}]


def test_a_result_too_wide_is_offered_its_columns(pad: Scratchpad) -> None:
    # 3 rows of 3,000 columns: the only offer was count(*)
    h = pad.spill([{f"col_{j}": "v" * 20 for j in range(3000)} for _ in range(3)], tool="w").handle
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {h}"})
    assert res.error["error"] == "sql_too_large", res.text
    first = res.error["suggestions"][0]
    assert first["arguments"] == {"query": f"DESCRIBE SELECT * FROM {h}"}
    described = pad.call_tool("sql", first["arguments"])
    assert described.ok and described.data[0]["column_name"] == "col_0"
