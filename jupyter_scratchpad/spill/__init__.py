"""Spill policy: which outputs leave the context, and why."""

from ._policy import (
    DEFAULT_INTERNAL_TOOLS,
    DEFAULT_MIN_TOKENS,
    DEFAULT_OOB_METADATA_KEYS,
    DEFAULT_SPILL_CLASSES,
    OWN_TOOLS,
    SpillDecision,
    SpillPolicy,
    bound_error_text,
    glob_matches,
)

__all__ = [
    "DEFAULT_INTERNAL_TOOLS",
    "DEFAULT_MIN_TOKENS",
    "DEFAULT_OOB_METADATA_KEYS",
    "DEFAULT_SPILL_CLASSES",
    "OWN_TOOLS",
    "SpillDecision",
    "SpillPolicy",
    "bound_error_text",
    "glob_matches",
]
