"""Aura's TOML, read and written unchanged.

Aura's shape::

    [agent.scratchpad]
    enabled = true
    context_safety_margin = 0.2
    max_extraction_tokens = 10000
    turn_depth_bonus = 6

    [mcp.servers.k8s.scratchpad]
    "k8s_list_*" = { min_tokens = 512 }

Read with Aura's meaning: opt-in per server (a tool no pattern matches is not intercepted) and
``enabled`` false unless set. What Aura has no place for goes in extra keys of
``[agent.scratchpad]``, which Aura's deserializer ignores: ``opt_in = false`` (every tool has a
threshold), ``min_tokens`` (our default threshold), ``min_bytes``, ``spill_classes``,
``oob_metadata_keys``, ``internal_tools``, ``error_max_bytes`` and the
``[agent.scratchpad.patterns]`` table. Any other key of ``[agent.scratchpad]`` is a typo
(``enable``, ``min_token``, ``[agent.scratchpad.pattern]``): an ``InvalidArgumentError`` naming it
and the known key it is closest to, never a silent default.
"""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

if TYPE_CHECKING:
    from ._policy import SpillPolicy

__all__ = ["policy_from_toml", "policy_to_toml"]

_SCALARS: tuple[tuple[str, type], ...] = (
    ("enabled", bool),
    ("opt_in", bool),
    ("context_safety_margin", float),
    ("max_extraction_tokens", int),
    ("turn_depth_bonus", int),
    ("min_tokens", int),
    ("min_bytes", int),
    ("error_max_bytes", int),
)
_SETS = ("spill_classes", "oob_metadata_keys", "internal_tools")
_AGENT_KEYS = {name for name, _ in _SCALARS} | set(_SETS) | {"patterns"}


def _load(source: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """``(data, where)``: a path (PathLike, an existing file, or a ``*.toml`` name) or TOML text."""
    as_path: Path | None = None
    if isinstance(source, os.PathLike):
        as_path = Path(source)
    elif isinstance(source, str) and source and "\n" not in source:
        candidate = Path(source)
        if candidate.is_file() or source.endswith(".toml"):
            as_path = candidate
    elif not isinstance(source, str):
        raise InvalidArgumentError(f"a policy is TOML text or a path, not {type(source).__name__}")
    if as_path is not None:
        try:
            text = as_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidArgumentError(f"cannot read policy file {as_path}: {exc}", path=str(as_path)) from exc
        where = str(as_path)
    else:
        text, where = str(source), "<toml>"
    try:
        return tomllib.loads(text), where
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgumentError(f"{where} is not valid TOML: {exc}", path=where) from exc


def _table(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{where} must be a table, not {type(value).__name__} {value!r:.40}")
    return value


def _entry_threshold(value: Any, where: str) -> int:
    """Aura's ``{ min_tokens = N }`` (an empty table is Aura's default, 5,120)."""
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{where}: expected {{ min_tokens = N }}, got {value!r:.60}")
    unknown = sorted(set(value) - {"min_tokens"})
    if unknown:
        close = difflib.get_close_matches(unknown[0], ["min_tokens"], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidArgumentError(f"{where}: unknown key {unknown[0]!r}{hint}; an entry is {{ min_tokens = N }}")
    threshold = value.get("min_tokens", 5_120)
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise InvalidArgumentError(f"{where}: min_tokens must be a non-negative integer, got {threshold!r}")
    return threshold


def _refuse_unknown_keys(agent: dict[str, Any], where: str) -> None:
    """A key of ``[agent.scratchpad]`` that is neither Aura's nor ours is a typo (``enable = true``
    left the scratchpad off, ``min_token`` the default threshold): refused, naming the key and the
    known key it is closest to."""
    unknown = sorted(str(k) for k in agent if k not in _AGENT_KEYS)
    if not unknown:
        return
    key = unknown[0]
    close = difflib.get_close_matches(key, sorted(_AGENT_KEYS), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    more = f" (and {', '.join(repr(k) for k in unknown[1:])})" if len(unknown) > 1 else ""
    raise InvalidArgumentError(
        f"{where}: unknown key {key!r} in [agent.scratchpad]{hint}{more}; the keys are "
        f"{', '.join(sorted(_AGENT_KEYS))}",
        key=key,
    )


def _agent_kwargs(agent: dict[str, Any], where: str) -> dict[str, Any]:
    _refuse_unknown_keys(agent, where)
    kwargs: dict[str, Any] = {}
    for name, kind in _SCALARS:
        if name not in agent:
            continue
        value = agent[name]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise InvalidArgumentError(f"{where}: agent.scratchpad.{name} must be {kind.__name__}, got {value!r}")
        kwargs[name] = value
    for name in _SETS:
        if name in agent:
            value = agent[name]
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidArgumentError(f"{where}: agent.scratchpad.{name} must be a list of strings")
            kwargs[name] = frozenset(value)
    return kwargs


def policy_from_toml(cls: type[SpillPolicy], source: str | Any) -> SpillPolicy:
    data, where = _load(source)
    agent = _table(_table(data.get("agent"), f"{where}: [agent]").get("scratchpad"), f"{where}: [agent.scratchpad]")
    kwargs = _agent_kwargs(agent, where)
    patterns = {
        str(glob): _entry_threshold(v, f"{where}: agent.scratchpad.patterns.{glob}")
        for glob, v in _table(agent.get("patterns"), f"{where}: [agent.scratchpad.patterns]").items()
    }
    servers: dict[str, dict[str, int]] = {}
    mcp = _table(data.get("mcp"), f"{where}: [mcp]")
    for server, conf in _table(mcp.get("servers"), f"{where}: [mcp.servers]").items():
        conf = _table(conf, f"{where}: [mcp.servers.{server}]")
        if "scratchpad" not in conf:
            continue
        table = _table(conf["scratchpad"], f"{where}: [mcp.servers.{server}.scratchpad]")
        servers[str(server)] = {
            str(glob): _entry_threshold(v, f"{where}: mcp.servers.{server}.scratchpad.{glob}")
            for glob, v in table.items()
        }
    kwargs.setdefault("enabled", False)  # Aura's default: a table without `enabled = true` is off
    kwargs.setdefault("opt_in", True)  # Aura's meaning: only tools a pattern matches are intercepted
    return cls(patterns=patterns or None, server_patterns=servers or None, **kwargs)


def _quote(text: str) -> str:
    """A TOML basic string: control characters (and DEL) escaped, everything else as is."""
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _key(name: str) -> str:
    if name and all(c.isascii() and (c.isalnum() or c in "-_") for c in name):
        return name
    return _quote(name)


def _strings(values: frozenset[str]) -> str:
    return "[" + ", ".join(_quote(v) for v in sorted(values)) + "]"


def policy_to_toml(policy: SpillPolicy) -> str:
    from ._policy import (
        DEFAULT_INTERNAL_TOOLS,
        DEFAULT_MIN_TOKENS,
        DEFAULT_OOB_METADATA_KEYS,
        DEFAULT_SPILL_CLASSES,
        ERROR_MAX_BYTES,
    )

    lines = [
        "# Spill policy (Aura's [agent.scratchpad] / [mcp.servers.<server>.scratchpad] shape).",
        "[agent.scratchpad]",
        f"enabled = {'true' if policy.enabled else 'false'}",
        f"context_safety_margin = {policy.context_safety_margin!r}",
        f"max_extraction_tokens = {policy.max_extraction_tokens}",
        f"turn_depth_bonus = {policy.turn_depth_bonus}",
    ]
    ours = "  # jupyter-scratchpad (Aura ignores it)"
    if not policy.opt_in:
        lines.append("opt_in = false  # jupyter-scratchpad: every tool has a threshold (Aura ignores it)")
    if policy.min_tokens != DEFAULT_MIN_TOKENS:
        lines.append(f"min_tokens = {policy.min_tokens}{ours}")
    if policy.min_bytes is not None:
        lines.append(f"min_bytes = {policy.min_bytes}{ours}")
    if policy.error_max_bytes != ERROR_MAX_BYTES:
        lines.append(f"error_max_bytes = {policy.error_max_bytes}{ours}")
    for name, default in (
        ("spill_classes", DEFAULT_SPILL_CLASSES),
        ("oob_metadata_keys", DEFAULT_OOB_METADATA_KEYS),
        ("internal_tools", DEFAULT_INTERNAL_TOOLS),
    ):
        value: frozenset[str] = getattr(policy, name)
        if value != default:
            lines.append(f"{name} = {_strings(value)}{ours}")
    if policy.patterns:
        lines += [
            "",
            "# jupyter-scratchpad: patterns for every server (Aura ignores this table)",
            "[agent.scratchpad.patterns]",
        ]
        lines += [f"{_key(g)} = {{ min_tokens = {t} }}" for g, t in sorted(policy.patterns.items())]
    for server, table in sorted((policy.server_patterns or {}).items()):
        lines += ["", f"[mcp.servers.{_key(server)}.scratchpad]"]
        lines += [f"{_key(g)} = {{ min_tokens = {t} }}" for g, t in sorted(table.items())]
    return "\n".join(lines) + "\n"
