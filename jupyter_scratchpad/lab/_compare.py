"""``compare`` policies and ``sweep`` thresholds over one trace, counting each result once."""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..errors import InvalidArgumentError
from ..spill import SpillPolicy
from ._measure import Measurer
from ._plot import comparison_figure
from ._replay import COLUMNS, TOTALS, as_policy, frame, replay_rows, report
from ._sources import read_trace

__all__ = ["PolicyComparison", "compare", "sweep"]


@dataclass
class PolicyComparison:
    """Policies side by side: ``table`` (one row per policy), ``rows`` (one per policy and call), ``figure``.

    In Jupyter it displays as the plot with the table beside it.
    """

    table: pd.DataFrame
    rows: pd.DataFrame
    policies: dict[str, SpillPolicy]
    kind: str = "compare"  # or "sweep"
    _figure: Any = field(default=None, repr=False)

    @property
    def figure(self) -> Any:
        """The matplotlib ``Figure``: output sizes with the thresholds, context tokens vs. extra calls."""
        if self._figure is None:
            self._figure = comparison_figure(self.table, self.rows, kind=self.kind, policies=self.policies)
        return self._figure

    def replay(self, name: str) -> pd.DataFrame:
        """The rows of one policy, as ``replay`` would give them."""
        if name not in self.policies:
            raise InvalidArgumentError(f"no policy {name!r}; have {', '.join(self.policies)}")
        return self.rows[self.rows["policy"] == name].drop(columns="policy").reset_index(drop=True)

    def __repr__(self) -> str:
        return f"<PolicyComparison of {len(self.policies)} policies>\n{self.table.to_string()}"

    def _repr_html_(self) -> str:
        png = io.BytesIO()
        self.figure.savefig(png, format="png", dpi=96, bbox_inches="tight")
        image = base64.b64encode(png.getvalue()).decode("ascii")
        return (
            '<div style="display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start">'
            f'<img alt="output sizes, thresholds; context tokens vs calls" src="data:image/png;base64,{image}"/>'
            f"<div>{self.table.to_html()}</div></div>"
        )


def policy_table(rows: pd.DataFrame, names: Iterable[str]) -> pd.DataFrame:
    """One row per policy: spills, tokens of the results, what enters the context, what is kept out."""
    grouped = rows.groupby("policy", sort=False)
    table = grouped.agg(**TOTALS).reindex(list(names))
    table["calls"] = table["calls"].fillna(0).astype("int64")
    table["spills"] = table["spills"].fillna(0).astype("int64")
    for name in ("tokens", "context_tokens", "tokens_saved", "stub_tokens"):
        table[name] = table[name].fillna(0).astype("int64")
    total = table["tokens"].where(table["tokens"] > 0)
    table["saved_pct"] = (100.0 * table["tokens_saved"] / total).round(1)
    table.index.name = "policy"
    return table


def compare(
    trace: Any,
    policies: Mapping[str, SpillPolicy | str | os.PathLike[str] | None]
    | list[SpillPolicy | str | os.PathLike[str] | None],
    model: str = "gpt-4o",
    *,
    format: str = "auto",
    preview_lines: int = 20,
    progress: bool | None = None,
    on_error: str = "skip",
    kind: str = "compare",
    _stacklevel: int = 3,
) -> PolicyComparison:
    """Replay ``trace`` under each of ``policies`` ({name: policy}; a list is named p0, p1, ...) in one pass.

    >>> policies = {"aura": SpillPolicy(), "tight": SpillPolicy(min_tokens=1024)}
    >>> result = compare("trace.jsonl", policies)  # doctest: +SKIP
    >>> result.table, result.figure  # doctest: +SKIP

    Each result is tokenized once, whatever the number of policies; each policy's rules and
    thresholds come from the core, and its rows equal ``replay(trace, policy)``'s.
    """
    if isinstance(policies, (list, tuple)):  # named by position: p0, p1, ...
        policies = {f"p{i}": policy for i, policy in enumerate(policies)}
    if not isinstance(policies, Mapping):
        raise InvalidArgumentError(
            f"policies is a dict {{name: policy}} (or a list, named p0, p1, ...), not {type(policies).__name__}: "
            "compare(trace, {'default': SpillPolicy(), 'tight': SpillPolicy(min_tokens=1024)})"
        )
    resolved = {str(name): as_policy(policy) for name, policy in policies.items()}
    if not resolved:
        raise InvalidArgumentError("compare needs at least one policy")
    measurer = Measurer(model, preview_lines)  # (checks both before the trace is read)
    source = read_trace(trace, format)
    rows = replay_rows(source, resolved, model, measurer, desc=f"{kind} {source.name}", progress=progress,
                       on_error=on_error)  # fmt: skip
    df = report(frame(rows, ["policy", *COLUMNS]), source, model, measurer, stacklevel=_stacklevel, policies=resolved)
    table = policy_table(df, resolved)
    return PolicyComparison(table, df, resolved, kind)


def sweep(
    trace: Any,
    thresholds: Iterable[int],
    policy: SpillPolicy | str | os.PathLike[str] | None = None,
    model: str = "gpt-4o",
    **options: Any,
) -> PolicyComparison:
    """``compare`` the default threshold ``min_tokens`` at each of ``thresholds``.

    >>> sweep("trace.jsonl", thresholds=[256, 1024, 4096, 16384]).figure  # doctest: +SKIP

    The other settings come from ``policy`` (default ``SpillPolicy()``); its per-tool patterns
    keep their own thresholds, so sweep a policy without patterns to move every tool at once.
    The table has a ``threshold`` column, and the figure a second panel against the threshold.
    """
    base = as_policy(policy)
    values = list(thresholds)
    if not values:
        raise InvalidArgumentError("sweep needs at least one threshold")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgumentError(f"a threshold is a non-negative integer of tokens, not {value!r}")
    policies = {f"min_tokens={value:,}": base.with_(min_tokens=value) for value in dict.fromkeys(values)}
    result = compare(trace, policies, model, kind="sweep", _stacklevel=4, **options)
    result.table.insert(0, "threshold", [p.min_tokens for p in policies.values()])
    return result
