"""Exact token counts of large spills, off the critical path.

Deciding to spill stops counting at the threshold, so the stub can come back at disk speed; the
exact count of a large body (it fills ``usage()`` and the catalog) is computed afterwards on a
worker thread — tiktoken releases the GIL while it encodes, so the caller's thread runs on. Bodies
under ``EXACT_INLINE_BYTES`` are counted at once: for them it costs less than a thread hop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["EXACT_INLINE_BYTES", "submit_count"]

EXACT_INLINE_BYTES = 1 << 20
log = logging.getLogger("jupyter_scratchpad")

_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scratch-tokens")
        return _executor


def submit_count(count: Callable[[], int], done: Callable[[int], None]) -> Future[int]:
    """Run ``count`` on the counting thread, then ``done(tokens)``; errors are logged, not raised."""

    def job() -> int:
        tokens = count()
        try:
            done(tokens)
        except Exception:
            log.exception("recording an exact token count failed")
        return tokens

    return _pool().submit(job)
