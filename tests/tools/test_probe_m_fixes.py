"""Probe M's findings on what a model reads (lean, and honest about what it is), held fixed."""

from __future__ import annotations

from jupyter_scratchpad import ScratchStore


def test_a_claude_pads_footer_says_its_counts_are_estimates(store: ScratchStore) -> None:
    # the README: Claude counts are "labelled an estimate wherever shown"; the stub said so, the
    # footer of every call did not
    text = "\n".join(f"line {i}" for i in range(9000))
    for model, said in (("claude-sonnet-4-5", True), ("gpt-4o", False)):
        pad = store.scratchpad(f"r-{model}", "a", model=model)
        h = pad.intercept(text, tool="t").handle
        small = pad.call_tool("head", {"handle": h, "lines": 2}).text.rsplit("\n", 1)[-1]
        large = pad.call_tool("head", {"handle": h, "lines": 200}).text.rsplit("\n", 1)[-1]
        assert ("tokens (estimate)," in small) is said, small
        assert ("tokens (estimates):" in large) is said, large
        assert pad.call_tool("head", {"handle": h, "lines": 2}).tokens == pad.tokenizer.count(
            pad.call_tool("head", {"handle": h, "lines": 2}).text
        )


def test_documents_in_a_lists_strings_are_one_stub_line(store: ScratchStore) -> None:
    # three lines ("$[0].body: embedded markdown (16 lines)", "$[1].body: …", "$[2].body: …") said
    # one thing: the bodies hold markdown; 22 of a stub's ~180 tokens
    import json

    body = "## Steps\n\n- one\n- two\n\n## Expected\n\nit works\n\n## Actual\n\nit fails\n"
    issues = [{"number": i, "title": f"Bug {i}", "body": body + ("\nmore\n" if i % 2 else "")} for i in range(100)]
    pad = store.scratchpad("r", "a")
    stub = pad.intercept(json.dumps(issues), tool="gh_issues", force=True).content
    lines = [line for line in stub.splitlines() if "embedded markdown" in line]
    assert lines == ["  $[*].body: embedded markdown (20+ of these strings, 13-15 lines)"], stub[:600]
    one = pad.intercept(json.dumps({"a": {"doc": body * 20}, "items": list(range(3000))}), tool="one", force=True).content
    assert "  $.a.doc: embedded markdown (" in one  # a single document keeps its own path
