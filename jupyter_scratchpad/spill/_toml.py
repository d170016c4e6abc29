"""Aura's TOML, read and written unchanged.

Aura's shape::

    [agent.scratchpad]
    enabled = true
    context_safety_margin = 0.2
    max_extraction_tokens = 10000
    turn_depth_bonus = 6

    [mcp.servers.k8s.scratchpad]
    "k8s_list_*" = { min_tokens = 512 }

What Aura has no place for (our default threshold, patterns for every server, a byte threshold)
goes in extra keys of ``[agent.scratchpad]`` (``min_tokens``, ``min_bytes``, and the
``[agent.scratchpad.patterns]`` table), which Aura's deserializer ignores.
"""

from __future__ import annotations

import json
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


def _load(source: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and "\n" not in source and "=" not in source and "[" not in source
    ):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidArgumentError(f"cannot read policy file {path}: {exc}", path=str(path)) from exc
        where = str(path)
    else:
        text, where = str(source), "<toml>"
    try:
        return tomllib.loads(text), where
    except tomllib.TOMLDecodeError as exc:
        raise InvalidArgumentError(f"{where} is not valid TOML: {exc}", path=where) from exc


def _entry_threshold(value: Any, where: str) -> int:
    if isinstance(value, dict):
        value = value.get("min_tokens", 5_120)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(
            f"{where}: expected {{ min_tokens = N }} with N a non-negative integer, got {value!r}"
        )
    return value


def policy_from_toml(cls: type[SpillPolicy], source: str | Any) -> SpillPolicy:
    data, where = _load(source)
    agent = data.get("agent", {}).get("scratchpad", {})
    if not isinstance(agent, dict):
        raise InvalidArgumentError(f"{where}: [agent.scratchpad] must be a table")
    kwargs: dict[str, Any] = {}
    for name, kind in (
        ("enabled", bool),
        ("context_safety_margin", float),
        ("max_extraction_tokens", int),
        ("turn_depth_bonus", int),
        ("min_tokens", int),
        ("min_bytes", int),
    ):
        if name in agent:
            value = agent[name]
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise InvalidArgumentError(f"{where}: agent.scratchpad.{name} must be {kind.__name__}, got {value!r}")
            kwargs[name] = value
    patterns = {
        str(glob): _entry_threshold(v, f"{where}: agent.scratchpad.patterns.{glob}")
        for glob, v in (agent.get("patterns") or {}).items()
    }
    servers: dict[str, dict[str, int]] = {}
    for server, conf in (data.get("mcp", {}).get("servers", {}) or {}).items():
        table = conf.get("scratchpad") if isinstance(conf, dict) else None
        if table is None:
            continue
        if not isinstance(table, dict):
            raise InvalidArgumentError(f"{where}: mcp.servers.{server}.scratchpad must be a table")
        servers[str(server)] = {
            str(glob): _entry_threshold(v, f"{where}: mcp.servers.{server}.scratchpad.{glob}")
            for glob, v in table.items()
        }
    return cls(patterns=patterns or None, server_patterns=servers or None, **kwargs)


def _key(name: str) -> str:
    """A TOML key: bare when it can be, else a basic string (json.dumps quoting is TOML-valid)."""
    if name and all(c.isascii() and (c.isalnum() or c in "-_") for c in name):
        return name
    return json.dumps(name, ensure_ascii=False)


def policy_to_toml(policy: SpillPolicy) -> str:
    from ._policy import DEFAULT_MIN_TOKENS

    lines = [
        "# Spill policy (Aura's [agent.scratchpad] / [mcp.servers.<server>.scratchpad] shape).",
        "[agent.scratchpad]",
        f"enabled = {'true' if policy.enabled else 'false'}",
        f"context_safety_margin = {policy.context_safety_margin!r}",
        f"max_extraction_tokens = {policy.max_extraction_tokens}",
        f"turn_depth_bonus = {policy.turn_depth_bonus}",
    ]
    if policy.min_tokens != DEFAULT_MIN_TOKENS:
        lines.append(f"min_tokens = {policy.min_tokens}  # jupyter-scratchpad: default threshold")
    if policy.min_bytes is not None:
        lines.append(f"min_bytes = {policy.min_bytes}  # jupyter-scratchpad: byte threshold")
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
