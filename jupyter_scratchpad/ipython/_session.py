"""``ScratchSession``: one kernel's store, its notebook scratchpad, the magics and the hooks.

>>> from IPython.testing.globalipapp import get_ipython     # doctest: +SKIP
>>> shell.run_line_magic("load_ext", "jupyter_scratchpad")  # doctest: +SKIP
>>> session = get_session(shell)                            # doctest: +SKIP
>>> session.pad.call_tool("scratch_list").ok                # doctest: +SKIP
True
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import sys
import weakref
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .. import ScratchpadError, ScratchStore, SpillPolicy, StoreLockedError
from ..budget import CONTEXT_WINDOWS, ContextBudget, is_known_model
from ..spill import glob_matches
from ._args import close_match_hint
from ._complete import Completer
from ._hooks import OutputHooks
from ._progress import ProgressLine
from ._render import stub_bundle
from ._spill import OutputSpiller

if TYPE_CHECKING:
    from .._pad import Scratchpad
    from ._magics import ScratchMagics

__all__ = [
    "ScratchSession",
    "cell_patterns",
    "cell_rule",
    "dropped_with",
    "for_cells",
    "get_session",
    "store_closed_by",
]

log = logging.getLogger("jupyter_scratchpad.ipython")

_SESSIONS: weakref.WeakKeyDictionary[Any, ScratchSession] = weakref.WeakKeyDictionary()

# What the extension did with the stores it opened, so that what reads one afterwards (an old
# handle, an explorer still open) is told what happened in this kernel rather than guessing at a
# restart: a store -> how it was closed ("unload": %unload_ext or %reload_ext; "switch": a
# store_path or store_url change; None while open), and the handles that a temporary store
# took with it (the newest few closes).
UNLOAD, SWITCH, REMOVED = "unload", "switch", "removed"
_CLOSED_BY: weakref.WeakKeyDictionary[Any, str | None] = weakref.WeakKeyDictionary()
_DROPPED: list[tuple[str, frozenset[str] | None]] = []  # (None: every handle the store held)
_DROPPED_KEPT = 16


def store_closed_by(store: Any) -> str | None:
    """How the extension closed ``store``: ``"unload"`` (``%unload_ext``/``%reload_ext``),
    ``"switch"`` (a ``store_path``/``store_url`` change); None if it is open or not the extension's."""
    try:
        return _CLOSED_BY.get(store)
    except TypeError:  # (not weak-referenceable: not ours)
        return None


def dropped_with(handle: str) -> str | None:
    """How ``handle`` went, if it was in a temporary store the extension closed in this kernel."""
    for how, handles in reversed(_DROPPED):
        if handles is None or handle in handles:
            return how
    return None


def _closing(store: Any, pad: Any, how: str, temporary: bool) -> None:
    """Record that ``store`` is being closed ``how`` (and, a temporary one, the handles it takes)."""
    _CLOSED_BY[store] = how
    if how == REMOVED:  # (its entries cannot be read any more: every handle from before went)
        _DROPPED.append((how, None))
        del _DROPPED[:-_DROPPED_KEPT]
        return
    if not temporary or store.closed:
        return
    try:
        handles = frozenset(str(e["handle"]) for e in pad.entries("handle"))
    except Exception:  # (a store that cannot be read: nothing to say of its handles)
        return
    if handles:
        _DROPPED.append((how, handles))
        del _DROPPED[:-_DROPPED_KEPT]


class _OneLine(logging.Formatter):
    """Our log lines as the notebook shows them: one line, a warning's length. A kernel forwards
    what its process writes to fd 2 into the running cell, so the handler that sends our log to the
    kernel's own stderr (``_KernelLog``) put a 30-line internal traceback (a PostgreSQL store that
    is down) into every cell that spilled. The traceback goes to the kernel's log at debug level
    (``kernel.log``, shown with ``--debug``; else the ``jupyter_scratchpad.debug`` logger)."""

    LIMIT = 400

    def __init__(self, previous: logging.Formatter | None, shell: Any) -> None:
        super().__init__("[jupyter-scratchpad] %(levelname)s %(name)s: %(message)s")
        self.previous = previous
        self.shell = shell

    def format(self, record: logging.LogRecord) -> str:
        message = " ".join(record.getMessage().split())
        if len(message) > self.LIMIT:
            message = message[: self.LIMIT - 1] + "…"
        line = f"[jupyter-scratchpad] {record.levelname} {record.name}: {message}"
        if record.exc_info or record.stack_info:
            detail = logging.Formatter().format(record)
            record.exc_text = None  # (formatting cached the traceback on the record: not ours to keep)
            _debug_log(self.shell, detail)
            line += " (the traceback is in the kernel's log at debug level)"
        return line


def _debug_log(shell: Any, text: str) -> None:
    kernel_log = getattr(getattr(shell, "kernel", None), "log", None)
    try:
        if kernel_log is not None:
            kernel_log.debug("jupyter-scratchpad: %s", text)
        else:
            logging.getLogger("jupyter_scratchpad.debug").debug("%s", text)
    except Exception:  # (the log itself failing: nothing more to say)
        pass


def _kernel_log_handlers() -> list[logging.Handler]:
    """The handlers ``load_ipython_extension`` gave our logger (to the kernel's own stderr)."""
    return [h for h in logging.getLogger("jupyter_scratchpad").handlers if type(h).__name__ == "_KernelLog"]


def get_session(shell: Any = None) -> ScratchSession | None:
    """The active session of ``shell`` (default: the running IPython), or None when not loaded."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    return _SESSIONS.get(shell) if shell is not None else None


class ScratchSession:
    """Everything ``%load_ext jupyter_scratchpad`` set up in one shell; ``close`` undoes it.

    ``store`` (the kernel's ``ScratchStore``), ``pad`` (the notebook's ``Scratchpad``: always read
    it from the session, ``%config ScratchMagics.run_id`` replaces it), ``magics`` (the
    ``ScratchMagics`` instance holding the configuration), ``policy`` (the spill policy as
    configured: a policy file's read with Aura's meaning; ``pad.policy`` is the one cell outputs
    are decided by, see ``for_cells``) and ``auto_spill``.
    """

    policy: SpillPolicy

    def __init__(self, shell: Any, magics: ScratchMagics) -> None:
        self.shell = shell
        self.magics = magics
        self.capturing = False  # %%scratch is running its cell: the hooks stand aside
        self._own: list[tuple[Any, str, bool]] = []
        self._own_later: dict[int, tuple[weakref.ref[Any], str, bool]] = {}
        self.store = self._open_store()
        self._temporary = self._is_temporary()
        try:
            self.pad = self._open_pad()
        except BaseException:
            self.store.close()
            raise
        self.spiller = OutputSpiller(self)
        self.hooks = OutputHooks(self)
        self.completer = Completer(self)
        self._closed = False
        self._log_formats: list[tuple[logging.Handler, _OneLine]] = []

    # -- lifecycle ---------------------------------------------------------------------------

    def _open_store(self) -> ScratchStore:
        m = self.magics
        try:
            if m.store_url:  # a shared store: kernels, proxies and the CLI see the same runs
                store = ScratchStore(m.store_url, bodies=m.store_bodies or None, ttl_s=m.ttl_s)
            else:  # The path goes to the store as typed: ScratchStore expands ~ and $VARS itself.
                store = ScratchStore(m.store_path or None, ttl_s=m.ttl_s)
        except StoreLockedError as exc:
            raise UsageError(_locked_message(exc)) from None
        except ScratchpadError as exc:
            raise UsageError(f"jupyter-scratchpad: {exc.message}") from None
        _CLOSED_BY[store] = None
        return store

    def _is_temporary(self) -> bool:
        """Whether the store is the default temporary one (deleted when it closes)."""
        return not self.magics.store_url and not self.magics.store_path and not getattr(self.store, "shared", False)

    def _open_pad(self) -> Scratchpad:
        m = self.magics
        configured = self.build_policy()
        policy = for_cells(configured)
        try:
            pad = self.store.scratchpad(
                run_id=m.run_id,
                agent_id=m.agent_id,
                model=m.model,
                context_window=m.context_window,
                safety_margin=policy.context_safety_margin,
                max_extraction_tokens=m.max_extraction_tokens or policy.max_extraction_tokens,
                policy=policy,
                turn_depth_bonus=policy.turn_depth_bonus,
                preview_lines=m.preview_lines,
            )
        except ScratchpadError as exc:
            raise UsageError(f"jupyter-scratchpad: {exc.message}") from None
        pad.progress_listeners.append(ProgressLine())  # a spill over a second shows a progress line
        self.policy = configured
        return pad

    def start(self) -> None:
        """Install the hooks and register with the shell (and the JupyterLab comm, if present)."""
        _SESSIONS[self.shell] = self
        self.hooks.install()
        self.completer.install(self.shell)
        for handler in _kernel_log_handlers():  # one line in the cell, the traceback at debug level
            one_line = _OneLine(handler.formatter, self.shell)
            handler.setFormatter(one_line)
            self._log_formats.append((handler, one_line))
        atexit.register(self.close)
        self.warn_unknown_model()
        self._call_comm("register_comm_target")

    def close(self) -> None:
        """Remove every hook, unregister, close the store (a temporary one is deleted); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._call_comm("unregister_comm_target")
        for handler, one_line in self._log_formats:
            if handler.formatter is one_line:  # (set again by someone else since: theirs stays)
                handler.setFormatter(one_line.previous)
        self._log_formats.clear()
        try:
            self.completer.uninstall(self.shell)
            self.hooks.uninstall()
        finally:
            atexit.unregister(self.close)
            if _SESSIONS.get(self.shell) is self:
                del _SESSIONS[self.shell]
            self._own.clear()
            self._own_later.clear()
            _closing(self.store, self.pad, UNLOAD, self._temporary)
            self.store.close()

    def _call_comm(self, name: str) -> None:
        # The kernel side of the JupyterLab bridge is optional: without it, nothing changes.
        try:
            from .. import comm

            function = getattr(comm, name)
        except (ImportError, AttributeError):
            return
        try:
            function(self, self.shell)
        except Exception:
            log.warning(
                "jupyter_scratchpad.comm.%s failed; the JupyterLab panel will not see this kernel", name, exc_info=True
            )

    @property
    def closed(self) -> bool:
        return self._closed

    # -- state -------------------------------------------------------------------------------

    @property
    def auto_spill(self) -> bool:
        """Whether large outputs are replaced by stubs (``%scratch auto on|off``)."""
        return bool(self.magics.auto_spill)

    @auto_spill.setter
    def auto_spill(self, value: bool) -> None:
        self.magics.auto_spill = bool(value)

    def cell_number(self) -> int:
        """The number of the running cell (``In[n]``; IPython counts ahead while a cell runs)."""
        count = getattr(self.shell.displayhook, "prompt_count", None)
        if isinstance(count, int):
            return count
        return int(getattr(self.shell, "execution_count", 0) or 0)

    def mark_own(self, value: Any, handle: str = "", *, store_if_large: bool = False) -> Any:
        """Remember that ``value`` was returned by ``%scratch`` (until the cell ends).
        ``store_if_large``: a value the person did not ask to see whole (a part of a handle, a
        note) is stored like any large value when too large to show."""
        if value is not None:
            self._own.append((value, handle, store_if_large))
            try:  # shown again in a later cell (`r` alone), it is still ours: not stored again
                key = id(value)
                self._own_later[key] = (weakref.ref(value, lambda _r: self._own_later.pop(key, None)),
                                        handle, store_if_large)  # fmt: skip
            except TypeError:  # (a dict or list cannot be weakly referenced: known in its own cell only)
                pass
        return value

    def own_result(self, value: Any) -> tuple[str, bool] | None:
        """``(the handle it came from or "", store_if_large)`` if ``%scratch`` returned ``value``,
        in this cell or (while it lives) an earlier one, else None."""
        for obj, handle, store_if_large in self._own:
            if obj is value:
                return handle, store_if_large
        later = self._own_later.get(id(value))
        if later is not None and later[0]() is value:
            return later[1], later[2]
        return None

    def forget_own_results(self) -> None:
        self._own.clear()

    def publish_stub(self, stub: dict[str, Any], where: str | None = None) -> None:
        """Display ``stub`` as its MIME bundle (text/plain, text/html, stub JSON)."""
        self.shell.display_pub.publish(stub_bundle(stub, where), {})

    # -- configuration -----------------------------------------------------------------------

    def build_policy(self, base: SpillPolicy | None = None) -> SpillPolicy:
        """The policy file's (read with Aura's meaning) or the default policy (or ``base``), with
        the thresholds set on the magics: ``session.policy``, what ``%scratch policy show`` prints
        and ``replay`` uses. The pad decides cell outputs with ``for_cells`` of it."""
        m = self.magics
        if base is not None:
            policy = base
        else:
            policy = SpillPolicy.from_toml(m.policy_file) if m.policy_file else SpillPolicy()
        changes: dict[str, Any] = {}
        if m.spill_threshold is not None:
            changes["min_tokens"] = m.spill_threshold
        if m.spill_bytes is not None:
            changes["min_bytes"] = m.spill_bytes
        return policy.with_(**changes) if changes else policy

    def configure(self, name: str) -> None:
        """Apply a changed option of ``ScratchMagics`` to the live store and pad."""
        if name == "auto_spill":
            return
        if name in ("store_path", "store_url", "store_bodies"):
            self._reopen(store=True)
        elif name in ("run_id", "agent_id"):
            self._reopen(store=False)
        elif name == "ttl_s":
            self.store.ttl_s = float(self.magics.ttl_s)
        elif name == "preview_lines":
            self.pad.preview_lines = int(self.magics.preview_lines)
        else:  # thresholds, policy file, model, window, per-call cap
            configured = self.build_policy()
            self.pad.policy = for_cells(configured)
            self.policy = configured
            self.retarget()

    def describe(self, name: str, value: Any = ...) -> str:
        """What is in force for option ``name`` (said when a new value was refused or could not be
        applied), its value being ``value`` (``...``: the option's current value)."""
        if name in ("store_path", "store_url", "store_bodies") and self.store.shared:
            return f"the shared store {self.store.describe()} (ScratchMagics.store_url)"
        if name in ("store_path", "store_url", "store_bodies"):
            kind = "a temporary store" if self.magics.store_path is None else "the store"
            return f"{kind} at {self.store.path} (ScratchMagics.store_path = {self.magics.store_path!r})"
        if name in ("run_id", "agent_id"):
            return f"run {self.pad.run_id!r} of agent {self.pad.agent_id!r}"
        if value is ...:
            value = getattr(self.magics, name)
        said = f"ScratchMagics.{name} = {value!r}"
        pad = self.pad
        if name in ("spill_threshold", "spill_bytes", "policy_file"):
            said += f", so cell {cell_rule(pad.policy, pad.model)}"
        elif name in ("model", "context_window"):
            said += f" ({pad.model}'s budget: a {pad.budget.context_window:,}-token window)"
        elif name == "max_extraction_tokens":
            said += f" (at most {pad.budget.max_extraction_tokens:,} tokens per call)"
        return said

    def warn_unknown_model(self) -> None:
        """Say so on stderr when the model is not one whose window and tokenizer are known."""
        model = self.magics.model
        if is_known_model(model):
            return
        hint = close_match_hint(model, [*CONTEXT_WINDOWS, "claude-sonnet-4", "claude-opus-4", "gpt-4o-mini"])
        print(
            f"jupyter-scratchpad: unknown model {model!r}: tokens are counted with o200k_base and the window "
            f"is {self.pad.budget.context_window:,} tokens{hint or ' (set ScratchMagics.context_window)'}",
            file=sys.stderr,
        )

    def reopen_if_removed(self) -> None:
        """Open the store again when its directory was removed while the kernel ran (a cleaner of
        temporary files took the default store's): every spill after it was withheld ("the store
        is closed") until the user reloaded the extension. Said in one line; checked before each
        cell (one ``stat``)."""
        if self._closed or not self.store.removed:
            return
        where = self.store.path
        try:  # (the store closed itself when it found its directory gone: a new one can take the path)
            self._reopen(store=True, how=REMOVED)
        except Exception as exc:  # (a UsageError saying why: the path cannot be made, it is locked, …)
            print(f"jupyter-scratchpad: the store directory {where} was removed while the kernel ran, and a "
                  f"new store could not be opened: {exc}", file=sys.stderr)  # fmt: skip
            return
        fresh = "a new temporary store is open" if self._temporary else f"the store was made again at {self.store.path}"
        print(
            f"jupyter-scratchpad: the store directory {where} was removed while the kernel ran (by a cleaner of "
            f"temporary files?); {fresh}, and what was spilled before is gone",
            file=sys.stderr,
        )

    def _reopen(self, store: bool, how: str = SWITCH) -> None:
        old_store, old_pad, was_temporary = self.store, self.pad, self._temporary
        if store:
            self.store = self._open_store()
        try:
            self.pad = self._open_pad()
        except BaseException:
            if store:
                self.store.close()
                self.store = old_store
            raise
        if store:
            self._temporary = self._is_temporary()
            _closing(old_store, old_pad, how, was_temporary)
            old_store.close()

    def retarget(self) -> None:
        """Point the pad at the configured model and window, keeping the tokens already used."""
        m, pad = self.magics, self.pad
        policy = pad.policy
        if policy.context_safety_margin != pad.budget.safety_margin:
            old = pad.budget
            pad.budget = ContextBudget(
                old.context_window,
                policy.context_safety_margin,
                initial_used=old.used,
                max_extraction_tokens=old.max_extraction_tokens,
                turn_depth_bonus=policy.turn_depth_bonus,
            )
        pad.set_model(m.model, m.context_window, m.max_extraction_tokens or policy.max_extraction_tokens)


#: Tool names of cell outputs (as the hooks name them), to tell which patterns apply to cells.
_CELL_TOOLS = (
    *(f"cell_{n}{kind}" for n in (1, 12, 123, 1234) for kind in ("", "_stdout", "_stderr", "_display")),
    "background_stdout",
    "background_stderr",
)


def for_cells(policy: SpillPolicy) -> SpillPolicy:
    """The policy the notebook's pad applies. A cell output is no MCP server's tool result: a
    policy file's opt-in (Aura's meaning: only tools that a pattern of their server names are
    intercepted) would let every cell output that no pattern names through whole, and its
    ``enabled`` is Aura's switch for its agent (here ``%scratch auto on|off`` is). So every cell
    output is decided by the thresholds: the patterns that name it, else the default."""
    if policy.opt_in or not policy.enabled:
        return dataclasses.replace(policy, opt_in=False, enabled=True)  # (the rest as it was)
    return policy


def cell_patterns(policy: SpillPolicy) -> dict[str, int]:
    """The patterns of ``policy`` that name cell outputs (``cell_*_stdout``), with their thresholds."""
    return {
        glob: threshold
        for glob, threshold in (policy.patterns or {}).items()
        if any(glob_matches(glob, tool) for tool in _CELL_TOOLS)
    }


def cell_rule(policy: SpillPolicy, model: str) -> str:
    """Which cell outputs spill, in words: "outputs of at least 5,120 tokens (gpt-4o) are spilled"
    (with the byte rule and the patterns that name cells)."""
    rule = f"outputs of at least {policy.min_tokens:,} tokens ({model})"
    if policy.min_bytes is not None:
        rule += f" or {policy.min_bytes:,} bytes"
    said = f"{rule} are spilled"
    named = cell_patterns(policy)
    if named:
        said += "; by pattern: " + ", ".join(f"{g} at {t:,} tokens" for g, t in sorted(named.items()))
    return said


def _locked_message(exc: StoreLockedError) -> str:
    """A store held by another process: who holds it, and what this kernel can do instead."""
    path = getattr(exc, "path", "?")
    holder = getattr(exc, "holder", "another process")
    return (
        f"jupyter-scratchpad: the store at {path} is open in process {holder} (another kernel or "
        "program; one process at a time may write an embedded store). Give this kernel its own: "
        f"%config ScratchMagics.store_path = '{path}-2' (or None for a temporary store), or shut process "
        f"{holder} down and set store_path to {path!r} again."
    )
