"""Probe AB (a model's lean-output review) on the JSON tools: a negated JSONPath filter, get_in's
layout, grep's numbers under a path, schema's next fields and its documents inside strings, the
grep note on an embedded document, and a misspelt iterate_over field."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.explore._text import _clip
from jupyter_scratchpad.store import _format, _jsonstream
from jupyter_scratchpad.store._jsontext import dumps_pretty


def pods(n: int = 300, seed: int = 1) -> dict[str, Any]:
    rnd = random.Random(seed)
    items = []
    for i in range(n):
        phase = rnd.choice(["Running"] * 8 + ["Pending", "Failed"])
        restarts = rnd.choice([0, 0, 0, 1, 40])
        waiting = {"waiting": {"reason": "CrashLoopBackOff"}} if restarts > 10 else {"running": {}}
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{rnd.choice(['api', 'web', 'db'])}-{i:05d}",
                    "namespace": rnd.choice(["prod", "dev", "kube-system"]),
                    "uid": f"{rnd.randrange(16**32):032x}",
                    "labels": {"app": rnd.choice(["api", "web"]), "pod-template-hash": f"{rnd.randrange(16**10):010x}"},
                },
                "spec": {
                    "nodeName": f"node-{rnd.randint(1, 9)}",
                    "containers": [{"name": "app", "image": f"reg/app:1.{i % 9}", "ports": [{"containerPort": 80}]}],
                    "restartPolicy": "Always",
                },
                "status": {
                    "phase": phase,
                    "podIP": f"10.0.{rnd.randint(0, 255)}.{rnd.randint(1, 254)}",
                    "containerStatuses": [{"name": "app", "restartCount": restarts, "state": waiting}],
                },
            }
        )
    return {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": items}


def issues(n: int = 120, seed: int = 3) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    words = ["the", "service", "crashes", "when", "config", "file", "is", "missing", "retry", "loop", "never", "ends"]
    out = []
    for i in range(1, n + 1):
        body = "## Description\n\n" + " ".join(rnd.choice(words) for _ in range(120)) + "\n\n## Steps\n\n"
        body += "\n".join(f"{k}. " + " ".join(rnd.choice(words) for _ in range(12)) for k in range(1, 12))
        if i == 101:
            body += "\n\nThis also breaks the **OAuth refresh token** flow on Safari 17.\n"
        out.append(
            {
                "url": f"https://api.github.com/repos/acme/shop/issues/{i}",
                "html_url": f"https://github.com/acme/shop/issues/{i}",
                "id": 1000000 + i,
                "node_id": f"I_kwDOA{rnd.randrange(16**10):010x}",
                "number": i,
                "title": f"{rnd.choice(['Crash', 'Timeout', 'Docs'])}: " + " ".join(rnd.choice(words) for _ in range(5)),
                "user": {"login": rnd.choice(["alice", "bob", "carol"]), "id": rnd.randint(1, 99999), "type": "User"},
                "state": rnd.choice(["open", "open", "closed"]),
                "locked": False,
                "body": body,
            }
        )
    return out


def _spill(pad: Scratchpad, value: Any, tool: str) -> str:
    r = pad.intercept(value, tool=tool, force=True)
    assert r.spilled, r.failure
    assert pad.wait_for_counts(30)
    return r.handle  # type: ignore[return-value]


def _runs(pad: Scratchpad, s: dict[str, Any]) -> Any:
    res = pad.call_tool(s["tool"], s["arguments"])
    assert res.ok, (s["call"], res.error)
    return res


# -- 1. a JSONPath filter --------------------------------------------------------------------------


def test_a_negated_filter_is_answered_with_its_projection_and_count_never_a_grep(pad: Scratchpad) -> None:
    # "$.items[?(@.status.phase!='Running')].metadata.name": the grep offered was for "Running",
    # the very pods the filter leaves out, and the SQL was SELECT * (struct columns, clipped)
    h = _spill(pad, pods(), "k8s_list_pods")
    res = pad.call_tool("get_in", {"handle": h, "path": "$.items[?(@.status.phase!='Running')].metadata.name"})
    assert res.error is not None and res.error["error"] == "key_path_not_found"
    sugg = res.error["suggestions"]
    assert not [s for s in sugg if s["tool"] == "grep"]
    queries = [s["arguments"]["query"] for s in sugg if s["tool"] == "sql"]
    assert queries == [
        f"SELECT metadata.name FROM {h}.items WHERE status.phase <> 'Running' LIMIT 20",
        f"SELECT count(*) FROM {h}.items WHERE status.phase <> 'Running'",
    ]
    names = {r["name"] for r in _runs(pad, sugg[0]).data}
    wanted = {p["metadata"]["name"] for p in pods()["items"] if p["status"]["phase"] != "Running"}
    assert names and names <= wanted
    assert _runs(pad, sugg[1]).data == [{"count_star()": len(wanted)}]
    for s in sugg:  # every suggestion runs as written
        _runs(pad, s)


def test_a_filter_without_a_rest_selects_fields_that_say_what_an_item_is(pad: Scratchpad) -> None:
    h = _spill(pad, pods(), "k8s_list_pods")
    res = pad.call_tool("get_in", {"handle": h, "path": "$.items[?(@.status.phase=='Failed')]"})
    sugg = res.error["suggestions"]  # type: ignore[index]
    query = next(s["arguments"]["query"] for s in sugg if s["tool"] == "sql")
    assert query.startswith("SELECT metadata.name, metadata.namespace, status.phase FROM")  # not *, no apiVersion
    assert query.endswith("WHERE status.phase = 'Failed' LIMIT 20")
    grep = next(s for s in sugg if s["tool"] == "grep")
    assert grep["arguments"]["pattern"] == '"phase": "Failed",?$' and grep["arguments"]["context"] == 0
    hits = _runs(pad, grep)
    assert hits.data["matches"] and all(m["path"].endswith(".status.phase") for m in hits.data["matches"])
    for s in sugg:
        _runs(pad, s)
    # a numeric filter, and a rest with an index (DuckDB's lists count from 1)
    for path, column in [
        ("$.items[?(@.status.phase == 'Pending')].spec.containers[0].image", "spec.containers[1].image"),
        ("$.items[?(@.spec.nodeName=='node-3')].status.containerStatuses[-1].restartCount", None),
    ]:
        res = pad.call_tool("get_in", {"handle": h, "path": path})
        sugg = res.error["suggestions"]  # type: ignore[index]
        sql = [s for s in sugg if s["tool"] == "sql"]
        assert len(sql) == 2 and "*" not in sql[0]["arguments"]["query"].split("FROM")[0]
        if column:
            assert sql[0]["arguments"]["query"].startswith(f"SELECT {column} FROM")
        for s in sugg:
            _runs(pad, s)


# -- 2. get_in's layout ------------------------------------------------------------------------------


def test_get_in_lays_out_two_levels_and_writes_the_rest_compact(pad: Scratchpad) -> None:
    series = {"metric": {"pod": "api-0"}, "values": [[1714521600 + 15 * k, str(k * 7 % 5000)] for k in range(240)]}
    doc = {"data": {"result": [series]}, "pod": pods(3)["items"][1]}
    h = _spill(pad, doc, "prometheus")
    values = pad.call_tool("get_in", {"handle": h, "path": "$.data.result[0].values"})
    assert values.ok and "\n" not in values.text.split("\n---")[0]  # a series of pairs: one line
    assert json.loads(values.text.split("\n---")[0]) == series["values"]
    pretty = pad.tokenizer.count(dumps_pretty(series["values"]).decode())
    assert values.tokens < 0.65 * pretty, (values.tokens, pretty)
    pod = pad.call_tool("get_in", {"handle": h, "path": "$.pod"})
    body = pod.text.split("\n---")[0]
    assert json.loads(body) == doc["pod"]
    assert '\n  "metadata": {\n    "name": ' in body  # two levels, one member a line
    assert '\n    "containers": [{"name":"app","image":"reg/app:1.1","ports":[{"containerPort":80}]}],' in body
    assert pad.call_tool("get_in", {"handle": h, "path": "$.data.result[0].values[-1]"}).text.startswith(
        f'[{1714521600 + 15 * 239},"{239 * 7 % 5000}"]\n'
    )


@pytest.mark.parametrize(
    "value",
    [
        {},
        [],
        "x",
        [[{"a": 1}]],
        {"a": {"b": {"c": {"d": [1, 2, {"e": "f" * 200}]}}}},
        [{"k": i, "v": [i] * 30} for i in range(40)],
        {"é\u2028\"\\": [1.5, None, True, 12345678901234567890123]},
    ],
)
def test_lean_json_is_the_same_json(value: Any) -> None:
    from jupyter_scratchpad.explore._json import lean_json

    assert json.loads(lean_json(value)) == value


# -- 5. grep under a path: the body's numbers, a path per match --------------------------------------


def test_grep_under_a_path_numbers_lines_as_the_body_with_each_matchs_path(pad: Scratchpad) -> None:
    # numbered from the node's first line, the lines were other lines in slice, and had no path
    h = _spill(pad, pods(), "k8s_list_pods")
    args = {"handle": h, "pattern": "CrashLoopBackOff", "max_matches": 3, "context": 1}
    whole = pad.call_tool("grep", args)
    under = pad.call_tool("grep", {**args, "path": "$.items"})
    assert under.ok and "numbered from its first line" not in under.text
    assert [(m["line"], m["path"]) for m in under.data["matches"]] == [
        (m["line"], m["path"]) for m in whole.data["matches"]
    ]
    for m in under.data["matches"]:
        assert f">{m['line']} {m['path']}\t" in under.text
        line = pad.call_tool("slice", {"handle": h, "start": m["line"], "end": m["line"]}).data["lines"][0]
        assert line.strip() == m["text"].strip()  # (the node's own lines are less indented)
    deep = pad.call_tool("grep", {**args, "path": whole.data["matches"][0]["path"].rsplit(".state", 1)[0]})
    assert deep.data["matches"][0]["line"] == whole.data["matches"][0]["line"]
    assert deep.data["matches"][0]["path"] == whole.data["matches"][0]["path"]


def test_grep_under_a_path_of_a_streamed_spill_numbers_lines_as_the_body(
    pad: Scratchpad, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_jsonstream, "SEGMENT_BYTES", 300)
    monkeypatch.setattr(_jsonstream, "SCAN_CHUNK", 1024)
    monkeypatch.setattr(_format, "STREAM_MIN_BYTES", 2048)
    h = _spill(pad, json.dumps(pods(80)), "kubectl")
    args = {"handle": h, "pattern": '"phase"|CrashLoopBackOff|^\\]', "context": 0, "max_matches": 1000}
    whole = {m["line"]: m["path"] for m in pad.call_tool("grep", args).data["matches"]}
    for path in ("$.items", "$.items[5]"):
        under = pad.call_tool("grep", {**args, "path": path})
        assert under.ok and under.data["matches"]
        for m in under.data["matches"]:
            assert m["text"] == "]" or whole[m["line"]] == m["path"]  # (the node's own last line: "  ]" there)
            line = pad.call_tool("slice", {"handle": h, "start": m["line"], "end": m["line"]}).data["lines"][0]
            assert line.strip() == m["text"].strip()


def test_grep_in_a_document_inside_a_string_gives_paths_through_it(pad: Scratchpad) -> None:
    doc = {"items": [{"name": f"pod-{i}", "phase": "Failed" if i % 7 == 0 else "Running"} for i in range(300)]}
    h = _spill(pad, {"content": [{"type": "text", "text": json.dumps(doc)}, {"type": "text", "text": "x"}]}, "mcp")
    res = pad.call_tool("grep", {"handle": h, "path": "$.content[0].text", "pattern": "Failed", "context": 0})
    assert res.ok and res.text.startswith("lines of $.content[0].text, pretty-printed, numbered from its first line:")
    assert res.data["matches"][1]["path"] == "$.content[0].text.items[7].phase"
    got = pad.call_tool("get_in", {"handle": h, "path": res.data["matches"][1]["path"]})
    assert got.text.startswith('"Failed"')


# -- 6. schema's next fields -------------------------------------------------------------------------


def test_schema_next_names_fields_that_say_what_an_item_is(pad: Scratchpad) -> None:
    # the first scalar fields were URLs and ids (issues), constant apiVersion/kind (pods)
    for value, tool, fields in [
        (issues(), "github_list_issues", "number,title,user.login,state"),
        (pods(), "k8s_list_pods", "metadata.name,metadata.namespace,spec.nodeName,status.phase"),
    ]:
        h = _spill(pad, value, tool)
        res = pad.call_tool("schema", {"handle": h})
        nxt = res.text.split("\nnext: ", 1)[1].split("\n")[0]
        assert f'fields="{fields}"' in nxt, nxt
        call = re.search(r"iterate_over\(handle=\"[^\"]+\", path=\"([^\"]+)\"", nxt)
        assert call is not None
        rows = pad.call_tool("iterate_over", {"handle": h, "path": call.group(1), "fields": fields, "limit": 20})
        assert rows.ok and all(None not in [r[f] for f in fields.split(",")] for r in rows.data)
    refused = pad.call_tool("iterate_over", {"handle": h, "path": "$.items"})  # (no fields: the same choice)
    assert refused.error["suggestions"][0]["arguments"]["fields"] == fields  # type: ignore[index]


def test_telling_fields_skips_constants_ids_urls_and_long_text() -> None:
    from jupyter_scratchpad.explore._shape import telling_fields

    items = [
        {"id": i, "url": f"https://x/{i}", "kind": "Pod", "name": f"n{i}", "body": "w " * 100, "size": i % 3}
        for i in range(30)
    ]
    assert telling_fields(items) == ["name", "size"]
    assert telling_fields(items, most=1) == ["name"]
    # a field counted over the whole array with one value is constant, whatever the sample shows
    assert telling_fields(items, values={"size": [("0", 30)]}) == ["name"]
    assert telling_fields([{"userId": 1, "paid": True}, {"userId": 2, "paid": False}]) == ["paid"]
    assert telling_fields([1, 2, 3]) == []


# -- 11. documents inside strings, in schema ------------------------------------------------------


def test_schema_says_documents_in_a_lists_strings_once_with_a_real_count(pad: Scratchpad) -> None:
    # ten identical "$[0].body  embedded markdown" rows, "… 10 more" of 120, and a <path> placeholder
    h = _spill(pad, issues(), "github_list_issues")
    res = pad.call_tool("schema", {"handle": h})
    lines = [line for line in res.text.split("\n") if "markdown" in line]
    assert lines == [
        '  $[*].body: markdown in 120 items (~1.4 KB-1.5 KB, 17 lines each; schema path="$[0].body" shows the headings)'
    ], lines
    assert "<path>" not in res.text and "more" not in res.text
    outline = pad.call_tool("schema", {"handle": h, "path": "$[0].body"})
    assert outline.ok and "Description" in outline.text


# -- 12. a grep match inside a document --------------------------------------------------------------


def test_a_grep_match_inside_a_document_names_that_string_with_the_pattern(pad: Scratchpad) -> None:
    h = _spill(pad, issues(), "github_list_issues")
    res = pad.call_tool("grep", {"handle": h, "pattern": "oauth", "ignore_case": True})
    assert res.ok and "[+0 chars clipped]" not in res.text
    note = (
        f'note: $[100].body holds a markdown document; grep(handle="{h}", path="$[100].body", pattern="oauth", '
        "ignore_case=true) searches its own lines"
    )
    assert note in res.text
    inside = pad.call_tool("grep", {"handle": h, "path": "$[100].body", "pattern": "oauth", "ignore_case": True})
    assert inside.ok and "OAuth refresh token" in inside.text
    # no match inside a document: no note
    plain = pad.call_tool("grep", {"handle": h, "pattern": '"number": 7,'})
    assert plain.ok and "note:" not in plain.text


def test_a_clipped_line_ending_at_the_match_has_no_empty_marker() -> None:
    line = "x" * 1500 + "match"
    shown = _clip(line, len(line) - 5)
    assert shown.endswith("match") and "+0" not in shown and shown.startswith("[1,000 chars clipped]…")
    assert _clip("y" * 3000, 1500).endswith("…[+1,000 chars clipped]")


# -- 15. a misspelt field of iterate_over ---------------------------------------------------------


def test_a_field_no_item_has_is_named_with_the_field_meant(pad: Scratchpad) -> None:
    h = _spill(pad, pods(), "k8s_list_pods")
    res = pad.call_tool(
        "iterate_over", {"handle": h, "path": "$.items", "fields": "metadata.name,status.restartCount", "limit": 5}
    )
    assert res.ok
    assert "no item here has 'status.restartCount' (closest: status.containerStatuses[0].restartCount)" in res.text
    meant = pad.call_tool(
        "iterate_over",
        {"handle": h, "path": "$.items", "fields": "status.containerStatuses[0].restartCount", "limit": 5},
    )
    assert meant.ok and None not in [r["status.containerStatuses[0].restartCount"] for r in meant.data]
    # every field missing: the refusal's suggestion is the same field
    alone = pad.call_tool("iterate_over", {"handle": h, "path": "$.items", "fields": "status.restartCount", "limit": 5})
    assert alone.error["suggestions"][0]["arguments"]["fields"] == "status.containerStatuses[0].restartCount"  # type: ignore[index]
