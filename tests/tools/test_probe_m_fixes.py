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
