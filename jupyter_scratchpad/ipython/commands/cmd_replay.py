"""``%scratch replay TRACE [--policy FILE.toml] [--model M] [--format F]``: what a policy would do to a trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from ...errors import ScratchpadError
from ...spill import SpillPolicy
from .._args import ScratchArgumentParser
from ._base import Command

PARSER = ScratchArgumentParser(
    "replay",
    "Replay a tool-output trace (JSON Lines, or an OpenAI/Anthropic conversation log) through a "
    "spill policy: one row per call (decision, rule, tokens, stub tokens, tokens saved, threshold). "
    "Displays the summary per server/tool and returns the per-call DataFrame. Default policy: the "
    "notebook's; default model: the notebook's.",
)
PARSER.add_argument("trace", metavar="TRACE")
PARSER.add_argument("--policy", default=None, metavar="FILE.toml", help="an Aura TOML policy")
PARSER.add_argument("--model", default=None, metavar="M", help="model whose tokens are counted")
PARSER.add_argument(
    "--format",
    default="auto",
    metavar="F",
    help="what TRACE is: auto (detected), trace, openai-chat, openai-responses, anthropic or mcp-jsonrpc",
)


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    try:
        from ...lab import replay, summary
    except ImportError as exc:
        raise UsageError(
            f"%scratch replay needs the policy lab: pip install 'jupyter-scratchpad[lab]' ({exc})"
        ) from None
    if not Path(args.trace).expanduser().is_file():  # (said before the replay warns of anything else)
        raise UsageError(f"%scratch replay: trace file not found: {args.trace!r}")
    try:
        policy = SpillPolicy.from_toml(args.policy) if args.policy else session.policy  # (as configured)
        frame = replay(args.trace, policy, model=args.model or session.pad.model, format=args.format)
    except (ScratchpadError, OSError, ValueError) as exc:
        raise UsageError(f"%scratch replay: {getattr(exc, 'message', None) or exc}") from None
    from IPython.display import display

    display(summary(frame))
    return session.mark_own(frame)


COMMAND = Command(
    "replay", "replay TRACE [--policy F] [--model M] [--format F]", "replay a trace through a policy", run
)
