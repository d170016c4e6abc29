"""``ScratchMagics``: the ``%scratch`` / ``%%scratch`` magics, configured by traitlets."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from traitlets import Bool, Float, Int, TraitError, Unicode, default, observe, validate

from .. import ScratchpadError, SpillPolicy
from ._streams import own_output, own_text

if TYPE_CHECKING:
    from ._session import ScratchSession

__all__ = ["ScratchMagics"]

_LIVE_OPTIONS = (
    "auto_spill",
    "spill_threshold",
    "spill_bytes",
    "policy_file",
    "model",
    "context_window",
    "max_extraction_tokens",
    "preview_lines",
    "store_path",
    "store_url",
    "store_bodies",
    "ttl_s",
    "run_id",
    "agent_id",
)


#: ``(id(shell), option) -> value`` that was refused when set live (see ``_option_changed``)
REFUSED: dict[tuple[int, str], Any] = {}


class _KeptOnError:
    """A trait whose type error (traitlets' own: "expected an int, not the str 'abc'") also says
    what stayed in force, as our own refusals do."""

    name: str | None

    def error(self, obj: Any, value: Any, error: Exception | None = None, info: str | None = None) -> Any:
        try:
            return super().error(obj, value, error, info)  # type: ignore[misc]  # (it always raises)
        except TraitError as exc:
            if error is not None or self.name is None or not isinstance(obj, ScratchMagics):
                raise
            raise obj._refuse(self.name, str(exc)) from None


class _Bool(_KeptOnError, Bool):
    pass


class _Int(_KeptOnError, Int):
    pass


class _Float(_KeptOnError, Float):
    pass


class _Unicode(_KeptOnError, Unicode):
    pass


@magics_class
class ScratchMagics(Magics):
    """The scratchpad magics; every option is ``%config ScratchMagics.<name>`` or ``c.ScratchMagics``."""

    auto_spill = _Bool(
        True,
        help="Replace large cell outputs (the last value, display(...) of text/HTML/JSON, "
        "stdout/stderr) with a stub before they reach the front end.",
    ).tag(config=True)
    spill_threshold = _Int(
        None,
        allow_none=True,
        help="Spill outputs of at least this many tokens. None: the policy file's min_tokens, else 5,120.",
    ).tag(config=True)
    spill_bytes = _Int(
        None,
        allow_none=True,
        help="Also spill outputs of at least this many UTF-8 bytes. "
        "None: the policy file's min_bytes, else no byte rule.",
    ).tag(config=True)
    policy_file = _Unicode(
        None,
        allow_none=True,
        help="An Aura TOML spill policy ([agent.scratchpad], "
        "[mcp.servers.<s>.scratchpad]); patterns like cell_*_stdout apply to cell "
        "outputs.",
    ).tag(config=True)
    model = _Unicode(
        "gpt-4o", help="The model whose tokens are counted and whose context window sizes the budget."
    ).tag(config=True)
    context_window = _Int(
        None, allow_none=True, help="Context window in tokens. None: the model's published window."
    ).tag(config=True)
    max_extraction_tokens = _Int(
        None, allow_none=True, help="Most tokens one exploration may return. None: the policy's (10,000)."
    ).tag(config=True)
    preview_lines = _Int(20, help="Lines of preview in a stub.").tag(config=True)
    store_path = _Unicode(
        None,
        allow_none=True,
        help="Directory of the scratch store; kept after the kernel "
        "exits. None: a temporary directory, deleted when the kernel shuts down.",
    ).tag(config=True)
    store_url = _Unicode(
        None,
        allow_none=True,
        help="A shared store's PostgreSQL catalog (postgresql://…); "
        "kernels, MCP proxies and the CLI pointed at it share runs. None: the embedded store "
        "(store_path). Default: $SCRATCHPAD_STORE_URL.",
    ).tag(config=True)
    store_bodies = _Unicode(
        None,
        allow_none=True,
        help="With store_url: the directory of the shared bodies, "
        "reachable by every process of the store. None: $SCRATCHPAD_BODIES, else "
        "~/.cache/jupyter-scratchpad/shared-bodies/<catalog id> (one machine).",
    ).tag(config=True)
    ttl_s = _Float(
        3600.0,
        help="Seconds an entry lives before it expires (each entry; extend with the sidebar or Scratchpad.extend).",
    ).tag(config=True)
    run_id = _Unicode("notebook", help="Run id of the notebook's scratchpad.").tag(config=True)
    agent_id = _Unicode("notebook", help="Agent id of the notebook's scratchpad.").tag(config=True)

    # Set by load_ipython_extension once the session exists (options loaded from the config
    # before that have nothing live to apply to).
    session: ScratchSession | None = None
    _reverting = False  # an option being put back after it could not be applied

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        # option -> the value in force (the last one set and not refused): what a refusal says
        # stayed (%config validates after setting, so the attribute may hold the refused value)
        self._in_force: dict[str, Any] = {}
        super().__init__(shell=shell, **kwargs)

    def kept(self, name: str) -> str:
        """What stays in force for option ``name`` when a new value is refused."""
        value = self._in_force[name] if name in self._in_force else self.trait_defaults(name)
        session = self.session
        if session is not None and not session.closed:
            return session.describe(name, value)
        return f"ScratchMagics.{name} = {value!r}"

    def _refuse(self, name: str, said: str) -> TraitError:
        """A refusal of a new value of ``name``: what was wrong, and what stayed in force. ``%config``
        logs it to stderr: the extension's own message, never held or stored (below a low
        threshold it was spilled into a card many times its size)."""
        error = TraitError(f"{said.rstrip('.')}. Kept: {self.kept(name)}.")
        own_text(str(error))
        return error

    # -- validation: a bad value is refused before it is set ---------------------------------

    @validate("spill_threshold", "spill_bytes", "context_window", "max_extraction_tokens")
    def _positive_or_none(self, proposal: Any) -> Any:
        value = proposal["value"]
        if value is not None and value <= 0:
            name = proposal["trait"].name
            raise self._refuse(name, f"ScratchMagics.{name} must be a positive integer or None, not {value!r}")
        return value

    @validate("preview_lines")
    def _non_negative(self, proposal: Any) -> Any:
        if proposal["value"] < 0:
            raise self._refuse("preview_lines", f"ScratchMagics.preview_lines must be >= 0, not {proposal['value']!r}")
        return proposal["value"]

    @default("store_url")
    def _store_url_default(self) -> Any:
        return os.environ.get("SCRATCHPAD_STORE_URL") or None

    @validate("store_url")
    def _store_url(self, proposal: Any) -> Any:
        url = proposal["value"]
        if url is not None and not url.startswith(("postgresql://", "postgres://")):
            from ..store._pgcatalog import redact_url

            shown = redact_url(url) if "://" in url else "a string that is no URL"  # (a password stays out)
            said = f"ScratchMagics.store_url must be a postgresql:// URL or None, not {shown[:60]!r}"
            raise self._refuse("store_url", said)
        return url

    @validate("ttl_s")
    def _ttl(self, proposal: Any) -> Any:
        if not 0 < proposal["value"] <= 10 * 365 * 86400:
            raise self._refuse(
                "ttl_s",
                f"ScratchMagics.ttl_s must be a positive number of seconds (at most ten years), "
                f"not {proposal['value']!r}",
            )
        return proposal["value"]

    @validate("policy_file")
    def _policy_file(self, proposal: Any) -> Any:
        path = proposal["value"]
        if path:
            try:
                SpillPolicy.from_toml(path)
            except ScratchpadError as exc:
                raise self._refuse("policy_file", f"ScratchMagics.policy_file: {exc.message}") from None
            except (AttributeError, TypeError, ValueError) as exc:  # the core misreads some shapes
                said = f"ScratchMagics.policy_file: {path} is not a valid policy: {exc}"
                raise self._refuse("policy_file", said) from None
        return path

    @validate("run_id", "agent_id", "model")
    def _non_empty(self, proposal: Any) -> Any:
        if not proposal["value"]:
            name = proposal["trait"].name
            raise self._refuse(name, f"ScratchMagics.{name} must not be empty")
        return proposal["value"]

    @observe(*_LIVE_OPTIONS)
    def _option_changed(self, change: Any) -> None:
        name = change["name"]
        self._in_force[name] = change["new"]  # (a value put back is in force again)
        session = self.session
        if session is None or session.closed or self._reverting:
            return
        try:
            session.configure(name)
        except (ScratchpadError, UsageError) as exc:
            # A value that could not be applied is not kept: the option and the live session agree.
            self._put_back(name, change["old"])
            # %config merges the value into the shell's config all the same, where the next
            # %reload_ext would read it: remembered, so the load leaves it out
            REFUSED[(id(self.shell), name)] = change["new"]
            reason = exc.message if isinstance(exc, ScratchpadError) else str(exc)
            refusal = UsageError(
                f"ScratchMagics.{name} = {change['new']!r} was not applied: {reason.rstrip('.')}. Kept: "
                f"{self.kept(name)}."
            )
            own_text(str(refusal))  # (%config logs it to stderr: our own message, never held)
            raise refusal from None
        if name == "model":
            session.warn_unknown_model()

    def _put_back(self, name: str, value: Any) -> None:
        self._reverting = True
        try:
            setattr(self, name, value)
        finally:
            self._reverting = False

    # -- the magic ---------------------------------------------------------------------------

    @line_cell_magic
    @no_var_expand  # a regex's {5} or a query's $1 must arrive as typed; {{name}} is explicit
    def scratch(self, line: str = "", cell: str | None = None) -> Any:
        """Explore the kernel's scratch store: large outputs spilled out of the notebook.

        Usage: ``%scratch SUBCOMMAND ARGS`` (``%scratch SUBCOMMAND --help`` for each);
        ``%%scratch [--name NAME] [--tool TOOL] [--force]`` stores the cell's output;
        ``%%scratch sql`` runs the cell as a query. Subcommands::

          list  show H  head H [-n N]  tail H [-n N]  slice H START END
          grep H PATTERN [-C N] [-i] [--max N]  schema H [PATH] [--depth N]
          items H [PATH] [--offset N] [--limit N]  get H [PATH]
          iter H PATH --fields a,b [--offset N] [--limit N]  sql QUERY
          df H [PATH]  export H [PATH] --to parquet|csv|json|jsonl  write KEY VALUE [--ttl S]  read KEY
          delete KEY|H  budget [reset] [--model M] [--window N]  auto on|off  explore [H]
          replay TRACE [--policy F] [--model M]  policy show|load [FILE]

        Reads are yours: nothing is charged to the agent's budget unless ``--as-agent``.
        Arguments arrive as typed (IPython's ``{x}``/``$x`` are not expanded); ``{{name}}``
        inserts a notebook variable's text, and in SQL ``:name`` is a bound parameter.

        Example::

          In [1]: %load_ext jupyter_scratchpad
          In [2]: {"items": [{"id": i, "ok": i % 7 > 0} for i in range(20_000)]}
          Out[2]: [scratchpad] The output of cell_2 was stored as handle "cell_2_5be1c0b7d3e2": ...
          In [3]: %scratch items cell_2_5be1c0b7d3e2 items
          In [4]: %%scratch sql
             ...: SELECT count(*) AS failing
             ...: FROM (SELECT unnest(items) AS i FROM cell_2_5be1c0b7d3e2) WHERE NOT i.ok
          In [5]: df = %scratch df cell_2_5be1c0b7d3e2 items
          In [6]: %scratch budget
        """
        __tracebackhide__ = True  # a failing %%scratch cell: the user's frames only
        from .commands import run_cell_magic, run_line_magic

        session = self.session
        if session is None or session.closed:
            raise UsageError("jupyter-scratchpad is not loaded: run %load_ext jupyter_scratchpad")
        # What %scratch prints (its help, a listing) is the extension's own: never held or stored
        # (a UsageError is shown by IPython, let through by the stream gates as well). Not the
        # capture form's: it runs the user's cell (run_capture marks its own messages itself).
        if cell is None:
            with own_output():
                return run_line_magic(session, line)
        first = line.split("#", 1)[0].split(None, 1)
        if not first or first[0].startswith("-"):
            return run_cell_magic(session, line, cell)
        with own_output():
            return run_cell_magic(session, line, cell)
