"""How ``mcp serve`` and ``mcp proxy`` (stdio) end: never leaving a process they started behind.

An MCP client stops a server by closing its stdin, waiting about 2 s, then sending SIGTERM (the
official SDK's client; others send SIGTERM or SIGINT at once). A process killed that way used to
die at once and orphan what it had started: a proxy's upstream slow to exit (behind npx, uvx,
docker, or one that lingers after stdin closes) and ``mcp serve``'s SQL worker mid-query, which
then spun at full CPU under PID 1. So, installed by those commands only (never at import: the
kernel side runs the same SQL worker):

- SIGTERM, SIGHUP, SIGINT: every descendant process is sent SIGTERM, then SIGKILL after
  ``TERM_GRACE_S``; the server is cancelled, and the process exits with ``128 + signal`` (143,
  129, 130) at the latest about ``HARD_EXIT_S`` later (a thread blocked reading stdin in the SDK's
  stdio server held up the unwind, and the exit, until the client closed stdin).
- stdin closed: what is still running ``EOF_GRACE_S`` after the server stopped reading (an
  upstream told to stop by its stdin closing) is stopped the same way, so the whole shutdown
  fits in the client's 2 s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ShutdownSignals", "descendants", "stop_after", "stop_descendants"]

TERM_GRACE_S = 0.5  # between SIGTERM and SIGKILL
EOF_GRACE_S = 0.8  # how long upstreams may take to exit on their own once stdin closed
HARD_EXIT_S = 0.8  # after a signal (and the descendants stopped), the latest exit …
LAST_WORDS_S = 0.5  # … but for the usage line


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, pgrp)`` of ``pid`` from /proc, or None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # (the command name may hold spaces and parens)
    try:
        return fields[0].decode(), int(fields[1]), int(fields[2])
    except (IndexError, ValueError):
        return None


def descendants(root: int | None = None) -> list[int]:
    """The pids of every process below ``root`` (this process), children first."""
    root = os.getpid() if root is None else root
    kids: dict[int, list[int]] = {}
    if os.path.isdir("/proc/self"):
        for name in os.listdir("/proc"):
            if name.isdigit():
                stat = _proc_stat(int(name))
                if stat is not None:
                    kids.setdefault(stat[1], []).append(int(name))
    else:  # pragma: no cover (macOS: ps)
        import subprocess

        try:
            listing = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return []
        for line in listing.stdout.splitlines():
            with contextlib.suppress(ValueError):
                pid, ppid = (int(word) for word in line.split())
                kids.setdefault(ppid, []).append(pid)
    found: list[int] = []
    todo = [root]
    while todo:
        for kid in kids.get(todo.pop(0), []):
            if kid not in found and kid != root:
                found.append(kid)
                todo.append(kid)
    return found


def _alive(pid: int) -> bool:
    if os.path.isdir("/proc/self"):
        stat = _proc_stat(pid)
        return stat is not None and stat[0] not in ("Z", "X")
    try:  # pragma: no cover (no /proc)
        os.kill(pid, 0)
    except OSError:  # pragma: no cover
        return False
    return True  # pragma: no cover


def _groups(pids: list[int]) -> list[int]:
    """The process groups led by ``pids`` other than ours: an upstream runs in a session of its
    own, and what it started (npx's node, docker's client) stays in its group even once orphaned."""
    try:
        ours = os.getpgid(0)
    except OSError:  # pragma: no cover
        return []
    found = []
    for pid in pids:
        try:
            if os.getpgid(pid) == pid != ours:
                found.append(pid)
        except OSError:
            continue
    return found


def _send(pids: list[int], groups: list[int], sig: int) -> None:
    for group in groups:
        try:
            os.killpg(group, sig)
        except OSError:
            continue
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            continue


def stop_descendants(grace: float = TERM_GRACE_S) -> list[int]:
    """SIGTERM every descendant process (and the process groups they lead), SIGKILL those still
    alive after ``grace`` seconds (at once when 0); returns the pids it found."""
    pids = descendants()
    if not pids:
        return []
    groups = _groups(pids)
    if grace > 0:
        _send(pids, groups, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.02)
    kill = getattr(signal, "SIGKILL", signal.SIGTERM)
    pids += [p for p in descendants() if p not in pids]  # (started meanwhile: a wrapper's cleanup)
    late = [p for p in pids if _alive(p)]
    _send(late, groups, kill)  # (a group's leader may be gone, and its members not)
    deadline = time.monotonic() + 0.5  # (a SIGKILL is not refused; the kernel takes a moment)
    while late and time.monotonic() < deadline and any(_alive(p) for p in late):
        time.sleep(0.02)
    return pids


def stop_after(seconds: float) -> threading.Timer:
    """A started timer that stops every descendant after ``seconds`` (cancel it when all ended)."""
    timer = threading.Timer(seconds, stop_descendants)
    timer.daemon = True
    timer.name = "scratch-shutdown"
    timer.start()
    return timer


def _flush_and_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # (closed, or a broken pipe: the exit must not wait for it)
            stream.flush()
    os._exit(code)


class ShutdownSignals:
    """SIGTERM, SIGHUP and SIGINT handlers for a serving process (installed by ``install``, in the
    main thread, and put back by ``restore``). ``wake`` is called from the handler to stop the
    server (e.g. ``loop.call_soon_threadsafe(scope.cancel)``)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.wake: Callable[[], None] | None = None
        # said before a hard exit (the usage line), given LAST_WORDS_S at most
        self.last_words: Callable[[], None] | None = None
        # done before a hard exit, however long it takes (an --ephemeral store's directory removed)
        self.cleanup: Callable[[], None] | None = None
        self._previous: dict[int, Any] = {}

    @property
    def code(self) -> int | None:
        """The exit code a signal calls for (128 + its number), or None without one."""
        return None if self.signum is None else 128 + self.signum

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # (signal handlers can only be set from the main thread)
        for name in ("SIGTERM", "SIGHUP", "SIGINT"):
            sig = getattr(signal, name, None)
            if sig is not None:
                self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()

    def exit_if_signalled(self) -> None:
        """Exits at once, with the signal's code, after a signal (a thread blocked reading stdin
        would keep the process up at interpreter exit)."""
        if self.code is not None:
            _flush_and_exit(self.code)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.signum is not None:  # a second signal: no more grace
            stop_descendants(grace=0)
            if self.cleanup is not None:
                with contextlib.suppress(Exception):
                    self.cleanup()
            os._exit(128 + self.signum)
        self.signum = signum
        stop_descendants()
        code = 128 + signum

        def hard_exit() -> None:
            time.sleep(HARD_EXIT_S)
            if self.last_words is not None:  # (the unwind that says them was held up)
                words = threading.Thread(target=self.last_words, name="scratch-last-words", daemon=True)
                words.start()
                words.join(LAST_WORDS_S)
            if self.cleanup is not None:
                with contextlib.suppress(Exception):  # (the exit comes whatever it raised)
                    self.cleanup()
            _flush_and_exit(code)

        threading.Thread(target=hard_exit, name="scratch-exit", daemon=True).start()
        if self.wake is not None:
            with contextlib.suppress(Exception):  # (the loop closed meanwhile: the exit above still comes)
                self.wake()
