"""``%%scratch [--name NAME] [--tool TOOL] [--force]``: run a cell, store what it outputs.

The cell runs in the user's namespace with its stdout, stderr and ``display(...)`` calls recorded
in order, and its last expression evaluated (as ``%%time`` does: an exception propagates with one
traceback). Everything is handed to the core as one output — the piece itself when there is one
(a JSON-like value stays JSON, so SQL works on it), else a markdown document with one section per
piece — and spilled per the policy (always with ``--force``), shown as one stub. When it does not
spill, the outputs are replayed as if ``%%scratch`` were not there.
"""

from __future__ import annotations

import ast
import contextlib
import io
import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

import orjson
from IPython.core.displaypub import DisplayPublisher
from IPython.core.error import UsageError

from ..errors import InvalidArgumentError
from ..store import validate_handle
from ..store._format import pretty_json
from ._args import ScratchArgumentParser, for_a_person
from ._spill import NATIVE_TYPES, frame_records
from ._streams import own_output

if TYPE_CHECKING:
    from ._session import ScratchSession

__all__ = ["run_capture"]

log = logging.getLogger("jupyter_scratchpad.ipython")

PARSER = ScratchArgumentParser(
    "capture",
    "%%scratch: run the cell and store its output (stdout, stderr, displays and the last value) as one "
    "entry when it reaches the spill threshold (always with --force), shown as one stub.",
    epilog="example:\n  %%scratch --name pods --force\n  fetch_pods()        # a list of dicts\n\n"
    "  then: %scratch sql SELECT count(*) FROM pods",
    prog="%%scratch",
)
PARSER.add_argument("--name", default=None, metavar="NAME", help="the entry's handle ([a-z0-9_], at most 64)")
PARSER.add_argument("--tool", default=None, metavar="TOOL", help="source tool recorded (default cell_<n>)")
PARSER.add_argument("--force", action="store_true", help="store it whatever its size")

Event = tuple[str, Any]  # ("stdout"|"stderr", text) or ("display", (data, metadata, transient, update))


class _RecordingStream(io.TextIOBase):
    """``sys.stdout`` (or ``sys.stderr``) while the cell runs; ipykernel's forwarder of C-level and
    subprocess output writes here too (from its own thread: ``lock``)."""

    def __init__(self, events: list[Event], name: str, lock: threading.Lock) -> None:
        super().__init__()
        self._events = events
        self._lock = lock
        self.name = name

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            with self._lock:
                if self._events and self._events[-1][0] == self.name:
                    self._events[-1] = (self.name, self._events[-1][1] + text)
                else:
                    self._events.append((self.name, text))
        return len(text)


class _RecordingPublisher(DisplayPublisher):
    """Records ``display(...)`` calls instead of sending them."""

    def __init__(self, events: list[Event], lock: threading.Lock, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._events = events
        self._lock = lock

    def publish(
        self, data: Any, metadata: Any = None, *args: Any, transient: Any = None, update: bool = False, **kwargs: Any
    ) -> None:
        with self._lock:
            self._events.append(("display", (data, metadata, transient, update)))

    def clear_output(self, wait: bool = False) -> None:
        with self._lock:
            self._events.clear()  # as in the notebook: everything the cell showed so far goes


def _execute(shell: Any, cell: str, number: int) -> Any:
    """Run ``cell`` in the user namespace; the value of a last expression, else None."""
    __tracebackhide__ = True  # a failing cell's traceback is the user's frames only (IPython hides ours)
    code = shell.transform_cell(cell)
    try:
        filename = shell.compile.cache(code, number, raw_code=cell)
    except Exception:  # older or unusual shells: tracebacks lose the source lines, nothing else
        filename = "<scratch-cell>"
    tree = shell.transform_ast(ast.parse(code, filename=filename))
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    namespace = shell.user_ns
    exec(compile(tree, filename, "exec"), shell.user_global_ns, namespace)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), filename, "eval"), shell.user_global_ns, namespace)


def _display_payload(data: dict[str, Any]) -> Any:
    for mime in ("application/json", "text/plain", "text/markdown", "text/html"):
        if mime in data:
            return data[mime]
    return f"(a display of {', '.join(sorted(data))}: not text, not stored)"


def _piece_content(shell: Any, kind: str, payload: Any) -> Any:
    if kind == "display":
        return _display_payload(payload[0])
    if kind == "result":
        if isinstance(payload, NATIVE_TYPES):
            return payload
        records = frame_records(payload)  # a DataFrame as its rows (SQL and the item tools read them)
        if records is not None:
            return orjson.loads(records)
        data, _ = shell.display_formatter.format(payload)
        return _display_payload(data)
    return payload


def _document(shell: Any, pieces: list[Event]) -> Any:
    """One piece as itself; several as a markdown document with a section per piece."""
    if len(pieces) == 1:
        return _piece_content(shell, *pieces[0])
    sections = []
    displays = 0
    for kind, payload in pieces:
        content = _piece_content(shell, kind, payload)
        if kind == "display":
            displays += 1
            title = f"display {displays}"
        else:
            title = kind
        text = content if isinstance(content, str) else pretty_json(content).decode("utf-8", "surrogatepass")
        sections.append(f"## {title}\n\n{text.rstrip()}\n")
    return "\n".join(sections)


def _replay(session: ScratchSession, events: list[Event]) -> None:
    """Show the recorded outputs as they would have been shown."""
    for kind, payload in events:
        if kind == "display":
            data, metadata, transient, update = payload
            session.shell.display_pub.publish(data, metadata, transient=transient, update=update)
        else:
            getattr(sys, kind).write(payload)


def _finish(session: ScratchSession, events: list[Event], value: Any, tool: str, name: str | None, force: bool) -> Any:
    pieces = [*events, *([("result", value)] if value is not None else [])]
    if not pieces:
        with own_output():  # (the extension's own message: shown, never held or stored)
            print("[scratchpad] the cell produced no output: nothing stored")
        return None
    content = _document(session.shell, pieces)
    result = session.pad.intercept(content, tool=tool, result_class="query", handle=name, force=force)
    if result.spilled and result.stub is not None:
        session.publish_stub(result.stub)
        return None
    _replay(session, events)
    if name and not result.failure:
        decision = result.decision
        with own_output():  # (it was held with a flood of the cell's and became its stored last line)
            why = decision.detail or decision.rule
            print(f"[scratchpad] not stored as {name}: {why} (add --force to store it anyway)")
    return value


def run_capture(session: ScratchSession, line: str, cell: str) -> Any:
    """The ``%%scratch`` cell magic (capture form)."""
    __tracebackhide__ = True
    with own_output():  # (--help)
        args = PARSER.parse(line)
    if args.name is not None:
        try:
            validate_handle(args.name)
        except InvalidArgumentError as exc:
            raise UsageError(f"%%scratch --name: {for_a_person(exc.message)}") from None
    shell = session.shell
    number = session.cell_number()
    tool = args.tool or f"cell_{number}"
    events: list[Event] = []
    lock = threading.Lock()
    value = None
    saved = sys.stdout, sys.stderr, shell.display_pub
    out, err = _RecordingStream(events, "stdout", lock), _RecordingStream(events, "stderr", lock)
    taps = getattr(getattr(session, "hooks", None), "streams", None)
    # what reaches the real streams meanwhile (C-level and subprocess output, forwarded by
    # ipykernel from the process's fds) is recorded too, drained at the end
    recording = taps.recording({"stdout": out.write, "stderr": err.write}) if taps else contextlib.nullcontext()
    try:
        with recording:
            session.capturing = True
            sys.stdout, sys.stderr = out, err
            shell.display_pub = _RecordingPublisher(events, lock, shell=shell)
            try:
                value = _execute(shell, cell, number)
            finally:
                sys.stdout, sys.stderr, shell.display_pub = saved
    finally:
        sys.stdout, sys.stderr, shell.display_pub = saved
        session.capturing = False
        try:
            value = _finish(session, events, value, tool, args.name, args.force)
        except Exception:  # the outputs must not vanish with a bug of ours
            log.exception("%%scratch could not store the cell's output; showing it")
            _replay(session, events)
    return value
