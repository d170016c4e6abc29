"""The lab's public names, and what importing it costs."""

from __future__ import annotations

import subprocess
import sys

import jupyter_scratchpad.lab as lab

DOCUMENTED = {
    "replay", "summary", "compare", "sweep", "PolicyComparison", "read_trace", "write_trace", "Trace",
    "TraceCall", "MalformedLine", "TraceFormatError", "TraceWarning", "FORMATS", "COLUMNS",
    "read_openai_chat", "read_openai_responses", "read_anthropic", "read_mcp_jsonrpc", "detect_transcript_format",
    "split_mcp_name", "render_stub", "decide_with_count",
}  # fmt: skip


def test_exports_are_the_documented_names() -> None:
    assert set(lab.__all__) == DOCUMENTED
    assert lab.__all__ == sorted(lab.__all__)
    for name in lab.__all__:
        assert getattr(lab, name) is not None


def test_errors_belong_to_the_tree_and_warnings_are_user_warnings() -> None:
    from jupyter_scratchpad import InvalidArgumentError, ScratchpadError

    assert issubclass(lab.TraceFormatError, InvalidArgumentError)
    assert issubclass(lab.TraceFormatError, ScratchpadError)
    assert issubclass(lab.TraceWarning, UserWarning)


def test_importing_the_lab_imports_neither_ipython_nor_matplotlib() -> None:
    code = (
        "import sys, jupyter_scratchpad.lab\n"
        "print(sorted(m for m in ('IPython', 'matplotlib', 'tqdm', 'ipywidgets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
