"""``%scratch policy show [FILE]`` / ``%scratch policy load FILE``: the notebook's spill policy as TOML."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from ...errors import ScratchpadError
from ...spill import SpillPolicy
from .._args import ScratchArgumentParser
from ._base import Command

PARSER = ScratchArgumentParser(
    "policy",
    "show: print the notebook's spill policy (or FILE's, as read) in Aura's TOML, ready to "
    "paste into an Aura configuration. load: make FILE the notebook's policy (same as %config "
    "ScratchMagics.policy_file = FILE; spill_threshold/spill_bytes, when set, still apply on top).",
)
PARSER.add_argument("action", choices=("show", "load"))
PARSER.add_argument("file", metavar="FILE", nargs="?", default=None)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    if args.action == "load":
        if not args.file:
            raise UsageError("%scratch policy load: give the TOML FILE to load")
        try:
            SpillPolicy.from_toml(args.file)
        except ScratchpadError as exc:
            raise UsageError(f"%scratch policy load: {exc.message}") from None
        except (AttributeError, TypeError, ValueError) as exc:  # the core misreads some shapes
            raise UsageError(f"%scratch policy load: {args.file} is not a valid policy: {exc}") from None
        if session.magics.policy_file == args.file:  # the same path again: re-read the file
            session.configure("policy_file")
        else:
            session.magics.policy_file = args.file  # applied by ScratchMagics' observer
        policy = session.pad.policy
        print(
            f"spill policy loaded from {args.file}: default threshold {policy.min_tokens:,} tokens, "
            f"{len(policy.patterns or {}) + sum(map(len, (policy.server_patterns or {}).values()))} patterns"
        )
        return None
    try:
        policy = SpillPolicy.from_toml(args.file) if args.file else session.pad.policy
    except ScratchpadError as exc:
        raise UsageError(f"%scratch policy show: {exc.message}") from None
    except (AttributeError, TypeError, ValueError) as exc:  # the core misreads some shapes
        raise UsageError(f"%scratch policy show: {args.file} is not a valid policy: {exc}") from None
    print(policy.to_toml(), end="")
    return None


COMMAND = Command("policy", "policy show|load [FILE]", "the spill policy as Aura TOML", run, completes=("show", "load"))
