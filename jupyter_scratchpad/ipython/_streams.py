"""Auto-spill of large stdout/stderr: a gate on each stream, per cell.

A cell's stream text passes through as it is written until it could reach the spill threshold;
from the write that reaches it on, the text is held back (never sent to the front end). When the
cell ends the whole stream of the cell (what was shown and what was held) goes to the core, which
spills it, and one stub is displayed. If the core does not spill it after all (a chunked count
ran over, or the spill failed), the held text is written out then: nothing is ever lost.

How a gate is attached: for the duration of a cell, ipykernel's ``OutStream`` (and any stream
with a writable ``write`` attribute, a terminal's ``TextIOWrapper`` included) gets an
instance-level ``write`` — every writer goes through it, including ipykernel's fd watcher that
forwards C-level and subprocess output. ``OutStream.register_hook`` is not used
because its hook list is thread-local and ``_flush`` runs on the IOPub thread, so a hook
registered from the cell would never see the messages. A stream whose ``write`` cannot be
replaced (``__slots__``, read-only) is wrapped by a proxy in ``sys.stdout`` for the cell instead.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._session import ScratchSession

__all__ = ["StreamGate", "StreamTaps"]

log = logging.getLogger("jupyter_scratchpad.ipython")

_STREAMS = ("stdout", "stderr")
_MAX_TOKENS_PER_CHAR = 4 * 1.1  # see _spill: below this bound nothing needs tokenizing
Writer = Callable[[str], Any]


def _shell_is_rendering(shell: Any) -> bool:
    """The shell itself is printing a result, a display or a traceback (a terminal writes those
    to stdout): already decided on by the other hooks, or an error, which is never spilled."""
    return bool(
        getattr(shell.display_pub, "is_publishing", False)
        or getattr(shell.displayhook, "is_active", False)
        or getattr(shell, "showing_traceback", False)
    )


class StreamGate:
    """The per-cell state of one stream (``stdout`` or ``stderr``); thread-safe."""

    def __init__(self, session: ScratchSession, name: str) -> None:
        self.session = session
        self.name = name
        self._lock = threading.Lock()
        self._tool: str | None = None  # None: no cell is running
        self._reset()

    def _reset(self) -> None:
        self._chunks: list[str] = []
        self._held_from: int | None = None
        self._uncounted: list[str] = []
        self._uncounted_chars = 0
        self._counted = 0
        self._bytes = 0
        self._writer: Writer | None = None

    def begin(self, tool: str) -> None:
        with self._lock:
            self._reset()
            self._tool = tool

    def write(self, text: str, writer: Writer) -> Any:
        """Admit ``text`` written to the stream whose real ``write`` is ``writer``."""
        if not isinstance(text, str) or not text or _shell_is_rendering(self.session.shell):
            return writer(text)
        with self._lock:
            tool = self._tool
            if tool is not None:
                self._writer = writer
                self._chunks.append(text)
                if self._held_from is not None:
                    return len(text)
                if self._reaches(text, tool):
                    self._held_from = len(self._chunks) - 1
                    return len(text)
        return writer(text)

    def _reaches(self, text: str, tool: str) -> bool:
        """Whether the cell's stream, with ``text``, could reach the threshold (counts lazily)."""
        pad = self.session.pad
        policy = pad.policy
        if not policy.enabled:
            return False
        if policy.min_bytes is not None:
            self._bytes += len(text.encode("utf-8", "surrogatepass"))
            if self._bytes >= policy.min_bytes:
                return True
        threshold = policy.threshold_for(tool)
        self._uncounted.append(text)
        self._uncounted_chars += len(text)
        if self._counted + self._uncounted_chars * _MAX_TOKENS_PER_CHAR + 1 < threshold:
            return False
        pending = "".join(self._uncounted)
        tokens, _exact = pad.tokenizer.count_upto(pending, max(1, threshold - self._counted))
        self._counted += tokens
        self._uncounted, self._uncounted_chars = [], 0
        return self._counted >= threshold

    def end(self) -> None:
        """The cell ended: spill the held stream and display its stub, or let the text out."""
        with self._lock:
            tool, held_from, chunks, writer = self._tool, self._held_from, self._chunks, self._writer
            self._tool = None
            self._reset()
        if held_from is None or writer is None or tool is None:
            return
        held = "".join(chunks[held_from:])
        result = self.session.pad.intercept("".join(chunks), tool=tool, result_class="query")  # never raises
        if result.spilled and result.stub is not None:
            self.session.publish_stub(result.stub)
            return
        if result.failure:  # fail closed: a short pointer, not the flood (the core logged why)
            writer(str(result.content) + "\n")
            return
        writer(held)


class _Tap:
    """The instance-level ``write`` put on one stream object."""

    def __init__(self, stream: Any, gate: StreamGate) -> None:
        self.stream = stream
        self.gate = gate
        # An instance attribute set before us (IPython's own per-cell _tee sets one): put back.
        self.previous = getattr(stream, "__dict__", {}).get("write")
        self.original: Writer = stream.write
        self.active = True

    def __call__(self, text: str) -> Any:
        if not self.active:
            return self.original(text)
        return self.gate.write(text, self.original)

    def install(self) -> bool:
        try:
            self.stream.write = self
        except (AttributeError, TypeError):
            return False
        return True

    def uninstall(self) -> None:
        self.active = False
        if getattr(self.stream, "__dict__", {}).get("write") is not self:
            return  # someone wrapped us since: stay in place, inert
        if self.previous is not None:
            self.stream.write = self.previous
        else:
            del self.stream.write


class _ProxyStream:
    """``sys.stdout`` for one cell when the real stream's ``write`` cannot be replaced."""

    def __init__(self, target: Any, gate: StreamGate) -> None:
        self._target = target
        self._gate = gate

    def write(self, text: str) -> Any:
        return self._gate.write(text, self._target.write)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class StreamTaps:
    """The gates of ``sys.stdout`` and ``sys.stderr``, put on for each cell and taken off after it.

    Per cell, like IPython's own ``_tee`` (which also sets an instance-level ``write`` for the
    cell and puts back what it found): ours goes on inside it at ``pre_run_cell`` and comes off at
    ``post_run_cell``, so the two nest cleanly and nothing of ours remains between cells.
    """

    def __init__(self, session: ScratchSession) -> None:
        self.session = session
        self.gates = {name: StreamGate(session, name) for name in _STREAMS}
        self._taps: list[_Tap] = []
        self._proxies: dict[str, _ProxyStream] = {}

    def begin_cell(self, tools: dict[str, str]) -> None:
        self.end_cell()  # a cell that never ended (an interrupted post_run_cell): let it out
        for name in _STREAMS:
            self.gates[name].begin(tools[name])
            stream = getattr(sys, name)
            if stream is None or isinstance(stream, _ProxyStream):
                continue
            tap = _Tap(stream, self.gates[name])
            if tap.install():
                self._taps.append(tap)
            else:
                self._proxies[name] = proxy = _ProxyStream(stream, self.gates[name])
                setattr(sys, name, proxy)

    def end_cell(self) -> None:
        """Take the taps off, then let each gate spill (or write out) what it held."""
        for tap in reversed(self._taps):
            tap.uninstall()
        self._taps.clear()
        for name, proxy in list(self._proxies.items()):
            if getattr(sys, name) is proxy:
                setattr(sys, name, proxy._target)
        self._proxies.clear()
        for name in _STREAMS:
            self.gates[name].end()

    def detach(self) -> None:
        """Let any held text out and remove every tap and proxy (at unload)."""
        self.end_cell()
