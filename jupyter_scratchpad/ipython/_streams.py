"""Auto-spill of large stdout/stderr: a gate on each stream, per cell.

A cell's stream text passes through as it is written until it could reach the spill threshold;
from the write that reaches it on, the text is held back (never sent to the front end). When the
cell ends the whole stream of the cell (what was shown and what was held) goes to the core, which
spills it, and one stub is displayed. If the core does not spill it after all (a chunked count
ran over, or the spill failed), the held text is written out then: nothing is ever lost. A stream
counts, and is stored, as the front end shows it (``_shown``: a ``\r`` progress bar is its last state).
A stream held from inside a line shows the rest of that line first, so the card's count of lines
shown is of whole lines (forwarded fd output comes in pieces of 1,000 bytes, cut anywhere).

How a gate is attached: for the duration of a cell, ipykernel's ``OutStream`` (and any stream
with a writable ``write`` attribute, a terminal's ``TextIOWrapper`` included) gets an
instance-level ``write`` — every writer goes through it, including ipykernel's fd watcher that
forwards C-level and subprocess output. ``OutStream.register_hook`` is not used
because its hook list is thread-local and ``_flush`` runs on the IOPub thread, so a hook
registered from the cell would never see the messages. A stream whose ``write`` cannot be
replaced (``__slots__``, read-only) is wrapped by a proxy in ``sys.stdout`` for the cell instead.

C-level and subprocess output reaches ipykernel's ``OutStream`` late: the process's fd 1 and 2 are
a pipe that a thread of ipykernel's reads (a thousand bytes at a time) and writes through the
stream, so when the cell ends (``subprocess.run`` has returned) up to a pipe's worth of what it
wrote (64 KiB) may not have been forwarded yet. ``OutStream.flush`` does not wait for that pipe.
So before the gates of a cell are taken off, each stream whose pipe still holds bytes gets a marker
written to its fd (bytes a terminal does not show: ipykernel also echoes what it forwards to the
kernel's own stdout); the pipe is in order, so once the forwarding thread hands the marker to our
``write`` (which drops it), everything written to the fd before it has gone through the gate: the
cell's stream is whole.

Between cells (in a kernel) the gates go on in background mode: a thread or task still printing
after its cell ended (20 MB a second after the kernel went idle went to the front end whole) passes
the same way until it could reach the threshold; then it is held, and once it has been quiet for
``QUIET_S`` (or at the next cell, or every ``BACKGROUND_CHUNK_CHARS``) it is spilled and its stub
written where the output went. The switch is made at the cell's end, under each gate's lock, before
the cell's stream is spilled; a stream held when its cell ended goes on held (the line it was
writing goes with it), so the cell's entry and the background's hold every line once, and the
card's "N lines shown above" is true (the taps came off first, and a thread got 5-10 times the
threshold through in the gap). The background taps go on once the kernel has answered (its
``post_handler_hook``, after IPython's ``_tee`` has put back what it found) and stay on beneath
the next cells' ``_tee``; a tap lets through what a tap of ours above it has admitted.

Also: ``clear_output`` starts a cell's streams again (what was shown is gone, as an overwritten
``\r`` state); the extension's own messages (``%scratch``'s help and listings, UsageErrors,
``%config`` refusals) are never held (``own_output``, ``own_text``); a stream under
``CARD_FLOOR_BYTES`` is never held, whatever the threshold; and a ``\r\n`` is stored as printed.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ._render import stub_text
from ._shown import StreamMeter, visible_text

if TYPE_CHECKING:
    from ._session import ScratchSession

__all__ = ["StreamGate", "StreamTaps", "own_output", "own_text"]

log = logging.getLogger("jupyter_scratchpad.ipython")

_STREAMS = ("stdout", "stderr")
Writer = Callable[[str], Any]
QUIET_S = 1.0  # held background output is spilled once its writer has been quiet this long
BACKGROUND_CHUNK_CHARS = 64 << 20  # ... or whenever this much is held (a thread printing forever)
# At most this long for ipykernel's fd-forwarding thread to pass the marker (as its flush_timeout):
# it only has what is in the pipe (64 KiB) ahead of it, so this is reached only when it is stuck.
DRAIN_TIMEOUT_S = 10.0
LINE_END_CHARS = 4096  # a stream held from inside a line shows that line's end when it is this near
# Past the first OVERWRITE_FREE_CHARS of a cell's overwritten states (a progress bar's are passed as
# written), a line rewritten with ``\r`` is forwarded at most every OVERWRITE_INTERVAL_S: the states
# in between are coalesced into the latest one (1,000 states of a 12 KB line sent 12 MB), and the
# final one is always forwarded (by a timer, at the latest when the cell ends).
OVERWRITE_FREE_CHARS = 256 << 10
OVERWRITE_INTERVAL_S = 0.1
# A stream shorter than this (UTF-8 bytes) is never held, whatever the threshold: a card's own words
# (its summary line, where it belongs, the commands to run; its preview aside) are longer than that,
# so below a low ``spill_threshold`` a one-line message became a card many times its size.
CARD_FLOOR_BYTES = 512

# -- the extension's own messages ------------------------------------------------------------------
# What ``%scratch`` prints (its help, a refusal, a UsageError) is never held or stored: the README's
# "what %scratch itself returns is never stored again", for streams too.
_OWN = threading.local()  # .depth > 0: this thread is writing the extension's own message
_OWN_LOCK = threading.Lock()
_OWN_TEXTS: list[tuple[str, float]] = []  # messages that someone else writes for us (logging), until
OWN_TEXT_S = 10.0  # ... they are written or this many seconds have passed


@contextmanager
def own_output() -> Iterator[None]:
    """What this thread writes meanwhile is the extension's own message: the gates let it through."""
    _OWN.depth = getattr(_OWN, "depth", 0) + 1
    try:
        yield
    finally:
        _OWN.depth -= 1


def own_text(text: str) -> None:
    """``text`` will be written by someone else (``%config`` logs a refused value's error): when a
    write holds it, that write is let through."""
    text = text.strip()
    if not text:
        return
    with _OWN_LOCK:
        _OWN_TEXTS.append((text, time.monotonic() + OWN_TEXT_S))
        del _OWN_TEXTS[:-16]


def _is_own(text: str) -> bool:
    if getattr(_OWN, "depth", 0) > 0:
        return True
    if not _OWN_TEXTS:
        return False
    now = time.monotonic()
    with _OWN_LOCK:
        _OWN_TEXTS[:] = [(t, until) for t, until in _OWN_TEXTS if until > now]
        for i, (own, _until) in enumerate(_OWN_TEXTS):
            if own in text:
                del _OWN_TEXTS[i]
                return True
    return False


def _stored_text(text: str) -> str:
    """``text`` as it is stored: as the front end shows it (``visible_text``: overwritten ``\\r``
    states gone), but a ``\\r\\n`` line ending kept as printed (a Windows CSV came back with LF)."""
    if "\r\n" not in text:
        return visible_text(text)
    lines = text.split("\n")
    last = len(lines) - 1
    out = []
    for i, line in enumerate(lines):
        crlf = i < last and line.endswith("\r")
        body = line[:-1] if crlf else line
        out.append((visible_text(body) if "\r" in body else body) + ("\r" if crlf else ""))
    return "\n".join(out)


def _fd_forwarder(stream: Any) -> tuple[int, threading.Thread] | None:
    """The fd that ipykernel's ``OutStream`` forwards C-level and subprocess output from (now
    its pipe's write end) and the thread that forwards it; None for any other stream."""
    thread = getattr(stream, "watch_fd_thread", None)
    fd = getattr(stream, "_original_stdstream_fd", None)
    if (
        not getattr(stream, "_should_watch", False)
        or not isinstance(thread, threading.Thread)
        or not thread.is_alive()
        or thread is threading.current_thread()
        or not isinstance(fd, int)
        or isinstance(fd, bool)
    ):
        return None
    return fd, thread


def _drain_marker() -> str:
    """A marker no output holds by chance, of ACK and DEL only: characters a terminal ignores
    (ipykernel echoes what it forwards to the kernel's own stdout, the server's console), single
    bytes (a piece of 1,000 bytes never cuts one), and no NUL (a server log holding one is a
    "binary file" to grep)."""
    bits = secrets.randbits(48)
    return "\x06\x7f\x06" + "".join("\x7f" if bits >> i & 1 else "\x06" for i in range(48)) + "\x7f\x7f\x06"


def _pending(fid: Any) -> int:
    """Bytes waiting in the pipe read from ``fid`` (-1: not known)."""
    if not isinstance(fid, int) or isinstance(fid, bool):
        return -1
    try:
        import fcntl
        import struct
        import termios

        return int(struct.unpack("i", fcntl.ioctl(fid, termios.FIONREAD, b"\0\0\0\0"))[0])
    except (ImportError, OSError, AttributeError):
        return -1


def _partial_marker(text: str, marker: str) -> int:
    """How many of ``text``'s last characters begin ``marker`` (it may come in two reads)."""
    first = marker[0]
    at = text.find(first, max(0, len(text) - len(marker) + 1))
    while at != -1:
        if marker.startswith(text[at:]):
            return len(text) - at
        at = text.find(first, at + 1)
    return 0


def _shell_is_rendering(shell: Any) -> bool:
    """The shell itself is printing a result, a display or a traceback (a terminal writes those
    to stdout): already decided on by the other hooks, or an error, which is never spilled."""
    return bool(
        getattr(shell.display_pub, "is_publishing", False)
        or getattr(shell.displayhook, "is_active", False)
        or getattr(shell, "showing_traceback", False)
    )


class _Background:
    """What a stream received between cells: passed until it could reach the threshold, then held.
    ``continues``: the cell's stream was held when the cell ended, so this is the rest of the same
    flood (a thread still printing): held from its first character."""

    def __init__(self, tool: str, continues: bool = False) -> None:
        self.tool = tool
        self.continues = continues
        self.noted = False  # (continues: the note that it goes on being held is written)
        self.chunks: list[str] = []
        self.held_from: int | None = 0 if continues else None
        self.held_chars = 0
        self.meter = StreamMeter()
        self.writer: Writer | None = None
        self.last = time.monotonic()


def _cut_partial_line(chunks: list[str], held_from: int) -> str:
    """Take off the end of ``chunks`` (not before ``held_from``) the line still being written, after
    its last newline: it goes on in the next entry, so no line is cut in two between the entries
    (``print`` writes a line in pieces, a thread's go on while its cell ends)."""
    tail: list[str] = []
    while len(chunks) > held_from:
        last = chunks[-1]
        nl = last.rfind("\n")
        if nl >= 0:
            chunks[-1] = last[: nl + 1]
            tail.append(last[nl + 1 :])
            break
        tail.append(chunks.pop())
    return "".join(reversed(tail))


def _held_where(name: str, shown: str) -> str:
    """What the card of a cell's spilled stream says of where it belongs: the stream was held from
    a point on, and the card comes at the cell's end, after what the cell displayed meanwhile (it
    came after a later stderr, display or result, with nothing to say why)."""
    lines = shown.count("\n") + (1 if shown and not shown.endswith("\n") else 0)
    start = f"after the {lines:,} line{'s' if lines != 1 else ''} of it shown above" if shown else "from its start"
    return (
        f"This card belongs where the cell's {name} stopped: the rest of the {name} was held {start}, "
        "and anything shown between there and here came later."
    )


_CellState = tuple[str | None, int | None, list[str], Writer | None]


class StreamGate:
    """The state of one stream (``stdout`` or ``stderr``); thread-safe. It is in one of three modes:
    a cell's (``_tool`` set: metered, held, spilled at the cell's end), between cells
    (``_background`` set: the same for what threads and tasks write), or neither (passes). A switch
    from one to the next is made under the lock, at once: no write is ever left ungated between
    the two (a thread printing while its cell ended sent 5-10 times the threshold, and the lines
    written meanwhile were in neither stored entry)."""

    def __init__(self, session: ScratchSession, name: str) -> None:
        self.session = session
        self.name = name
        self._lock = threading.Lock()
        self._tool: str | None = None  # None: no cell is running
        self._background: _Background | None = None  # between cells, while a background tap is on
        self._flusher: threading.Thread | None = None
        self._redirect: Writer | None = None  # %%scratch records everything written (fd output too)
        # .on: this thread is writing out through the gate: a tap of ours further down the chain
        # (the background tap beneath IPython's per-cell _tee) lets it pass as it is
        self._inside = threading.local()
        self._reset()

    def _reset(self) -> None:
        self._chunks: list[str] = []
        self._held_from: int | None = None
        self._meter = StreamMeter()
        self._writer: Writer | None = None
        self._open_line = False  # what was shown ends inside a line
        self._overwritten = False  # the line's latest state is not forwarded yet (coalesced)
        self._overwrite_at = 0.0  # when a state of the line was forwarded last
        self._overwrite_chars = 0  # of the overwritten states forwarded as written

    def passing(self) -> bool:
        """This thread is writing out through the gate (its text already admitted)."""
        return bool(getattr(self._inside, "on", False))

    def _emit(self, writer: Writer, text: str) -> Any:
        inside = self._inside
        was = getattr(inside, "on", False)
        inside.on = True
        try:
            return writer(text)
        finally:
            inside.on = was

    def redirect(self, writer: Writer | None) -> Writer | None:
        """Send everything written to ``writer`` (None: stop); the previous one."""
        with self._lock:
            previous, self._redirect = self._redirect, writer
        return previous

    def begin(self, tool: str) -> None:
        """A cell starts: what the background held is spilled (its stub written), and from this
        moment what is written is the cell's."""
        with self._lock:
            bg, self._background = self._background, None
            self._reset()
            self._tool = tool
        self._spill_background(bg)

    def _forward_overwrite(self, after: str = "") -> bool:
        """(Under the lock.) Forward the line's latest state (coalesced), then ``after``; whether
        anything was pending. ``\\r`` and the whole visible line overwrite whatever the front end
        shows of it (the line as shown is never shorter than any of its states)."""
        if not self._overwritten or self._writer is None:
            return False
        self._overwritten = False
        self._overwrite_at = time.monotonic()
        self._emit(self._writer, "\r" + self._meter.line.text() + after)
        return True

    def _forward_later(self) -> None:
        def forward() -> None:
            with self._lock:
                self._forward_overwrite()

        timer = threading.Timer(OVERWRITE_INTERVAL_S, forward)
        timer.daemon = True
        timer.start()

    def _take(self) -> _CellState:
        """(Under the lock.) The cell's stream, taken: the gate is in no cell any more."""
        self._forward_overwrite()
        state = (self._tool, self._held_from, self._chunks, self._writer)
        self._tool = None
        self._reset()
        return state

    def settle(self) -> None:
        """Spill what the cell's stream holds now (its stub shown now) and go on gating it: the
        error shown next comes after the output written before it (the stub came after the
        traceback, at the cell's end)."""
        with self._lock:
            if self._tool is None or self._held_from is None:
                return
            state = self._take()
            self._tool = state[0]
        self.spill(state)

    def cleared(self) -> None:
        """The cell's output was cleared (``clear_output``): what it showed is gone from the front
        end, so the stream starts again, as an overwritten ``\\r`` state does not count (a
        ``clear_output(wait=True)`` progress loop spilled, and its card replaced the last state)."""
        with self._lock:
            if self._tool is None:
                return
            writer = self._writer
            self._reset()
            self._writer = writer

    def take(self, background: bool = False) -> _CellState:
        """The cell ended: its stream, taken; with ``background``, what is written from now on is
        gated as background output at once (held from its start if the cell's was held)."""
        with self._lock:
            state = self._take()
            tool, held_from, chunks, writer = state
            if background and tool is not None and self._background is None:
                self._background = bg = _Background(f"background_{self.name}", continues=held_from is not None)
                if held_from is not None:  # (the flood goes on: the line it is writing is the next entry's)
                    bg.writer = writer
                    tail = _cut_partial_line(chunks, held_from)
                    if tail:
                        bg.chunks.append(tail)
                        bg.held_chars = len(tail)
                        self._start_flusher()
        return state

    def end(self, background: bool = False) -> None:
        """The cell ended: spill the held stream and display its stub, or let the text out."""
        self.spill(self.take(background))

    def write(self, text: str, writer: Writer) -> Any:
        """Admit ``text`` written to the stream whose real ``write`` is ``writer``."""
        if not isinstance(text, str) or not text:
            return self._emit(writer, text)
        redirect = self._redirect
        if redirect is not None:
            return redirect(text)
        if _is_own(text) or _shell_is_rendering(self.session.shell):
            if self._overwritten:
                with self._lock:
                    self._forward_overwrite()
            return self._emit(writer, text)
        full, note = None, None
        with self._lock:
            tool = self._tool
            if tool is not None:
                self._writer = writer
                if self._held_from is not None:
                    self._chunks.append(text)
                    return len(text)
                hooks = getattr(self.session, "hooks", None)
                if hooks is not None:  # (an output of the cell's, as the display budget counts them)
                    hooks.stream_written(self.name)
                line = self._meter.line.text() if self._overwritten else None  # (the state pending)
                if self._reaches(self._meter, text, tool):
                    if line is not None:
                        self._overwritten = False
                        self._emit(writer, "\r" + line)
                    end = text.find("\n", 0, LINE_END_CHARS) + 1 if self._open_line else 0
                    if end:  # the line shown last is shown whole (forwarded fd output comes in
                        self._chunks.append(text[:end])  # pieces of 1,000 bytes, cut anywhere)
                    self._chunks.append(text[end:])
                    self._held_from = len(self._chunks) - 1
                    if not end:
                        return len(text)
                    self._emit(writer, text[:end])
                    return len(text)
                self._chunks.append(text)
                self._open_line = not text.endswith("\n")
                if "\n" not in text and (self._overwritten or "\r" in text):  # a state of a rewritten line
                    self._overwrite_chars += len(text)
                    free = self._overwrite_chars <= OVERWRITE_FREE_CHARS
                    if not free and time.monotonic() - self._overwrite_at < OVERWRITE_INTERVAL_S:
                        if not self._overwritten:
                            self._overwritten = True
                            self._forward_later()
                        return len(text)
                    if self._forward_overwrite():
                        return len(text)
                    self._overwrite_at = time.monotonic()
                elif line is not None:  # the line ends: its latest state first
                    self._overwritten = False
                    self._emit(writer, "\r" + line + text)
                    return len(text)
            elif self._background is not None:
                full, note = self._admit_background(text, writer)
                if full is None and note is None and self._background.held_from is not None:
                    return len(text)  # held
        if note is not None:  # the background output has just reached the threshold
            self._emit(writer, note)
            return len(text)
        if full is not None:  # a full chunk of held background output
            self._spill_background(full)
            return len(text)
        return self._emit(writer, text)

    def _admit_background(self, text: str, writer: Writer) -> tuple[_Background | None, str | None]:
        """(Under the lock.) Record ``text`` written between cells: ``(a full chunk to spill now,
        the note to write once it starts being held)``, both None when it passes or is held."""
        bg = self._background
        assert bg is not None
        bg.writer, bg.last = writer, time.monotonic()
        bg.chunks.append(text)
        if bg.held_from is not None:
            bg.held_chars += len(text)
            if bg.held_chars >= BACKGROUND_CHUNK_CHARS:
                self._background = _Background(bg.tool)  # spilled now, by this writer; later text held anew
                self._background.held_from, self._background.writer = 0, writer
                return bg, None
            if not bg.continues or bg.noted:
                return None, None
            bg.noted = True
            self._start_flusher()
            return None, (
                f"\n[scratchpad] {self.name} is still being written after its cell ended (a thread or task): "
                "the rest is held and stored, its stub follows once it is quiet\n"
            )
        if not self._reaches(bg.meter, text, bg.tool):
            return None, None
        bg.held_from, bg.held_chars = len(bg.chunks) - 1, len(text)
        self._start_flusher()
        return None, (
            f"\n[scratchpad] background output on {self.name} (a thread or task still writing after its cell "
            "ended) reached the spill threshold: the rest is stored, its stub follows once it is quiet\n"
        )

    def _reaches(self, meter: StreamMeter, text: str, tool: str) -> bool:
        """Whether the stream ``meter`` measures (this cell's, or the background's), with
        ``text``, could reach the threshold as the front end shows it (a ``\\r`` progress bar's
        overwritten states do not count); counts lazily. A stream under ``CARD_FLOOR_BYTES`` never
        does: its card would be longer than itself."""
        pad = self.session.pad
        policy = pad.policy
        meter.feed(text)  # (also the line as shown: what a coalesced progress display forwards)
        if not policy.enabled:
            return False
        return meter.reaches(policy, policy.threshold_for(tool), pad.tokenizer) and meter.bytes_reach(
            CARD_FLOOR_BYTES
        )

    # -- between cells -----------------------------------------------------------------------

    def watch_background(self) -> None:
        """A background tap is on: start a background window (unless one is on already: the one
        the cell's end started)."""
        with self._lock:
            if self._background is None:
                self._background = _Background(f"background_{self.name}")

    def stop_background(self) -> None:
        """The extension unloads (or auto-spill is off): spill what the background held, if anything."""
        with self._lock:
            bg, self._background = self._background, None
        self._spill_background(bg)

    def _start_flusher(self) -> None:
        if self._flusher is not None and self._flusher.is_alive():
            return
        self._flusher = threading.Thread(target=self._flush_when_quiet, name="scratch-background-output", daemon=True)
        self._flusher.start()

    def _flush_when_quiet(self) -> None:
        while True:
            with self._lock:
                bg = self._background
                if bg is None or bg.held_from is None:
                    return
                wait = bg.last + QUIET_S - time.monotonic()
                if wait <= 0:
                    self._background = _Background(bg.tool)
            if wait <= 0:
                self._spill_background(bg)
                return
            time.sleep(min(wait, QUIET_S))

    def _spill_background(self, bg: _Background | None) -> None:
        """Spill what ``bg`` held (with what it had shown) and write its stub where the output went;
        fail closed (a short pointer), and write the held text out when it did not spill after all."""
        if bg is None or bg.held_from is None or bg.writer is None or not bg.chunks:
            return
        writer = bg.writer
        held = "".join(bg.chunks[bg.held_from :])
        try:
            result = self.session.pad.intercept(_stored_text("".join(bg.chunks)), tool=bg.tool, result_class="query")
        except Exception:  # (intercept never raises; a closed store is no reason to print the flood)
            log.exception("spilling background output failed")
            self._emit(writer, f"[scratchpad] {len(held):,} characters of background output were withheld\n")
            return
        if result.spilled and result.stub is not None:  # as a cell's stub reads: %scratch commands next
            self._emit(writer, stub_text(result.stub).rstrip("\n") + "\n")
            return
        if result.failure:
            self._emit(writer, str(result.content).rstrip("\n") + "\n")
            return
        self._emit(writer, held)

    def spill(self, state: _CellState) -> None:
        """Spill a cell's stream taken by ``take`` and display its stub, or let the held text out."""
        tool, held_from, chunks, writer = state
        if held_from is None or writer is None or tool is None:
            return
        held = "".join(chunks[held_from:])
        # what is stored is what the front end would have shown (a progress bar: its latest state)
        result = self.session.pad.intercept(_stored_text("".join(chunks)), tool=tool, result_class="query")
        if result.spilled and result.stub is not None:
            self.session.publish_stub(result.stub, _held_where(self.name, "".join(chunks[:held_from])))
            return
        if result.failure:  # fail closed: a short pointer, not the flood (the core logged why)
            self._emit(writer, str(result.content) + "\n")
            return
        self._emit(writer, held)


class _Tap:
    """The instance-level ``write`` put on one stream object."""

    def __init__(self, stream: Any, gate: StreamGate) -> None:
        self.stream = stream
        self.gate = gate
        # An instance attribute set before us (IPython's own per-cell _tee sets one): put back.
        self.previous = getattr(stream, "__dict__", {}).get("write")
        self.original: Writer = stream.write
        self.active: bool = True
        # a drain of the fd forwarder (see the module's docstring): the marker awaited, the thread
        # that forwards it, what of a marker may have begun at the end of its last write
        self._drain_lock = threading.Lock()
        self._marker: str | None = None
        self._forwarder: threading.Thread | None = None
        self._carry = ""
        self._drained = threading.Event()
        inert = self.previous
        if isinstance(inert, _Tap) and not inert.active:
            # an inert tap of ours that a _tee put back: go on beneath it, not on top (a chain of
            # them would grow by one a cell)
            self.previous, self.original = inert.previous, inert.original

    def __call__(self, text: str) -> Any:
        if not self.active or self.gate.passing():  # (passing: admitted by a tap of ours above)
            return self.original(text)
        if self._marker is not None and isinstance(text, str) and threading.current_thread() is self._forwarder:
            return self._forwarded(text)
        return self.gate.write(text, self.original)

    # -- draining ipykernel's fd forwarder -------------------------------------------------------

    def start_drain(self, always: bool = False) -> bool:
        """Write a marker to the stream's fd (when ipykernel forwards one); whether one was written.
        ``always``: even when the pipe looks empty (the forwarder may hold what it read last)."""
        found = _fd_forwarder(self.stream)
        if found is None or not self.active:
            return False
        fd, thread = found
        if not always and _pending(getattr(self.stream, "_fid", None)) == 0:
            # nothing waits in the pipe (the common cell, no C-level output): no marker is
            # written, so the server's console gets none (the forwarder may hold what it read
            # last, up to 1,000 bytes, for the few microseconds it takes to pass it on)
            return False
        marker = _drain_marker()
        with self._drain_lock:
            self._drained.clear()
            self._carry, self._forwarder, self._marker = "", thread, marker
        data = marker.encode("ascii")
        try:
            while data:  # (a pipe takes up to PIPE_BUF bytes whole; blocks while the forwarder catches up)
                data = data[os.write(fd, data) :]
        except OSError:
            log.debug("writing the drain marker to fd %s failed", fd, exc_info=True)
            self._end_drain()
            return False
        return True

    def wait_drained(self, deadline: float) -> None:
        """Wait (until ``deadline``, ``time.monotonic()``) for the forwarder to pass the marker."""
        if self._marker is None:
            return
        if not self._drained.wait(max(0.0, deadline - time.monotonic())):
            log.warning(
                "ipykernel's forwarder of C-level and subprocess output on %s did not catch up in %.0f s; "
                "what it forwards later is not the cell's", self.gate.name, DRAIN_TIMEOUT_S,
            )
            self._end_drain()

    def _end_drain(self) -> None:
        with self._drain_lock:
            carry, self._carry, self._marker = self._carry, "", None
        if carry:
            self.gate.write(carry, self.original)

    def _forwarded(self, text: str) -> Any:
        """Text the fd forwarder writes while a marker is awaited: everything before the marker
        is the cell's; the marker itself is dropped."""
        with self._drain_lock:
            marker = self._marker
            if marker is None:  # (timed out meanwhile)
                before, after, found = self._carry + text, "", False
                self._carry = ""
            else:
                buf = self._carry + text
                at = buf.find(marker)
                found = at >= 0
                if found:
                    before, after = buf[:at], buf[at + len(marker) :]
                    self._carry, self._marker = "", None
                else:
                    keep = _partial_marker(buf, marker)
                    before, after, self._carry = buf[: len(buf) - keep], "", buf[len(buf) - keep :]
        if before:
            self.gate.write(before, self.original)
        if found:
            self._drained.set()
            if after:  # written to the fd after the cell ended
                self(after)
        return len(text)

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


class _Patch:
    """``obj.name`` shadowed on the instance by ``make(the method it shadows)``; undone only if
    still ours."""

    def __init__(self, obj: Any, name: str, make: Callable[[Any], Any]) -> None:
        self.obj, self.name = obj, name
        self.previous = vars(obj).get(name, _MISSING)
        self.replacement = make(getattr(obj, name))

    def installed(self) -> bool:
        return vars(self.obj).get(self.name, _MISSING) is self.replacement

    def install(self) -> bool:
        try:
            setattr(self.obj, self.name, self.replacement)
        except (AttributeError, TypeError):
            return False
        return True

    def uninstall(self) -> None:
        if not self.installed():
            return  # replaced again by someone else since: leave theirs alone
        if self.previous is _MISSING:
            delattr(self.obj, self.name)
        else:
            setattr(self.obj, self.name, self.previous)


_MISSING = object()


def _as_own(original: Any) -> Any:
    def show_usage_error(*args: Any, **kwargs: Any) -> Any:
        with own_output():  # a one-line error (ours, or any magic's): never held, never stored
            return original(*args, **kwargs)

    return show_usage_error


class StreamTaps:
    """The gates of ``sys.stdout`` and ``sys.stderr``, put on for each cell and, in a kernel,
    between cells.

    Per cell, like IPython's own ``_tee`` (which also sets an instance-level ``write`` for the
    cell and puts back what it found): ours goes on inside it at ``pre_run_cell`` and comes off at
    ``post_run_cell``. In a kernel the background taps go on once the kernel has answered (beneath
    the next cell's ``_tee``, which puts them back when it ends) and stay on through the cells
    that follow: at a cell's end each gate switches to background mode at once, so a thread still
    printing is gated without a gap (a tap beneath ours lets through what ours has admitted).
    """

    def __init__(self, session: ScratchSession) -> None:
        self.session = session
        self.gates = {name: StreamGate(session, name) for name in _STREAMS}
        self._taps: list[_Tap] = []
        self._background_taps: list[_Tap] = []
        self._proxies: dict[str, _ProxyStream] = {}
        self._patches: list[_Patch] = []

    def _ensure_patches(self) -> None:
        """``show_usage_error`` (a UsageError is the extension's own message, or an error: passes)
        and the display publisher's ``clear_output`` (the cell's streams start again) patched."""
        shell = self.session.shell
        gates = list(self.gates.values())

        def clearing(original: Any) -> Any:
            def clear_output(*args: Any, **kwargs: Any) -> Any:
                for gate in gates:
                    gate.cleared()
                return original(*args, **kwargs)

            return clear_output

        wanted = ((shell, "show_usage_error", _as_own), (getattr(shell, "display_pub", None), "clear_output", clearing))
        for obj, name, make in wanted:
            if obj is None or not callable(getattr(obj, name, None)):
                continue
            if any(p.obj is obj and p.name == name and p.installed() for p in self._patches):
                continue
            patch = _Patch(obj, name, make)
            if patch.install():
                self._patches.append(patch)

    def begin_cell(self, tools: dict[str, str]) -> None:
        self.end_cell(background=False)  # a cell that never ended (an interrupted post_run_cell): let it out
        try:
            self._ensure_patches()
        except Exception:
            log.exception("patching show_usage_error and clear_output failed")
        for name in _STREAMS:
            self.gates[name].begin(tools[name])  # (what the background held is spilled)
            tap, stream = self._tap(name)
            if tap is not None:
                self._taps.append(tap)
            elif stream is not None:
                self._proxies[name] = proxy = _ProxyStream(stream, self.gates[name])
                setattr(sys, name, proxy)

    def _tap(self, name: str) -> tuple[_Tap | None, Any]:
        """A tap put on ``sys.<name>`` (None when it cannot take one), and the stream (None when
        there is none to gate, or ours is on it already)."""
        stream = getattr(sys, name)
        if stream is None or isinstance(stream, _ProxyStream):
            return None, None
        tap = _Tap(stream, self.gates[name])
        return (tap, stream) if tap.install() else (None, stream)

    def drain(self, taps: list[_Tap] | None = None, always: bool = False) -> None:
        """Wait until ipykernel has forwarded, through the taps, what was written to the
        process's fds so far (C-level and subprocess output): then the cell's stream is whole.
        ``always``: a marker even when the pipes look empty (see ``_Tap.start_drain``)."""
        started = [tap for tap in (self._taps if taps is None else taps) if tap.start_drain(always)]
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        for tap in started:
            tap.wait_drained(deadline)

    def _background_follows(self) -> bool:
        """Whether background taps gate the streams after this cell (a kernel, auto-spill on)."""
        kernel = getattr(self.session.shell, "kernel", None)
        return (
            callable(getattr(kernel, "post_handler_hook", None))
            and self.session.auto_spill
            and not self.session.capturing
        )

    def end_cell(self, background: bool | None = None) -> None:
        """Let ipykernel forward what the cell wrote to the fds; switch each gate to background
        mode at once (in a kernel: what is written from now on is gated as a thread's), take the
        cell's taps off, then let each gate spill (or write out) what the cell held."""
        try:
            self.drain()
        except Exception:
            log.exception("waiting for ipykernel's forwarded output failed")
        follow = self._background_follows() if background is None else background
        states = {name: self.gates[name].take(follow) for name in _STREAMS}
        for tap in reversed(self._taps):
            tap.uninstall()
        self._taps.clear()
        for name, proxy in list(self._proxies.items()):
            if getattr(sys, name) is proxy:
                setattr(sys, name, proxy._target)
        self._proxies.clear()
        for name in _STREAMS:
            self.gates[name].spill(states[name])

    def settle(self) -> None:
        """Each gate's held output spilled now, the cell's gating kept on (see ``StreamGate.settle``);
        what the cell wrote to the fds first."""
        try:
            self.drain()
        except Exception:
            log.exception("waiting for ipykernel's forwarded output failed")
        for name in _STREAMS:
            self.gates[name].settle()

    @contextmanager
    def recording(self, writers: dict[str, Writer]) -> Iterator[None]:
        """While ``%%scratch`` runs its cell: everything written to the streams, the C-level and
        subprocess output ipykernel forwards included, goes to ``writers`` (it went to the automatic
        gate, stored as ``cell_N_stdout``, and the named handle never existed); at the end, what
        the fds still hold is drained into them. Enter it before ``sys.stdout`` is replaced."""
        extra: list[_Tap] = []
        previous: dict[str, Writer | None] = {}
        try:
            for name in _STREAMS:
                gate = self.gates[name]
                if not any(tap.gate is gate and tap.active for tap in self._taps):
                    tap, _stream = self._tap(name)  # (auto-spill off: no cell tap to go through)
                    if tap is not None:
                        extra.append(tap)
                previous[name] = gate.redirect(writers[name])
            yield
        finally:
            try:
                # a marker always: the forwarder may hold the last line a subprocess wrote (the pipe
                # already empty), and --force then said the cell had no output (seen under load)
                self.drain([*self._taps, *extra], always=True)
            except Exception:
                log.exception("waiting for ipykernel's forwarded output failed")
            finally:
                for name, writer in previous.items():
                    self.gates[name].redirect(writer)
                for tap in reversed(extra):
                    tap.uninstall()

    def start_background(self) -> None:
        """Put the background taps on (the kernel has answered a cell: what threads and tasks
        write until the next one, and through the cells after); a no-op while they are on."""
        if self._taps:  # (a cell is running)
            return
        if not self.session.auto_spill or self.session.capturing:  # (%scratch auto off)
            self._stop_background()
            return
        try:
            self._ensure_patches()
        except Exception:
            log.exception("patching show_usage_error and clear_output failed")
        if not self._background_taps or not all(
            getattr(t.stream, "__dict__", {}).get("write") is t for t in self._background_taps
        ):
            for tap in reversed(self._background_taps):
                tap.uninstall()
            self._background_taps.clear()
            for name in _STREAMS:
                put, _stream = self._tap(name)
                if put is not None:
                    self._background_taps.append(put)
        for tap in self._background_taps:
            tap.gate.watch_background()  # (a window the cell's end started goes on)

    def _stop_background(self) -> None:
        for tap in reversed(self._background_taps):
            tap.uninstall()
        self._background_taps.clear()
        for name in _STREAMS:
            self.gates[name].stop_background()

    def detach(self) -> None:
        """Let any held text out and remove every tap, proxy and patch (at unload)."""
        self.end_cell(background=False)
        self._stop_background()
        for patch in reversed(self._patches):
            patch.uninstall()
        self._patches.clear()
