"""The spill-policy lab: replay tool-output traces, compare policies, plot the trade-off.

>>> from jupyter_scratchpad import SpillPolicy
>>> from jupyter_scratchpad.lab import compare, replay, summary, sweep
>>> df = replay("trace.jsonl", SpillPolicy(patterns={"k8s_list_*": 512}))  # doctest: +SKIP
>>> summary(df)  # doctest: +SKIP
>>> sweep("trace.jsonl", thresholds=[512, 2048, 8192]).figure  # doctest: +SKIP

A trace is JSON Lines, one tool call a line (see the README, "Spill-policy lab"), or a conversation log
of OpenAI Chat Completions, OpenAI Responses or Anthropic Messages. Needs pandas, matplotlib and
tqdm (the ``lab`` extra).
"""

from ._compare import PolicyComparison, compare, sweep
from ._measure import render_stub
from ._replay import COLUMNS, TraceWarning, decide_with_count, replay, summary
from ._sources import FORMATS, read_trace
from ._trace import MalformedLine, Trace, TraceCall, TraceFormatError, write_trace
from ._transcripts import (
    detect_transcript_format,
    read_anthropic,
    read_mcp_jsonrpc,
    read_openai_chat,
    read_openai_responses,
    split_mcp_name,
)

__all__ = [
    "COLUMNS",
    "FORMATS",
    "MalformedLine",
    "PolicyComparison",
    "Trace",
    "TraceCall",
    "TraceFormatError",
    "TraceWarning",
    "compare",
    "decide_with_count",
    "detect_transcript_format",
    "read_anthropic",
    "read_mcp_jsonrpc",
    "read_openai_chat",
    "read_openai_responses",
    "read_trace",
    "render_stub",
    "replay",
    "split_mcp_name",
    "summary",
    "sweep",
    "write_trace",
]
