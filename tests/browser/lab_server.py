"""A throwaway JupyterLab server for the browser test: started and stopped by PID, bounded in time."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_notebook(path: Path, cells: list[str]) -> None:
    """An nbformat 4 notebook with these code cells, for the Python 3 kernel."""
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {},
                   "outputs": [], "source": src} for i, src in enumerate(cells)],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "language_info": {"name": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }, indent=1), encoding="utf-8")


def _settings(settings_dir: Path) -> None:
    # No news or update checks: the popup would cover the page, and there is no network.
    target = settings_dir / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}), encoding="utf-8")


def _get(url: str, timeout_s: float = 5) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return json.loads(response.read() or b"null")


class LabServer:
    """``jupyter lab`` on 127.0.0.1 with its own root, settings, workspaces and runtime dirs."""

    def __init__(self, work: Path) -> None:
        self.root = work / "root"
        self.log_path = work / "jupyter-lab.log"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._work = work

    def start(self) -> None:
        self.root.mkdir(parents=True)
        settings = self._work / "lab-settings"
        _settings(settings)
        env = dict(os.environ)
        env.update({
            "JUPYTERLAB_SETTINGS_DIR": str(settings),
            "JUPYTERLAB_WORKSPACES_DIR": str(self._work / "lab-workspaces"),
            "JUPYTER_RUNTIME_DIR": str(self._work / "runtime"),
            "IPYTHONDIR": str(self._work / "ipython"),
        })
        command = [
            sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser",
            "--ServerApp.token=", "--ServerApp.password=", "--ip=127.0.0.1", f"--port={self.port}",
            "--ServerApp.port_retries=0", f"--ServerApp.root_dir={self.root}",
            "--LabApp.expose_app_in_browser=True",
            # Loopback, tokenless and throwaway: the REST calls of the teardown need no XSRF cookie.
            "--ServerApp.disable_check_xsrf=True",
        ]
        log = self.log_path.open("wb")
        # A session of its own, so that whatever it leaves behind can be killed as a group.
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                     cwd=self.root, start_new_session=True)
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, ValueError):
                if _get(f"{self.url}/api/status", 2) is not None:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"jupyter lab did not answer within {START_TIMEOUT_S}s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def stop(self) -> None:
        """Shut the kernels down, then the server (SIGTERM, then SIGKILL to its process group)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(OSError, ValueError):
            for kernel in _get(f"{self.url}/api/kernels") or []:
                request = urllib.request.Request(f"{self.url}/api/kernels/{kernel['id']}", method="DELETE")
                urllib.request.urlopen(request, timeout=10).close()
        self.proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(STOP_TIMEOUT_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(STOP_TIMEOUT_S)


@contextlib.contextmanager
def lab_server(work: Path) -> Iterator[LabServer]:
    server = LabServer(work)
    try:
        server.start()
        yield server
    finally:
        server.stop()
