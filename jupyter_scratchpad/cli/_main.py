"""``jupyter-scratchpad``: ``mcp serve``, ``mcp proxy``, and a person's reads over a store.

    jupyter-scratchpad mcp serve [--store DIR | --store-url URL | --ephemeral] [--http HOST:PORT]
    jupyter-scratchpad mcp proxy --config servers.toml
    jupyter-scratchpad mcp proxy [--name NAME] -- COMMAND ARGS...
    jupyter-scratchpad mcp proxy [--name NAME] --url URL
    jupyter-scratchpad list|usage [--run-id R]
    jupyter-scratchpad schema|head|tail|grep|get_in|sql ... (any tool: ``call TOOL JSON``)

Reads from the command line act as the person (nothing is charged to an agent's budget).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from .. import __version__

__all__ = ["default_store_dir", "main"]


def default_store_dir() -> Path:
    """A per-user data directory (``$XDG_DATA_HOME/jupyter-scratchpad/store``)."""
    if sys.platform == "win32":  # pragma: no cover
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":  # pragma: no cover
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "jupyter-scratchpad" / "store"


def _store_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("store")
    g.add_argument("--store", metavar="DIR", help=f"store directory (default {default_store_dir()})")
    g.add_argument("--store-url", metavar="URL", default=os.environ.get("SCRATCHPAD_STORE_URL"),
                   help="a shared PostgreSQL catalog (postgresql://…; env SCRATCHPAD_STORE_URL)")
    g.add_argument("--bodies", metavar="DIR", help="with --store-url: the shared directory of the bodies")
    g.add_argument("--ephemeral", action="store_true", help="a temporary store, deleted on exit")
    g.add_argument("--run-id", help="the run (default: a new one per server session; 'default' for reads)")
    g.add_argument("--agent-id", default="main", help="the agent (default main)")
    g.add_argument("--model", default="gpt-4o", help="the model whose tokens are counted (default gpt-4o)")
    g.add_argument("--policy", metavar="TOML", help="spill policy in Aura's TOML layout")


def _open_store(args: argparse.Namespace) -> Any:
    from ..store import ScratchStore

    if args.store_url:
        if not args.store_url.startswith(("postgresql://", "postgres://")):
            raise SystemExit(f"--store-url must be a postgresql:// URL, not {args.store_url[:60]!r}")
        try:
            return ScratchStore(args.store_url, bodies=args.bodies)  # type: ignore[call-arg]
        except TypeError:
            raise SystemExit(
                "this version of jupyter-scratchpad has no PostgreSQL store yet; use --store DIR"
            ) from None
    if args.ephemeral:
        return ScratchStore(None)
    path = Path(args.store) if args.store else default_store_dir()
    return ScratchStore(path)


def _pad(store: Any, args: argparse.Namespace, default_run: str) -> Any:
    policy = None
    if args.policy:
        from ..spill import SpillPolicy

        policy = SpillPolicy.from_toml(args.policy)
    kwargs: dict[str, Any] = {"model": args.model}
    if policy is not None:
        kwargs["policy"] = policy
    return store.scratchpad(args.run_id or default_run, args.agent_id, **kwargs)


def _serve(server: Any, http: str | None) -> int:
    import anyio

    if http:
        host, _, port = http.rpartition(":")
        if not host or not port.isdigit():
            raise SystemExit(f"--http takes HOST:PORT, not {http!r}")
        import uvicorn

        uvicorn.run(server.streamable_http_app(), host=host, port=int(port), log_level="warning")
        return 0

    async def run() -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..mcp import build_server

    with _open_store(args) as store:
        pad = _pad(store, args, f"mcp-{uuid.uuid4().hex[:12]}")
        try:
            return _serve(build_server(pad, prefix=args.prefix), args.http)
        finally:
            _log_usage(pad)


def _cmd_proxy(args: argparse.Namespace) -> int:
    from ..mcp import Upstream, build_proxy, upstreams_from_toml

    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    sources = sum(bool(x) for x in (args.config, args.url, command))
    if sources != 1:
        raise SystemExit("give exactly one upstream: --config servers.toml, --url URL, or -- COMMAND ARGS…")
    if args.config:
        upstreams = upstreams_from_toml(args.config)
        if not args.policy:
            args.policy = args.config  # the same file holds [mcp.servers.<name>.scratchpad]
    elif args.url:
        upstreams = [Upstream(args.name, url=args.url)]
    else:
        upstreams = [Upstream(args.name, command=command[0], args=command[1:])]
    with _open_store(args) as store:
        pad = _pad(store, args, f"proxy-{uuid.uuid4().hex[:12]}")
        try:
            return _serve(build_proxy(pad, upstreams, prefix=args.prefix), args.http)
        finally:
            _log_usage(pad)


def _log_usage(pad: Any) -> None:
    """One line on stderr when a server ends: what was kept out of the context, what was read back."""
    from ..mcp._server import usage_of

    try:
        print(f"jupyter-scratchpad: usage {json.dumps(usage_of(pad))}", file=sys.stderr, flush=True)
    except Exception as exc:  # the store may be gone; the exit must not fail for a log line
        print(f"jupyter-scratchpad: usage unavailable ({type(exc).__name__}: {exc})"[:300], file=sys.stderr)


def _cmd_tool(args: argparse.Namespace, tool: str, arguments: dict[str, Any]) -> int:
    with _open_store(args) as store:
        pad = _pad(store, args, "default")
        res = pad.call_tool(tool, arguments, charge=False)
        if args.json:
            print(json.dumps({"ok": res.ok, "data": res.data, "error": res.error}, default=str))
        else:
            print(res.text)
        return 0 if res.ok else 1


def _cmd_list(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        runs = store.list_entries(args.run_id) if args.run_id else None
        if runs is None:
            pad = _pad(store, args, "default")
            res = pad.call_tool("scratch_list", {}, charge=False)
            print(res.text)
            return 0
        for row in runs:
            print(json.dumps(row, default=str))
        return 0


def _cmd_usage(args: argparse.Namespace) -> int:
    with _open_store(args) as store:
        pad = _pad(store, args, "default")
        print(json.dumps(pad.usage()))
        return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jupyter-scratchpad", description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--version", action="version", version=f"jupyter-scratchpad {__version__}")
    sub = parser.add_subparsers(dest="cmd", required=True)

    mcp = sub.add_parser("mcp", help="MCP server and proxy").add_subparsers(dest="mcp_cmd", required=True)
    serve = mcp.add_parser("serve", help="the scratchpad's tools as an MCP server (stdio, or --http)")
    _store_args(serve)
    serve.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP instead of stdio")
    serve.add_argument("--prefix", default="", help="put this before our tool names")
    proxy = mcp.add_parser("proxy", help="an MCP proxy that spills large upstream results")
    _store_args(proxy)
    proxy.add_argument("--config", metavar="TOML", help="[mcp.servers.<name>] upstreams (Aura's layout)")
    proxy.add_argument("--url", help="one streamable-HTTP upstream")
    proxy.add_argument("--name", default="upstream", help="the upstream's server name for the policy")
    proxy.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    proxy.add_argument("--prefix", default="", help="put this before our tool names")
    proxy.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS… of one stdio upstream")

    for name, helptext in (("list", "the live handles and notes"), ("usage", "tokens intercepted and read")):
        p = sub.add_parser(name, help=helptext)
        _store_args(p)
        p.add_argument("--json", action="store_true")
    call = sub.add_parser("call", help="run any tool: call TOOL '{\"handle\": …}'")
    _store_args(call)
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}")
    call.add_argument("--json", action="store_true", help="print ok/data/error as JSON")
    for name in ("schema", "head", "tail", "grep", "get_in", "item_schema", "sql", "read"):
        p = sub.add_parser(name, help=f"the {name} tool as the person")
        _store_args(p)
        p.add_argument("rest", nargs="*", help="handle and arguments (grep H PATTERN, sql QUERY, get_in H PATH)")
        p.add_argument("--json", action="store_true")
    return parser


def _shortcut(cmd: str, rest: list[str]) -> dict[str, Any]:
    if cmd == "sql":
        return {"query": " ".join(rest)}
    if not rest:
        raise SystemExit(f"{cmd} needs a handle")
    args: dict[str, Any] = {"handle": rest[0]}
    if cmd == "grep" and len(rest) > 1:
        args["pattern"] = rest[1]
    elif cmd in ("get_in", "item_schema") and len(rest) > 1:
        args["path"] = rest[1]
    elif cmd in ("head", "tail") and len(rest) > 1:
        args["lines"] = int(rest[1])
    return args


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.cmd == "mcp":
            return _cmd_serve(args) if args.mcp_cmd == "serve" else _cmd_proxy(args)
        if args.cmd == "list":
            return _cmd_list(args)
        if args.cmd == "usage":
            return _cmd_usage(args)
        if args.cmd == "call":
            try:
                arguments = json.loads(args.arguments)
            except ValueError as exc:
                raise SystemExit(f"arguments must be a JSON object: {exc}") from None
            return _cmd_tool(args, args.tool, arguments)
        return _cmd_tool(args, args.cmd, _shortcut(args.cmd, args.rest))
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except (OSError, ValueError) as exc:
        print(f"jupyter-scratchpad: {exc}", file=sys.stderr)
        return 2

