"""``SpillPolicy``: which outputs spill, decided in a fixed order, every decision explained.

Decision order (the first rule that applies wins):

0. ``enabled`` is false: nothing is intercepted (``disabled``).
1. ``is_error``: never spilled; the text is bounded to 8 KiB (75 % head, 25 % tail).
2. ``metadata`` (the argument, not a key inside the result) carries out-of-band keys such as
   ``artifact_id``: never spilled, a stub would strip that meaning.
3. internal verbs (progress, tool search, memory and scratch verbs, our own tools): never.
4. ``result_class`` outside the spill classes: never. Compared without regard to case
   (``"QUERY"`` is ``query``); None skips the rule; a class that is neither a spill class nor one
   of ``KNOWN_RESULT_CLASSES`` (``query``, ``workspace``, ``browser``, ``effect``) is refused with
   an ``InvalidArgumentError`` (a typo there let a flood through, decided "never").
5. an opt-in policy (read from Aura's TOML) and no pattern of the tool's server matches it: never
   (``no_pattern_for_server``).
6. tokens >= the tool's threshold (inclusive), or bytes >= ``min_bytes`` when set: spill.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from ..errors import InvalidArgumentError
from ..store._format import as_text
from ..tokens import tokenizer_for
from ..tokens._count import utf8_len

__all__ = [
    "DEFAULT_INTERNAL_TOOLS",
    "DEFAULT_MIN_TOKENS",
    "DEFAULT_OOB_METADATA_KEYS",
    "DEFAULT_SPILL_CLASSES",
    "KNOWN_RESULT_CLASSES",
    "SpillDecision",
    "SpillPolicy",
    "bound_error_text",
    "glob_matches",
]

DEFAULT_MIN_TOKENS = 5_120
ERROR_MAX_BYTES = 8 * 1024
DEFAULT_SPILL_CLASSES = frozenset({"query", "workspace", "browser"})
# Aura's result classes: the three that spill by default, and the effects of a tool (never spilled).
# A policy's own spill_classes are known too.
KNOWN_RESULT_CLASSES = DEFAULT_SPILL_CLASSES | {"effect"}
DEFAULT_OOB_METADATA_KEYS = frozenset({"artifact_id", "mutation_complete", "memory_entry_id", "persisted"})
# Our own tool set: reading a spill back must never spill again.
OWN_TOOLS = frozenset(
    {
        "head",
        "tail",
        "slice",
        "read_handle",
        "grep",
        "schema",
        "item_schema",
        "get_in",
        "iterate_over",
        "read",
        "sql",
        "scratch_write",
        "scratch_read",
        "scratch_list",
        "scratch_delete",
    }
)
# Aura's skill verbs return what the model asked to read into its context: never diverted.
SKILL_TOOLS = frozenset({"load_skill", "read_skill_file"})
DEFAULT_INTERNAL_TOOLS = frozenset({"report_progress", "tool_search", *SKILL_TOOLS, *OWN_TOOLS})
INTERNAL_PREFIXES = ("memory_", "scratch_", "scratchpad_")


@lru_cache(maxsize=1024)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = ("." if ch == "?" else ".*" if ch == "*" else re.escape(ch) for ch in pattern)
    return re.compile("".join(parts), re.S)


def glob_matches(pattern: str, name: str) -> bool:
    """Whole-name match with ``*`` (any run) and ``?`` (one character); nothing else is special."""
    return _glob_regex(pattern).fullmatch(name) is not None


def _check_threshold(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"{where}: a threshold must be a non-negative integer, not {value!r}")
    return value


_PARTIAL_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*)?$")


def bound_error_text(text: str, max_bytes: int = ERROR_MAX_BYTES) -> str:
    """Keep an error within ``max_bytes`` of UTF-8: 75 % head, 25 % tail, and say what was cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    budget = max_bytes - 96  # room for the note
    head = data[: budget * 3 // 4].decode("utf-8", errors="ignore")
    tail = data[len(data) - budget // 4 :].decode("utf-8", errors="ignore")
    # never half a terminal escape (a traceback's colours): the head loses a sequence it cut
    # short, the tail starts at a line when it holds one
    head = _PARTIAL_ESCAPE.sub("", head)
    newline = tail.find("\n", 0, len(tail) // 2)
    tail = tail[newline + 1 :] if newline >= 0 else tail
    cut = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}\n[... {cut:,} bytes of this error cut (of {len(data):,}) ...]\n{tail}"


@dataclass(frozen=True)
class SpillDecision:
    """Why an output spills or not: the rule that decided, tokens and threshold."""

    spill: bool
    rule: str
    tokens: int | None = None  # tokens counted (exact when ``tokens_exact``, else >= threshold)
    tokens_exact: bool = False
    threshold: int | None = None
    size_bytes: int = 0
    pattern: str | None = None  # the glob that set the threshold (None: the default)
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "spill": self.spill,
            "rule": self.rule,
            "tokens": self.tokens,
            "tokens_exact": self.tokens_exact,
            "threshold": self.threshold,
            "size_bytes": self.size_bytes,
            "pattern": self.pattern,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class SpillPolicy:
    """What spills. Thresholds are in real tokens of the model, per tool, by glob pattern.

    >>> policy = SpillPolicy(min_tokens=5120, patterns={"k8s_list_*": 512})
    >>> policy.threshold_for("k8s_list_pods")
    512
    >>> policy.threshold_for("get_weather")
    5120

    ``patterns`` apply to every server; ``server_patterns`` (as read from Aura's
    ``[mcp.servers.<server>.scratchpad]`` tables) only within their server. Among the patterns that
    match, the longest wins; on equal length, the smallest threshold. ``min_bytes``, when set, also
    spills any output of at least that many bytes (Mesh's ~8 KiB rule).

    A policy built in Python is *opt-out*: every tool has a threshold (``min_tokens`` unless a
    pattern says otherwise). ``opt_in=True`` (what ``from_toml`` yields, as in Aura) intercepts only
    tools that a pattern of their server — or of ``patterns`` — matches; ``enabled=False`` turns
    interception off altogether.
    """

    min_tokens: int = DEFAULT_MIN_TOKENS
    patterns: Mapping[str, int] | None = None
    min_bytes: int | None = None
    server_patterns: Mapping[str, Mapping[str, int]] | None = None
    spill_classes: frozenset[str] = DEFAULT_SPILL_CLASSES
    oob_metadata_keys: frozenset[str] = DEFAULT_OOB_METADATA_KEYS
    internal_tools: frozenset[str] = DEFAULT_INTERNAL_TOOLS
    error_max_bytes: int = ERROR_MAX_BYTES
    # Aura's [agent.scratchpad] knobs, carried so that a policy round-trips and configures a pad.
    enabled: bool = True
    opt_in: bool = False
    context_safety_margin: float = 0.20
    max_extraction_tokens: int = 10_000
    turn_depth_bonus: int = 6
    _compiled: tuple[tuple[str | None, str, int], ...] = field(default=(), init=False, repr=False, compare=False)
    _classes: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_threshold(self.min_tokens, "min_tokens")
        margin = self.context_safety_margin
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0.0 <= margin < 1.0:
            raise InvalidArgumentError(f"context_safety_margin must be in [0, 1), not {margin!r}")
        cap = self.max_extraction_tokens
        if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
            raise InvalidArgumentError(f"max_extraction_tokens must be a positive integer, not {cap!r}")
        _check_threshold(self.turn_depth_bonus, "turn_depth_bonus")
        if _check_threshold(self.error_max_bytes, "error_max_bytes") < 256:
            raise InvalidArgumentError("error_max_bytes must be at least 256")
        if self.min_bytes is not None:
            _check_threshold(self.min_bytes, "min_bytes")
        patterns = dict(self.patterns or {})
        servers = {s: dict(p) for s, p in (self.server_patterns or {}).items()}
        compiled: list[tuple[str | None, str, int]] = []
        for glob, threshold in patterns.items():
            compiled.append((None, str(glob), _check_threshold(threshold, f"pattern {glob!r}")))
        for server, table in servers.items():
            for glob, threshold in table.items():
                compiled.append((server, str(glob), _check_threshold(threshold, f"{server}/{glob!r}")))
        for name in ("spill_classes", "oob_metadata_keys", "internal_tools"):
            object.__setattr__(self, name, frozenset(getattr(self, name)))
        if not all(isinstance(c, str) for c in self.spill_classes):
            raise InvalidArgumentError(f"spill_classes must be strings, not {sorted(map(repr, self.spill_classes))}")
        object.__setattr__(self, "_classes", frozenset(c.casefold() for c in self.spill_classes))
        object.__setattr__(self, "patterns", patterns)
        object.__setattr__(self, "server_patterns", servers)
        object.__setattr__(self, "_compiled", tuple(compiled))

    # -- thresholds --------------------------------------------------------------------------

    def resolve(self, tool: str, server: str | None = None) -> tuple[int, str | None]:
        """``(threshold, pattern)`` for ``tool`` on ``server``; pattern None means the default."""
        best: tuple[int, int, str] | None = None  # (-len, threshold, pattern)
        for scope, glob, threshold in self._compiled:
            if scope is not None and scope != server:
                continue
            if glob_matches(glob, tool):
                candidate = (-len(glob), threshold, glob)
                if best is None or candidate < best:
                    best = candidate
        if best is None:
            return self.min_tokens, None
        return best[1], best[2]

    def threshold_for(self, tool: str, server: str | None = None) -> int:
        """The spill threshold in tokens for ``tool`` (on ``server``)."""
        return self.resolve(tool, server)[0]

    def is_internal(self, tool: str, server: str | None = None) -> bool:
        if tool in OWN_TOOLS:
            return server in (None, "scratchpad")
        return tool in self.internal_tools or tool.startswith(INTERNAL_PREFIXES)

    # -- decisions ---------------------------------------------------------------------------

    def explain(
        self,
        result: Any,
        *,
        tool: str,
        server: str | None = None,
        result_class: str | None = "query",
        metadata: Mapping[str, Any] | None = None,
        is_error: bool = False,
        model: str = "gpt-4o",
        text: str | None = None,
        tokens: int | None = None,
    ) -> SpillDecision:
        """Decide whether ``result`` spills, and say why. Counts only as far as needed.

        Raises ``InvalidArgumentError`` for an unknown ``result_class`` or ``metadata`` that is not
        a mapping (``check_call``), whatever the rule that would decide.

        ``tokens``: the exact count of the result's text when the caller already has it (a replay
        that decides many policies from one count); nothing is tokenized then.
        """
        result_class = self.check_call(result_class, metadata)  # (a typo is refused, whatever the rule)
        if text is None:
            text = as_text(result)
        if not self.enabled:
            return SpillDecision(False, "disabled", detail="the scratchpad is disabled (enabled = false)")
        if is_error:
            return SpillDecision(
                False, "is_error", detail=f"errors are never spilled; bounded to {self.error_max_bytes} bytes"
            )
        if metadata:
            keys = sorted(k for k in metadata if k in self.oob_metadata_keys)
            if keys:
                return SpillDecision(False, "oob_metadata", detail=f"metadata carries {', '.join(keys)}")
        if self.is_internal(tool, server):
            return SpillDecision(False, "internal_tool", detail=f"{tool!r} is an internal verb")
        if result_class is not None and result_class not in self._classes:
            return SpillDecision(
                False,
                "result_class",
                detail=f"result_class {result_class!r} is not one of {sorted(self.spill_classes)}",
            )
        threshold, pattern = self.resolve(tool, server)
        if self.opt_in and pattern is None:
            where = f"server {server!r}" if server is not None else "any server"
            return SpillDecision(
                False,
                "no_pattern_for_server",
                threshold=None,
                detail=f"opt-in policy: no scratchpad pattern of {where} matches {tool!r}",
            )
        size = utf8_len(text)
        if self.min_bytes is not None and size >= self.min_bytes:
            return SpillDecision(
                True,
                "bytes_threshold",
                None,
                False,
                threshold,
                size,
                pattern,
                f"{size} bytes >= min_bytes {self.min_bytes}",
            )
        if tokens is not None:
            exact = True
        else:
            tokens, exact = tokenizer_for(model).count_upto(text, threshold)
        if tokens >= threshold:
            return SpillDecision(
                True,
                "threshold",
                tokens,
                exact,
                threshold,
                size,
                pattern,
                f"{'at least ' if not exact else ''}{tokens} tokens >= {threshold}",
            )
        return SpillDecision(
            False, "below_threshold", tokens, True, threshold, size, pattern, f"{tokens} tokens < {threshold}"
        )

    def check_call(self, result_class: object, metadata: object = None) -> str | None:
        """The call arguments ``explain`` reads, checked: ``result_class`` in lower case (None
        stays None, the rule skipped), ``metadata`` a mapping or None. Raises
        ``InvalidArgumentError`` naming the known classes for a class that is neither one of this
        policy's ``spill_classes`` nor of ``KNOWN_RESULT_CLASSES``, and for metadata of another type.
        """
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidArgumentError(
                f"metadata must be a mapping of the call's out-of-band keys (or None), not {type(metadata).__name__}"
            )
        if result_class is None:
            return None
        known = sorted(KNOWN_RESULT_CLASSES | self._classes)
        if not isinstance(result_class, str):
            raise InvalidArgumentError(
                f"result_class must be one of {', '.join(known)} or None, not {type(result_class).__name__} "
                f"{result_class!r:.40}"
            )
        folded = result_class.casefold()
        if folded not in self._classes and folded not in KNOWN_RESULT_CLASSES:
            close = difflib.get_close_matches(folded, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidArgumentError(
                f"unknown result_class {result_class!r:.60}{hint}; the known classes are {', '.join(known)} "
                "(None skips the class rule)"
            )
        return folded

    def with_(self, **changes: Any) -> SpillPolicy:
        """A copy with some fields changed (``policy.with_(min_tokens=1000)``)."""
        return replace(self, **changes)

    # -- Aura TOML ---------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, source: str | Any) -> SpillPolicy:
        """Read Aura's configuration: ``[agent.scratchpad]`` and ``[mcp.servers.<s>.scratchpad]``.

        With Aura's meaning: the policy is *opt-in* (a tool that no pattern of its server, nor of
        our ``[agent.scratchpad.patterns]``, matches is not intercepted) and ``enabled`` defaults to
        false, so a file without ``enabled = true`` intercepts nothing. ``explain`` names the rule
        (``disabled``, ``no_pattern_for_server``).
        """
        from ._toml import policy_from_toml

        return policy_from_toml(cls, source)

    def to_toml(self) -> str:
        """Aura TOML for this policy (extra keys of ours are ignored by Aura)."""
        from ._toml import policy_to_toml

        return policy_to_toml(self)
