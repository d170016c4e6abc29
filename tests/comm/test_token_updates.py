"""One wording for a stub's headline: the kernel's ``stub_bundle`` writes the TypeScript test's fixture.

When a large output's exact token count lands, JupyterLab rewrites the stub outputs in the
notebook (``labextension/src/tokens.ts``) so the saved file holds the exact count. The rewrite
must give exactly what ``stub_bundle`` renders for the exact stub: ``token_updates.json`` holds,
per case, the bundle displayed while counting and the bundle of the exact stub, both made here;
``labextension/tests/tokens.test.ts`` checks the TS rewrite turns one into the other.
``SCRATCHPAD_UPDATE_FIXTURES=1`` rewrites the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from comm_helpers import check

from jupyter_scratchpad.ipython._render import STUB_MIME, stub_bundle

FIXTURE = Path(__file__).parents[2] / "labextension" / "tests" / "fixtures" / "token_updates.json"

BASE: dict[str, Any] = {
    "handle": "cell_2_9f3a1c",
    "source_tool": "cell_2",
    "format": "json",
    "size": 2_097_152,
    "lines": 25_005,
    "tokens": 5_120,
    "tokens_exact": False,
    # markup and quotes in the preview: the HTML part escapes them, the rewrite must not touch them
    "preview": '{"kind": "<PodList>", "note": "a & b \'c\'"}',
    "preview_lines": 1,
    "note": "preview: lines 1-1 of 25,005",
    "schema": ["$: object with keys kind, items", "$.items: array(2,500 items)"],
    "next": [],
    "expires_at": 1_700_000_000.0,
}

# (name, changes to BASE, where note, exact count)
CASES: list[tuple[str, dict[str, Any], str | None, int]] = [
    ("no model", {}, None, 412_345),
    ("model", {"tokens_model": "gpt-4o"}, None, 39_871),
    ("estimate", {"tokens_model": "claude-<3>&'x'", "tokens_estimate": True}, None, 1_000_000),
    (
        "where note",
        {"format": "text", "schema": [], "handle": "stream_out_7", "tokens_model": "gpt-4o"},
        "(held after the 256 lines of it shown above)",
        6_001,
    ),
    ("no tokens yet", {"tokens": None, "tokens_model": "gpt-4o"}, None, 5_121),
]


def make_cases() -> list[dict[str, Any]]:
    cases = []
    for name, changes, where, exact in CASES:
        stub = {**BASE, **changes}
        before = stub_bundle(stub, where)
        after = stub_bundle({**stub, "tokens": exact, "tokens_exact": True}, where)
        assert "still counting" in before["text/plain"] and "still counting" not in after["text/plain"]
        cases.append({"name": name, "handle": stub["handle"], "tokens": exact, "before": before, "after": after})
    result: list[dict[str, Any]] = json.loads(json.dumps(cases))
    return result


def test_the_token_update_fixture_is_what_stub_bundle_renders() -> None:
    cases = make_cases()
    if os.environ.get("SCRATCHPAD_UPDATE_FIXTURES") == "1":
        FIXTURE.write_text(json.dumps(cases, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert FIXTURE.is_file(), "run with SCRATCHPAD_UPDATE_FIXTURES=1 to create the fixture"
    committed = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert committed == cases, (
        "stub_bundle's wording changed: rerun with SCRATCHPAD_UPDATE_FIXTURES=1, then check "
        "labextension/tests/tokens.test.ts (npm test) still passes"
    )


def test_the_exact_stub_differs_only_in_its_count() -> None:
    for case in make_cases():
        before, after = case["before"][STUB_MIME], case["after"][STUB_MIME]
        assert {k: v for k, v in before.items() if k not in ("tokens", "tokens_exact")} == {
            k: v for k, v in after.items() if k not in ("tokens", "tokens_exact")
        }
        assert after["tokens_exact"] is True and after["tokens"] == case["tokens"]


def test_a_displayed_stub_carries_its_where_note_for_the_card() -> None:
    # JupyterLab's card renders from the stub JSON alone: a stream's card left out why it was
    # held there ("after the 256 lines of it shown above"), which only text/plain said.
    [case] = [c for c in make_cases() if c["name"] == "where note"]
    where = CASES[3][2]
    for bundle in (case["before"], case["after"]):
        assert bundle[STUB_MIME]["where"] == where
        assert bundle["text/plain"].endswith("\n" + where)
        check("stub", bundle[STUB_MIME])
    # no note, no field (a stub reply, or an output held where it was)
    assert all("where" not in c["before"][STUB_MIME] for c in make_cases() if c["name"] != "where note")
