"""Helpers of the policy-lab tests: a generated trace whose answers are known by construction."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"


def words(n: int, word: str = "data") -> str:
    """A text of exactly ``n`` tokens in o200k_base and cl100k_base ("data data data ...")."""
    return " ".join([word] * n)


@dataclass
class KnownCall:
    record: dict[str, Any]
    tokens: int  # exact tokens of the result (o200k_base and cl100k_base alike)
    spill: bool
    rule: str
    threshold: int | None


@dataclass
class KnownTrace:
    path: Path
    calls: list[KnownCall] = field(default_factory=list)

    def tokens_by_tool(self) -> dict[tuple[str | None, str], int]:
        out: dict[tuple[str | None, str], int] = {}
        for c in self.calls:
            key = (c.record.get("server"), c.record["tool"])
            out[key] = out.get(key, 0) + c.tokens
        return out


# The policy the known answers are for: 512 for k8s listings (any server), 2,000 for search on
# the "web" server only, 5,120 (the default) for everything else.
KNOWN_POLICY_TOML = """
[agent.scratchpad]
enabled = true
opt_in = false
min_tokens = 5120

[agent.scratchpad.patterns]
"k8s_list_*" = { min_tokens = 512 }

[mcp.servers.web.scratchpad]
"search*" = { min_tokens = 2000 }
"""


def _known_calls(result_dir: Path) -> list[KnownCall]:
    (result_dir / "big.txt").write_text(words(7000, "log"), encoding="utf-8")
    k = KnownCall
    return [
        # thresholds are inclusive: 511 stays, 512 spills
        k({"server": "k8s", "tool": "k8s_list_pods", "result": words(511)}, 511, False, "below_threshold", 512),
        k({"server": "k8s", "tool": "k8s_list_pods", "result": words(512)}, 512, True, "threshold", 512),
        k({"server": "k8s", "tool": "k8s_list_pods", "result": words(6000, "pod")}, 6000, True, "threshold", 512),
        k({"server": "web", "tool": "search", "result": words(1999)}, 1999, False, "below_threshold", 2000),
        k({"server": "web", "tool": "search", "result": words(2000, "row")}, 2000, True, "threshold", 2000),
        # the same tool on another server gets the default threshold
        k({"server": "docs", "tool": "search", "result": words(2000, "row")}, 2000, False, "below_threshold", 5120),
        k({"server": "docs", "tool": "search", "result": words(5120, "node")}, 5120, True, "threshold", 5120),
        k({"server": "logs", "tool": "fetch_logs", "result_path": "results/big.txt"}, 7000, True, "threshold", 5120),
        # rules that no size overrides
        k({"server": "logs", "tool": "fetch_logs", "is_error": True, "result": words(9000)}, 9000, False, "is_error", None),
        k(
            {"server": "art", "tool": "render", "metadata": {"artifact_id": "a1"}, "result": words(8000)},
            8000,
            False,
            "oob_metadata",
            None,
        ),
        k({"tool": "grep", "result": words(8000)}, 8000, False, "internal_tool", None),
        k({"server": "fs", "tool": "write_file", "result_class": "effect", "result": words(8000)}, 8000, False,
          "result_class", None),
        # the same large result twice: counted once
        k({"server": "k8s", "tool": "k8s_list_pods", "result": words(6000, "pod")}, 6000, True, "threshold", 512),
    ]  # fmt: skip


def write_known_trace(tmp_path: Path) -> KnownTrace:
    (tmp_path / "results").mkdir()
    calls = _known_calls(tmp_path / "results")
    path = tmp_path / "known.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for call in calls:
            fh.write(json.dumps(call.record) + "\n")
    return KnownTrace(path, calls)
