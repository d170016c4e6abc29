"""``jupyter-scratchpad``: ``mcp serve``, ``mcp proxy``, and a person's reads over a store.

    jupyter-scratchpad mcp serve [--store DIR | --store-url URL | --ephemeral] [--http HOST:PORT]
    jupyter-scratchpad mcp proxy --config servers.toml
    jupyter-scratchpad mcp proxy [--name NAME] -- COMMAND ARGS...
    jupyter-scratchpad mcp proxy [--name NAME] --url URL
    jupyter-scratchpad ls|usage|sweep
    jupyter-scratchpad spill [--tool NAME] < FILE          (kubectl get pods -o json | … spill --tool k8s)
    jupyter-scratchpad show HANDLE | rm HANDLE… | export HANDLE --to FILE.{json,jsonl,parquet,csv}
    jupyter-scratchpad schema|head|tail|slice|grep|get|iter|item-schema|sql … (any tool: ``call TOOL JSON``)
    jupyter-scratchpad notes [KEY [VALUE]] [--ttl S] [--delete]
    jupyter-scratchpad replay TRACE [--policy TOML]         (the policy lab)

Reads from the command line act as the person (nothing is charged to an agent's budget). The store
is ``--store DIR`` (before or after the subcommand), else ``$SCRATCHPAD_STORE``, else a per-user
data directory; reads and spills use the run ``default`` unless ``--run-id`` says otherwise.
Exit codes: 0 done, 1 the tool refused or found nothing (the message says what to try), 2 a usage or
store problem; a stdio ``mcp serve`` / ``mcp proxy`` stopped by SIGTERM, SIGINT or SIGHUP exits with
143, 130 or 129 once it has stopped its upstreams and SQL workers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shlex
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __version__

__all__ = ["default_store_dir", "main"]


class UsageError(Exception):
    """A command line that cannot run as given: one line on stderr, exit code 2."""


def default_store_dir() -> Path:
    """A per-user data directory (``$XDG_DATA_HOME/jupyter-scratchpad/store``)."""
    if sys.platform == "win32":  # pragma: no cover
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":  # pragma: no cover
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "jupyter-scratchpad" / "store"


CLI_MAX_TOKENS = 25_000  # what one read prints unless --max-tokens says otherwise


def _tokens(value: str) -> int:
    if not re.fullmatch(r"[0-9]+", value.strip()):
        raise argparse.ArgumentTypeError(f"a number of tokens, 0 or more (0: no bound), not {value[:40]!r}")
    return int(value)


def _window(text: str) -> int:
    if not re.fullmatch(r"[0-9][0-9_,]*", text.strip()) or int(text.strip().replace(",", "").replace("_", "")) < 1000:
        raise argparse.ArgumentTypeError(f"a number of tokens, at least 1000 (128000 or 128,000), not {text[:40]!r}")
    return int(text.strip().replace(",", "").replace("_", ""))


def _count(option: str) -> Callable[[str], int]:
    def check(text: str) -> int:
        if not re.fullmatch(r"[0-9]+", text.strip()):
            raise argparse.ArgumentTypeError(f"{option} takes a whole number, 0 or more, not {text[:40]!r}")
        return int(text)

    return check


def _bound_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-tokens",
        type=_tokens,
        default=CLI_MAX_TOKENS,
        metavar="N",
        help=f"a result far over N tokens is refused with smaller calls to make (default {CLI_MAX_TOKENS:,}; "
        "0: no bound). Nothing is charged either way",
    )


def _paged_args(p: argparse.ArgumentParser, what: str) -> None:
    """A listing's bound: ``--max-tokens`` (the rest said on stderr) and ``--offset``."""
    _bound_arg(p)
    p.add_argument("--offset", type=_count("--offset"), default=0, metavar="N",
                   help=f"start at the N-th of the {what} (0-based; the line after a listing gives it)")  # fmt: skip


def _store_args(p: argparse.ArgumentParser, reads: bool = False, server: bool = False) -> None:
    """The store options; ``reads``: a command that reads a run (no --ephemeral, whose store is
    empty, no --policy, which only a spill applies); ``server``: mcp serve/proxy (a new run per
    session)."""
    if reads:
        g = p.add_argument_group("store")
        g.add_argument("--store", metavar="DIR", help=f"store directory (default {default_store_dir()})")
        g.add_argument("--store-url", metavar="URL", help="a shared PostgreSQL catalog (env SCRATCHPAD_STORE_URL)")
        g.add_argument("--bodies", metavar="DIR", help="with --store-url: the shared directory of the bodies")
        g.add_argument("--run-id", type=_named("--run-id"), help="the run to read (default 'default'; a server "
                       "prints its run when it starts)")  # fmt: skip
        g.add_argument("--agent-id", type=_named("--agent-id"), default="main", help="the run's agent (default main)")
        g.add_argument("--model", default="gpt-4o", help="the model whose tokens are counted (default gpt-4o)")
        g.add_argument("--ephemeral", action="store_true", help=argparse.SUPPRESS)  # (an empty store: nothing to read)
        p.set_defaults(policy=None)
        return
    g = p.add_argument_group("store")
    g.add_argument("--store", metavar="DIR", help=f"store directory (default {default_store_dir()})")
    g.add_argument(
        "--store-url",
        metavar="URL",
        help="a shared PostgreSQL catalog (postgresql://…; env SCRATCHPAD_STORE_URL, unless --store or "
        "--ephemeral is given)",
    )
    g.add_argument("--bodies", metavar="DIR", help="with --store-url: the shared directory of the bodies")
    g.add_argument("--ephemeral", action="store_true", help="a temporary store, deleted on exit")
    g.add_argument(
        "--run-id",
        type=_named("--run-id"),
        help="the run (default: a new one per server session)" if server else "the run (default 'default')",
    )
    g.add_argument("--agent-id", type=_named("--agent-id"), default="main", help="the agent (default main)")
    g.add_argument("--model", default="gpt-4o", help="the model whose tokens are counted (default gpt-4o)")
    g.add_argument("--policy", metavar="TOML", help="spill policy in Aura's TOML layout")
    if server:
        g.add_argument(
            "--context-window",
            metavar="N",
            type=_window,
            help="the model's context window in tokens, which sizes the session's budget (default: the model's, "
            "e.g. 128,000 for gpt-4o); the budget lasts as long as this process",
        )


_JSON_HELP = "print JSON for machines: a tool's result as {ok, data, error}, a listing as one object per line"
_TTL_MAX_S = 315_360_000  # ten years: the store's own bound


def _seconds(option: str) -> Callable[[str], float]:
    """A TTL given on the command line, checked as the option it is (``notes --ttl -1`` was refused
    as "scratch_write: 'ttl_s' must be …", with a hint to run a tool call)."""

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 0 < value <= _TTL_MAX_S:
            raise argparse.ArgumentTypeError(
                f"{option} takes seconds, a number > 0 and at most {_TTL_MAX_S:,} (ten years), not {text[:40]!r}"
            )
        return value

    return check


def _named(option: str) -> Callable[[str], str]:
    """An id given on the command line: ``--run-id ""`` read the run ``default`` without a word."""

    def check(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{option} needs a name (it was empty)")
        return text

    return check


def _open_store(args: argparse.Namespace, create: bool = True) -> Any:
    from ..store import ScratchStore
    from ..store._pgcatalog import redact_url

    given = args.store or getattr(args, "store_global", None)
    url = args.store_url
    if url and (given is not None or args.ephemeral):
        raise UsageError("give one store: --store-url URL, --store DIR or --ephemeral")
    if url is None and given is None and not args.ephemeral:
        url = os.environ.get("SCRATCHPAD_STORE_URL")  # an option on the command line beats the environment
    if url:
        if "://" not in url:
            raise UsageError("--store-url takes a postgresql://user@host/database URL (a directory goes in --store)")
        return ScratchStore(url.strip(), bodies=args.bodies)  # None: $SCRATCHPAD_BODIES, else per catalog
    if args.bodies:
        raise UsageError("--bodies goes with --store-url (a store directory holds its own bodies)")
    if args.ephemeral:
        return ScratchStore(None)
    given = given or os.environ.get("SCRATCHPAD_STORE")
    if given and "://" in given:
        raise UsageError(f"--store takes a directory; a URL such as {redact_url(given)[:60]!r} goes in --store-url")
    path = Path(os.path.expandvars(os.path.expanduser(given))) if given else default_store_dir()
    if given and not create and not path.exists():  # (a misspelt --store made the whole tree, and said "empty")
        raise UsageError(f"no store at {given}: nothing was spilled there (check --store; spill creates one)")
    return ScratchStore(path)


def _pad(store: Any, args: argparse.Namespace, default_run: str) -> Any:
    policy = None
    if args.policy:
        from ..spill import SpillPolicy

        policy = SpillPolicy.from_toml(args.policy)
    kwargs: dict[str, Any] = {"model": args.model}
    if policy is not None:
        kwargs["policy"] = policy
    if getattr(args, "context_window", None) is not None:
        kwargs["context_window"] = args.context_window
    return store.scratchpad(args.run_id or default_run, args.agent_id, **kwargs)


# Said after a server's budget_exhausted: a client keeps one server for many conversations, and
# the refusal said only "answer with what you have" (probe Y), with nothing a person could do.
SERVER_BUDGET_NOTE = (
    "This server's budget is the whole session's (it does not know when a conversation ends): a "
    "person restarts the server to start it again, or gives it another size with --context-window N"
)


def _reading_pad(store: Any, args: argparse.Namespace) -> Any:
    """The pad of the run a read command reads, never creating it (``store.scratchpad`` registers
    the agent and claims the run: ``ls --run-id incident-42`` made the run 'main''s, and the agent
    it was meant for was refused it). A run with no live entries, or only another agent's, is said."""
    from ..errors import NotFoundError, ScopeError

    run = args.run_id or "default"
    rows = store.list_entries(run)  # (every agent's; reads only)
    if not rows:
        owner = store.run_owner(run)
        what = (
            "no such run" if owner is None else f"agent {owner!r}'s run, with nothing live: it expired or was deleted"
        )
        runs = [r["run_id"] for r in store.list_runs(args.agent_id if store.shared else None)]
        where = (
            f"; runs with live entries: {', '.join(runs[:5])}{' …' if len(runs) > 5 else ''} (jupyter-scratchpad runs)"
            if runs
            else "; a server prints its run when it starts"
        )
        raise NotFoundError(f"no live handle or note in run {run!r} of {store.describe()} ({what}){where}: give one "
                            "with --run-id")  # fmt: skip
    owners = sorted({str(r["agent_id"]) for r in rows})
    if args.agent_id not in owners:
        raise ScopeError(
            f"run {run!r} is agent {owners[0]!r}'s, not {args.agent_id!r}'s: read it with --agent-id {owners[0]}",
        )
    return _pad(store, args, run)


def _host_port(text: str) -> tuple[str, int]:
    """``--http HOST:PORT`` (an IPv6 host in brackets: ``[::1]:8765``), checked before anything starts."""
    host, _, port = text.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"takes HOST:PORT with a port from 1 to 65535, e.g. 127.0.0.1:8765, not {text!r}"
        )
    return host, int(port)


def _tool_prefix(text: str) -> str:
    from ..tools import valid_prefix

    if not valid_prefix(text):
        raise argparse.ArgumentTypeError(
            f"takes a letter, then letters, digits, '_' and '-' (up to 32; MCP clients refuse other tool names), "
            f"not {text[:40]!r}"
        )
    return text


def _server_name(text: str) -> str:
    from ..tools import SERVER_NAME_RULE, valid_server_name

    if not valid_server_name(text):
        raise argparse.ArgumentTypeError(f"{SERVER_NAME_RULE} (it goes in tool names), not {text[:40]!r}")
    return text


class _Signalled(BaseException):
    """An HTTP server's stop by a signal, after uvicorn's graceful shutdown (it re-raises the
    signal it handled: SIGTERM then killed the process, exit -15, no usage line, an --ephemeral
    store left behind; SIGINT exited 0)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_signalled(signum: int, _frame: Any) -> None:
    raise _Signalled(signum)


def _serve_http(server: Any, http: tuple[str, int], serving: Callable[[], None]) -> int:
    """Streamable HTTP until a signal: exits 128 + the signal (143, 130, 129), as stdio does, the
    store closed on the way out (the ``with`` around this)."""
    import signal
    import threading

    import uvicorn

    host, port = http
    hangup: list[int] = []

    def on_hangup(signum: int, _frame: Any) -> None:  # (uvicorn handles SIGTERM and SIGINT only)
        hangup.append(signum)
        os.kill(os.getpid(), signal.SIGTERM)  # its graceful stop, then exit 129

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, _raise_signalled)  # (uvicorn's own while it serves)
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, on_hangup)
    serving()
    try:
        uvicorn.run(server.streamable_http_app(), host=host, port=port, log_level="warning")
    except _Signalled as stop:
        return 128 + (hangup[0] if hangup else stop.signum)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def _serve(
    server: Any,
    http: tuple[str, int] | None,
    serving: Callable[[], None] = lambda: None,
    last_words: Callable[[], None] | None = None,
    cleanup: Callable[[], None] | None = None,
) -> int:
    import anyio

    if http:
        return _serve_http(server, http, serving)

    global _SIGNALS
    from ..mcp._shutdown import EOF_GRACE_S, ShutdownSignals, stop_after

    signals = _SIGNALS = ShutdownSignals()
    signals.last_words = last_words  # (said by a hard exit after a signal)
    signals.cleanup = cleanup  # (done by it: an --ephemeral store's directory removed)
    stopping: list[Any] = []  # the timer that stops what is left once stdin closed

    async def run() -> None:
        import asyncio

        from ..mcp._wire import tolerant_stdio_server

        # The proxy's upstreams start before stdin is read: one that cannot start stops the proxy at
        # once (a thread blocked reading stdin kept it alive, silent, until the client closed stdin),
        # and a client that leaves while they start ends the wait.
        async with anyio.create_task_group() as tg:
            loop = asyncio.get_running_loop()

            def wake() -> None:
                loop.call_soon_threadsafe(tg.cancel_scope.cancel)

            signals.wake = wake
            started = anyio.Event()
            tg.start_soon(_until_stdin_closes, started, tg.cancel_scope)
            async with server.lifespan(server):
                started.set()
                serving()
                try:
                    async with tolerant_stdio_server() as (read, write):  # (a request the SDK cannot read is answered)
                        await server.run(read, write, server.create_initialization_options(_notifications(server)))
                finally:
                    # the client closed stdin (or left): the upstreams are told to stop as the lifespan
                    # ends (their stdin closed), and the SDK's client waits 2 s, then 2 s more after a
                    # SIGTERM; the client that closed ours sends SIGTERM after 2 s. Stopped after 0.8 s.
                    stopping.append(stop_after(EOF_GRACE_S))

    from ..mcp._proxy import UpstreamError, first_raised

    signals.install()  # (this command's only, put back by main: the kernel side runs SQL workers too)
    try:
        anyio.run(run)
    except BaseException as exc:  # an upstream that cannot start: one line, not 90 of task groups
        if signals.code is not None:  # stopped by a signal (what failed then is its doing)
            return signals.code
        found = first_raised(exc, UpstreamError)
        if found is None:
            raise
        print(f"jupyter-scratchpad: {found}", file=sys.stderr)
        return START_FAILED
    finally:
        for timer in stopping:
            timer.cancel()
        signals.wake = None
    return 0 if signals.code is None else signals.code


# A stdio server's SIGTERM, SIGHUP and SIGINT handlers (mcp/_shutdown.py): its upstreams and SQL
# workers are stopped, then it exits with 128 + the signal
_SIGNALS: Any = None


async def _until_stdin_closes(started: Any, scope: Any) -> None:
    """Cancels ``scope`` if the client closes stdin before ``started`` is set (POSIX: a pipe's
    hang-up); returns once it is set."""
    import anyio

    poll = _stdin_hangup_poll()
    gone_at = None
    while not started.is_set():
        if gone_at is None and poll is not None and poll():
            gone_at = anyio.current_time()  # (what it sent before is still answered, if the start is quick)
        if gone_at is not None and anyio.current_time() - gone_at > HANGUP_GRACE_S:
            print("jupyter-scratchpad: the client closed stdin while the upstreams were starting; stopped",
                  file=sys.stderr, flush=True)  # fmt: skip
            scope.cancel()
            return
        await anyio.sleep(0.1)


def _notifications(server: Any) -> Any:
    from ..mcp._proxy import proxy_notification_options

    return proxy_notification_options() if server.name == "jupyter-scratchpad-proxy" else None


HANGUP_GRACE_S = 3.0  # how long upstreams may go on starting after the client closed stdin


def _stdin_hangup_poll() -> Callable[[], bool] | None:
    """A check that stdin's writer has gone (its data may still be unread), or None where the
    platform cannot tell without reading it."""
    import select

    if not hasattr(select, "poll"):  # pragma: no cover (Windows)
        return None
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    poller = select.poll()
    poller.register(fd, select.POLLHUP | select.POLLERR)
    return lambda: any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, ev in poller.poll(0))


START_FAILED = 1  # the exit code of a proxy whose upstream could not start


def _cmd_serve(args: argparse.Namespace) -> int:
    from ..mcp import build_server

    with _open_store(args) as store:
        pad, new_pad = _server_pads(store, args, "mcp")
        args.serving = True
        return _serve_and_log(pad, build_server(pad, prefix=args.prefix, new_pad=new_pad), args.http)


def _server_pads(store: Any, args: argparse.Namespace, kind: str) -> tuple[Any, Callable[[], Any] | None]:
    """A server's pad and, over HTTP, what makes each later client session's: a budget of its own
    and, without --run-id, a run of its own, said on stderr (two clients shared one run, its notes
    and one budget)."""

    def new_pad() -> Any:
        made = _pad(store, args, f"{kind}-{uuid.uuid4().hex[:12]}")
        made.budget_exhausted_note = SERVER_BUDGET_NOTE
        return made

    def said() -> Any:
        made = new_pad()
        _say_run(made)
        return made

    return new_pad(), said if args.http else None


def _cmd_proxy(args: argparse.Namespace) -> int:
    from ..mcp import Upstream, build_proxy, upstreams_from_client_config, upstreams_from_toml
    from ..mcp._proxy import DEFAULT_TIMEOUT_S, timeout_of

    try:
        timeout = (
            DEFAULT_TIMEOUT_S
            if args.upstream_timeout is None
            else timeout_of(args.upstream_timeout, "--upstream-timeout")
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    sources = sum(bool(x) for x in (args.config, args.url, command))
    if sources != 1:
        raise UsageError("give exactly one upstream: --config servers.toml, --url URL, or -- COMMAND ARGS…")
    if args.config:
        try:
            text = Path(args.config).read_bytes().decode("utf-8", "replace")  # (else the policy loader said
        except OSError as exc:  # "cannot read policy file")
            raise UsageError(f"cannot read --config {args.config}: {exc.strerror or exc}") from None
        try:  # a client's JSON ({"mcpServers": …}) as it is, so a no-code setup reuses its own file
            found = upstreams_from_client_config(args.config, text, default_timeout_s=timeout)
        except ValueError as exc:
            raise UsageError(f"--config {args.config}: {exc}") from None
        if found is not None:
            upstreams = found
        else:
            upstreams = upstreams_from_toml(args.config, default_timeout_s=timeout)
            if not args.policy:
                args.policy = args.config  # the same file holds [mcp.servers.<name>.scratchpad]
    elif args.url:
        upstreams = [Upstream(args.name, url=args.url, timeout_s=timeout)]
    else:
        upstreams = [Upstream(args.name, command=command[0], args=command[1:], timeout_s=timeout)]
    with _open_store(args) as store:
        pad, new_pad = _server_pads(store, args, "proxy")
        for warning in _passes_through(pad.policy, args.policy, [u.name for u in upstreams]):
            print(f"jupyter-scratchpad: warning: {warning}", file=sys.stderr, flush=True)
        args.serving = True
        return _serve_and_log(pad, build_proxy(pad, upstreams, prefix=args.prefix, new_pad=new_pad), args.http)


def _passes_through(policy: Any, source: str | None, servers: list[str]) -> list[str]:
    """What the policy lets through unspilled, said at start: Aura's layout turns spilling off
    without ``enabled = true``, and intercepts only the tools a pattern names (a config copied
    from a client's server list passed 275 KB results straight through, without a word)."""
    if source is None:
        return []
    if not policy.enabled:
        return [
            f"{source} has no 'enabled = true' under [agent.scratchpad], so nothing is spilled: every result "
            "reaches the client whole. Add [agent.scratchpad] enabled = true (and patterns) to spill"
        ]
    if not policy.opt_in or policy.patterns:
        return []
    bare = [s for s in servers if not (policy.server_patterns or {}).get(s)]
    if not bare:
        return []
    return [
        f"{source}: no pattern names the tools of {', '.join(repr(s) for s in bare[:10])}, so their results "
        'reach the client whole; add e.g. [mcp.servers.NAME.scratchpad] "*" = { min_tokens = 2000 } '
        '(or [agent.scratchpad.patterns] "*" = { min_tokens = 2000 } for every server)'
    ]


def _serve_and_log(pad: Any, server: Any, http: tuple[str, int] | None) -> int:
    """Serve, then log the session's usage; an upstream that could not start is the one line
    said (a session that never ran has no usage to tell)."""
    import threading

    code = None
    once = threading.Lock()

    def log_once() -> None:  # (here, or by a signal's hard exit when the unwind was held up)
        if once.acquire(blocking=False):
            _log_usage(pad)

    try:
        code = _serve(server, http, lambda: _say_run(pad), log_once, pad.store.remove_temporary)
        return code
    finally:
        if code != START_FAILED:
            log_once()


def _say_run(pad: Any) -> None:
    """One line on stderr once the server serves: the run its handles are in (else found only in
    the exit line), for the CLI to read them."""
    store = pad.store.describe()
    read_with = f"--run-id {pad.run_id}" + (f" --agent-id {pad.agent_id}" if pad.agent_id != "main" else "")
    if pad.store.temporary:
        later = "a temporary store (--ephemeral), removed when this process exits"
    elif pad.store.shared:  # (the CLI reads a shared store while this server runs)
        later = f"its handles are read with {read_with}"
    else:
        later = (
            f"its handles are read with {read_with} once this process exits (an embedded store opens in one "
            "process at a time)"
        )
    print(f"jupyter-scratchpad: run {pad.run_id!r} (agent {pad.agent_id!r}) in {store}; {later}", file=sys.stderr,
          flush=True)  # fmt: skip


def _log_usage(pad: Any) -> None:
    """One line on stderr when a server ends: what was kept out of the context, what was read back."""
    from ..mcp._server import usage_of

    try:
        print(f"jupyter-scratchpad: usage {json.dumps(usage_of(pad))}", file=sys.stderr, flush=True)
    except Exception as exc:  # the store may be gone; the exit must not fail for a log line
        print(f"jupyter-scratchpad: usage unavailable ({type(exc).__name__}: {exc})"[:300], file=sys.stderr)


def _print_result(args: argparse.Namespace, res: Any) -> int:
    if args.json:
        error = res.error
        if error and error.get("suggestions"):  # each also as the command line that runs it
            error = {**error, "suggestions": [{**s, "cli": _cli_hint(args, s)} for s in error["suggestions"]]}
        print(json.dumps({"ok": res.ok, "data": res.data, "error": error}, default=str))
    elif res.ok:
        print(_for_the_terminal(res.text))
    else:  # one line with the hint, on stderr
        err = res.error or {}
        hint = next((_cli_hint(args, s) for s in err.get("suggestions") or [] if s.get("tool")), None)
        if err.get("in_runs"):  # the same command, in the run that holds the handle
            hint = _in_run(getattr(args, "argv", None) or sys.argv[1:], str(err["in_runs"][0]))
        message = str(err.get("message", ""))
        if _LIST_POINTER.search(message):  # the tool's pointer, as the CLI says it (the hint)
            message = _LIST_POINTER.sub("", message)
            hint = hint or _cli_hint(args, {"tool": "scratch_list", "arguments": {}})
        line = f"jupyter-scratchpad: {err.get('error', 'error')}: {message}"
        print(" ".join(line.split())[:600] + (f" (try: {hint})" if hint else ""), file=sys.stderr)
    if not res.ok and (res.error or {}).get("error") in ("invalid_argument", "invalid_handle", "unknown_tool"):
        return 2  # a bad or missing argument is a usage error, as argparse's own
    found_nothing = res.ok and isinstance(res.data, dict) and res.data.get("total_matches") == 0  # grep's 1
    return 0 if res.ok and not found_nothing else 1


def _in_run(argv: list[str], run: str) -> str:
    """``argv`` as a command line reading ``run`` instead (its ``--run-id`` replaced or added)."""
    import shlex

    words: list[str] = []
    skip = False
    for w in argv:
        if skip:
            skip = False
        elif w == "--run-id":
            skip = True
        elif not w.startswith("--run-id="):
            words.append(w)
    return shlex.join(["jupyter-scratchpad", *words, "--run-id", run])


def _for_the_terminal(text: str) -> str:
    """A terminal shows stored text, never obeys it: its control characters (an escape that sets
    the window's title, recolours or clears the screen) are shown as U+FFFD, as in a stub's
    preview. A pipe or a file gets the text as stored."""
    if not sys.stdout.isatty():
        return text
    from ..spill._stub import _CONTROL

    return _CONTROL.sub("\ufffd", text)


def _cmd_tool(args: argparse.Namespace, tool: str, arguments: dict[str, Any]) -> int:
    with _open_store(args, create=tool == "scratch_write") as store:  # (a note written makes the store)
        pad = _pad(store, args, "default") if tool == "scratch_write" else _reading_pad(store, args)
        limit = getattr(args, "max_tokens", None)
        return _print_result(args, pad.call_tool(tool, arguments, charge=False, page_tokens=limit or None))


SPILL_COUNT_WAIT_S = 120.0  # how long spill waits for its exact token count before it exits
SPILL_PRINT_WAIT_S = 5.0  # how long it waits for it before printing the stub (else a bound, then the wait)


def _cmd_spill(args: argparse.Namespace) -> int:
    if sys.stdin.isatty():
        raise UsageError("spill reads the output from stdin: some-command | jupyter-scratchpad spill --tool NAME")
    data = sys.stdin.buffer.read()
    if not data:  # (a pipe whose command printed nothing, or failed: said as such, nothing stored)
        raise UsageError(
            "stdin was empty: nothing to store (did the command before the | print nothing, or fail?); "
            "some-command | jupyter-scratchpad spill --tool NAME"
        )
    with _open_store(args) as store:
        pad = _pad(store, args, "default")
        r = pad.intercept(data, args.tool, force=not args.policy_decides, ttl_s=args.ttl)
        if r.spilled and pad.wait_for_counts(SPILL_PRINT_WAIT_S):  # the stub with the exact count, when soon in
            r = _with_stub(r, pad.stub(r.handle), pad)
        try:
            _print_spill(args, r)
        finally:  # (a reader gone, | head -1, still leaves the count in)
            if r.spilled:
                _wait_for_count(pad, r.handle)
        if r.failure:
            print(f"jupyter-scratchpad: the spill failed: {r.failure}", file=sys.stderr)
            return 2
        return 0


def _with_stub(r: Any, stub: dict[str, Any], pad: Any) -> Any:
    import dataclasses

    from ..spill._stub import render_stub_text

    stub = {**stub, **{k: r.stub[k] for k in ("reused", "source_tool") if k in r.stub}}  # ("already stored")
    return dataclasses.replace(r, stub=stub, content=render_stub_text(stub, pad.tokenizer.count))


def _in_cli_next(args: argparse.Namespace, text: str, stub: dict[str, Any] | None) -> str:
    """A stub as a person reads it here: its closing "Next, with this handle: …" line (tool calls,
    a model's) as the command lines that run its next steps (those without a hole to fill in)."""
    from ..spill._stub import has_hole, next_steps

    if not stub or not stub.get("handle"):
        return text
    head, sep, last = text.rpartition("\n")
    if not sep or not last.startswith("Next, with this handle:"):
        return text
    lines = [
        "  " + _cli_hint(args, {"tool": tool, "arguments": arguments})
        for tool, arguments in next_steps(stub)
        if not has_hole(arguments)
    ]
    return f"{head}\nNext:\n" + "\n".join(lines) if lines else text


def _print_spill(args: argparse.Namespace, r: Any) -> None:
    if args.json:
        print(json.dumps({"spilled": r.spilled, "handle": r.handle, "stub": r.stub, "failure": r.failure}, default=str))
    elif r.spilled:
        print(_in_cli_next(args, str(r.content), r.stub))
    else:  # under the policy's threshold: the output itself, as a pipe would pass it
        sys.stdout.write(r.content if isinstance(r.content, str) else bytes(r.content).decode("utf-8", "replace"))
    sys.stdout.flush()  # (the stub reaches a pipe before the wait for the count)


def _wait_for_count(pad: Any, handle: str | None) -> None:
    """The exact token count is worked out after the stub, in this process: it stays until the
    count is in (``ls`` and ``show`` then say it, not "≥ 5,120"), ``SPILL_COUNT_WAIT_S`` at most."""
    if not pad.wait_for_counts(SPILL_COUNT_WAIT_S):
        print(
            f"jupyter-scratchpad: the exact token count of {handle} was not in after {SPILL_COUNT_WAIT_S:g} s; "
            "it stays a lower bound (≥)",
            file=sys.stderr,
        )


def _cmd_show(args: argparse.Namespace) -> int:
    from ..spill._stub import render_stub_text

    with _open_store(args, create=False) as store:
        pad = _reading_pad(store, args)
        stub = pad.stub(args.handle)
        text = render_stub_text(stub, pad.tokenizer.count)
        print(json.dumps(stub, default=str) if args.json else _in_cli_next(args, text, stub))
        return 0


def _cmd_rm(args: argparse.Namespace) -> int:
    from ..errors import InvalidArgumentError

    with _open_store(args, create=False) as store:
        pad = _reading_pad(store, args)  # (nothing to delete in a run that is not there)
        code = 0
        deleted: list[str] = []
        for h in args.handles:  # each on its own: a bad one does not stop the rest
            try:
                removed = pad.delete(h)
            except InvalidArgumentError as exc:  # a usage error (2), said as the command line says it
                code = 2
                print(f"jupyter-scratchpad: {_in_cli_words(args, ' '.join(str(exc).split()))[:400]}", file=sys.stderr)
                continue
            if not removed:
                code = max(code, 1)
                print(f"jupyter-scratchpad: no live handle {h!r} (see: jupyter-scratchpad ls)", file=sys.stderr)
            else:
                deleted.append(h)
                if not args.json:  # (it printed nothing: a person or a script could not tell)
                    print(f"deleted {h}")
        if args.json:
            error = None if code == 0 else f"{len(args.handles) - len(deleted)} of {len(args.handles)} not deleted"
            print(json.dumps({"ok": code == 0, "data": {"deleted": deleted}, "error": error}))
        return code


def _cmd_sweep(args: argparse.Namespace) -> int:
    with _open_store(args, create=False) as store:
        removed = store.sweep()
        print(json.dumps({"removed": removed}) if args.json else f"removed {removed} expired entries")
        return 0


_NOTE_VERBS = {"read": 1, "write": 2, "delete": 1}  # how many words each takes after it


def _note_words(args: argparse.Namespace) -> tuple[str, str | None, str | None]:
    """``(verb, key, value)`` of ``notes [read KEY | write KEY VALUE | delete KEY | KEY [VALUE]]``:
    ``notes read plan`` wrote read="plan", where its help said "read KEY"."""
    words = list(args.words)
    if words and words[0] in _NOTE_VERBS:
        verb, rest = words[0], words[1:]
        if len(rest) != _NOTE_VERBS[verb]:
            shape = {"read": "read KEY", "write": "write KEY VALUE", "delete": "delete KEY"}[verb]
            raise UsageError(f"notes {verb} takes {shape} (a note named {verb!r}: notes read {verb})")
    elif len(words) > 2:
        raise UsageError("notes takes KEY [VALUE]: notes read KEY, notes write KEY VALUE, notes delete KEY")
    else:
        verb, rest = ("list" if not words else "read" if len(words) == 1 else "write"), words
    if args.delete:
        if verb not in ("read", "delete"):  # (with no key it listed the notes; with a value, ignored it)
            raise UsageError(
                "notes --delete needs the KEY of the note to delete"
                if verb == "list"
                else "notes --delete takes a KEY only, not a value"
            )
        verb = "delete"
    return verb, (rest[0] if rest else None), (rest[1] if len(rest) > 1 else None)


def _cmd_notes(args: argparse.Namespace) -> int:
    verb, key, value = _note_words(args)
    if args.ttl is not None and verb != "write":
        raise UsageError("notes --ttl goes with a write: notes write KEY VALUE --ttl SECONDS")
    with _open_store(args, create=verb == "write") as store:
        if verb == "write":
            pad = _pad(store, args, "default")
            try:
                parsed: Any = json.loads(value or "")
            except ValueError:
                parsed = value  # not JSON: the text itself
            write: dict[str, Any] = {"key": key, "value": parsed}
            if args.ttl is not None:
                write["ttl_s"] = args.ttl
            return _print_result(args, pad.call_tool("scratch_write", write, charge=False))
        pad = _reading_pad(store, args)
        if verb == "list":  # the notes only (scratch_list gave the handles too)
            notes = pad.store.entries(pad.scope, "note")
            lines = [
                json.dumps({"key": e.key, "size": e.size_bytes, "preview": e.preview}, default=str)
                if args.json
                else f"{e.key}\t{_for_the_terminal(str(e.preview or ''))[:200]}"
                for e in notes[args.offset :]
            ]
            _print_bounded(args, lines, "notes", pad)
            if not notes:
                print(f"jupyter-scratchpad: no notes in run {pad.run_id!r}", file=sys.stderr)
            return 0 if notes else 1
        tool = "scratch_delete" if verb == "delete" else "scratch_read"
        return _print_result(args, pad.call_tool(tool, {"key": key}, charge=False))


def _cmd_export(args: argparse.Namespace) -> int:
    from .._export import export
    from ..errors import InvalidArgumentError

    with _open_store(args, create=False) as store:
        pad = _reading_pad(store, args)
        try:
            written = export(pad, args.handle, Path(args.to), path=args.path, overwrite=args.overwrite)
        except InvalidArgumentError as exc:  # (the library's words name its keyword: overwrite=True)
            raise UsageError(str(exc).replace("pass overwrite=True (--overwrite)", "add --overwrite")) from None
        print(
            json.dumps(written)
            if args.json
            else f"wrote {written['rows'] if written['rows'] is not None else 'the'} "
            f"{'rows' if written['rows'] is not None else 'document'} of {args.handle} to {args.to}"
        )
        return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    try:
        from ..lab import replay, summary
    except ImportError as exc:  # pandas is the lab's
        raise UsageError(f"replay needs the lab extra: pip install 'jupyter-scratchpad[lab]' ({exc})") from None
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # said in one line each, never Python's own
        warnings.simplefilter("always")
        df = replay(args.trace, args.policy, model=args.model, format=args.format, progress=False)
    for warning in caught:
        print(f"jupyter-scratchpad: replay: {' '.join(str(warning.message).split())}", file=sys.stderr)
    if not len(df):  # nothing could be read: an empty table would look like a policy that saves nothing
        if not caught:
            print(f"jupyter-scratchpad: replay: no tool calls were read from {args.trace}", file=sys.stderr)
        return 1
    table = summary(df, totals=True)
    if args.json:
        print(df.to_json(orient="records"))
    else:
        print(table.to_string())
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    with _open_store(args, create=False) as store:
        pad = _reading_pad(store, args)  # the run's owner only: another agent gets a ScopeError
        if not (args.json or args.run_id):  # a named run: one JSON row per entry, as before
            page = pad.call_tool("scratch_list", {"offset": args.offset} if args.offset else {}, charge=False)
            if page.ok:  # its "next: offset=50", as the command that prints the next page
                argv = _without_option(list(getattr(args, "argv", None) or sys.argv[1:]), "--offset")
                text = re.sub(r"next: offset=(\d+)",
                              lambda m: f"next: {shlex.join(['jupyter-scratchpad', *argv, '--offset', m[1]])}",
                              page.text)  # fmt: skip
                page = dataclasses.replace(page, text=text)
            return _print_result(args, page)
        rows = store.list_entries(pad.run_id, pad.agent_id)
        _print_bounded(args, [json.dumps(row, default=str) for row in rows[args.offset :]], "entries", pad)
        return 0


def _print_bounded(args: argparse.Namespace, lines: list[str], what: str, pad: Any) -> None:
    """``lines`` (from ``--offset``), as many as fit in ``--max-tokens`` (0: all): a run of 12,000
    entries printed 6 MB into a shell agent. What is left is said on stderr, with the command that
    prints the next lines."""
    limit = args.max_tokens
    shown, used = 0, 0
    for line in lines:
        if limit:
            used += pad.tokenizer.count(line) + 1
            if used > limit and shown:
                break
        print(line)
        shown += 1
    if shown < len(lines):
        argv = list(getattr(args, "argv", None) or sys.argv[1:])
        words = [*_without_option(argv, "--offset"), "--offset", str(args.offset + shown)]
        print(
            f"jupyter-scratchpad: {len(lines) - shown:,} more {what} not printed (--max-tokens {limit:,}); "
            f"the next: {shlex.join(['jupyter-scratchpad', *words])} (or --max-tokens 0 for all)",
            file=sys.stderr,
        )


def _without_option(argv: list[str], name: str) -> list[str]:
    """``argv`` without option ``name`` and its value (``--offset 50`` or ``--offset=50``)."""
    out: list[str] = []
    skip = False
    for w in argv:
        if skip:
            skip = False
        elif w == name:
            skip = True
        elif not w.startswith(name + "="):
            out.append(w)
    return out


def _cmd_runs(args: argparse.Namespace) -> int:
    from ..explore._base import _ago

    with _open_store(args, create=False) as store:
        # every agent's runs; a shared store shows one agent its own (row-level security)
        agent = args.agent_id or ("main" if store.shared else None)
        runs = store.list_runs(agent)
        if args.json:
            print(json.dumps({"ok": True, "data": {"runs": runs}}, default=str))
            return 0
        if not runs:
            who = f" of agent {agent!r}" if agent else ""
            print(f"no run{who} has a live handle or note in {store.describe()}")
            if store.shared and not args.agent_id:  # (an operator read "no run" as an empty store)
                print("a shared store shows each agent its own runs: another's with --agent-id AGENT")
            return 0
        now = store.now()
        print(f"{'RUN':<24} {'AGENT':<12} {'HANDLES':>7} {'NOTES':>5} {'TOKENS':>12}  NEWEST")
        for r in runs:
            print(f"{_cell(r['run_id'], 24)} {_cell(r['agent_id'], 12)} {r['handles']:>7,} {r['notes']:>5,} "
                  f"{r['tokens']:>12,}  {_ago(max(0.0, now - r['last_created_at']))} ago")  # fmt: skip
        print("read one: jupyter-scratchpad ls --run-id RUN --agent-id AGENT")
        if store.shared and not args.agent_id:  # (row-level security: never another agent's)
            print("agent main's runs: a shared store shows each agent its own; another's with --agent-id AGENT")
        return 0


def _cell(text: str, width: int) -> str:
    text = _for_the_terminal(text)
    return text.ljust(width) if len(text) <= width else text[: width - 1] + "…"


def _cmd_usage(args: argparse.Namespace) -> int:
    with _open_store(args, create=False) as store:
        pad = _reading_pad(store, args)
        # this process spilled nothing: what is kept out of the context is the run's live handles
        handles = [r for r in store.list_entries(pad.run_id, pad.agent_id) if r["kind"] == "handle"]
        usage = {
            **pad.usage(),
            "tokens_intercepted": sum(r["tokens"] or 0 for r in handles),
            "tokens_exact": all(r["tokens_exact"] is not False for r in handles),
            "run_id": pad.run_id,
            "handles": len(handles),
        }
        print(json.dumps(usage))
        return 0


class _Parser(argparse.ArgumentParser):
    """No abbreviated options, in every subcommand: ``grep H x --max 2`` was taken as
    ``--max-tokens 2`` and refused the grep over a page of 2 tokens."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    first = (__doc__ or "").split("\n")[0].replace("``", "")  # (argparse shows reST markup as typed)
    parser = _Parser(prog="jupyter-scratchpad", description=first)
    parser.add_argument("--version", action="version", version=f"jupyter-scratchpad {__version__}")
    parser.add_argument(
        "--store",
        dest="store_global",
        metavar="DIR",
        help="store directory (also after the subcommand; env SCRATCHPAD_STORE)",
    )
    sub = parser.add_subparsers(dest="cmd", required=True)

    mcp = sub.add_parser("mcp", help="MCP server and proxy").add_subparsers(dest="mcp_cmd", required=True)
    serve = mcp.add_parser("serve", help="the scratchpad's tools as an MCP server (stdio, or --http)")
    _store_args(serve, server=True)
    serve.add_argument("--http", metavar="HOST:PORT", type=_host_port, help="streamable HTTP instead of stdio")
    serve.add_argument("--prefix", default="", type=_tool_prefix, help="put this before our tool names")
    proxy = mcp.add_parser("proxy", help="an MCP proxy that spills large upstream results")
    _store_args(proxy, server=True)
    proxy.add_argument("--config", metavar="TOML", help="[mcp.servers.<name>] upstreams (Aura's layout)")
    proxy.add_argument("--url", help="one streamable-HTTP upstream")
    proxy.add_argument(
        "--name", default="upstream", type=_server_name, help="the upstream's server name for the policy"
    )
    proxy.add_argument("--http", metavar="HOST:PORT", type=_host_port, help="serve streamable HTTP instead of stdio")
    proxy.add_argument("--prefix", default="", type=_tool_prefix, help="put this before our tool names")
    proxy.add_argument(
        "--upstream-timeout",
        type=float,
        metavar="SECONDS",
        help="give up an upstream call silent this long: no result, no progress (default 300; 0: wait forever; "
        "a server's own timeout_s in --config wins)",
    )
    proxy.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS… of one stdio upstream")

    for name, aliases, helptext in (
        ("list", ["ls"], "the live handles and notes"),
        ("usage", [], "tokens intercepted and read"),
        ("sweep", [], "remove expired entries and their bodies now"),
    ):
        p = sub.add_parser(name, aliases=aliases, help=helptext, description=helptext)
        _store_args(p, reads=name != "sweep")
        p.add_argument("--json", action="store_true", help=_JSON_HELP)
        if name == "list":
            _paged_args(p, "entries")
    p = sub.add_parser(
        "runs",
        help="the runs with live handles or notes",
        description="The runs with a live handle or note, newest first: every agent's (a shared store: "
        "--agent-id's, default main, as row-level security shows each agent its own).",
    )
    _store_args(p, reads=True)
    p.set_defaults(agent_id=None)
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p = sub.add_parser("spill", help="store stdin as one entry and print its stub")
    _store_args(p)
    p.add_argument("--tool", default="stdin", help="the tool name the handle starts with (default stdin)")
    p.add_argument("--ttl", type=_seconds("--ttl"), metavar="SECONDS", help="seconds to keep it (default the store's)")
    p.add_argument(
        "--policy-decides",
        action="store_true",
        help="spill only what the policy would (else print the output unchanged)",
    )
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p = sub.add_parser("show", help="the stub of a handle")
    _store_args(p, reads=True)
    p.add_argument("handle")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p = sub.add_parser("rm", help="delete handles")
    _store_args(p, reads=True)
    p.add_argument("handles", nargs="+")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p = sub.add_parser(
        "notes",
        help="notes: list; read KEY; write KEY VALUE (JSON or text); delete KEY (KEY [VALUE] also reads/writes)",
        description="With no words, the run's notes. 'read KEY', 'write KEY VALUE' (VALUE is JSON, else text) "
        "and 'delete KEY'; 'KEY' alone reads and 'KEY VALUE' writes.",
    )
    _store_args(p)
    p.add_argument("words", nargs="*", metavar="[read|write|delete] KEY [VALUE]")
    p.add_argument("--ttl", type=_seconds("--ttl"), metavar="SECONDS", help="with write: seconds the note lives")
    p.add_argument("--delete", action="store_true", help="delete KEY (as 'notes delete KEY')")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    _paged_args(p, "notes")
    p = sub.add_parser("export", help="write a handle to FILE.json / .jsonl / .parquet / .csv")
    _store_args(p, reads=True)
    p.add_argument("handle")
    p.add_argument("--to", required=True, metavar="FILE")
    p.add_argument("--path", help="the array to export as rows (default: the document's array of records)")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists (else it is kept)")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p = sub.add_parser("replay", help="the policy lab: what a policy would do to a trace or transcript")
    p.add_argument("trace", help="a trace (JSONL) or a conversation log")
    p.add_argument("--policy", metavar="TOML", help="a policy in Aura's TOML layout (default ours)")
    p.add_argument("--model", default="gpt-4o")
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "trace", "openai-chat", "openai-responses", "anthropic", "mcp-jsonrpc"],
        help="what TRACE is (default: detected from its content)",
    )
    p.add_argument("--json", action="store_true", help="the rows as one JSON array, an object per call")
    call = sub.add_parser("call", help="run any tool: call TOOL '{\"handle\": …}'")
    _store_args(call)
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}")
    call.add_argument("--json", action="store_true", help="print ok/data/error as JSON")
    _bound_arg(call)
    for name, aliases in _SHORTCUTS.items():
        said, words = _SHORTCUT_DOCS[name]
        p = sub.add_parser(name, aliases=aliases, help=said, description=f"{said}: {_usage_of(name)}")
        _store_args(p, reads=True)
        p.add_argument("rest", nargs="*", metavar=words, help=_usage_of(name))
        if name == "grep":  # (as %scratch grep takes them)
            p.add_argument("-C", "--context", type=int, metavar="N", help="lines of context around a match (3)")
            p.add_argument("-i", "--ignore-case", action="store_true", help="match regardless of case")
            p.add_argument("--max", type=int, dest="max_matches", metavar="N", help="matches shown at most (100)")
        p.add_argument("--json", action="store_true", help=_JSON_HELP)
        _bound_arg(p)
    return parser


_SHORTCUTS = {
    "schema": [],
    "head": [],
    "tail": [],
    "slice": [],
    "grep": [],
    "get_in": ["get"],
    "item_schema": ["item-schema"],
    "iterate_over": ["iter"],
    "sql": [],
    "read": [],
}
_SHORTCUT_DOCS = {  # what each does, and its words
    "schema": ("the shape of a handle's JSON (or its text's lines)", "HANDLE [PATH]"),
    "head": ("the first lines of a handle", "HANDLE [LINES]"),
    "tail": ("the last lines of a handle", "HANDLE [LINES]"),
    "slice": ("lines START to END of a handle", "HANDLE START END"),
    "grep": ("the lines of a handle matching a regex", "HANDLE PATTERN [PATH]"),
    "get_in": ("the value at a JSON path", "HANDLE PATH"),
    "item_schema": ("the shape of the items of an array", "HANDLE [PATH]"),
    "iterate_over": ("some fields of each item of an array", "HANDLE PATH FIELDS [LIMIT]"),
    "sql": ("DuckDB SQL over the handles (each handle is a relation)", "QUERY"),
    "read": ("read a whole handle (a large one is refused with smaller calls to make)", "HANDLE"),
}
_REQUIRED = {"grep": 1, "slice": 2, "iterate_over": 2, "get_in": 1}  # words needed after the handle
_ALIASES = {alias: name for name, aliases in _SHORTCUTS.items() for alias in aliases}


# the arguments a shortcut takes after the handle, in order
_WORDS = {
    "grep": ["pattern", "path"],
    "get_in": ["path"],
    "item_schema": ["path"],
    "schema": ["path"],
    "iterate_over": ["path", "fields", "limit"],
    "head": ["lines"],
    "tail": ["lines"],
    "slice": ["start", "end"],
}
_NUMBERS = ("lines", "start", "end", "limit")


def _has_password(url: str) -> bool:
    from urllib.parse import parse_qs, urlsplit

    try:
        parts = urlsplit(url)
        return parts.password is not None or "password" in parse_qs(parts.query)
    except ValueError:
        return True  # unparseable: never echoed


def _cli_hint(args: argparse.Namespace, suggestion: dict[str, Any]) -> str:
    """A suggested tool call as the command line that runs it here: the shortcut when its
    arguments are the shortcut's words (``jupyter-scratchpad slice H 1 1740``), else ``call TOOL
    'JSON'``; with the store options this command was given."""
    import shlex

    tool, arguments = str(suggestion.get("tool")), dict(suggestion.get("arguments") or {})
    words: list[str] | None = None
    if tool == "sql" and set(arguments) == {"query"} and isinstance(arguments["query"], str):
        words = ["sql", arguments["query"]]
    elif tool == "scratch_list" and not arguments:
        words = ["ls"]
    elif tool in _SHORTCUTS and isinstance(arguments.get("handle"), str):
        names = _WORDS.get(tool, [])
        rest = {k: v for k, v in arguments.items() if k != "handle" and not (k == "offset" and v == 0)}
        given = names[: len(rest)]
        if set(rest) == set(given):
            values = [
                ",".join(map(str, rest[n])) if isinstance(rest[n], list) and n == "fields" else rest[n] for n in given
            ]
            if all(
                isinstance(v, int) and not isinstance(v, bool) if n in _NUMBERS else isinstance(v, str)
                for n, v in zip(given, values, strict=True)
            ):
                words = [(_SHORTCUTS[tool] or [tool])[0], arguments["handle"], *map(str, values)]
    if words is None or any(not w.isprintable() for w in words):  # a newline: JSON escapes it, one line
        words = ["call", tool, json.dumps(arguments, ensure_ascii=False)]
    options: list[str] = []
    url = getattr(args, "store_url", None)
    if url and (url == os.environ.get("SCRATCHPAD_STORE_URL") or _has_password(url)):
        url = None  # from the environment, it still is; a password is never echoed
    for flag, value, default in (
        ("--store", getattr(args, "store", None) or getattr(args, "store_global", None), None),
        ("--store-url", url, None),
        ("--bodies", getattr(args, "bodies", None), None),
        ("--run-id", getattr(args, "run_id", None), None),
        ("--agent-id", getattr(args, "agent_id", None), "main"),
        ("--max-tokens", getattr(args, "max_tokens", None), CLI_MAX_TOKENS),
    ):
        if value is not None and value != default:
            options += [flag, str(value)]
    if any(w.startswith("-") for w in words[1:]):
        words = [words[0], *options, "--", *words[1:]]
    else:
        words = [words[0], *options, *words[1:]]
    return " ".join(shlex.quote(w) for w in ["jupyter-scratchpad", *words])


def _shortcut(cmd: str, rest: list[str]) -> dict[str, Any]:
    if cmd == "sql":
        if not rest:
            raise UsageError("sql needs a query: jupyter-scratchpad sql 'SELECT count(*) FROM h.items'")
        return {"query": " ".join(rest)}
    if not rest:
        raise UsageError(f"{cmd} needs a handle (see: jupyter-scratchpad ls)")
    args: dict[str, Any] = {"handle": rest[0]}
    more = rest[1:]
    names = _WORDS.get(cmd, [])
    if len(more) > len(names):
        raise UsageError(f"{cmd} takes {' '.join(n.upper() for n in names) or 'only a handle'} after the handle")
    if len(more) < _REQUIRED.get(cmd, 0):  # (the tool said "needs 'pattern' (Regex (at most 1,024 bytes).)")
        missing = names[len(more) : _REQUIRED[cmd]]
        raise UsageError(f"{cmd} needs {' and '.join(n.upper() for n in missing)}: {_usage_of(cmd)}")
    for name, value in zip(names, more, strict=False):
        if name in _NUMBERS and not re.fullmatch(r"-?[0-9]+", value.strip()):
            raise UsageError(f"{cmd}: {name} takes a whole number, not {value[:40]!r}: {_usage_of(cmd)}")
        args[name] = int(value) if name in _NUMBERS else value
    return args


def _usage_of(cmd: str) -> str:
    """``head HANDLE [LINES]``: how a shortcut is written."""
    words = _SHORTCUT_DOCS[cmd][1] if cmd in _SHORTCUT_DOCS else "HANDLE"
    return f"jupyter-scratchpad {(_SHORTCUTS.get(cmd) or [cmd])[0]} {words}"


_LIST_POINTER = re.compile(r"[;,]? *(?:list what exists|list live handles) with scratch_list")


def _in_cli_words(args: argparse.Namespace, message: str) -> str:
    """A library message as the command line says it: its pointer to the ``scratch_list`` tool
    becomes the command that lists (``(try: jupyter-scratchpad ls)``), as the other commands say."""
    if not _LIST_POINTER.search(message):
        return message
    return _LIST_POINTER.sub("", message) + f" (try: {_cli_hint(args, {'tool': 'scratch_list', 'arguments': {}})})"


_COMMANDS = {
    "list": _cmd_list,
    "ls": _cmd_list,
    "usage": _cmd_usage,
    "runs": _cmd_runs,
    "spill": _cmd_spill,
    "show": _cmd_show,
    "rm": _cmd_rm,
    "sweep": _cmd_sweep,
    "notes": _cmd_notes,
    "export": _cmd_export,
    "replay": _cmd_replay,
}


def _locked_by(exc: Exception) -> str:
    """The locked-store message, naming the holder when it is one of our servers (its message
    told a person to shut a kernel down, where an ``mcp proxy`` held the store)."""
    said = " ".join(str(exc).split())
    holder = str(getattr(exc, "holder", "") or "")
    try:
        argv = Path(f"/proc/{int(holder)}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return said
    words = [w.decode("utf-8", "replace") for w in argv if w]
    kind = next((f"mcp {words[i + 1]}" for i, w in enumerate(words[:-1]) if w == "mcp" and
                 words[i + 1] in ("serve", "proxy") and any("scratchpad" in v for v in words[:i])), None)  # fmt: skip
    if kind is None:
        return said
    where = getattr(exc, "path", None) or "the store"
    return (
        f"the scratch store at {where} is open in process {holder}, a jupyter-scratchpad {kind}: an embedded "
        f"store opens in one process at a time. Its handles are read through that server's tools while it runs, "
        f"or here with --run-id RUN (the run it printed when it started) once it exits; to read them while it "
        f"runs, give both one shared PostgreSQL store (--store-url, or SCRATCHPAD_STORE_URL), or this command "
        f"another --store DIR"
    )


def _failure(args: argparse.Namespace, exc: BaseException) -> tuple[str, int] | None:
    """What a command that failed says on stderr, and its exit code (None: not one of ours)."""
    from ..errors import ScratchpadError, StoreLockedError

    if isinstance(exc, UsageError):
        return str(exc), 2
    if isinstance(exc, StoreLockedError):  # who holds it: a kernel, or our own mcp serve / proxy
        return _locked_by(exc)[:700], 2
    if isinstance(exc, ScratchpadError):  # a missing handle, a locked store, …: the message says what to do
        return _in_cli_words(args, " ".join(str(exc).split()))[:600], 1 if type(exc).__name__ == "NotFoundError" else 2
    if isinstance(exc, (OSError, ValueError)):
        return " ".join(str(exc).split())[:600], 2
    return None


# How long a stdio server that could not start waits for its client's initialize, to answer it
# with the reason (a client launches its server, then sends initialize at once).
REFUSE_WAIT_S = 10.0


def _refuse_initialize(message: str, wait_s: float = REFUSE_WAIT_S) -> None:
    """A stdio MCP server that cannot start (its store locked by another server, a bad --store):
    its client saw only "Connection closed" while the reason went to stderr, which few people
    read (a client keeps it in a log file). Its ``initialize`` is answered with the reason as a
    JSON-RPC error instead, which the client shows; nothing is read from a terminal."""
    import select

    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd) or not select.select([fd], [], [], wait_s)[0]:
            return
        request = json.loads(os.read(fd, 1 << 20).split(b"\n", 1)[0])
        if not isinstance(request, dict) or request.get("method") != "initialize" or "id" not in request:
            return
        error = {"code": -32000, "message": f"jupyter-scratchpad could not start: {message}"}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}) + "\n")
        sys.stdout.flush()
    except (OSError, ValueError):  # (no stdin, a closed pipe, not JSON: the stderr line stands alone)
        return


def _after_serving() -> None:
    """After a signal, the exit at once (with its code: a thread blocked reading stdin held the
    process up); else the signal handlers put back."""
    global _SIGNALS
    signals, _SIGNALS = _SIGNALS, None
    if signals is not None:
        signals.exit_if_signalled()
        signals.restore()


def main(argv: list[str] | None = None) -> int:
    from ..errors import ScratchpadError

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    # words after the options (notes write --store DIR KEY VALUE, rm --store DIR H1 H2) are the
    # command's, as before them: argparse gives a list positional only the words before
    field = {"notes": "words", "rm": "handles"}.get(args.cmd)
    if extra and field and not any(w.startswith("-") for w in extra):
        setattr(args, field, [*getattr(args, field), *extra])
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.cmd == "mcp":
            try:
                return _cmd_serve(args) if args.mcp_cmd == "serve" else _cmd_proxy(args)
            except Exception as exc:
                failed = _failure(args, exc)
                if failed is not None and not args.http and not getattr(args, "serving", False):
                    _refuse_initialize(failed[0])  # (stdio, before serving: the client hears why)
                raise
            finally:
                _after_serving()
        if args.cmd in _COMMANDS:
            return _COMMANDS[args.cmd](args)
        if args.cmd == "call":
            try:
                arguments = json.loads(args.arguments)
            except ValueError as exc:
                raise UsageError(f"arguments must be a JSON object: {exc}") from None
            if not isinstance(arguments, dict):
                raise UsageError(
                    f"arguments must be a JSON object, not a {type(arguments).__name__}: "
                    f"""jupyter-scratchpad call {args.tool[:40]} '{{"handle": "…"}}'"""
                )
            return _cmd_tool(args, args.tool, arguments)
        cmd = _ALIASES.get(args.cmd, args.cmd)
        arguments = _shortcut(cmd, args.rest)
        for name in ("context", "max_matches"):
            if getattr(args, name, None) is not None:
                arguments[name] = getattr(args, name)
        if getattr(args, "ignore_case", False):
            arguments["ignore_case"] = True
        return _cmd_tool(args, cmd, arguments)
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:  # the reader stopped (| head -1): quietly, as a shell tool does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # (the interpreter's own flush at exit would fail too)
        return 141  # 128 + SIGPIPE
    except (UsageError, ScratchpadError, OSError, ValueError) as exc:
        said, code = _failure(args, exc) or (str(exc), 2)
        print(f"jupyter-scratchpad: {said}", file=sys.stderr)
        return code
