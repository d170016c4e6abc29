"""schema summarises objects keyed by ids as one {*} row (issue 17 §3), and {*} paths read them."""

from __future__ import annotations

import json
import re

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.tokens import count_tokens

EVENTS = {
    str(138586341 + 4 * i): {
        "id": 138586341 + 4 * i,
        "name": f"Event {i}",
        "subTopicIds": [1, 2],
        "topicIds": [3],
        "logo": None if i % 3 else "x.png",
        "description": None,
    }
    for i in range(2000)
}
CATALOG = {
    "areaNames": {str(i): f"Area {i}" for i in range(40)},
    "events": EVENTS,
    "performances": [{"id": i, "eventId": 138586341} for i in range(300)],
}


def test_an_id_keyed_object_is_one_row_and_its_values_are_readable(pad: Scratchpad) -> None:
    h = pad.spill(json.dumps(CATALOG), tool="catalog").handle
    res = pad.call_tool("schema", {"handle": h})
    assert res.ok and count_tokens(res.text) < 1000, res.text
    assert '$.events                    map of 2,000 keys (e.g. "138586341", "138586345", "138586349")' in res.text
    assert "$.events{*}.name" in res.text and '$.events["138586345"]' not in res.text
    assert "$.areaNames{*}" in res.text
    assert pad.call_tool("get_in", {"handle": h, "path": '$.events["138586345"].name'}).data == "Event 1"
    schema = pad.call_tool("item_schema", {"handle": h, "path": "$.events{*}"})
    assert (
        schema.ok and schema.data["total_items"] == 2000 and {k["key"] for k in schema.data["keys"]} >= {"id", "name"}
    )
    rows = pad.call_tool("iterate_over", {"handle": h, "path": "$.events{*}", "fields": "id,name", "limit": 2})
    assert rows.ok and '[1,138586345,"Event 1"]' in rows.text
    for call in res.text.split("next: ")[1].split("\n")[0].split("; "):
        assert "{*}" in call  # the suggested next steps run
    bad = pad.call_tool("item_schema", {"handle": h, "path": "$.performances{*}"})
    assert not bad.ok and bad.error["error"] == "not_an_object"


def test_a_small_or_mixed_object_keeps_its_keys(pad: Scratchpad) -> None:
    doc = {
        "config": {f"opt_{c}": {"on": True} for c in "abcdefghij"},
        "mixed": {str(i): (i if i % 2 else "x") for i in range(30)},
    }
    h = pad.spill(
        json.dumps(doc) + " " * 30000,
        tool="cfg",
    ).handle
    text = pad.call_tool("schema", {"handle": h}).text
    assert "$.config.opt_a" in text and "map of" not in text.split("$.mixed")[0]


def test_item_schema_shows_a_nested_copy_of_the_item_shape_once(pad: Scratchpad) -> None:
    def tweet(i: int, rt: bool) -> dict:
        t = {
            "id": i,
            "text": f"t{i}",
            "user": {"id": i, "name": f"u{i}", "screen_name": f"s{i}"},
            "retweet_count": i,
            "lang": "en",
            "created_at": "now",
            "source": "web",
            "truncated": False,
        }
        if rt:
            t["retweeted_status"] = tweet(i + 10**6, False)
        return t

    h = pad.spill(json.dumps({"statuses": [tweet(i, i % 2 == 0) for i in range(400)]}), tool="search").handle
    res = pad.call_tool("item_schema", {"handle": h, "path": "$.statuses"})
    assert res.ok and "retweeted_status.user.name" not in res.text
    assert re.search(r"retweeted_status\s+object: same shape as \$\.statuses\[\*\] \(11 keys\)\s+200/400", res.text)
    assert re.search(r"\nuser\s+object\s+all\n", res.text)  # a parent object has its own row
    assert "user.screen_name" in res.text  # a nested object of another shape keeps its keys


def test_item_schema_lists_the_values_of_a_field_that_takes_few(pad: Scratchpad) -> None:
    pods = [
        {
            "phase": ["Running", "Pending", "Failed"][i % 3 if i < 30 else 0],
            "name": f"pod-{i}",
            "note": "a, b" if i % 2 else "plain",
        }
        for i in range(300)
    ]
    h = pad.spill(json.dumps({"items": pods}), tool="pods").handle
    res = pad.call_tool("item_schema", {"handle": h, "path": "items"})
    rows = {r["key"]: r for r in res.data["keys"]}
    assert rows["phase"]["values"] == [["Running", 280], ["Failed", 10], ["Pending", 10]]
    assert "values: Running ×280, Failed ×10, Pending ×10" in res.text
    assert "values" not in rows["name"]  # 300 distinct names: not a list of values
    assert '"a, b" ×150' in res.text  # a value with a comma is quoted


def test_the_schema_is_computed_once_after_the_spill_and_kept_beside_the_body(pad: Scratchpad) -> None:
    """Parse once: a JSON spill's default schema is built from the value the spill parsed (on a
    worker thread) and saved with the body; a cold call anywhere reads it, and says the same as
    one computed from scratch."""
    import json as _json

    from jupyter_scratchpad.explore import _schema

    text = _json.dumps({"items": [{"id": i, "tags": ["a"] * (i % 3), "meta": {"n": i}} for i in range(4000)]})
    r = pad.intercept(text, tool="rows")
    assert r.spilled and pad.wait_for_counts(60)
    entry = pad.store.require_entry(pad.scope, "handle", r.handle)  # type: ignore[arg-type]
    saved = pad.store.reader(entry).directory / _schema._SCHEMA_FILE.format(depth=4)
    assert saved.exists()
    warm = pad.call_tool("schema", {"handle": r.handle}).text
    _schema._SCHEMAS.clear()  # as a fresh process would be: only the file is left
    from_file = pad.call_tool("schema", {"handle": r.handle}).text
    saved.unlink()
    _schema._SCHEMAS.clear()
    from_scratch = pad.call_tool("schema", {"handle": r.handle}).text
    strip = lambda t: t.rsplit("\n---", 1)[0]  # noqa: E731 - the footer counts tokens left
    assert strip(warm) == strip(from_file) == strip(from_scratch) and "$.items[*].meta.n" in warm
    assert saved.exists()  # written again by the call that computed it


def test_item_schema_of_each_array_is_counted_after_the_spill_and_kept(pad: Scratchpad) -> None:
    import json as _json

    from jupyter_scratchpad.explore import _json as json_tools

    doc = {
        "kind": "List",
        "items": [
            {"id": i, "phase": ["Running", "Pending"][i % 2], **({"x": 1} if i % 7 else {})} for i in range(3000)
        ],
    }
    r = pad.intercept(_json.dumps(doc), tool="rows")
    assert r.spilled and pad.wait_for_counts(60)
    entry = pad.store.require_entry(pad.scope, "handle", r.handle)  # type: ignore[arg-type]
    files = sorted(p.name for p in pad.store.reader(entry).directory.glob("items-*.json"))
    assert len(files) == 1
    saved = pad.call_tool("item_schema", {"handle": r.handle, "path": "$.items"}).text
    json_tools._ITEM_COUNTS.clear()  # a fresh process: only the file
    from_file = pad.call_tool("item_schema", {"handle": r.handle, "path": "items"}).text
    for f in pad.store.reader(entry).directory.glob("items-*.json"):
        f.unlink()
    json_tools._ITEM_COUNTS.clear()
    computed = pad.call_tool("item_schema", {"handle": r.handle, "path": "$.items"}).text
    window = pad.call_tool("item_schema", {"handle": r.handle, "path": "$.items", "limit": 10}).text
    strip = lambda t: t.rsplit("\n---", 1)[0]  # noqa: E731
    assert strip(saved) == strip(from_file) == strip(computed)
    assert "2571/3000" in saved  # x is in every item but each 7th
    assert "items 0-9 of 3,000" in window and "2571/3000" not in window  # a window is not the whole


def test_a_schema_saved_by_an_older_version_is_computed_again(pad: Scratchpad) -> None:
    # v1 schema files of documents nested past the body's 64-level cut had line ranges past the
    # body's end; files are versioned by name, and a v1 file beside a body is never read
    import json as _json

    from jupyter_scratchpad.explore import _schema

    r = pad.intercept(_json.dumps({"items": [{"id": i} for i in range(3000)]}), tool="rows")
    assert r.spilled and pad.wait_for_counts(60)
    entry = pad.store.require_entry(pad.scope, "handle", r.handle)  # type: ignore[arg-type]
    directory = pad.store.reader(entry).directory
    stale = {"rows": [{"path": "$", "kind": "stale-v1-row", "where": "lines 1-99999"}], "truncated": 0}
    (directory / "schema-d4.json").write_text(_json.dumps(stale))
    (directory / _schema._SCHEMA_FILE.format(depth=4)).unlink()
    _schema._SCHEMAS.clear()
    text = pad.call_tool("schema", {"handle": r.handle}).text
    assert "stale-v1-row" not in text and "$.items[*].id" in text


def test_a_key_in_every_item_says_all_and_a_partial_count_stays(pad: Scratchpad) -> None:
    # "2000/2000" on every row was a sixth of a records array's schema; "all" says it in a token
    orders = [
        {"id": i, "customer": {"id": f"c{i}", "vip": i % 2 == 0}, **({"refund": {"amount": 1}} if i == 7 else {})}
        for i in range(2000)
    ]
    h = pad.spill(json.dumps(orders), tool="orders").handle
    schema = pad.call_tool("schema", {"handle": h})
    assert schema.ok and "2000/2000" not in schema.text, schema.text
    assert re.search(r"\n\$\[\*\]\.customer\.vip +bool +all\n", schema.text)
    assert re.search(r"\n\$\[\*\]\.refund +object\(1 key\) +1/2000\n", schema.text)
    # in every refund, but not in every item: its count stays relative to its parent
    assert re.search(r"\n\$\[\*\]\.refund\.amount +number +1/1\n", schema.text)
    items = pad.call_tool("item_schema", {"handle": h, "path": "$"})
    assert items.ok and re.search(r"\ncustomer\.id +string +all\n", items.text), items.text
    assert re.search(r"\nrefund\.amount +number +1/2000\n", items.text)
    row = next(r for r in items.data["keys"] if r["key"] == "customer.id")
    assert (row["present"], row["of"]) == (2000, 2000)  # the data keeps the numbers


def test_all_is_said_only_when_every_item_is_an_object_with_the_key(pad: Scratchpad) -> None:
    # null and 5 among the items: "a" is in both objects, not in all four items
    h = pad.spill(json.dumps({"items": [{"a": 1}, None, {"a": 2}, 5] * 600}), tool="t").handle
    schema = pad.call_tool("schema", {"handle": h})
    assert re.search(r"\n\$\.items\[\*\]\.a +number +1200/1200\n", schema.text), schema.text
    items = pad.call_tool("item_schema", {"handle": h, "path": "$.items"})
    assert re.search(r"\na +number +1200/2400", items.text), items.text
    short = pad.call_tool("item_schema", {"handle": pad.spill(json.dumps([{"a": i} for i in range(3000)]), tool="t").handle})
    header, row = short.text.splitlines()[1:3]
    assert header.index("type") == row.index("number"), short.text  # (keys shorter than "key": aligned)
