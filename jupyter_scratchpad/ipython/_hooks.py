"""The hooks auto-spill puts into a shell, each one removable: ``OutputHooks.install/uninstall``.

* displayhook (the last expression's value): an instance-level ``compute_format_data`` on
  ``shell.displayhook``. ``DisplayHook.__call__`` formats with it, then stores the *real* value in
  ``_``/``Out[n]`` and sends (ipykernel: ``execute_result``) or prints (terminal) the formatted
  bundle — so the stub replaces only what is shown. JSON-like values are decided on before
  formatting, so a spilled giant list is never pretty-printed.
* display publisher (``display(...)``): an instance-level ``publish`` on ``shell.display_pub``,
  the one method both ipykernel's ``ZMQDisplayPublisher`` and the terminal's publisher send
  through. Its ``register_hook`` is not used: the hook list is thread-local, so a display from
  another thread would slip past it. Each display is decided on alone (a large one is its card),
  and a cell's displays together have a budget, as its stream has (``DisplayBudget``); updates of
  one display id are throttled (``UpdateThrottle``).
* streams: see ``_streams``.
* ``pre_run_cell``/``post_run_cell`` events start and end each cell's stream gates.
* a ``text/html`` formatter for ``ToolResult`` (what ``%scratch head`` and friends return).
* ``shell._showtraceback`` (both ipykernel's and the terminal's errors go through it): a cell's
  error is bounded as the policy bounds any error, never spilled.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from ..tools import ToolResult
from ._progress import PUBLISHING
from ._render import STUB_MIME, tool_result_html
from ._shown import StreamMeter
from ._streams import StreamTaps

if TYPE_CHECKING:
    from ._session import ScratchSession

__all__ = ["OutputHooks"]

log = logging.getLogger("jupyter_scratchpad.ipython")

_MISSING = object()
# When the policy cannot say whether an output is large (it failed too), text over this many
# characters is held back rather than shown.
FAIL_CLOSED_CHARS = 32_768


class _InstancePatch:
    """Shadow ``obj.name`` with ``replacement`` on the instance; undo only what we did."""

    def __init__(self, obj: Any, name: str, replacement: Any) -> None:
        self.obj, self.name, self.replacement = obj, name, replacement
        self.previous = vars(obj).get(name, _MISSING)
        self.original = getattr(obj, name)

    def install(self) -> None:
        setattr(self.obj, self.name, self.replacement)

    def uninstall(self) -> None:
        if vars(self.obj).get(self.name, _MISSING) is not self.replacement:
            return  # replaced again by someone else since: leave theirs alone
        if self.previous is _MISSING:
            delattr(self.obj, self.name)
        else:
            setattr(self.obj, self.name, self.previous)


NAME_MAX_CHARS = 256  # of an exception's class name, as the error message and the reply carry it


def _named_within(etype: Any) -> Any:
    """``etype``, or a stand-in exception class whose name is the first characters of its name
    (``raise type('E' * 1_000_000, (Exception,), {})()`` sent a megabyte as ``ename``, twice)."""
    name = getattr(etype, "__name__", "")
    if not isinstance(name, str) or len(name) <= NAME_MAX_CHARS:
        return etype
    short = f"{name[: NAME_MAX_CHARS - 40]}…[{len(name):,}-character name]"
    return type(short, (Exception,), {})


# A cell's displays together: past the threshold of cell_N_display (as its stream's text is
# measured: tokens, or spill_bytes), or once the cell has this many outputs, the rest are held and
# stored as one entry. 20,000 display(i) sent 20,000 outputs (1.3 MB) where the same prints gave
# one card. Outputs, not displays: JupyterLab and Notebook 7 render the first 50 outputs of a cell
# (maxNumberOutputs) and fold the rest behind "Show more outputs", so the card of a 1,000-display
# loop held past 284 small displays was output 285, out of sight. A display is one output, and so
# is each run of stream text between displays (print and display alternating); the card comes by
# output 42 at the latest (a stream run may follow the last display shown).
CELL_MAX_OUTPUTS = 40
# Updates of one display id are forwarded at most this often; the last state always is.
UPDATE_EVERY_S = 0.1


def _display_text(data: dict[str, Any]) -> str | None:
    """The text a display is measured and stored by: its JSON, else its largest text part (an
    HTML object's text/plain is only its repr); None for a display with a part that is not text
    (an image, a plot, a widget, a formula): those are looked at, never held by the budget."""
    from ..store._format import as_text
    from ._spill import SPILLABLE_MIMES

    if not data or any(mime not in SPILLABLE_MIMES for mime in data):
        return None
    if "application/json" in data:
        value = data["application/json"]
        return value if isinstance(value, str) else as_text(value)
    texts = [v for v in data.values() if isinstance(v, str)]
    return max(texts, key=len) if texts else None


class DisplayBudget:
    """One cell's display budget: what it showed, and what it held once past the budget."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.meter = StreamMeter()
        self.shown = 0  # text displays shown
        self.outputs = 0  # the cell's outputs so far: every display shown, and the stream runs between
        self._stream: str | None = None  # the stream written to since the last display (a run open)
        self.held: list[tuple[dict[str, Any], Any, str]] = []  # (data, metadata, text)
        self.lock = threading.Lock()

    def stream_written(self, name: str) -> None:
        """A stream's text passed to the front end: a new output unless it continues the run."""
        if self._stream != name:  # (read unlocked: a write on the hot path; a race counts one more)
            with self.lock:
                if self._stream != name:
                    self._stream = name
                    self.outputs += 1

    def admit(self, session: ScratchSession, data: dict[str, Any], metadata: Any) -> bool:
        """Whether the display passes (True), or was held (False)."""
        text = _display_text(data)
        if text is None:  # (an image, a plot, a widget: never held, but an output all the same)
            with self.lock:
                self._stream = None
                self.outputs += 1
            return True
        with self.lock:
            if self.held:
                self.held.append((data, metadata, text))
                return False
            pad = session.pad
            policy = pad.policy
            self.meter.feed(text if text.endswith("\n") else text + "\n")
            over = self.outputs >= CELL_MAX_OUTPUTS or (
                policy.enabled and self.meter.reaches(policy, policy.threshold_for(self.tool), pad.tokenizer)
            )
            if over and self.shown:  # (the first display alone: decided alone, its own card)
                self.held.append((data, metadata, text))
                return False
            self.shown += 1
            self.outputs += 1
            self._stream = None
            return True

    def take_held(self) -> list[tuple[dict[str, Any], Any, str]]:
        with self.lock:
            held, self.held = self.held, []
            return held


def _held_document(held: list[tuple[dict[str, Any], Any, str]], first: int) -> str:
    """The held displays as one markdown document, a section each (as %%scratch stores a cell)."""
    return "\n".join(f"## display {first + i}\n\n{text.rstrip()}\n" for i, (_, _, text) in enumerate(held))


class UpdateThrottle:
    """At most one ``update_display_data`` per display id every ``UPDATE_EVERY_S``; one held back
    is sent when its time comes, and at the cell's end (the last state is always shown).
    30,000 ``handle.update()`` sent 10 MB over iopub, which the browser rendered one by one."""

    def __init__(self, send: Any) -> None:
        self.send = send  # send(data, metadata, args, kwargs)
        self.lock = threading.Lock()
        self.sent: dict[str, float] = {}
        self.pending: dict[str, tuple[Any, Any, tuple[Any, ...], dict[str, Any]]] = {}
        self.timers: dict[str, threading.Timer] = {}

    def admit(self, display_id: str, data: Any, metadata: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether this update goes now (True), or is held as the id's latest state (False)."""
        now = time.monotonic()
        with self.lock:
            last = self.sent.get(display_id)
            if last is None or now - last >= UPDATE_EVERY_S:
                self.sent[display_id] = now
                self.pending.pop(display_id, None)
                return True
            self.pending[display_id] = (data, metadata, args, kwargs)
            if display_id not in self.timers:
                timer = threading.Timer(UPDATE_EVERY_S - (now - last), self._due, (display_id,))
                timer.daemon = True
                self.timers[display_id] = timer
                timer.start()
            return False

    def _due(self, display_id: str) -> None:
        with self.lock:
            self.timers.pop(display_id, None)
            held = self.pending.pop(display_id, None)
            if held is not None:
                self.sent[display_id] = time.monotonic()
        if held is not None:
            self._send(held)

    def _send(self, held: tuple[Any, Any, tuple[Any, ...], dict[str, Any]]) -> None:
        try:
            self.send(*held)
        except Exception:
            log.exception("sending a held display update failed")

    def flush(self) -> None:
        """Send every held update now (the cell ended)."""
        with self.lock:
            for timer in self.timers.values():
                timer.cancel()
            self.timers.clear()
            held, self.pending = list(self.pending.values()), {}
            self.sent.clear()
        for item in held:
            self._send(item)


class _Shown:
    """An exception's text as a traceback display shows it (``str``), already bounded."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class OutputHooks:
    """Every hook of one session; ``install`` once, ``uninstall`` restores the shell exactly."""

    def __init__(self, session: ScratchSession) -> None:
        self.session = session
        self.shell = session.shell
        self.streams = StreamTaps(session)
        self._patches: list[_InstancePatch] = []
        self._html_formatter: Any = None
        self._previous_html: Any = _MISSING
        self._depth = 0  # nested run_cell calls belong to the outer cell
        self._format_data: Any = None
        self._send_display: Any = None
        self._format: Any = None
        self._formatting_result = False  # the displayhook is formatting a cell's value (decided already)
        self._show_tb: Any = None
        self._budget: DisplayBudget | None = None  # the running cell's displays
        self._updates = UpdateThrottle(self._send_now)

    # -- lifecycle ---------------------------------------------------------------------------

    def install(self) -> None:
        shell = self.shell
        self._format_data = self._patch(shell.displayhook, "compute_format_data", self._compute_format_data)
        self._show_tb = self._patch(shell, "_showtraceback", self._showtraceback)
        self._send_display = self._patch(shell.display_pub, "publish", self._publish)
        self._format = self._patch(shell.display_formatter, "format", self._display_format)
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)
        kernel = getattr(shell, "kernel", None)
        if kernel is not None and callable(getattr(kernel, "post_handler_hook", None)):
            answered = self._patch(kernel, "post_handler_hook", self._kernel_answered)
            self._answered: Any = answered
        formatter = shell.display_formatter.formatters.get("text/html")
        if formatter is not None:
            self._html_formatter = formatter
            self._previous_html = formatter.type_printers.get(ToolResult, _MISSING)
            formatter.for_type(ToolResult, tool_result_html)

    def uninstall(self) -> None:
        for event, callback in (("pre_run_cell", self._pre_run_cell), ("post_run_cell", self._post_run_cell)):
            with contextlib.suppress(ValueError):  # already gone
                self.shell.events.unregister(event, callback)
        self.streams.detach()
        for patch in reversed(self._patches):
            patch.uninstall()
        self._patches.clear()
        if self._html_formatter is not None:
            self._html_formatter.type_printers.pop(ToolResult, None)
            if self._previous_html is not _MISSING:
                self._html_formatter.for_type(ToolResult, self._previous_html)
            self._html_formatter = None

    def _patch(self, obj: Any, name: str, replacement: Any) -> Any:
        """Install the patch; return the method it shadows (what the replacement calls on)."""
        patch = _InstancePatch(obj, name, replacement)
        patch.install()
        self._patches.append(patch)
        return patch.original

    # -- cell events -------------------------------------------------------------------------

    def _cell_number(self) -> int:
        return self.session.cell_number()

    def _pre_run_cell(self, info: Any = None) -> None:
        self._depth += 1
        if self._depth == 1:
            try:
                self.session.reopen_if_removed()
            except Exception:
                log.exception("opening the store again failed")
        if self._depth > 1 or self.session.capturing or not self.session.auto_spill:
            return
        n = self._cell_number()
        self._budget = DisplayBudget(f"cell_{n}_display")
        try:
            self.streams.begin_cell({name: f"cell_{n}_{name}" for name in ("stdout", "stderr")})
        except Exception:
            log.exception("starting the stream gates failed; this cell's streams are not spilled")

    def _kernel_answered(self, *args: Any, **kwargs: Any) -> Any:
        """The kernel handled a shell message (a cell, a completion, ...): threads and tasks that
        write from now on are gated by the background taps until the next cell."""
        try:
            return self._answered(*args, **kwargs)
        finally:
            if not self._depth:
                try:
                    self.streams.start_background()
                except Exception:
                    log.exception("starting the background stream gates failed")

    def _post_run_cell(self, result: Any = None) -> None:
        self._depth = max(0, self._depth - 1)
        if self._depth:
            return
        from ..spill._withheld import notebook_wording

        try:
            with notebook_wording():
                self.streams.end_cell()
        except Exception:
            log.exception("ending the stream gates failed")
        self._end_displays()
        if result is not None and getattr(result, "error_in_exec", None) is not None and self.session.auto_spill:
            try:
                result.error_in_exec = self._bounded_error(result.error_in_exec)
            except Exception:
                log.exception("bounding the cell's error for the kernel's reply failed")
        self.session.forget_own_results()
        widgets = sys.modules.get("jupyter_scratchpad.widgets")
        if widgets is not None:  # open explorers show this cell's spills now, not at their next poll
            try:
                widgets.refresh_all()
            except Exception:
                log.exception("refreshing the explorers failed")

    # -- tracebacks --------------------------------------------------------------------------

    def _showtraceback(self, etype: Any, evalue: Any, stb: Any) -> Any:
        """A cell's error as the policy bounds any error (8 KiB: 75 % head, 25 % tail, a note of
        what was cut): ``raise ValueError(2 MB)`` sent all 2 MB to the notebook, twice (the
        traceback and ``evalue``). The exception itself stays whole in ``sys.last_value``.
        What the cell printed and is held is spilled first, so its stub comes before the error."""
        if self._depth == 1 and self.session.auto_spill:
            from ..spill._withheld import notebook_wording

            try:
                with notebook_wording():
                    self.streams.settle()
            except Exception:
                log.exception("spilling the cell's held output before its error failed")
            self._settle_displays()
        try:
            if self.session.auto_spill and isinstance(stb, list):
                limit = self.session.pad.policy.error_max_bytes
                try:
                    shown = str(evalue)
                except Exception:  # its own __str__ fails: IPython shows that as it always does
                    shown = ""
                if sum(len(str(line)) for line in stb) > limit or len(shown) > limit:
                    from ..spill import bound_error_text

                    cut = "the whole exception is sys.last_value"
                    stb = [bound_error_text("\n".join(map(str, stb)), limit) + "\x1b[0m", f"({cut})"]
                    evalue = _Shown(bound_error_text(shown, limit))
                etype = _named_within(etype)
        except Exception:  # fail closed all the same: the first characters, then a note
            log.exception("bounding a traceback failed; it is cut at %s characters", f"{FAIL_CLOSED_CHARS:,}")
            with contextlib.suppress(Exception):  # (an exception whose str() raises: IPython's own handling)
                if isinstance(stb, list) and sum(len(str(line)) for line in stb) > FAIL_CLOSED_CHARS:
                    cut = "(cut: sys.last_value is the whole exception)"
                    stb = ["\n".join(map(str, stb))[:FAIL_CLOSED_CHARS] + "\x1b[0m", cut]
                if len(str(evalue)) > FAIL_CLOSED_CHARS:
                    evalue = _Shown(str(evalue)[:FAIL_CLOSED_CHARS] + " …")
        return self._show_tb(etype, evalue, stb)

    def _bounded_error(self, error: BaseException) -> BaseException:
        """The cell's error as the kernel's reply will carry it: ipykernel puts ``str(error)`` in
        the execute_reply's ``evalue`` after this event, so ``raise ValueError(2 MB)`` sent 2 MB
        to every client (nbclient quotes it in its ``CellExecutionError``). A larger one is
        replaced by a copy of the same type with the bounded text and the same traceback; the
        exception itself stays whole in ``sys.last_value``."""
        limit = self.session.pad.policy.error_max_bytes
        text = str(error)
        named = _named_within(type(error))
        if len(text) <= limit and named is type(error):
            return error
        from ..spill import bound_error_text

        shown = text
        if len(text) > limit:
            shown = bound_error_text(text, limit) + " (the whole exception is sys.last_value)"
        copy: BaseException | None = None
        if named is type(error):  # (else its name is the flood, the reply's ename: a stand-in)
            try:
                copy = type(error).__new__(type(error))
                copy.args = (shown,)
                if str(copy) != shown:
                    copy = None  # (str() does not come from args)
            except Exception:  # an exception with its own __new__
                copy = None
        if copy is None:  # a stand-in of the same (bounded) name
            copy = type(named.__name__, (Exception,), {"__str__": lambda _self: shown})()
        return copy.with_traceback(error.__traceback__)

    # -- displayhook and display publisher ---------------------------------------------------

    def _fail_closed(self, data: Any, exc: BaseException, tool: str, where: str | None) -> dict[str, Any] | None:
        """When our own spill code failed on an output: the pointer a failed spill shows in place
        of a text bundle large enough to spill, else None (a small or rich output is shown as it
        is). The notebook never gets the flood because the scratchpad had a bug."""
        from ..spill import SpillDecision
        from ..spill._withheld import withheld_pointer
        from ._spill import SPILLABLE_MIMES

        if not isinstance(data, dict) or not data or any(mime not in SPILLABLE_MIMES for mime in data):
            return None
        reason = f"{type(exc).__name__}"
        with contextlib.suppress(Exception):  # (an exception whose str() raises)
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        try:
            text = max((str(v) if isinstance(v, str) else repr(v) for v in data.values()), key=len)
            try:
                large = self.session.spiller.could_spill(len(text), tool)
            except Exception:  # the policy itself may be what failed
                large = len(text) > FAIL_CLOSED_CHARS
            if not large:
                return None
            pointer = withheld_pointer(text, tool, SpillDecision(spill=True, rule="error"), reason, audience="notebook")
        except Exception:  # not even measurable: withheld all the same
            pointer = f"[scratchpad] The output of {tool} was withheld: spilling it failed ({reason})."
        return {"text/plain": pointer + (f"\n{where}" if where else "") + "\n`%scratch auto off` shows it in full."}

    def _compute_format_data(self, result: Any) -> Any:
        dh = self.shell.displayhook
        original = self._format_data
        if not self.session.auto_spill:
            return original(result)
        n = self._cell_number()
        where = f"The value itself is still in Out[{n}] and _." if getattr(dh, "do_full_cache", True) else None
        self._formatting_result = True
        try:
            try:
                replaced = self.session.spiller.for_result(result, f"cell_{n}", where, original)
            except Exception as exc:
                log.exception("auto-spill of cell %s's result failed", n)
                data, metadata = original(result)
                pointer = self._fail_closed(data, exc, f"cell_{n}", where)
                return (data, metadata) if pointer is None else (pointer, {})
            return original(result) if replaced is None else replaced
        finally:
            self._formatting_result = False

    def _display_format(self, obj: Any, *args: Any, **kwargs: Any) -> Any:
        """``display(value)`` of a JSON-like value: decided on the value itself, before IPython
        formats it, as a cell's value is (its pretty text is cut at 1,000 items: a large dict
        spilled as that cut text, and ``%scratch get`` gave back the text, not the dict)."""
        original = self._format
        if (
            self._formatting_result
            or not self.session.auto_spill
            or self.session.capturing
            or any(a is not None for a in (*args, *kwargs.values()))  # (include=/exclude=: a part of it)
        ):
            return original(obj, *args, **kwargs)
        tool = f"cell_{self._cell_number()}_display"
        if not isinstance(obj, (dict, list, tuple)):
            try:  # a DataFrame pandas shows whole: decided on its rows before pandas formats it
                early, tried = self.session.spiller.frame_first(obj, tool)
            except Exception:
                log.exception("auto-spill of a displayed DataFrame failed")
                early, tried = None, False
            if early is not None:
                return early, {}
            if tried:
                return original(obj, *args, **kwargs)
            return self._display_frame(obj, tool, original(obj, *args, **kwargs))
        try:
            bundle = self.session.spiller.spill_value(obj, tool)
        except Exception:
            log.exception("auto-spill of a displayed value failed")
            bundle = None  # (its formatted text still goes through the publisher's check)
        return (bundle, {}) if bundle is not None else original(obj, *args, **kwargs)

    def _display_frame(self, obj: Any, tool: str, formatted: Any) -> Any:
        """``display(df)`` of a DataFrame pandas shows whole: stored as its rows (JSON records),
        as the same frame as a cell's value is (it was stored as its printed table)."""
        try:
            bundle = self.session.spiller.frame_bundle(obj, tool, formatted)
        except Exception:
            log.exception("auto-spill of a displayed DataFrame failed")
            bundle = None  # (its formatted text still goes through the publisher's check)
        return (bundle, {}) if bundle is not None else formatted

    def _publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
        if (
            not self.session.auto_spill
            or not isinstance(data, dict)
            or self.session.capturing
            or getattr(PUBLISHING, "active", False)  # our progress line
            or STUB_MIME in data  # a card (a stream's): stored already
        ):
            return self._send_now(data, metadata, args, kwargs)
        transient = kwargs.get("transient") or {}
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if kwargs.get("update") and isinstance(display_id, str):
            if not self._updates.admit(display_id, data, metadata, args, kwargs):
                return None
        elif self._depth and self._budget is not None:
            try:
                passes = self._budget.admit(self.session, data, metadata)
            except Exception:
                log.exception("the display budget failed; this display is decided alone")
                passes = True
            if not passes:
                return None
        return self._send_now(data, metadata, args, kwargs)

    def _send_now(self, data: Any, metadata: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        original = self._send_display
        if self.session.auto_spill and isinstance(data, dict) and not getattr(PUBLISHING, "active", False):
            tool = f"cell_{self._cell_number()}_display"
            try:
                bundle = self.session.spiller.spill_bundle(data, tool)
            except Exception as exc:
                log.exception("auto-spill of a display failed")
                bundle = self._fail_closed(data, exc, tool, None)
            if bundle is not None:
                data, metadata = bundle, {}
        return original(data, metadata, *args, **kwargs)

    # -- the cell's display budget -----------------------------------------------------------

    def stream_written(self, name: str) -> None:
        """The running cell's ``name`` stream passed text on: an output, for the display budget."""
        budget = self._budget
        if budget is not None:
            budget.stream_written(name)

    def _settle_displays(self) -> None:
        """Store what the cell's displays held so far (its card shown now); the budget goes on."""
        budget = self._budget
        if budget is None:
            return
        held = budget.take_held()
        if held:
            try:
                self._store_held(budget, held)
            except Exception:
                log.exception("storing the cell's held displays failed")

    def _end_displays(self) -> None:
        """The cell ended: its held displays stored as one entry, its held updates sent."""
        self._settle_displays()
        self._budget = None
        try:
            self._updates.flush()
        except Exception:
            log.exception("sending the held display updates failed")

    def _store_held(self, budget: DisplayBudget, held: list[tuple[dict[str, Any], Any, str]]) -> None:
        """One card for the displays held past the cell's budget: they are stored as one entry
        (a markdown section each); one alone is decided as any display is."""
        if len(held) == 1:
            data, metadata, _ = held[0]
            self._send_now(data, metadata, (), {})
            return
        from ..spill._withheld import notebook_wording

        first = budget.shown + 1
        document = _held_document(held, first)
        with notebook_wording():
            result = self.session.pad.intercept(document, tool=budget.tool, result_class="query", force=True)
        where = (
            f"{len(held):,} displays of this cell (display {first:,} on) were held past its display budget "
            f"({budget.shown:,} shown above; the budget is that of one output, or {CELL_MAX_OUTPUTS:,} outputs): "
            "they are stored together here, a markdown section each."
        )
        if result.spilled and result.stub is not None:
            self.session.publish_stub(result.stub, where)
            return
        pointer = str(result.content) if result.failure else None
        if pointer is None:  # (not stored, and no failure: shown as they were)
            for data, metadata, _ in held:
                self._send_now(data, metadata, (), {})
            return
        self._send_display({"text/plain": f"{pointer}\n{len(held):,} displays were held: they are not shown."}, {})
