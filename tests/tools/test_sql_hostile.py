"""Hostile SQL (issue 12): refused or bounded, nothing on disk changed, memory capped, on time.

Every query here is one a model could send. Each test asserts the call fails (or is bounded) the
way the README says, that no body changed (hashes before and after), and that the process stays
healthy (the next query works).
"""

from __future__ import annotations

import hashlib
import resource
import time
from pathlib import Path

import pytest

from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.errors import InvalidArgumentError


@pytest.fixture
def store(backend_store: ScratchStore) -> ScratchStore:
    """The sandbox holds on both backends; a shared store's agent SQL never reaches PostgreSQL."""
    return backend_store


def body_hashes(store: ScratchStore) -> dict[str, str]:
    root = Path(store.path) / "bodies"
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def body_path(pad: Scratchpad, handle: str) -> str:
    return str(pad.store.reader(pad.store.get_entry(pad.scope, "handle", handle)).body_path)


WRITES = [
    "COPY (SELECT repeat('x', 1000) FROM range(300000)) TO '{body}' (FORMAT csv, USE_TMP_FILE false)",
    "COPY (SELECT 1) TO '{body}' (FORMAT csv, OVERWRITE true)",
    "COPY {h} TO '{body}.copy'",
    "EXPORT DATABASE '{body}.dir'",
    "ATTACH '{body}.db' AS x",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "PRAGMA enable_profiling",
    "CALL pragma_version()",
    "CHECKPOINT",
    "CREATE TABLE t AS SELECT 1",
    "CREATE MACRO m(x) AS x",
    "DROP VIEW {h}",
    "DROP TABLE {h}",
    "INSERT INTO scratch_notes VALUES ('k', '1', now())",
    "DELETE FROM scratch_notes",
    "SELECT 1; COPY (SELECT 1) TO '{body}'",
    "SELECT 1; SELECT 2",
    "EXPLAIN ANALYZE COPY (SELECT 1) TO '{body}'",
    "PIVOT {h} ON kind USING count(*)",
    # a query that writes, inside a SELECT: DuckDB types these as SELECT statements (the COPY wrote
    # over the body's raw file; the INSERT put a note in the table another run's query then read)
    "WITH w AS (COPY (SELECT 42 AS b) TO '{body}' (FORMAT csv, USE_TMP_FILE false)) SELECT count(*) FROM {h}",
    "WITH w AS (INSERT INTO scratch_notes VALUES ('k', '1', now()) RETURNING key) SELECT count(*) FROM w",
    "WITH w AS (UPDATE scratch_notes SET key = 'x' RETURNING key) SELECT count(*) FROM w",
    "WITH w AS (DELETE FROM scratch_notes RETURNING key) SELECT count(*) FROM w",
    "SELECT (WITH x AS (INSERT INTO scratch_notes VALUES ('k', '1', now()) RETURNING key) SELECT key FROM x) AS k",
    "SELECT * FROM {h} UNION ALL SELECT * FROM (WITH w AS (DELETE FROM scratch_notes RETURNING *) SELECT * FROM w)",
    "EXPLAIN WITH w AS (COPY (SELECT 1) TO '{body}' (FORMAT csv, USE_TMP_FILE false)) SELECT 1",
    "SUMMARIZE (WITH w AS (COPY (SELECT 1) TO '{body}' (FORMAT csv, USE_TMP_FILE false)) SELECT 1)",
    "UPDATE EXTENSIONS",  # (a statement type the Python enum does not know: it raised ValueError)
]


@pytest.mark.parametrize("template", WRITES)
def test_writes_and_settings_are_refused_before_they_run(pad: Scratchpad, pods_handle: str, template: str) -> None:
    before = body_hashes(pad.store)
    query = template.format(h=pods_handle, body=body_path(pad, pods_handle))
    res = pad.call_tool("sql", {"query": query})
    assert not res.ok and res.error["error"] == "sql_not_read_only", (query, res.text)
    assert "SELECT" in res.error["message"] and len(res.text) < 2048
    assert body_hashes(pad.store) == before
    assert not any(Path(body_path(pad, pods_handle) + ext).exists() for ext in (".copy", ".dir", ".db"))
    assert pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {pods_handle}"}).ok


@pytest.mark.parametrize(
    ("template", "held"),
    [
        (
            "WITH w AS (COPY (SELECT metadata.name FROM {h}.items LIMIT 3) TO '{body}' (FORMAT csv)) SELECT 1",
            "SELECT metadata.name FROM {h}.items LIMIT 3",
        ),
        (
            "WITH w AS (INSERT INTO scratch_notes SELECT metadata.name, 'v', now() FROM {h}.items "
            "WHERE metadata.name = ')' RETURNING key) SELECT * FROM w",
            "SELECT metadata.name, 'v', now() FROM {h}.items WHERE metadata.name = ')'",
        ),
        ("WITH w AS (INSERT INTO t VALUES (1), (2) RETURNING *) SELECT * FROM w", "VALUES (1), (2)"),
    ],
)
def test_a_writing_cte_suggests_the_query_it_holds(pad: Scratchpad, pods_handle: str, template: str, held: str) -> None:
    before = body_hashes(pad.store)
    res = pad.call_tool("sql", {"query": template.format(h=pods_handle, body=body_path(pad, pods_handle))})
    assert not res.ok and res.error["error"] == "sql_not_read_only"
    [s] = res.error["suggestions"]
    assert s["arguments"]["query"] == held.format(h=pods_handle)
    after = body_hashes(pad.store)  # (checking that the suggestion runs may have loaded SQL tables)
    assert {name: after.get(name) for name in before} == before
    ran = pad.call_tool(s["tool"], s["arguments"])
    assert ran.ok, ran.text


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM read_json('{other}')",
    ],
)
def test_reads_outside_the_callers_bodies_are_forbidden(
    store: ScratchStore, pad: Scratchpad, pods_handle: str, query: str
) -> None:
    other = store.scratchpad("run-x", "mallory")
    secret = other.intercept([{"secret": 1}] * 3000, tool="secret").handle
    assert secret is not None
    q = query.format(other=body_path(other, secret))
    res = pad.call_tool("sql", {"query": q})
    assert not res.ok and res.error["error"] in ("sql_forbidden", "sql_error"), res.text
    if "glob" not in q:
        assert res.error["error"] == "sql_forbidden", res.text
    assert str(store.path) not in res.text


def test_explain_and_describe_are_read_only_and_allowed(pad: Scratchpad, pods_handle: str) -> None:
    for query in (
        f"EXPLAIN SELECT * FROM {pods_handle}",
        f"DESCRIBE {pods_handle}",
        f"SUMMARIZE {pods_handle}",
        "VALUES (1), (2)",
        f"FROM {pods_handle} LIMIT 1",
        "WITH a AS (SELECT 1 AS x) SELECT * FROM a",
    ):
        res = pad.call_tool("sql", {"query": query})
        assert res.ok, (query, res.text)


def test_huge_strings_never_reach_this_process(pad: Scratchpad) -> None:
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    res = pad.call_tool("sql", {"query": "SELECT repeat('x', 100000000) AS s FROM range(201)"})
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # refused for memory in the worker, or clipped cells: either way bounded here
    assert (not res.ok and res.error["error"] in ("sql_out_of_memory", "sql_too_large")) or (
        res.ok and all(len(r["s"]) <= 200 for r in res.data)
    ), res.text[:500]
    assert peak_after - peak_before < 200 * 1024, "the agent's process must not hold the strings"
    assert pad.call_tool("sql", {"query": "SELECT 42 AS x"}).data == [{"x": 42}]


def test_huge_row_counts_come_back_capped(pad: Scratchpad) -> None:
    res = pad.call_tool("sql", {"query": "SELECT * FROM range(100000000)", "max_rows": 50})
    assert res.ok and len(res.data) == 50 and res.meta["truncated"] is True


def test_a_runaway_query_is_stopped_at_the_time_limit(store: ScratchStore) -> None:
    pad = store.scratchpad("r-slow", "a", tool_timeout_s=2.0)
    started = time.monotonic()
    res = pad.call_tool(
        "sql", {"query": "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"}
    )
    elapsed = time.monotonic() - started
    assert not res.ok and res.error["error"] == "timeout", res.text
    assert elapsed < 2.0 + 5.0
    assert pad.call_tool("sql", {"query": "SELECT 1 AS one"}).data == [{"one": 1}]  # a new worker answers


def test_a_handle_duckdb_cannot_read_fails_alone(pad: Scratchpad, pods_handle: str) -> None:
    deep = pad.spill('{"a": ' + "[" * 200 + "1" + "]" * 200 + "}", tool="deep").handle
    ok = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {pods_handle}"})
    assert ok.ok and ok.data == [{"n": 1}]
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {deep}"})
    assert not res.ok and deep in res.text
    assert pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {pods_handle}"}).ok


def test_host_paths_never_shown(pad: Scratchpad, pods_handle: str) -> None:
    for query in (
        f"SELECT sql FROM duckdb_views() WHERE NOT internal AND '{pods_handle}' <> ''",
        "SELECT value FROM duckdb_settings() WHERE name = 'allowed_paths'",
    ):
        res = pad.call_tool("sql", {"query": query})
        assert str(pad.store.path) not in res.text and str(pad.store.path) not in str(res.data), query


TEXT_HANDLE_LINES = "\n".join(f"line {i}" for i in range(20_000))


@pytest.mark.parametrize(
    "query",
    [
        "SELECT replace(path, '/', '|') AS p FROM duckdb_databases(), (SELECT 1 FROM {h} LIMIT 1) x",
        "SELECT reverse(path) AS p FROM duckdb_databases() CROSS JOIN (SELECT 1 FROM {t} LIMIT 1)",
        'SELECT upper(path) AS p FROM "DuckDB_Databases"(), (SELECT 1 FROM {h} LIMIT 1) x',
        "SELECT path[1:20] AS a, path[21:90] AS b FROM main.pragma_database_list, (SELECT 1 FROM {h} LIMIT 1) x",
        "SELECT replace(current_setting('allowed_paths')::VARCHAR, '/', '|') AS p FROM (SELECT 1 FROM {h} LIMIT 1)",
        "SELECT replace(value, '/', '|') AS p FROM duckdb_settings(), (SELECT 1 FROM {h} LIMIT 1) x",
        "SELECT replace(sql, '/', '|') AS p FROM duckdb_views(), (SELECT 1 FROM {t} LIMIT 1) x",
        "SELECT * FROM query('SELECT replace(path, ''/'', ''|'') FROM duckdb_databases()'), {h}",
        # the catalog families beyond duckdb_*(): a view's SQL and the settings, under other names
        "SELECT replace(view_definition, '/', '|') AS v FROM information_schema.views -- {t}",
        "SELECT replace(sql, '/', '|') AS v FROM sqlite_master -- {t}",
        "SELECT replace(definition, '/', '|') AS v FROM pg_catalog.pg_views -- {t}",
        "SELECT replace(definition, '/', '|') AS v FROM pg_views -- {t}",
        "SELECT replace(setting::VARCHAR, '/', '|') AS v FROM pg_settings -- {h}",
        "SELECT replace(allowed_paths::VARCHAR, '/', '|') AS s FROM (SHOW allowed_paths) -- {h}",
        "SELECT replace(CAST(s AS VARCHAR), '/', '|') FROM (SHOW \"Secret_Directory\") s -- {h}",
        "SELECT replace(pg_get_viewdef(oid), '/', '|') FROM duckdb_views() -- {t}",
        # table macros that run query_table() on a table named as text: no name to see
        "SELECT replace(bin::VARCHAR, '/', '|') AS b FROM histogram_values('duckdb_databases', path), {h}",
        "SELECT replace(bin::VARCHAR, '/', '|') AS b FROM histogram(lower('DUCKDB_SETTINGS'), value), {h}",
        # DuckDB 2.0's external resources run a function named as text, here query() of any SQL,
        # whose error carried the path out
        "SELECT * FROM destroy_external_resource('query', 'SELECT error(replace(path, ''/'', ''|'')) "
        "FROM duckdb_databases()'), (SELECT count(*) FROM {h})",
        "SELECT * FROM create_external_resource('query', 'SELECT 1'), (SELECT count(*) FROM {t})",
    ],
)
def test_a_host_path_cannot_be_read_transformed(pad: Scratchpad, pods_handle: str, query: str) -> None:
    # redaction replaced the path's text; replace(path, '/', '|') over duckdb_databases() showed it whole
    text = pad.spill(TEXT_HANDLE_LINES, tool="log").handle
    res = pad.call_tool("sql", {"query": query.format(h=pods_handle, t=text)})
    root = Path(pad.store.path).name  # (jupyter-scratchpad-xxxx, or the test's directory)
    for shown in (res.text, str(res.data)):
        for form in (root, root.upper(), root[::-1], "|".join(Path(pad.store.path).parts[1:3])):
            assert form not in shown, (query, res.text[:300])
    assert not res.ok and res.error["error"] == "sql_forbidden", res.text[:300]
    for s in res.error["suggestions"]:
        assert pad.call_tool(s["tool"], s["arguments"]).ok, s


def test_no_catalog_view_function_or_setting_of_duckdb_shows_a_host_path(tmp_path: Path) -> None:
    """Every catalog view, every table function callable without arguments and every setting
    DuckDB has, each read transformed past redaction: refused, or no host path in what it shows
    (a newer DuckDB's new catalog name is caught here, not by a list in a test)."""
    import duckdb

    store = ScratchStore(tmp_path / "hostmarkerq7z", sweep_interval_s=None)
    try:
        pad = store.scratchpad(run_id="r", agent_id="a")
        text = pad.spill(TEXT_HANDLE_LINES, tool="log").handle
        doc = pad.spill({"items": [{"id": i, "name": f"n{i}"} for i in range(2000)]}, tool="k").handle
        with duckdb.connect(":memory:") as conn:
            views = [f"{s}.{v}" for s, v in conn.execute("SELECT schema_name, view_name FROM duckdb_views()").fetchall()]
            functions = [
                f"{name}()"
                for (name,) in conn.execute(
                    "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type = 'table' "
                    "AND len(parameters) = 0"
                ).fetchall()
            ]
            settings = [f'(SHOW "{name}")' for (name,) in conn.execute("SELECT name FROM duckdb_settings()").fetchall()]
        assert len(views) > 40 and len(functions) > 30 and len(settings) > 100  # DuckDB's catalog was read
        ran = 0
        for source in views + functions + settings:
            query = f"SELECT replace(CAST(x AS VARCHAR), '/', '|') AS v FROM {source} x, {text}, {doc} LIMIT 5000"
            res = pad.call_tool("sql", {"query": query})
            ran += res.ok
            assert "hostmarkerq7z" not in res.text and "hostmarkerq7z" not in str(res.data), (source, res.text[:300])
            assert "Traceback" not in res.text
        # the harmless small ones (icu_calendar_names(), duckdb_schemas()) still answer; the others
        # are too large crossed with two handles (checkpoint() and truncate_duckdb_logs() answered
        # too: no reads, refused now by the table functions' allow-list)
        assert ran >= 2
    finally:
        store.close()


def test_names_inside_strings_and_comments_are_not_refused(pad: Scratchpad, pods_handle: str) -> None:
    query = f"SELECT 'duckdb_databases' AS word, count(*) AS n FROM {pods_handle}.items -- current_setting"
    res = pad.call_tool("sql", {"query": query})
    assert res.ok and res.data[0]["word"] == "duckdb_databases", res.text


def test_a_sandbox_connection_serves_only_jobs_that_name_the_same_relations_and_notes(
    pad: Scratchpad, pods_handle: str, log_handle: str
) -> None:
    """The worker runs a job that names exactly the relations and notes of the job before it on
    that job's (warm, locked-down) connection; any other job gets a fresh one."""
    from jupyter_scratchpad.explore._sqlworker import run_job

    count = f"SELECT count(*) AS n FROM {pods_handle}.items"
    first = pad.call_tool("sql", {"query": count})
    assert first.ok and pad.call_tool("sql", {"query": count}).data == first.data
    # a job naming other relations never sees the views the previous job had
    alone = run_job({"relations": [], "notes": [], "query": count, "max_rows": 10}, 30)
    assert alone.get("error") == "sql_error" and pods_handle in alone["message"]
    assert pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {log_handle}"}).data == [{"n": 5000}]
    # notes are part of what a connection holds: a changed note is seen at once
    notes = "SELECT key, value->>'v' AS v FROM scratch_notes ORDER BY key"
    pad.scratch_write("a", {"v": 1})
    assert pad.call_tool("sql", {"query": notes}).data == [{"key": "a", "v": "1"}]
    pad.scratch_write("a", {"v": 2})
    pad.scratch_write("b", {"v": 3})
    assert pad.call_tool("sql", {"query": notes}).data == [{"key": "a", "v": "2"}, {"key": "b", "v": "3"}]
    # a failed job does not leave its connection to the next one
    assert not pad.call_tool("sql", {"query": "SELECT nope FROM scratch_notes"}).ok
    assert pad.call_tool("sql", {"query": notes}).ok
    # a reused connection (same relations and notes as the job before) is still locked down
    assert pad.call_tool("sql", {"query": notes}).ok
    outside = pad.call_tool("sql", {"query": "SELECT content AS key FROM read_text('/etc/hostname')"})
    assert not outside.ok and outside.error["error"] == "sql_forbidden"
    assert pad.call_tool("sql", {"query": "SET threads = 1"}).error["error"] == "sql_not_read_only"


def test_a_connection_never_serves_another_runs_query(pad: Scratchpad) -> None:
    # a job that changed its connection (a WITH … AS (INSERT …) the parent once let through) left
    # the row for the next job with the same relations and notes, whatever its run or agent
    from jupyter_scratchpad.explore._sqlworker import run_job

    write = "WITH w AS (INSERT INTO scratch_notes VALUES ('plan', '1', now()) RETURNING key) SELECT count(*) AS n FROM w"
    job = {"relations": [], "notes": [], "max_rows": 10}
    assert run_job({**job, "scope": "('run-a', 'x')", "query": write}, 30)["rows"] == [[1]]
    read = "SELECT count(*) AS n FROM scratch_notes"
    assert run_job({**job, "scope": "('run-b', 'y')", "query": read}, 30)["rows"] == [[0]]
    assert pad.call_tool("sql", {"query": read}).data == [{"n": 0}]


def test_a_refused_writing_cte_is_checked_a_few_times_not_to_the_recursion_limit(
    pad: Scratchpad, monkeypatch: pytest.MonkeyPatch
) -> None:
    # its suggestion's candidate was the query itself, checked with suggestions of its own: 333
    # levels, each parsing the query again (a CUBE in it made that 14 s and 6.6 GB)
    from jupyter_scratchpad.explore import _sql

    calls: list[str] = []
    real = _sql._check_query_nodes
    monkeypatch.setattr(_sql, "_check_query_nodes", lambda q, *a: calls.append(q) or real(q, *a))
    for query in (
        "WITH w AS (INSERT INTO scratch_notes VALUES ('k', '1', now()) RETURNING key) SELECT count(*) FROM w",
        "WITH a AS (SELECT 1) DELETE FROM scratch_notes",
    ):
        calls.clear()
        res = pad.call_tool("sql", {"query": query})
        assert res.error is not None and res.error["error"] == "sql_not_read_only", res.text
        assert len(calls) <= 3, len(calls)


def test_grouping_sets_are_counted_before_the_parser_expands_them(pad: Scratchpad, pods_handle: str) -> None:
    # DuckDB's parser expands CUBE(n) into 2^n grouping sets in the calling process, outside the
    # worker's bounds: a CUBE of 14 beside 1,500 columns took 15 s and 3.2 GB before any check
    columns = ", ".join(f"c{i}" for i in range(1500))
    cube = ", ".join(f"x{i}" for i in range(14))
    res = pad.call_tool("sql", {"query": f"SELECT 1 FROM (SELECT 1) GROUP BY ({columns}), CUBE({cube})"})
    assert res.error is not None and res.error["error"] == "sql_error", res.text
    assert "grouping sets" in res.error["message"]
    nested = "SELECT 1 FROM t GROUP BY CUBE(a, b, c, d, e), ROLLUP(f, g, h, i, j, k, l, m), GROUPING SETS ((a), (b))"
    assert "grouping sets" in pad.call_tool("sql", {"query": nested}).error["message"]  # 32 x 9 x 2
    small = (
        f"SELECT s.phase, s.ns, count(*) AS n FROM (SELECT status.phase AS phase, metadata.namespace AS ns "
        f"FROM {pods_handle}.items) s GROUP BY CUBE(s.phase, s.ns) ORDER BY ALL LIMIT 3"
    )
    assert pad.call_tool("sql", {"query": small}).ok
    assert pad.call_tool("sql", {"query": "SELECT 'cube(a, b, c, d, e, f, g, h, i, j)' AS s"}).ok  # a string


def test_only_the_table_functions_a_query_needs_are_available(pad: Scratchpad, pods_handle: str) -> None:
    # an allow-list: DuckDB 2.0 added table functions that run a function named as text
    for query in ("SELECT * FROM test_all_types()", "FROM duckdb_approx_database_count()", "FROM checkpoint()"):
        res = pad.call_tool("sql", {"query": query})
        assert res.error is not None and res.error["error"] == "sql_forbidden", (query, res.text)
        assert "is not available here" in res.error["message"], res.text
    for query, rows in (
        ("SELECT count(*) AS n FROM range(10)", [{"n": 10}]),
        ("SELECT count(*) AS n FROM generate_series(1, 3)", [{"n": 3}]),
        ("SELECT count(*) AS n FROM unnest([1, 2])", [{"n": 2}]),
        ("""SELECT count(*) AS n FROM json_each('{"a": 1, "b": 2}')""", [{"n": 2}]),
        (f"SELECT count(*) AS n FROM {pods_handle}.items", [{"n": 3000}]),
        (f"SELECT count(*) AS n FROM (SUMMARIZE {pods_handle}.items)", None),
    ):
        res = pad.call_tool("sql", {"query": query})
        assert res.ok and (rows is None or res.data == rows), (query, res.text)


def test_a_long_store_path_in_a_plan_is_redacted(tmp_path: Path) -> None:
    # EXPLAIN ANALYZE's "Filename(s)" line was clipped to 200 characters before the store's path
    # was redacted: a path longer than that no longer matched, and most of it was shown
    store = ScratchStore(tmp_path / ("d" * 120) / ("e" * 100), sweep_interval_s=None)
    try:
        pad = store.scratchpad(run_id="r", agent_id="a")
        csv = pad.spill("id,status\n" + "\n".join(f"{i},{'ok' if i % 2 else 'bad'}" for i in range(100)), tool="x")
        res = pad.call_tool("sql", {"query": f"EXPLAIN ANALYZE SELECT * FROM {csv.handle}.rows"})
        assert res.ok, res.text
        assert "d" * 100 not in res.text and "d" * 100 not in str(res.data), res.text
    finally:
        store.close()


def test_a_missing_table_beside_a_long_literal_is_answered_at_once(pad: Scratchpad) -> None:
    # the "did you mean" search for h.items backtracked from every position of a long word: a
    # person's 500,000-character literal froze the kernel for minutes (sql_df has no query bound)
    import threading

    pad.intercept("y\n" * 5000, tool="t")
    query = "SELECT * FROM nosuch WHERE x = '" + "z" * 300_000 + "'"
    said: list[str] = []

    def run() -> None:
        try:
            pad.sql_df(query)
        except Exception as exc:  # the clear error about 'nosuch'
            said.append(str(exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)  # quadratic, it took about 6 minutes here; linear, well under a second
    assert not worker.is_alive(), "the error took over a minute"
    assert said and "nosuch" in said[0] and len(said[0]) < 2_000


@pytest.mark.parametrize("name", ["temp", "system", "memory", "main", "information_schema", "pg_catalog", "scratch_tables_0"])
def test_a_handle_cannot_take_a_name_sql_already_uses(pad: Scratchpad, name: str) -> None:
    # a handle named temp made every query naming it "Ambiguous reference to catalog or schema"
    with pytest.raises(InvalidArgumentError, match="reserved"):
        pad.spill({"items": [{"a": 1}] * 300}, tool="t", handle=name)
    assert pad.spill({"items": [{"a": 1}] * 300}, tool="t", handle=f"{name}_x").spilled


def test_only_the_handles_a_query_names_as_names_are_loaded(pad: Scratchpad, pods_handle: str) -> None:
    """A handle's name inside a string or a comment names nothing: its relation is not built (a
    word in a LIKE pattern made the query wait for, or fail on, an unrelated handle)."""
    logs = pad.spill(TEXT_HANDLE_LINES, tool="logs").handle
    res = pad.call_tool(
        "sql", {"query": f"SELECT count(*) AS n FROM {logs} WHERE line LIKE '%{pods_handle}%' -- {pods_handle}"}
    )
    assert res.ok and res.data == [{"n": 0}], res.text
    assert pad.call_tool("sql", {"query": f'SELECT count(*) AS n FROM "{logs}"'}).data == [{"n": 20_000}]
    missing = pad.call_tool("sql", {"query": f"SELECT * FROM t -- {pods_handle}"})
    assert not missing.ok and pods_handle not in missing.error.get("message", "")


def test_one_agents_long_load_does_not_hold_up_anothers_small_handle(tmp_path: Path) -> None:
    # the worker loads tables one body at a time: another agent's query of a fresh 5 KB handle
    # answered sql_loading ("k8s_… (5.0 KB) is being loaded") for as long as a 16 MB load ran
    import json

    with ScratchStore(tmp_path / "s", sweep_interval_s=None) as store:
        mallory = store.scratchpad("run-m", "mallory", tool_timeout_s=1.0)
        alice = store.scratchpad("run-a", "alice", tool_timeout_s=3.0)
        wide = mallory.spill("{" + ",".join(f'"k{i}":{i}' for i in range(300_000)) + "}", tool="wide").handle
        small = alice.spill(json.dumps({"items": [{"a": i} for i in range(300)]}), tool="small").handle
        first = mallory.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {wide}"})
        assert first.ok or first.error["error"] == "sql_loading", first.text[:300]
        res = alice.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {small}.items"})
        assert res.ok and res.data == [{"n": 300}], res.text[:300]


def test_a_refused_statement_is_named_as_written(pad: Scratchpad) -> None:
    # INSTALL was refused as "a LOAD statement" (DuckDB's own type), ATTACH as "a ATTACH"
    install = pad.call_tool("sql", {"query": "INSTALL httpfs"}).error["message"]
    attach = pad.call_tool("sql", {"query": "ATTACH 'x.db' AS y"}).error["message"]
    assert "an INSTALL/LOAD statement" in install and "an ATTACH statement" in attach


def test_the_histogram_aggregate_still_works(pad: Scratchpad, pods_handle: str) -> None:
    # the table macro histogram('duckdb_databases', path) is refused; the aggregate of the same
    # name, and list_histogram, are ordinary functions
    res = pad.call_tool("sql", {"query": f"SELECT histogram(kind) AS h, list_histogram([1, 1, 2]) AS l FROM {pods_handle}"})
    assert res.ok, res.text


def test_a_query_kept_waiting_by_another_is_told_it_never_ran(store: ScratchStore) -> None:
    # one worker per process: a SELECT 1 queued behind another agent's runaway query was told
    # "sql ran longer than its 3 s limit and was stopped" (it never ran) and to ask for less
    import threading

    slow = store.scratchpad("run-s", "slow", tool_timeout_s=6.0)
    victim = store.scratchpad("run-v", "victim", tool_timeout_s=1.5)
    runaway = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r"
    thread = threading.Thread(target=slow.call_tool, args=("sql", {"query": runaway}))
    thread.start()
    try:
        time.sleep(1.0)
        res = victim.call_tool("sql", {"query": "SELECT 1 AS one"})
    finally:
        thread.join()
    assert res.error["error"] == "sql_busy" and "did not run" in res.error["message"], res.text
    retry = res.error["suggestions"][0]
    assert retry["tool"] == "sql" and retry["arguments"] == {"query": "SELECT 1 AS one"}
    assert victim.call_tool(retry["tool"], retry["arguments"]).data == [{"one": 1}]


def test_a_timed_out_select_is_offered_its_plan(store: ScratchStore) -> None:
    # the advice was the JSON tools' ("a narrower path, a window, a simpler pattern"), with no call
    pad = store.scratchpad("r-slow2", "a", tool_timeout_s=2.0)
    query = "SELECT count(*) AS n FROM range(100000) a, range(100000) b, range(100000) c -- all of them"
    res = pad.call_tool("sql", {"query": query})
    assert res.error["error"] == "timeout" and "WHERE" in res.error["message"], res.text
    plan = next(s for s in res.error["suggestions"] if s["tool"] == "sql")
    shown = pad.call_tool("sql", plan["arguments"])
    assert shown.ok and any("Cross Product" in row["plan"] for row in shown.data), shown.text


def test_a_query_nested_past_the_parse_trees_depth_is_an_sql_error(pad: Scratchpad) -> None:
    # json.loads of DuckDB's parse tree (read to find table macros such as histogram) raised
    # RecursionError: an internal_error with its traceback in the log
    res = pad.call_tool("sql", {"query": "SELECT histogram(x) FROM (SELECT " + "[" * 900 + "1" + "]" * 900 + " AS x)"})
    # (the tree is read at any depth now: the query runs, and DuckDB takes its time limit)
    assert res.error["error"] in ("sql_error", "sql_forbidden", "timeout", "sql_out_of_memory"), res.text
    assert "Traceback" not in res.text and len(res.text) < 2000
    assert pad.call_tool("sql", {"query": "SELECT 1 AS one"}).data == [{"one": 1}]


def test_a_store_path_cut_by_the_cell_clip_is_still_redacted(pad: Scratchpad) -> None:
    # cells were clipped to 200 characters before the store's path was redacted: a path across the
    # cut no longer matched whole, and its first part reached the model
    root = str(pad.store.path)
    res = pad.call_tool("sql", {"query": f"SELECT repeat('x', 190) || '{root}/bodies/abc/raw' AS p"})
    assert res.ok, res.text
    assert root[:8] not in res.text.replace("x" * 8, "") and "<store>" in res.text, res.text
    assert root[:8] not in str(res.data)


@pytest.mark.parametrize(
    ("statement", "inner"),
    [
        ("SELECT 1 AS x; SELECT 2 AS y", "SELECT 1 AS x;"),
        ("CREATE TABLE t AS SELECT 41 + 1 AS x", "SELECT 41 + 1 AS x"),
        ("CREATE VIEW v AS (SELECT ')' AS x)", "SELECT ')' AS x"),
        ("INSERT INTO scratch_notes SELECT 'k', '1', now()", "SELECT 'k', '1', now()"),
        ("COPY (SELECT 42 AS x) TO '/tmp/x.csv' (FORMAT csv)", "SELECT 42 AS x"),
    ],
)
def test_a_refused_statement_is_offered_the_query_it_holds(pad: Scratchpad, statement: str, inner: str) -> None:
    # every sql_not_read_only came back with "suggestions": []
    res = pad.call_tool("sql", {"query": statement})
    assert res.error["error"] == "sql_not_read_only"
    [offered] = res.error["suggestions"]
    assert offered["arguments"] == {"query": inner}
    assert pad.call_tool("sql", offered["arguments"]).ok


def test_a_locked_setting_is_forbidden_not_an_error(pad: Scratchpad) -> None:
    res = pad.call_tool("sql", {"query": "SELECT * FROM enable_profiling()"})
    assert res.error["error"] == "sql_forbidden", res.text


def test_a_handle_named_in_a_string_is_pointed_to_describe(pad: Scratchpad, pods_handle: str) -> None:
    # pragma_table_info('h'): a relation is made only where a query names it, so DuckDB said "does
    # not exist" of a handle listed as a relation in the same error
    res = pad.call_tool("sql", {"query": f"SELECT * FROM pragma_table_info('{pods_handle}')"})
    assert "outside a string" in res.error["message"], res.text
    first = res.error["suggestions"][0]
    assert first["arguments"]["query"] == f"DESCRIBE {pods_handle}"
    assert pad.call_tool("sql", first["arguments"]).ok


def test_an_unreadable_handle_is_not_listed_as_a_relation(pad: Scratchpad) -> None:
    deep = pad.spill('{"a": ' + "[" * 200 + "1" + "]" * 200 + "}", tool="deep").handle
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {deep}"})
    assert "DuckDB cannot read this handle" in res.error["message"], res.text
    assert deep not in res.error.get("relations", [])


_NON_ASCII = "'" + "é" * 40 + "' AS pad"


@pytest.mark.parametrize(
    "query",
    [
        f"SELECT {_NON_ASCII}, name, value FROM duckdb_settings()",
        f"SELECT {_NON_ASCII}, database_name, path FROM duckdb_databases()",
        f"SELECT {_NON_ASCII}, * FROM query('SELECT 42')",
        f"SELECT {_NON_ASCII}, current_setting('temp_directory')",
        "SELECT '東京' AS city, sql FROM duckdb_views()",
    ],
)
def test_a_non_ascii_character_never_hides_a_refused_name(pad: Scratchpad, pods_handle: str, query: str) -> None:
    # DuckDB's tokenizer gives byte offsets, read as character offsets: after 'é' every name was
    # read at the wrong place, and duckdb_settings(), duckdb_databases() (the store's host path),
    # query() and current_setting() ran
    res = pad.call_tool("sql", {"query": query})
    assert res.error is not None and res.error["error"] == "sql_forbidden", res.text


def test_the_parse_tree_refuses_what_the_name_check_misses(
    pad: Scratchpad, pods_handle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a second reading: the functions of DuckDB's own parse tree, whatever the tokens said
    from jupyter_scratchpad.explore import _sql

    monkeypatch.setattr(_sql, "_names_in", lambda query: ())
    res = pad.call_tool("sql", {"query": "SELECT path FROM duckdb_databases()"})
    assert res.error is not None and res.error["error"] == "sql_forbidden", res.text
    res = pad.call_tool("sql", {"query": "SELECT current_setting('temp_directory') AS t"})
    assert res.error is not None and res.error["error"] == "sql_forbidden", res.text


def test_a_handle_named_after_a_non_ascii_literal_is_found(pad: Scratchpad, pods_handle: str) -> None:
    # SELECT count(*), 'é' FROM h answered "Table with name h does not exist"
    res = pad.call_tool("sql", {"query": f"SELECT 'Zürich' AS city, count(*) AS n FROM {pods_handle}.items"})
    assert res.ok and res.data == [{"city": "Zürich", "n": 3000}], res.text
    res = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {pods_handle}.items -- é comment ;"})
    assert res.ok and res.data == [{"n": 3000}], res.text


def test_a_handle_found_unreadable_is_not_read_again(pad: Scratchpad, store: ScratchStore) -> None:
    # each query over a handle DuckDB cannot read (an object of 200,000 keys: out of its memory)
    # spent ~10 s finding it again; the finding is marked beside the body (for want of memory,
    # for OOM_MARK_S only) and said
    from jupyter_scratchpad.explore import _sqlviews

    deep = pad.spill('{"a": ' + "[" * 200 + "1" + "]" * 200 + "}", tool="deep").handle
    assert not pad.call_tool("sql", {"query": f"SELECT * FROM {deep}"}).ok
    body = store.reader(pad.entry(deep)).directory
    marks = list(body.glob("sql-unreadable-*"))
    assert len(marks) == 1 and not marks[0].read_text().startswith("memory:")
    rel = {"body_path": str(body / "raw")}
    assert _sqlviews._known_unreadable(rel)
    marks[0].write_text("memory: Out of Memory Error\n")
    assert _sqlviews._known_unreadable(rel) and _sqlviews.unreadable_reason(rel).startswith("memory:")
    old = time.time() - _sqlviews.OOM_MARK_S - 5
    import os

    os.utime(marks[0], (old, old))
    assert not _sqlviews._known_unreadable(rel)  # a lack of memory is tried again later
    res = pad.call_tool("sql", {"query": f"SELECT * FROM {deep}"})
    assert not res.ok and "cannot read this handle" in res.text
