"""grep in a JSON handle names each match's path (``>21 $.items[3].status.phase``), read from the
pretty-printed body's layout; get_in of that path is the value on the line. A match in a JSON
body was a line and its neighbours, with nothing to say which item it was in."""

from __future__ import annotations

import json
import random
import re
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.explore import _linepaths, _text
from jupyter_scratchpad.explore._linepaths import LinePaths
from jupyter_scratchpad.explore._paths import key_step
from jupyter_scratchpad.store import _format
from jupyter_scratchpad.store._jsontext import dumps_pretty


def reference_paths(lines: list[str]) -> list[str]:
    """Every line's path, by a forward walk with a stack (another reading of the layout)."""
    out: list[str] = []
    stack: list[list[Any]] = []  # [kind, step, next index]
    for line in lines:
        text = line.lstrip(" ")
        if text[:1] in "]}":
            stack.pop()
            out.append("$" + "".join(s[1] for s in stack))
            continue
        if not stack:
            step = ""
        elif stack[-1][0] == "{":
            step = key_step(scanstring(text, 1)[0])
        else:
            step = f"[{stack[-1][2]}]"
            stack[-1][2] += 1
        out.append("$" + "".join(s[1] for s in stack) + step)
        value = text.rstrip(",")
        if value.endswith(("{", "[")):
            stack.append([value[-1], step, 0])
    return out


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 5 or roll < 0.3:
        return rng.choice([1, "x", None, True, 'a "q" \\ b ]', 2.5, {}, [], "}", "  {"])
    if roll < 0.65:
        keys = ["a", "b.c", "k", "é", "id", "x y", '"q"', "[0]", ""]
        return {rng.choice(keys) + str(i): random_value(rng, depth + 1) for i in range(rng.randint(0, 4))}
    return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 5))]


@pytest.mark.parametrize("seed", range(6))
def test_every_line_path_agrees_with_a_forward_walk(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # tiny windows and pieces: every boundary of the backward search and of the counting is crossed
    monkeypatch.setattr(_linepaths, "WINDOW", 8)
    monkeypatch.setattr(_linepaths, "COUNT_PIECE", 5)
    monkeypatch.setattr(_linepaths, "MARK_EVERY", 7)
    rng = random.Random(seed)
    for _ in range(150):
        body = dumps_pretty(random_value(rng))
        lines = body.decode().rstrip("\n").split("\n")
        expected = reference_paths(lines)
        starts = [0, *(m.end() for m in re.finditer(b"\n", body))][: len(lines)]
        memo: dict[int, Any] = {}
        for _pass in range(2):  # the second pass reads what the first one learnt
            paths = LinePaths(body, memo=memo)
            for i in sorted(rng.sample(range(len(lines)), min(len(lines), rng.randint(1, 9)))):
                assert paths.path(starts[i]) == expected[i], (lines[i], body.decode()[:500])


@pytest.fixture(autouse=True)
def time_for_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """Correctness here, not time: a loaded machine must not leave a match without its path."""
    monkeypatch.setattr(_text, "PATHS_MAX_S", 30.0)


def test_grep_names_the_path_of_each_match_and_get_in_reads_it(pad: Scratchpad) -> None:
    rng = random.Random(3)
    doc = {
        "kind": "PodList",
        "items": [
            {
                "metadata": {"name": f"pod-{i}", "labels": {"app.kubernetes.io/name": "web", "tier": rng.choice("ab")}},
                "status": {"conditions": [{"type": "Ready", "message": rng.choice(["ok"] * 30 + ["OOMKilled"])}]},
            }
            for i in range(3000)
        ],
    }
    h = pad.spill(json.dumps(doc), tool="k8s").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": 'OOMKilled|"tier": "b"', "max_matches": 150, "context": 1})
    assert res.ok and len(res.data["matches"]) == 150, res.text[:300]
    first = res.data["matches"][0]
    assert f">{first['line']} {first['path']}\t" in res.text  # on the match's own line, after its number
    for match in res.data["matches"]:
        path = match["path"]
        assert re.fullmatch(r"\$\.items\[\d+\]\.(metadata\.labels\.tier|status\.conditions\[0\]\.message)", path)
        value = pad.call_tool("get_in", {"handle": h, "path": path})
        assert value.ok and json.dumps(value.data) in match["text"], (match, value.text)
    item = int(res.data["matches"][-1]["path"].split("[")[1].split("]")[0])
    assert pad.call_tool("get_in", {"handle": h, "path": f"$.items[{item}].metadata.name"}).data == f"pod-{item}"
    # context lines carry no path; a text handle's matches none at all
    assert not any(re.match(r"\d+ \$", line) for line in res.text.splitlines())
    log = pad.spill("\n".join(f"{i} OOMKilled" for i in range(5000)), tool="log").handle
    text = pad.call_tool("grep", {"handle": log, "pattern": "OOMKilled", "max_matches": 2, "context": 0})
    assert text.text.startswith("1\t0 OOMKilled\n2\t1 OOMKilled") and "path" not in text.data["matches"][0]


def test_a_streamed_body_gets_the_same_paths(pad: Scratchpad, monkeypatch: pytest.MonkeyPatch) -> None:
    # a JSON output over STREAM_MIN_BYTES is written a segment at a time: the same layout
    monkeypatch.setattr(_format, "STREAM_MIN_BYTES", 200_000)
    doc = {"items": [{"id": i, "tags": ["x", "needle" if i % 997 == 0 else "y"]} for i in range(20_000)]}
    h = pad.spill(json.dumps(doc), tool="big").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": "needle", "context": 0})
    paths = [m["path"] for m in res.data["matches"]]
    assert paths == [f"$.items[{i}].tags[1]" for i in range(0, 20_000, 997)], paths[:5]


def test_with_no_time_for_paths_the_matches_come_without(pad: Scratchpad, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_text, "PATHS_MAX_S", 0.0)
    h = pad.spill(json.dumps({"items": [{"v": "needle"} for _ in range(3000)]}), tool="k").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": "needle", "max_matches": 3, "context": 0})
    assert res.ok and [m["line"] for m in res.data["matches"]] == [4, 7, 10]
    assert not any("path" in m for m in res.data["matches"]) and "$" not in res.text.split("---")[0]


def test_a_shown_path_is_the_item_a_long_one_is_not_shown_and_the_paths_yield_to_the_limit(pad: Scratchpad) -> None:
    # a 50,000-character key put the whole key in the text (grep_too_large with max_matches=1), and
    # 1,000 matches of short lines came back refused with paths where without them they fitted
    key = "K" * 50_000
    h = pad.spill(json.dumps({"items": [{key: {"x": "needle"}} for _ in range(3)]}), tool="t").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": "needle", "max_matches": 1, "context": 0})
    assert res.ok and res.text.startswith("5 $.items[0]\t"), res.text[:200]  # over 80: the item's path
    deep = pad.spill(json.dumps({"a": {key: ["needle"] * 3000}}), tool="t").handle
    res = pad.call_tool("grep", {"handle": deep, "pattern": "needle", "max_matches": 1, "context": 0})
    assert res.ok and res.text.startswith("4\t") and len(res.text) < 500, res.text[:200]  # over 120: not shown
    assert res.data["matches"][0]["path"] == f'$.a.{key}[0]'  # the data has it whole
    many = pad.spill(json.dumps({"items": [{"id": i, "tags": ["a", "b"]} for i in range(5000)]}), tool="t").handle
    res = pad.call_tool("grep", {"handle": many, "pattern": '"b"', "max_matches": 1000, "context": 0})
    assert res.ok and "paths left out to fit the call's limit" in res.text, res.text[-300:]
    assert res.text.startswith("7\t") and "path" in res.data["matches"][0]
    fewer = pad.call_tool("grep", {"handle": many, "pattern": '"b"', "max_matches": 100, "context": 0})
    assert fewer.ok and fewer.text.startswith("7 $.items[0].tags[1]\t"), fewer.text[:100]


def test_the_item_of_a_path_skips_keys_in_brackets() -> None:
    from jupyter_scratchpad.explore._linepaths import item_path

    assert item_path("$.items[17].status.phase") == "$.items[17]"
    assert item_path('$.a["b[3]c"].d') == '$.a["b[3]c"].d'
    assert item_path('$.a["x\\"]"][2].y[4].z') == '$.a["x\\"]"][2].y[4]'
    assert item_path("$.metadata.name") == "$.metadata.name" and item_path("$") == "$"


def test_paths_cut_short_by_time_are_said(pad: Scratchpad, monkeypatch: pytest.MonkeyPatch) -> None:
    # the cap is wall time: right after a spill, its workers took it, and matches lost their paths
    # with nothing in the output to say so
    h = pad.spill(json.dumps({"items": [{"v": "needle"} for _ in range(3000)]}), tool="k").handle
    monkeypatch.setattr(_text, "PATHS_MAX_S", 0.0)
    res = pad.call_tool("grep", {"handle": h, "pattern": "needle", "max_matches": 3, "context": 0})
    assert res.ok and "paths of 0 of the matches (their time ran out" in res.text, res.text[-300:]


def test_token_dense_paths_yield_to_the_limit_too(pad: Scratchpad) -> None:
    # the cheap pre-check assumed two characters a token: a key of 40 U+A66E had the grep refused
    key = "\ua66e" * 40
    doc = {"items": [{key: {"t": ["x", "y"]}} for _ in range(2000)]}
    h = pad.spill(json.dumps(doc, ensure_ascii=False), tool="t").handle
    res = pad.call_tool("grep", {"handle": h, "pattern": '"y"', "max_matches": 1000, "context": 0})
    assert res.ok and "paths left out to fit the call's limit" in res.text, res.text[-300:]


def test_the_memo_keeps_big_containers_only(pad: Scratchpad) -> None:
    # every item's opener was remembered (about 1,000 entries a grep), and copied at every grep
    h = pad.spill(json.dumps({"items": [{"id": i, "tags": ["a", "b"]} for i in range(20_000)]}), tool="t").handle
    for pattern in ('"a"', '"b"', '"id": 1'):
        assert pad.call_tool("grep", {"handle": h, "pattern": pattern, "max_matches": 300, "context": 0}).ok
    memo = next(iter(m for m in _text._PATH_MEMOS.values() if m))
    assert 0 < len(memo) <= 4, len(memo)  # the root, the items array
    res = pad.call_tool("grep", {"handle": h, "pattern": '"id": 19999', "context": 0})
    assert res.data["matches"][0]["path"] == "$.items[19999].id"
