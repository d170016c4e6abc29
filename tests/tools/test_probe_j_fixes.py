"""Probe J's defects (an agent integrator over MCP, and an attacker), each held fixed."""

from __future__ import annotations

from jupyter_scratchpad import Scratchpad


def test_a_refused_write_changes_nothing(pad: Scratchpad) -> None:
    # its suggestion (the same write, ttl_s at its default) was checked by running it: the
    # refused call wrote the note, over the one kept under the key
    assert pad.call_tool("scratch_write", {"key": "keep", "value": "original"}).ok
    for bad in (-1, 0, 1e308, "forever"):
        for key in ("keep", "plan"):
            res = pad.call_tool("scratch_write", {"key": key, "value": "NEW", "ttl_s": bad})
            assert res.error["error"] == "invalid_argument", res.error
            (fix,) = res.error["suggestions"]  # still offered: checked, not run
            assert fix["tool"] == "scratch_write" and "ttl_s" not in fix["arguments"]
    assert pad.call_tool("scratch_read", {"key": "keep"}).data == "original"
    assert pad.call_tool("scratch_read", {"key": "plan"}).error["error"] == "unknown_key"
    fix = pad.call_tool("scratch_write", {"key": "plan", "value": "step 1", "ttl_s": -1}).error["suggestions"][0]
    assert pad.call_tool(fix["tool"], fix["arguments"]).ok  # and it runs, as suggested
    assert pad.call_tool("scratch_read", {"key": "plan"}).data == "step 1"


def test_a_bad_regex_is_said_in_the_models_own_words(pad: Scratchpad) -> None:
    h = pad.intercept("\n".join(f"line {i} (x" for i in range(3000)), tool="t", force=True).handle
    res = pad.call_tool("grep", {"handle": h, "pattern": "(x", "max_matches": 2})
    assert res.ok and "not a valid regex (missing ): (x;" in res.text, res.text[:300]
    assert "(?m)" not in res.text  # the tool's own prefix was shown as part of the pattern
