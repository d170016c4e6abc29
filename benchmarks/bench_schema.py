"""``schema`` and ``item_schema`` on 100,000 records against genson (goal: at least 10x faster).

genson (``SchemaBuilder.add_object`` then ``to_schema``) infers a JSON Schema that unions every
item of an array, which is what both of our tools do too. Two comparisons:

* warm: ours on a handle whose parsed value is already cached (the second call on a handle), the
  shape recomputed each run, and genson given the already-parsed records; neither side parses JSON;
* cold: ours on a freshly spilled handle with nothing in memory: the call reads the schema (or
  item counts) the spill's worker saved beside the body (``schema-*.json`` / ``items-*.json``);
  it neither reads nor parses the body. genson is given the same records already parsed (its
  parse is not timed, as issue 14 asks);
* repeated: the second call of ``schema`` on a handle, its result cached in memory.

Issue 14 also sets absolute limits on a 100 MB spill: cold ≤ 50 ms, repeated ≤ 10 ms. The cold
and repeated rows judge them here on this module's records (about 28 MB in full mode, 3 MB in
quick mode: not the issue's 100 MB, and the rows say so).

Ours is a whole ``pad.call_tool`` (rendering and the exact token count included). The check, on
every row: the keys our ``item_schema`` reports (dotted for nested objects) and which are in
every item equal genson's properties and ``required`` lists, flattened the same way; ``schema``
answers and names a nested key.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._data import api_records
from benchmarks._harness import (
    check,
    median,
    profile_summary,
    propose_if_missed,
    result,
    time_side_by_side,
)

SCHEMA_PROPOSAL = (
    "Done already: schemas are cached per (body, max_depth), the union is built column by column "
    "(C-level `map`/`itemgetter` per key instead of a method call per node), and parsing runs with "
    "the GC paused. What is left is Python walking ~1.5 M values once: the next step is to build the "
    "union without a Python object tree, e.g. DuckDB's `json_group_structure` over "
    "`read_json_objects(raw)` (timed in the warm rows' notes) for keys and types plus one "
    "`count(json_extract(...))` aggregate per key for presence. Callers rarely pay this: the "
    "spill's worker computes both shapes once, off the stub's path (from the value the spill parsed "
    "under 8 MB; from 8 MB by parsing the body's segments a second time), and a cold call reads them "
    "(the cold rows)."
)


def _genson(records: list[Any]) -> dict[str, Any]:
    from genson import SchemaBuilder

    builder = SchemaBuilder()
    builder.add_object(records)
    schema: dict[str, Any] = builder.to_schema()
    return schema


def _flatten_genson(node: dict[str, Any], prefix: str = "") -> tuple[set[str], set[str]]:
    """``(keys, keys present in every item)`` of an object schema, nested objects dotted."""
    keys: set[str] = set()
    always: set[str] = set()
    required = set(node.get("required", []))
    for name, child in node.get("properties", {}).items():
        dotted = prefix + name
        options = child.get("anyOf", [child])
        objects = [o for o in options if o.get("type") == "object" and o.get("properties")]
        if objects and len(options) == 1:
            sub_keys, sub_always = _flatten_genson(objects[0], dotted + ".")
            keys |= sub_keys
            always |= sub_always if name in required else set()
        else:
            keys.add(dotted)
            if name in required:
                always.add(dotted)
    return keys, always


def _check_item_schema(res: Any, schema: dict[str, Any]) -> None:
    check(res.ok, f"item_schema failed: {res.error}")
    names = {r["key"] for r in res.data["keys"]}
    # a parent object's own row (metadata  object  n/n) has no genson counterpart: genson's
    # flattening lists only the leaves of an always-object value
    leaves = [
        r for r in res.data["keys"] if not (r["types"] == "object" and any(n.startswith(r["key"] + ".") for n in names))
    ]
    ours_keys = {r["key"] for r in leaves}
    ours_always = {r["key"] for r in leaves if r["present"] == r["of"]}
    keys, always = _flatten_genson(schema["items"])
    check(ours_keys == keys, f"item_schema keys differ from genson's: {sorted(ours_keys ^ keys)}")
    check(ours_always == always, f"always-present keys differ: {sorted(ours_always ^ always)}")


def _agree(tool: str) -> Any:
    def agree(res: Any, schema: dict[str, Any]) -> None:
        if tool == "item_schema":
            _check_item_schema(res, schema)
        else:
            check(res.ok and "$[*].customer.country" in res.text, f"schema: {res.error}")

    return agree


def run(quick: bool) -> list[dict[str, Any]]:
    from jupyter_scratchpad import ScratchStore
    from jupyter_scratchpad.explore._base import VALUE_CACHE
    from jupyter_scratchpad.explore._json import _ITEM_COUNTS
    from jupyter_scratchpad.explore._schema import _ITEM_SHAPES, _SCHEMA_FILE, _SCHEMAS
    from jupyter_scratchpad.store import _format

    count = 10_000 if quick else 100_000
    runs = 3 if quick else 5
    records = api_records(count, seed=51)
    texts = []
    for i in range(2 * (runs + 1) + 1):  # a warm handle, one per cold run (+1: the harness's warm-up call)
        records[0]["id"] = f"ord_variant_{i}"
        texts.append(json.dumps(records))
    data = f"{count:,} order records, {len(texts[0]) / 1e6:.0f} MB JSON"
    streamed = len(texts[1].encode()) >= _format.STREAM_MIN_BYTES  # the cold handles: read by segment
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-schema-") as tmp:
        store = ScratchStore(Path(tmp) / "store", sweep_interval_s=None)
        try:
            pad = store.scratchpad(run_id="bench-schema", agent_id="bench", context_window=1 << 40)
            # the warm handle is parsed whole, as an output under 8 MB is (a larger one is read a
            # segment at a time and never held parsed): the warm rows start from its parsed value
            saved_min, _format.STREAM_MIN_BYTES = _format.STREAM_MIN_BYTES, 1 << 62
            try:
                handles = [pad.spill(texts[0], tool="list_orders").handle]
            finally:
                _format.STREAM_MIN_BYTES = saved_min
            handles += [pad.spill(t, tool="list_orders").handle for t in texts[1:]]
            started = time.perf_counter()
            pad.wait_for_counts()  # the exact token counts and the schemas built after each spill
            settled_s = time.perf_counter() - started
            saved = store.reader(pad.entry(handles[0])).directory / _SCHEMA_FILE.format(depth=4)
            check(saved.exists(), "the spill did not save its schema")
            parsed = json.loads(texts[0])
            raw_path, _ = store.body_paths(pad.entry(handles[0]))
            in_duckdb = _duckdb_structure(raw_path, runs)
            for tool, args in (("schema", {}), ("item_schema", {"path": "$"})):
                pad.call_tool(tool, {"handle": handles[0], **args})  # warms the parsed-value cache

                def warm(i: int, tool: str = tool, args: dict[str, Any] = args) -> Any:
                    # recompute the shape each time: only the parse is cached (not the schema or the
                    # item counts the spill saved, in memory or beside the body)
                    _SCHEMAS.clear()
                    _ITEM_SHAPES.clear()
                    _ITEM_COUNTS.clear()
                    for done in saved.parent.glob("*.json"):
                        if done.name.startswith(("schema-", "items-")):
                            done.unlink()
                    return pad.call_tool(tool, {"handle": handles[0], **args})

                ours_s, base_s, failure = time_side_by_side(
                    warm, lambda i: _genson(parsed), runs, check_pair=_agree(tool)
                )
                rows.append(
                    result(
                        f"{tool}, warm (parsed value cached, shape recomputed)",
                        ours_s,
                        "genson on the parsed records",
                        base_s,
                        data,
                        notes=(
                            f"Neither side parses JSON. {_shape_note(warm(0))} Profile of one call "
                            f"of ours (own time; cProfile inflates it): {profile_summary(lambda: warm(0))}. "
                            "The union of shapes is built in Python, column by column. "
                            "Measured here for comparison: DuckDB's json_group_structure over "
                            "read_json_objects of the raw file (parsing included, no presence counts) "
                            f"takes {median(in_duckdb) * 1e3:,.0f} ms."
                        ),
                        failure=failure,
                        goal="at least 10x faster than genson",
                        goal_ratio=0.1,
                    )
                )
            repeat_s, genson_s, failure = time_side_by_side(
                lambda i: pad.call_tool("schema", {"handle": handles[0]}),
                lambda i: _genson(parsed),
                runs,
                check_pair=_agree("schema"),
            )
            repeat = result(
                "schema, repeated call (result cached)",
                repeat_s,
                "genson on the parsed records",
                genson_s,
                data,
                notes="A body never changes, so its schema is computed once per (body, max_depth); "
                "a repeated schema call only renders the cached rows. The ratio is not judged: issue 14's "
                f"goal for a repeated call is the absolute ≤ 10 ms (set on a 100 MB spill; here {data}). "
                "Same answer checked on every run.",
                failure=failure,
                goal=f"≤ 10 ms (issue 14; measured {median(repeat_s) * 1e3:.1f} ms)",
            )
            repeat["goal_met"] = median(repeat_s) <= 0.010
            rows.append(repeat)
            for n, (tool, args) in enumerate((("schema", {}), ("item_schema", {"path": "$"}))):
                first = 1 + n * (runs + 1)
                cold_handles = handles[first : first + runs + 1]

                def cold(
                    i: int,
                    tool: str = tool,
                    args: dict[str, Any] = args,
                    names: list[str] = cold_handles,
                ) -> Any:
                    # as another process (or kernel) would start: nothing in memory
                    _SCHEMAS.clear()
                    _ITEM_SHAPES.clear()
                    _ITEM_COUNTS.clear()
                    VALUE_CACHE.clear()
                    return pad.call_tool(tool, {"handle": names[i], **args})

                # the same records as run i's handle; genson's parse is excluded (issue 14)
                values = [json.loads(t) for t in texts[first : first + runs + 1]]
                ours_s, base_s, failure = time_side_by_side(
                    cold, lambda i, v=values: _genson(v[i]), runs, check_pair=_agree(tool)
                )
                cold_row = result(
                    f"{tool}, cold (a fresh handle)",
                    ours_s,
                    "genson on the parsed records (its parse not timed)",
                    base_s,
                    data,
                    notes=(
                        f"{_cold_note(tool, streamed)} The counts and schemas of all {len(texts)} spills "
                        f"had landed {settled_s:.2f} s after the last spill. Same answer as genson "
                        "checked on every run."
                    ),
                    failure=failure,
                    goal=(
                        "at least 10x faster than genson and ≤ 50 ms (issue 14; measured "
                        f"{median(ours_s) * 1e3:.1f} ms)"
                    ),
                    goal_ratio=0.1,
                )
                if "goal_met" in cold_row:
                    cold_row["goal_met"] = bool(cold_row["goal_met"]) and median(ours_s) <= 0.050
                rows.append(cold_row)
        finally:
            store.close()
    return propose_if_missed(rows, SCHEMA_PROPOSAL)


def _cold_note(tool: str, streamed: bool) -> str:
    what = "schema" if tool == "schema" else "item counts"
    if streamed:
        return (
            f"Not parse once at this size: the spill read the records a segment at a time and never held them "
            f"parsed; after the stub, its worker read the body's segments back, parsed them a second time and "
            f"saved the {what} beside the body. The cold call (nothing in memory) reads that file."
        )
    return (
        f"Parse once: the spill's worker built the {what} from the value the spill had just parsed, after "
        f"returning the stub, and saved {'it' if tool == 'schema' else 'them'} beside the body; the cold call "
        "(nothing in memory) reads that file. "
        "What the worker paid is about the warm row's time per body."
    )


def _duckdb_structure(path: Path, runs: int) -> list[float]:
    import time

    import duckdb

    seconds = []
    with duckdb.connect() as conn:
        for _ in range(runs):
            start = time.perf_counter()
            conn.execute(
                f"SELECT json_group_structure(json) FROM read_json_objects('{path}', format='array')"
            ).fetchall()
            seconds.append(time.perf_counter() - start)
    return seconds


def _shape_note(res: Any) -> str:
    return f"Our result: {res.tokens:,} tokens ({len(res.text.splitlines())} lines)."
