"""Token counts and spill decisions against plain tiktoken (issue 2).

Plain tiktoken is ``enc.encode_ordinary(text)`` on the whole text, with the same verified
``o200k_base`` data ours uses (``jupyter_scratchpad.tokens.load_encoding``): both sides count
with the same engine, so the difference is ours chunking at provably safe points, sending
pathological runs to bpe-openai's linear counter, and stopping early when only a threshold
matters. ``count_tokens`` caches counts by content hash, so each run counts a text with its own
first line (the baseline counts the same text): no run is a cache hit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from benchmarks._data import pod_list, prose_text, whitespace_text
from benchmarks._harness import check, result, time_side_by_side


def _encoding() -> Any:
    from jupyter_scratchpad.tokens import load_encoding

    return load_encoding("o200k_base")


def _mb(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.1f} MB" if n_bytes >= 100_000 else f"{n_bytes / 1e3:.1f} KB"


def _throughput(text_bytes: int, seconds: list[float]) -> str:
    from benchmarks._harness import median

    return f"{text_bytes / median(seconds) / 1e6:,.1f} MB/s" if seconds else "n/a"


def _count_row(label: str, text: str, runs: int) -> dict[str, Any]:
    from jupyter_scratchpad import count_tokens

    enc = _encoding()
    texts = [f"run {i}\n{text}" for i in range(runs + 1)]  # (the last: the warm-up call)
    size = len(texts[0].encode("utf-8"))

    def same(ours: int, base: int) -> None:
        check(ours == base, f"count of {label}: ours {ours} != tiktoken {base}")

    ours_s, base_s, failure = time_side_by_side(
        lambda i: count_tokens(texts[i]),
        lambda i: len(enc.encode_ordinary(texts[i])),
        runs,
        check_pair=same,
        baseline_errors=(BaseException,),  # pyo3's PanicException is a BaseException
    )
    tokens = count_tokens(texts[0])
    notes = (
        f"{tokens:,} tokens. Ours {_throughput(size, ours_s)}, exact (checked equal to tiktoken "
        "whenever tiktoken finishes); ours includes hashing the text for its cache."
    )
    if base_s:
        notes += f" tiktoken {_throughput(size, base_s)}."
    return result(
        f"count_tokens: {label}",
        ours_s,
        "plain tiktoken encode_ordinary",
        base_s,
        f"{_mb(size)}, {tokens:,} tokens",
        notes=notes,
        failure=failure,
    )


def _decision_row(
    name: str, results: list[Any], texts: list[str], runs: int, data: str, what: str
) -> dict[str, Any]:
    from jupyter_scratchpad import SpillPolicy

    policy = SpillPolicy()
    enc = _encoding()
    threshold = policy.threshold_for("k8s_list_pods")

    def agree(ours: Any, base: bool) -> None:
        check(ours.spill == base, f"{name}: ours says spill={ours.spill}, a full count says {base}")

    ours_s, base_s, failure = time_side_by_side(
        lambda i: policy.explain(results[i], tool="k8s_list_pods"),
        lambda i: len(enc.encode_ordinary(texts[i])) >= threshold,
        runs,
        check_pair=agree,
    )
    decision = policy.explain(results[0], tool="k8s_list_pods")
    notes = (
        f"{what} Decision: spill={decision.spill} by rule {decision.rule!r} ({decision.detail}). "
        "Ours counts only until the threshold is reached (or proves a text too short to reach "
        "it from its byte length); the baseline counts everything, then compares with "
        f"{threshold:,}."
    )
    return result(
        name, ours_s, "full tiktoken count >= threshold", base_s, data, notes=notes, failure=failure
    )


def _decision_rows(size: int, runs: int) -> list[dict[str, Any]]:
    from jupyter_scratchpad.store._format import as_text

    pods = pod_list(size, seed=7)
    texts = [pods.replace('"9123456"', f'"{9123456 + i}"', 1) for i in range(runs + 1)]  # (+1: the warm-up)
    rows = [
        _decision_row(
            f"spill decision: {_mb(len(texts[0]))} JSON text",
            texts,
            texts,
            runs,
            f"k8s PodList as JSON text, {_mb(len(texts[0]))}",
            "The tool returned text (as MCP tools do).",
        )
    ]
    objects = [json.loads(t) for t in texts]
    # The baseline must first render the object as the model would see it, as ours does.
    rows.append(
        _decision_row(
            f"spill decision: {_mb(len(texts[0]))} JSON as a Python object",
            objects,
            [as_text(o) for o in objects],
            runs,
            f"k8s PodList as a dict, {_mb(len(texts[0]))} as JSON",
            "The tool returned a dict; ours includes rendering it to JSON text (json.dumps), the "
            "baseline's time does not.",
        )
    )
    small = [t[:4000] for t in _small_outputs(runs + 1)]
    rows.append(
        _decision_row(
            "spill decision: 4 KB output (passes through)",
            small,
            small,
            runs,
            "4 KB of a PodList",
            "A small output, the common case.",
        )
    )
    return rows


def _small_outputs(runs: int) -> list[str]:
    base = pod_list(8_000, seed=3)
    return [f"{i}{base}" for i in range(runs)]


def run(quick: bool) -> list[dict[str, Any]]:
    runs = 3 if quick else 5
    size = 1_000_000 if quick else 10_000_000
    a_run = 1_000_000 if quick else 4_000_000
    cases: list[tuple[str, Callable[[], str]]] = [
        ("English prose", lambda: prose_text(size, seed=11)),
        ("k8s PodList JSON", lambda: pod_list(size, seed=12)),
        (f"'A' * {a_run:,}", lambda: "A" * a_run),
        ("1M whitespace run (spaces and tabs)", lambda: whitespace_text(1_000_000)),
        ("500K whitespace run (spaces and tabs)", lambda: whitespace_text(500_000)),
    ]
    rows = _decision_rows(size, runs)
    for label, make in cases:
        rows.append(_count_row(label, make(), runs))
    return rows
