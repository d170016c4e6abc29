"""``ContextBudget``: how many tokens of the model's context the exploration may still use.

``usable = floor(context_window × (1 − safety_margin))``. ``used`` starts at the tokens of the
tool definitions; ``record_llm_usage`` raises it to the ground truth an API reports (never lowers
it); each extraction is checked against the per-call cap, then against what remains, and charged
in the same locked step, so concurrent calls cannot overdraw it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgumentError

__all__ = [
    "CONTEXT_WINDOWS",
    "DEFAULT_CONTEXT_WINDOW",
    "ChargeRefusal",
    "ContextBudget",
    "context_window_for",
    "is_known_model",
]

DEFAULT_CONTEXT_WINDOW = 128_000

# Published context windows (tokens) of current models, matched by the longest prefix.
# Override per pad with ``context_window=``, or extend this table.
CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-4o": 128_000,
    "chatgpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-4-32k": 32_768,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    # Anthropic
    "claude": 200_000,
    # Google
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-3": 1_048_576,
}


def _window_key(model: str) -> str:
    name = (model or "").lower()
    best = ""
    for prefix in CONTEXT_WINDOWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    if not best and "claude" in name:
        best = "claude"
    return best


def context_window_for(model: str) -> int:
    """The context window of ``model`` from ``CONTEXT_WINDOWS`` (longest prefix), else 128,000."""
    best = _window_key(model)
    return CONTEXT_WINDOWS[best] if best else DEFAULT_CONTEXT_WINDOW


def is_known_model(model: str) -> bool:
    """Whether ``model`` has a published window here (else it gets 128,000 and ``o200k_base``):
    a known name, or one with a dated or sized suffix (``gpt-4o-2024-08-06``, ``gpt-4.1-mini``),
    not one that only starts like it (``gpt-4oo``, a typo, would pass for ``gpt-4o``)."""
    best = _window_key(model)
    if not best:
        return False
    rest = (model or "").lower()[len(best) :] if (model or "").lower().startswith(best) else "-"
    return not rest or not rest[0].isalnum()


@dataclass(frozen=True)
class ChargeRefusal:
    """Why a charge was refused: over the per-call cap, or over what remains."""

    reason: str  # "per_call_limit" | "remaining_budget"
    estimated_tokens: int
    limit: int

    def as_error_fields(self) -> dict[str, Any]:
        key = "per_call_limit" if self.reason == "per_call_limit" else "remaining_budget_tokens"
        return {"estimated_tokens": self.estimated_tokens, key: self.limit}


class ContextBudget:
    """Token accounting for one agent's context."""

    def __init__(
        self,
        context_window: int,
        safety_margin: float = 0.20,
        *,
        initial_used: int = 0,
        max_extraction_tokens: int = 10_000,
        turn_depth_bonus: int = 6,
    ) -> None:
        if isinstance(context_window, bool) or not isinstance(context_window, int) or context_window <= 0:
            raise InvalidArgumentError(f"context_window must be a positive integer, not {context_window!r}")
        if not 0.0 <= float(safety_margin) < 1.0:
            raise InvalidArgumentError(f"safety_margin must be in [0, 1), not {safety_margin!r}")
        if (
            isinstance(max_extraction_tokens, bool)
            or not isinstance(max_extraction_tokens, int)
            or max_extraction_tokens <= 0
        ):
            raise InvalidArgumentError("max_extraction_tokens must be a positive integer")
        self.context_window = context_window
        self.safety_margin = float(safety_margin)
        self.usable = math.floor(context_window * (1.0 - self.safety_margin))
        self.max_extraction_tokens = max_extraction_tokens
        self.turn_depth_bonus = turn_depth_bonus
        self._used = int(initial_used)
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    @property
    def remaining(self) -> int:
        return max(0, self.usable - self._used)

    def check(self, tokens: int) -> ChargeRefusal | None:
        """What a charge of ``tokens`` would be refused for, without charging."""
        if tokens > self.max_extraction_tokens:
            return ChargeRefusal("per_call_limit", tokens, self.max_extraction_tokens)
        remaining = self.remaining
        if tokens > remaining:
            return ChargeRefusal("remaining_budget", tokens, remaining)
        return None

    def try_charge(self, tokens: int) -> ChargeRefusal | None:
        """Charge ``tokens`` if within the per-call cap and the remaining budget (atomically)."""
        with self._lock:
            refusal = self.check(tokens)
            if refusal is None:
                self._used += tokens
            return refusal

    def charge_unconditionally(self, tokens: int) -> None:
        """Charge what the model was shown whatever the limits (a short error must be shown)."""
        with self._lock:
            self._used += max(0, int(tokens))

    def record_llm_usage(self, input_tokens: Any, output_tokens: int = 0) -> None:
        """Ground truth from the model API: ``used = max(used, input + output)``.

        ``input_tokens`` may be an SDK's usage object (or its dict) as it comes: OpenAI Chat
        Completions (``prompt_tokens``, ``completion_tokens``), the Responses API and Anthropic
        (``input_tokens``, ``output_tokens``; Anthropic's cache reads and writes are part of the
        context too).
        """
        if not isinstance(input_tokens, int) or isinstance(input_tokens, bool):
            input_tokens, output_tokens = usage_tokens(input_tokens)
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"{name} must be a non-negative integer, not {value!r}")
        with self._lock:
            self._used = max(self._used, input_tokens + output_tokens)

    def reset(self, used: int = 0) -> None:
        """Start again at ``used`` tokens (a new conversation; ``%scratch budget reset``)."""
        if isinstance(used, bool) or not isinstance(used, int) or used < 0:
            raise InvalidArgumentError(f"used must be a non-negative integer, not {used!r}")
        with self._lock:
            self._used = used

    def as_dict(self) -> dict[str, Any]:
        return {
            "context_window": self.context_window,
            "safety_margin": self.safety_margin,
            "usable": self.usable,
            "used": self.used,
            "remaining": self.remaining,
            "max_extraction_tokens": self.max_extraction_tokens,
        }

    def __repr__(self) -> str:
        return f"<ContextBudget used={self.used:,} of usable={self.usable:,} (window {self.context_window:,})>"


def usage_tokens(usage: Any) -> tuple[int, int]:
    """``(input, output)`` tokens of an SDK usage object or dict (OpenAI, Responses, Anthropic)."""

    def get(name: str) -> int:
        value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def has(name: str) -> bool:
        return (name in usage) if isinstance(usage, dict) else getattr(usage, name, None) is not None

    if has("prompt_tokens"):  # OpenAI Chat Completions
        return get("prompt_tokens"), get("completion_tokens")
    if has("input_tokens"):  # the Responses API; Anthropic counts cached input apart
        cached = get("cache_read_input_tokens") + get("cache_creation_input_tokens")
        return get("input_tokens") + cached, get("output_tokens")
    raise InvalidArgumentError(
        "record_llm_usage takes input_tokens (an int) or an SDK usage object with prompt_tokens / "
        f"input_tokens, not {type(usage).__name__}"
    )
