"""``%scratch policy show [FILE]`` / ``%scratch policy load FILE``: the notebook's spill policy as TOML."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...errors import ScratchpadError
from ...spill import SpillPolicy
from .._args import ScratchArgumentParser
from .._session import cell_patterns, cell_rule, for_cells
from ._base import Command

PARSER = ScratchArgumentParser(
    "policy",
    "show: print the notebook's spill policy (or FILE's, as read) in Aura's TOML, ready to "
    "paste into an Aura configuration. load: make FILE the notebook's policy (same as %config "
    "ScratchMagics.policy_file = FILE; spill_threshold/spill_bytes, when set, still apply on top). "
    "Cell outputs are no MCP server's tool results: in the notebook every one is decided by the "
    "thresholds (a pattern that names it, such as cell_*_stdout, else the default), whatever the "
    "file's opt-in and 'enabled' (Aura's, for MCP tools); %scratch auto on|off turns auto-spill off.",
)
PARSER.add_argument("action", choices=("show", "load"))
PARSER.add_argument("file", metavar="FILE", nargs="?", default=None)


def _read(action: str, path: str) -> SpillPolicy:
    try:
        return SpillPolicy.from_toml(path)
    except ScratchpadError as exc:
        raise UsageError(f"%scratch policy {action}: {exc.message}") from None
    except (AttributeError, TypeError, ValueError) as exc:  # the core misreads some shapes
        raise UsageError(f"%scratch policy {action}: {path} is not a valid policy: {exc}") from None


def for_mcp_only(policy: SpillPolicy) -> str:
    """What of ``policy`` (as read, Aura's meaning) the notebook does not apply to cell outputs, in
    words ("" when nothing)."""
    said = []
    if policy.opt_in:
        said.append(
            "its opt-in (Aura's meaning: only the tools a pattern of their MCP server names are "
            "intercepted) is for MCP tools"
        )
    if not policy.enabled:
        said.append("it has no 'enabled = true' (Aura would intercept nothing; here %scratch auto on|off decides)")
    servers = sorted(policy.server_patterns or {})
    if servers:
        said.append(f"its [mcp.servers.<server>.scratchpad] patterns apply to the tools of {', '.join(servers)}")
    others = sorted(set(policy.patterns or {}) - set(cell_patterns(policy)))
    if others:
        said.append(f"patterns that name no cell output ({', '.join(others)}) apply to the tools they name")
    if not said:
        return ""
    return "; ".join(said) + ": a cell output is no server's tool, so each one is decided by the thresholds above"


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    model = session.pad.model
    if args.action == "load":
        if not args.file:
            raise UsageError("%scratch policy load: give the TOML FILE to load")
        _read("load", args.file)
        if session.magics.policy_file == args.file:  # the same path again: re-read the file
            session.configure("policy_file")
        else:
            session.magics.policy_file = args.file  # applied by ScratchMagics' observer
        policy = session.policy
        count = len(policy.patterns or {}) + sum(map(len, (policy.server_patterns or {}).values()))
        said = f"spill policy loaded from {args.file} ({count} patterns): cell {cell_rule(session.pad.policy, model)}"
        also = for_mcp_only(policy)
        print(f"{said}\n({also})" if also else said)
        return None
    if args.file:
        policy = _read("show", args.file)
        in_notebook = cell_rule(for_cells(session.build_policy(policy)), model)
        lead = [f"# Loaded in this notebook (%scratch policy load): cell {in_notebook}."]
    else:
        policy = session.policy
        lead = [f"# In this notebook: cell {cell_rule(session.pad.policy, model)}."]
    also = for_mcp_only(policy)
    if also:
        lead.append(f"# ({also}.)")
    print("\n".join(lead))
    print(policy.to_toml(), end="")
    return None


COMMAND = Command("policy", "policy show|load [FILE]", "the spill policy as Aura TOML", run, completes=("show", "load"))
