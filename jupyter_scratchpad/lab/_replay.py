"""``replay``: what a policy would have done to each call of a trace, as a DataFrame; ``summary``."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..errors import InvalidArgumentError
from ..spill import SpillDecision, SpillPolicy, bound_error_text
from ..store import as_text
from ._measure import Measurer, content_key
from ._progress import progress_bar
from ._sources import read_trace
from ._trace import Trace, TraceCall, TraceFormatError

__all__ = ["COLUMNS", "TraceWarning", "decide_with_count", "replay", "summary"]

COLUMNS = [
    "line",
    "call_id",
    "server",
    "tool",
    "result_class",
    "is_error",
    "decision",
    "spilled",
    "rule",
    "threshold",
    "pattern",
    "size_bytes",
    "tokens",
    "stub_tokens",
    "context_tokens",
    "tokens_saved",
    "detail",
    "problem",
    "source",
]
INT_COLUMNS = ["line", "threshold", "size_bytes", "tokens", "stub_tokens", "context_tokens", "tokens_saved"]
BOOL_COLUMNS = ["is_error", "spilled"]
# The rules a size decides; the others (is_error, oob_metadata, internal_tool, result_class) do not.
SIZE_RULES = frozenset({"threshold", "below_threshold", "bytes_threshold"})


class TraceWarning(UserWarning):
    """Lines of a trace were skipped, or some rows could not be measured (details in ``df.attrs``)."""


def as_policy(policy: SpillPolicy | str | os.PathLike[str] | None) -> SpillPolicy:
    """A ``SpillPolicy``, from itself, Aura TOML (text or a file), or None (the default policy)."""
    if policy is None:
        return SpillPolicy()
    if isinstance(policy, SpillPolicy):
        return policy
    if isinstance(policy, (str, os.PathLike)):
        return SpillPolicy.from_toml(policy)
    raise TraceFormatError(f"a policy is a SpillPolicy or Aura TOML (text or path), not {type(policy).__name__}")


@dataclass
class Measured:
    """One call with what does not depend on the policy: its text, size and exact tokens."""

    call: TraceCall
    text: str = ""
    key: bytes = b""
    size_bytes: int = 0


def measure(call: TraceCall) -> Measured:
    if not call.available:
        return Measured(call)
    text = as_text(call.result)
    return Measured(call, text, content_key(text), len(text.encode("utf-8", "surrogatepass")))


def _explain_args(call: TraceCall, model: str) -> dict[str, Any]:
    return {
        "tool": call.tool,
        "server": call.server,
        "result_class": call.result_class,
        "metadata": call.metadata,
        "is_error": call.is_error,
        "model": model,
    }


def decide_with_count(policy: SpillPolicy, call: TraceCall, size_bytes: int, tokens: int, model: str) -> SpillDecision:
    """The decision ``policy.explain`` would give, from an exact count already made.

    The rules that do not depend on the size, and the threshold that applies, come from the
    core itself (``explain`` on an empty text counts nothing); only the size comparison of rule 5
    is made here, so that a sweep over many policies tokenizes each result once. ``explain``'s own
    early exit does not help a replay: every row needs its exact count anyway (``tokens``,
    ``tokens_saved``, and the stub quotes it), and the early exit would add a partial count per
    spilled result and policy. ``tests/lab`` checks this equals ``explain`` for every rule.
    """
    try:
        pre = policy.explain("", text="", **_explain_args(call, model))
    except InvalidArgumentError as exc:  # a trace line's unknown result_class: never spilled, and why
        return SpillDecision(False, "result_class", detail=exc.message)
    if pre.rule not in SIZE_RULES:
        return pre
    threshold, pattern = pre.threshold, pre.pattern
    if policy.min_bytes is not None and size_bytes >= policy.min_bytes:
        detail = f"{size_bytes} bytes >= min_bytes {policy.min_bytes}"
        return SpillDecision(True, "bytes_threshold", None, False, threshold, size_bytes, pattern, detail)
    assert threshold is not None
    if tokens >= threshold:
        detail = f"{tokens} tokens >= {threshold}"
        return SpillDecision(True, "threshold", tokens, True, threshold, size_bytes, pattern, detail)
    detail = f"{tokens} tokens < {threshold}"
    return SpillDecision(False, "below_threshold", tokens, True, threshold, size_bytes, pattern, detail)


def build_row(
    item: Measured, decision: SpillDecision | None, tokens: int | None, policy: SpillPolicy, measurer: Measurer
) -> dict[str, Any]:
    """One row of a replay: the decision, and what enters the context because of it."""
    call = item.call
    row: dict[str, Any] = {
        "line": call.line,
        "call_id": call.call_id,
        "server": call.server,
        "tool": call.tool,
        "result_class": call.result_class,
        "is_error": call.is_error,
        "problem": call.problem,
        "source": call.source,
    }
    if decision is None or tokens is None:
        return {**row, "decision": "missing", "spilled": False, "rule": None, "detail": "the result could not be read"}
    stub_tokens = None
    if decision.spill:
        # the count the decision stopped at, as the pad's: the threshold, or min_tokens for a spill by bytes
        limit = decision.threshold if decision.rule == "threshold" else max(1, policy.min_tokens)
        stub_tokens = measurer.stub_tokens(
            call.result, item.text, item.key, tool=call.tool, server=call.server, size_bytes=item.size_bytes,
            tokens=tokens, limit=limit if limit is not None else max(1, policy.min_tokens),
        )  # fmt: skip
        context = stub_tokens
    elif decision.rule == "is_error":
        bounded = bound_error_text(item.text, policy.error_max_bytes)
        context = tokens if bounded == item.text else measurer.text_tokens(bounded)
    else:
        context = tokens
    return {
        **row,
        "decision": "spill" if decision.spill else "keep",
        "spilled": decision.spill,
        "rule": decision.rule,
        "threshold": decision.threshold,
        "pattern": decision.pattern,
        "size_bytes": item.size_bytes,
        "tokens": tokens,
        "stub_tokens": stub_tokens,
        "context_tokens": context,
        "tokens_saved": tokens - context,
        "detail": decision.detail,
    }


def frame(rows: list[dict[str, Any]], columns: list[str] = COLUMNS) -> pd.DataFrame:
    """Rows as a DataFrame with fixed dtypes (nullable integers, strings with ``<NA>``), however many rows."""
    df = pd.DataFrame(rows, columns=columns)
    for name in columns:
        if name in INT_COLUMNS:
            df[name] = df[name].astype("Int64")
        elif name in BOOL_COLUMNS:
            df[name] = df[name].astype(bool)
        else:
            df[name] = df[name].astype(object).astype("string")
    return df


def iterate(trace: Trace, *, desc: str, progress: bool | None, on_error: str) -> Iterator[TraceCall]:
    """The calls of ``trace`` with a progress bar; ``on_error="raise"`` stops at a malformed line."""
    if on_error not in ("skip", "raise"):
        raise TraceFormatError(f"on_error must be 'skip' or 'raise', not {on_error!r}")
    bar = progress_bar(trace.total, unit=trace.unit, desc=desc, enabled=progress)
    done = 0
    try:
        for call in trace:
            _check_malformed(trace, on_error)
            bar.update(trace.consumed - done)
            done = trace.consumed
            yield call
        _check_malformed(trace, on_error)
        bar.update(trace.consumed - done)
    finally:
        bar.close()


def _check_malformed(trace: Trace, on_error: str) -> None:
    if on_error == "raise" and trace.malformed:
        bad = trace.malformed[0]
        raise TraceFormatError(f"{trace.name}: {bad}", path=str(trace.path or trace.name), line=bad.line)


def report(
    df: pd.DataFrame, trace: Trace, model: str, measurer: Measurer, *, stacklevel: int = 3, **attrs: Any
) -> pd.DataFrame:
    """Attach what happened to ``df.attrs`` and warn, once, about skipped lines and bad rows."""
    calls = df
    if "policy" in df.columns and len(df):
        calls = df[df["policy"] == df["policy"].iloc[0]]  # count calls, not (policy, call) pairs
    problems = int(calls["problem"].notna().sum())
    missing = int((calls["decision"] == "missing").sum())
    df.attrs.update(
        trace=trace.name,
        format=trace.format,
        model=model,
        calls=len(calls),
        malformed=[{"line": m.line, "message": m.message} for m in trace.malformed],
        skipped_lines=len(trace.malformed),
        missing_results=missing,
        problems=problems,
        tokens_counted=measurer.counted,
        seconds=dict(measurer.seconds),
        **attrs,
    )
    parts = list(trace.notes)
    if not len(calls):  # nothing to show: say why, whatever else is said
        if trace.malformed:
            why = f" (all {len(trace.malformed)} non-blank line(s) were skipped)"
        else:
            why = "" if trace.notes else " (it holds no tool results)"
        parts.insert(0, f"no tool calls were read{why}: the replay is empty")
    if trace.malformed:
        shown = "; ".join(str(m) for m in trace.malformed[:5])
        more = f"; and {len(trace.malformed) - 5} more" if len(trace.malformed) > 5 else ""
        parts.append(f"skipped {len(trace.malformed)} malformed line(s) ({shown}{more})")
    if missing:
        parts.append(f"{missing} result(s) could not be read (see the 'problem' column)")
    if parts:
        warnings.warn(f"{trace.name}: " + "; ".join(parts), TraceWarning, stacklevel=stacklevel)
    return df


def replay(
    trace: Any,
    policy: SpillPolicy | str | os.PathLike[str] | None = None,
    model: str = "gpt-4o",
    *,
    format: str = "auto",
    preview_lines: int = 20,
    progress: bool | None = None,
    on_error: str = "skip",
) -> pd.DataFrame:
    """What ``policy`` would do to each tool call of ``trace``: one row per call.

    >>> df = replay("trace.jsonl", SpillPolicy(patterns={"k8s_*": 512}), model="gpt-4o")  # doctest: +SKIP
    >>> summary(df)  # doctest: +SKIP

    ``trace`` is anything ``read_trace`` opens; ``policy`` a ``SpillPolicy`` or Aura TOML (text
    or path). Each result is counted once, exactly (the table needs exact counts; the same text
    twice is counted once), and decided by the core's rules (``decide_with_count``): ``tokens`` is
    the exact count of the result, ``stub_tokens`` that of the stub that would
    replace it (the pad's stub with ``preview_lines``), ``context_tokens`` what enters the context
    (the stub, the bounded error, or the result) and ``tokens_saved`` the difference. Malformed
    lines are skipped, counted in ``df.attrs["malformed"]`` and warned about (``TraceWarning``);
    ``on_error="raise"`` raises ``TraceFormatError`` instead. A result that cannot be read keeps
    its row (``decision == "missing"``, reason in ``problem``). ``progress``: True, False, or None
    for a bar only when the replay is slow.
    """
    policy = as_policy(policy)
    measurer = Measurer(model, preview_lines)  # (checks both before the trace is read)
    source = read_trace(trace, format)
    rows = replay_rows(source, {"": policy}, model, measurer, desc=f"replay {source.name}", progress=progress,
                       on_error=on_error)  # fmt: skip
    for row in rows:
        del row["policy"]
    return report(frame(rows), source, model, measurer, policy=policy)


def replay_rows(
    source: Trace,
    policies: dict[str, SpillPolicy],
    model: str,
    measurer: Measurer,
    *,
    desc: str,
    progress: bool | None,
    on_error: str,
) -> list[dict[str, Any]]:
    """One pass over ``source``: each result counted once, then decided by every policy."""
    rows: list[dict[str, Any]] = []
    for call in iterate(source, desc=desc, progress=progress, on_error=on_error):
        item = measure(call)
        tokens = measurer.tokens(item.text, item.key) if call.available else None
        for name, policy in policies.items():
            decision = None if tokens is None else decide_with_count(policy, call, item.size_bytes, tokens, model)
            rows.append({"policy": name, **build_row(item, decision, tokens, policy, measurer)})
    return rows


# The per-group totals that summary() and compare()'s policy table share.
TOTALS: dict[str, tuple[str, str]] = {
    "calls": ("tool", "size"),
    "spills": ("spilled", "sum"),
    "tokens": ("tokens", "sum"),
    "context_tokens": ("context_tokens", "sum"),
    "tokens_saved": ("tokens_saved", "sum"),
    "stub_tokens": ("stub_tokens", "sum"),
}


def summary(df: pd.DataFrame, *, totals: bool = False) -> pd.DataFrame:
    """Per server and tool: calls, spills, tokens of the results, what enters the context, tokens saved.

    ``totals`` adds a last row over everything. Rows of ``compare``/``sweep`` (with a ``policy``
    column) are grouped by policy first.
    """
    keys = (["policy"] if "policy" in df.columns else []) + ["server", "tool"]
    measured = df.assign(
        missing=df["decision"] == "missing",
        problems=df["problem"].notna(),
        server=df["server"].astype(object).where(df["server"].notna(), "(none)"),
    )
    grouped = measured.groupby(keys, dropna=False, sort=False)
    out = grouped.agg(
        **TOTALS,
        max_tokens=("tokens", "max"),
        thresholds=("threshold", _distinct),
        missing=("missing", "sum"),
        problems=("problems", "sum"),
    )
    out["spills"] = out["spills"].astype("int64")
    out = out.sort_values(["tokens", "calls"], ascending=False, kind="stable")
    if totals and len(out):
        total = {name: out[name].sum() for name in out.columns if name not in ("max_tokens", "thresholds")}
        total |= {"max_tokens": out["max_tokens"].max(), "thresholds": _distinct(measured["threshold"])}
        index = pd.MultiIndex.from_tuples([tuple("(all)" for _ in keys)], names=keys)
        out = pd.concat([out, pd.DataFrame([total], index=index).astype(out.dtypes.to_dict())])
    return out


def _distinct(values: pd.Series) -> str:
    found = sorted({int(v) for v in values.dropna()})
    return ", ".join(f"{v:,}" for v in found)
