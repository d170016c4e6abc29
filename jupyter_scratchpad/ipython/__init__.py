"""The IPython extension: ``%load_ext jupyter_scratchpad``.

Loading opens one scratch store per kernel with a scratchpad for the notebook, registers the
``%scratch`` / ``%%scratch`` magics (options: ``%config ScratchMagics``) and installs the
auto-spill hooks; ``%unload_ext jupyter_scratchpad`` removes every one of them and closes the store.

>>> from IPython.core.interactiveshell import InteractiveShell  # doctest: +SKIP
>>> shell = InteractiveShell.instance()                          # doctest: +SKIP
>>> shell.run_line_magic("load_ext", "jupyter_scratchpad")       # doctest: +SKIP
>>> get_session(shell).pad.budget.remaining > 0                  # doctest: +SKIP
True

This package is the only one that imports IPython.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from ._magics import ScratchMagics
from ._render import STUB_MIME, stub_bundle
from ._session import ScratchSession, cell_patterns, get_session

__all__ = [
    "STUB_MIME",
    "ScratchMagics",
    "ScratchSession",
    "get_session",
    "load_ipython_extension",
    "stub_bundle",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> ScratchSession:
    """Set the extension up in ``ipython`` (idempotent: a loaded shell keeps its session)."""
    existing = get_session(ipython)
    if existing is not None and not existing.closed:
        return existing
    _log_to_the_kernel_log()
    magics = _new_magics(ipython)
    try:
        session = ScratchSession(ipython, magics)
    except BaseException:
        _forget_magics(ipython, magics)
        raise
    magics.session = session
    ipython.register_magics(magics)
    session.start()
    policy = session.pad.policy
    named = cell_patterns(policy)
    state = (
        f"outputs of {policy.min_tokens:,}+ tokens ({session.pad.model}) are spilled"
        + ("".join(f", {g} at {t:,}+" for g, t in sorted(named.items())))
        if session.auto_spill
        else "auto-spill off"
    )
    print(f"jupyter-scratchpad: {state}; %scratch --help for the commands")
    return session


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics and every hook, and close the store (a temporary one is deleted)."""
    session = get_session(ipython)
    if session is None:
        return
    session.close()
    _forget_magics(ipython, session.magics)
    session.magics.session = None


class _KernelLog(logging.StreamHandler):
    """Our log lines to the kernel process's own stderr (the server's console), not the cell's."""


def _log_to_the_kernel_log() -> None:
    """With no logging set up, Python prints warnings and errors to ``sys.stderr``: in a kernel,
    the running cell's output, where a failed hook's traceback landed in the notebook. Unless the
    application configured logging itself, ours go to the process's stderr instead."""
    ours = logging.getLogger("jupyter_scratchpad")
    if ours.handlers or logging.getLogger().handlers or sys.__stderr__ is None:
        return
    handler = _KernelLog(sys.__stderr__)
    handler.setFormatter(logging.Formatter("[jupyter-scratchpad] %(levelname)s %(name)s: %(message)s"))
    ours.addHandler(handler)


def _new_magics(ipython: Any) -> ScratchMagics:
    """``ScratchMagics`` from the shell's config; an option whose value was refused (``%config``
    leaves it in the config even so) is dropped with a warning, not a load that fails."""
    from traitlets import TraitError

    from ._magics import REFUSED

    section = ipython.config.ScratchMagics if "ScratchMagics" in ipython.config else {}
    for name in list(section):
        key = (id(ipython), name)
        if key in REFUSED and REFUSED[key] == section[name]:
            value = section.pop(name)
            print(f"jupyter-scratchpad: ignored ScratchMagics.{name} = {value!r} (it was refused)", file=sys.stderr)
    while True:
        known = len(getattr(ipython, "configurables", []))
        try:
            return ScratchMagics(shell=ipython)
        except TraitError as exc:
            del getattr(ipython, "configurables", [])[known:]  # the half-built one appended itself
            said = str(exc)
            bad = next((n for n in section if f"ScratchMagics.{n}" in said or f"'{n}' trait" in said), None)
            if bad is None:
                raise
            value = section.pop(bad)
            print(f"jupyter-scratchpad: ignored ScratchMagics.{bad} = {value!r} ({said})", file=sys.stderr)


def _forget_magics(ipython: Any, magics: ScratchMagics) -> None:
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        if getattr(manager.magics[kind].get("scratch"), "__self__", None) is magics:
            del manager.magics[kind]["scratch"]
    if manager.registry.get(type(magics).__name__) is magics:
        del manager.registry[type(magics).__name__]
    if magics in ipython.configurables:
        ipython.configurables.remove(magics)
