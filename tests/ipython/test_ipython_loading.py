"""%load_ext / %unload_ext: one store per kernel, one short line, every hook removed again."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from ipython_helpers import clear_shell, make_shell, pods
from traitlets.config import Config

import jupyter_scratchpad
from jupyter_scratchpad import Scratchpad, ScratchStore
from jupyter_scratchpad.ipython import ScratchMagics, get_session
from jupyter_scratchpad.tools import ToolResult


def _shell_state(shell: Any) -> dict[str, Any]:
    """Everything the extension may touch, as comparable values."""
    html = shell.display_formatter.formatters["text/html"]
    return {
        "displayhook": dict(vars(shell.displayhook)),
        "display_pub": dict(vars(shell.display_pub)),
        "stdout": dict(getattr(sys.stdout, "__dict__", {})),
        "stderr": dict(getattr(sys.stderr, "__dict__", {})),
        "sys_streams": (sys.stdout, sys.stderr),
        "events": {name: list(cbs) for name, cbs in shell.events.callbacks.items()},
        "line_magics": set(shell.magics_manager.magics["line"]),
        "cell_magics": set(shell.magics_manager.magics["cell"]),
        "registry": set(shell.magics_manager.registry),
        "configurables": list(shell.configurables),
        "html_printers": dict(html.type_printers),
    }


def test_load_gives_a_session_with_store_pad_magics(bare_shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert get_session(bare_shell) is None
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("jupyter-scratchpad: ") and len(out) < 120
    session = get_session(bare_shell)
    assert session is get_session()  # the running IPython by default
    assert isinstance(session.store, ScratchStore) and not session.store.closed
    assert isinstance(session.pad, Scratchpad)
    assert isinstance(session.magics, ScratchMagics)
    assert session.auto_spill is True
    assert (session.pad.run_id, session.pad.agent_id, session.pad.model) == ("notebook", "notebook", "gpt-4o")
    assert "scratch" in bare_shell.magics_manager.magics["line"]
    assert "scratch" in bare_shell.magics_manager.magics["cell"]


def test_load_twice_keeps_the_session(ip: Any) -> None:
    first = get_session(ip)
    jupyter_scratchpad.load_ipython_extension(ip)
    assert get_session(ip) is first


def test_unload_restores_every_hook_and_closes_a_temporary_store(bare_shell: Any) -> None:
    bare_shell.run_cell("1")  # IPython's own first-cell setup is not ours,
    bare_shell.find_line_magic("load_ext")  # nor its lazily registered ExtensionMagics
    before = _shell_state(bare_shell)
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    session = get_session(bare_shell)
    bare_shell.user_ns["pods"] = pods
    bare_shell.run_cell("pods()\nprint('x' * 50_000)")
    path = session.store.path
    assert path.exists() and session.pad.entries()
    bare_shell.run_line_magic("unload_ext", "jupyter_scratchpad")
    assert _shell_state(bare_shell) == before
    assert get_session(bare_shell) is None
    assert session.store.closed and not path.exists()
    with pytest.raises(UsageError, match="not loaded"):
        session.magics.scratch("list")


def test_reload_ext_gives_a_fresh_working_session(ip: Any) -> None:
    first = get_session(ip)
    ip.run_line_magic("reload_ext", "jupyter_scratchpad")
    second = get_session(ip)
    assert second is not first and first.closed and not second.closed
    assert ip.run_cell("%scratch list").result.empty


def test_a_configured_store_path_persists_and_reopens(tmp_path: Path) -> None:
    cfg = Config()
    cfg.ScratchMagics.store_path = str(tmp_path / "scratch")
    cfg.ScratchMagics.run_id = "nb-1"
    shell = make_shell(cfg)
    try:
        shell.run_line_magic("load_ext", "jupyter_scratchpad")
        session = get_session(shell)
        assert session.store.path == tmp_path / "scratch"
        shell.user_ns["pods"] = pods
        shell.run_cell("pods()")
        handle = session.pad.entries()[0]["handle"]
        shell.run_line_magic("unload_ext", "jupyter_scratchpad")
        assert (tmp_path / "scratch" / "catalog.duckdb").exists()
        shell.run_line_magic("load_ext", "jupyter_scratchpad")
        assert [e["handle"] for e in get_session(shell).pad.entries()] == [handle]
    finally:
        shell.run_line_magic("unload_ext", "jupyter_scratchpad")
        clear_shell()


def test_a_locked_store_path_is_one_clear_error(tmp_path: Path) -> None:
    holder = ScratchStore(tmp_path / "held", sweep_interval_s=None)
    cfg = Config()
    cfg.ScratchMagics.store_path = str(tmp_path / "held")
    shell = make_shell(cfg)
    try:
        with pytest.raises(UsageError, match="is open in process") as info:
            jupyter_scratchpad.load_ipython_extension(shell)
        assert "\n" not in str(info.value)
        assert get_session(shell) is None
        assert "scratch" not in shell.magics_manager.magics["line"]
        assert all(not isinstance(c, ScratchMagics) for c in shell.configurables)
    finally:
        holder.close()
        clear_shell()


def test_ipython_config_options_apply_at_load() -> None:
    cfg = Config()
    cfg.ScratchMagics.model = "claude-sonnet-4"
    cfg.ScratchMagics.spill_threshold = 700
    cfg.ScratchMagics.preview_lines = 3
    cfg.ScratchMagics.auto_spill = False
    cfg.ScratchMagics.ttl_s = 60.0
    shell = make_shell(cfg)
    try:
        shell.run_line_magic("load_ext", "jupyter_scratchpad")
        session = get_session(shell)
        assert session.pad.model == "claude-sonnet-4" and session.pad.budget.context_window == 200_000
        assert session.pad.policy.min_tokens == 700 and session.pad.preview_lines == 3
        assert session.auto_spill is False and session.store.ttl_s == 60.0
    finally:
        shell.run_line_magic("unload_ext", "jupyter_scratchpad")
        clear_shell()


def test_the_comm_target_is_registered_and_unregistered(bare_shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import jupyter_scratchpad.comm as comm

    calls: list[tuple[str, Any, Any]] = []
    monkeypatch.setattr(comm, "register_comm_target", lambda s, sh: calls.append(("register", s, sh)),
                        raising=False)
    monkeypatch.setattr(comm, "unregister_comm_target", lambda s, sh: calls.append(("unregister", s, sh)),
                        raising=False)
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    session = get_session(bare_shell)
    bare_shell.run_line_magic("unload_ext", "jupyter_scratchpad")
    assert calls == [("register", session, bare_shell), ("unregister", session, bare_shell)]


def test_loading_works_without_the_comm_module(bare_shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jupyter_scratchpad.comm", None)  # as if not installed
    monkeypatch.delattr(jupyter_scratchpad, "comm", raising=False)
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    assert get_session(bare_shell) is not None


def test_a_failing_comm_registration_does_not_fail_loading(bare_shell: Any, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    import jupyter_scratchpad.comm as comm

    def broken(session: Any, shell: Any) -> None:
        raise RuntimeError("no kernel here")

    monkeypatch.setattr(comm, "register_comm_target", broken, raising=False)
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    assert get_session(bare_shell) is not None
    assert "register_comm_target failed" in caplog.text


def test_tool_results_get_an_html_repr_only_while_loaded(bare_shell: Any) -> None:
    result = ToolResult(True, "a <b> line", None)
    html = bare_shell.display_formatter.formatters["text/html"]
    assert html(result) is None
    bare_shell.run_line_magic("load_ext", "jupyter_scratchpad")
    assert "a &lt;b&gt; line" in html(result)
    bare_shell.run_line_magic("unload_ext", "jupyter_scratchpad")
    assert html(result) is None
