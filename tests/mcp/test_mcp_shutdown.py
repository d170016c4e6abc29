"""``mcp serve`` and ``mcp proxy`` stopped as clients stop them (SIGTERM, SIGKILL, SIGINT, stdin
closed) leave no process behind: their SQL workers and upstreams end with them, in time."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import free_port, wait_for_port

STUBBORN = Path(__file__).parent / "servers" / "stubborn_server.py"  # ignores SIGTERM, stays 60 s after EOF
# runs until DuckDB's memory ceiling (far past the 10 s limit the parent enforces by killing the worker)
ENDLESS_SQL = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t"


def _line(mid: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if mid is not None:
        msg["id"] = mid
    if params is not None:
        msg["params"] = params
    return (json.dumps(msg) + "\n").encode()


INITIALIZE = _line(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "t", "version": "1"}})  # fmt: skip


class Client:
    """Our CLI as a client runs it: JSON-RPC lines on stdin, replies read from stdout."""

    def __init__(self, env: dict[str, str], tmp: Path, *args: str) -> None:
        self.errlog = (tmp / "stderr.txt").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_scratchpad.cli", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog, env=env,
        )  # fmt: skip
        self.tmp = tmp
        self.replies: dict[Any, Any] = {}
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(INITIALIZE)
        self.reply(1, 60)
        self.send(_line(None, "notifications/initialized"))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self.arrived:
                self.replies[msg.get("id")] = msg
                self.arrived.notify_all()

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def reply(self, mid: int, timeout_s: float) -> Any:
        with self.arrived:
            assert self.arrived.wait_for(lambda: mid in self.replies, timeout_s), self.stderr()
            return self.replies[mid]

    def call(self, mid: int, tool: str, arguments: dict[str, Any]) -> None:
        self.send(_line(mid, "tools/call", {"name": tool, "arguments": arguments}))

    def stderr(self) -> str:
        self.errlog.flush()
        return (self.tmp / "stderr.txt").read_text(errors="replace")[-3000:]

    def close(self) -> None:
        """Kills it (and ``pids``) if still running: nothing a test started outlives it."""
        with contextlib.suppress(OSError, ValueError):
            self.proc.kill()
        self.proc.wait(10)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
        self.errlog.close()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _descendants(pid: int, *, word: str, timeout_s: float) -> list[int]:
    """The pids below ``pid`` whose command line holds ``word``, once there is one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            found = [p.pid for p in psutil.Process(pid).children(recursive=True) if word in " ".join(p.cmdline())]
            if found:
                return found
        time.sleep(0.1)
    raise AssertionError(f"no process {word!r} below {pid}")


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    """The pids of ``pids`` still alive after ``seconds`` (waited for until they end)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            os.kill(pid, signal.SIGKILL)


def _exit_code_within(proc: subprocess.Popen[bytes], seconds: float) -> int | None:
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_serve_stopped_mid_query_takes_its_sql_worker_with_it(env: dict[str, str], tmp_path: Path,
                                                              sig: signal.Signals) -> None:  # fmt: skip
    # the worker, reparented to PID 1, spun at ~95% CPU: its time limit is kept by the parent killing it
    client = Client(env, tmp_path, "mcp", "serve", "--ephemeral")
    workers: list[int] = []
    try:
        client.call(2, "sql", {"query": ENDLESS_SQL})
        workers = _descendants(client.proc.pid, word="_sqlworker", timeout_s=30)
        time.sleep(1.0)  # the query runs
        assert all(_alive(p) for p in workers) and 2 not in client.replies
        client.proc.send_signal(sig)
        code = _exit_code_within(client.proc, 5)
        left = _gone_within(workers, 5)
        assert not left, f"SQL worker(s) {left} outlived mcp serve ({sig.name}); {client.stderr()}"
        if sig == signal.SIGTERM:
            assert code == 128 + signal.SIGTERM, (code, client.stderr())
    finally:
        client.close()
        _kill(workers)


def _proxy_with_stubborn_upstream(env: dict[str, str], tmp: Path) -> tuple[Client, int]:
    client = Client(env, tmp, "mcp", "proxy", "--ephemeral", "--name", "up", "--", sys.executable, str(STUBBORN))
    client.call(2, "pid", {})
    upstream = int(client.reply(2, 30)["result"]["content"][0]["text"])
    assert upstream in [p.pid for p in psutil.Process(client.proc.pid).children(recursive=True)]
    return client, upstream


def test_a_sigtermed_proxy_stops_an_upstream_that_ignores_sigterm(env: dict[str, str], tmp_path: Path) -> None:
    # the proxy died at once (no handler), and the upstream lived on under PID 1
    client, upstream = _proxy_with_stubborn_upstream(env, tmp_path)
    try:
        client.call(3, "sleep", {"s": 30})  # mid-call
        time.sleep(0.5)
        client.proc.send_signal(signal.SIGTERM)
        code = _exit_code_within(client.proc, 3)
        assert not _gone_within([upstream], 3), f"upstream {upstream} outlived the proxy; {client.stderr()}"
        assert code == 128 + signal.SIGTERM, (code, client.stderr())
    finally:
        client.close()
        _kill([upstream])


def test_a_client_closing_stdin_stops_proxy_and_slow_upstream_within_its_grace(env: dict[str, str],
                                                                                 tmp_path: Path) -> None:  # fmt: skip
    # the SDK's client waits 2 s after closing stdin, then sends SIGTERM: the proxy took 4.3 s
    # (its SDK client's own 2 s wait, SIGTERM, 2 s more), was SIGTERMed and orphaned the upstream
    client, upstream = _proxy_with_stubborn_upstream(env, tmp_path)
    try:
        assert client.proc.stdin is not None
        started = time.monotonic()
        client.proc.stdin.close()
        code = _exit_code_within(client.proc, 3)
        took = time.monotonic() - started
        assert code == 0, (code, took, client.stderr())
        assert not _gone_within([upstream], 0.5), f"upstream {upstream} outlived the proxy; {client.stderr()}"
        assert "jupyter-scratchpad: usage" in client.stderr()
    finally:
        client.close()
        _kill([upstream])


def test_sigint_mid_call_exits_130_and_stops_the_upstream(env: dict[str, str], tmp_path: Path) -> None:
    # the proxy closed stdout and logged its usage, then stayed up (a thread blocked reading stdin)
    # with its upstream, until the client closed stdin
    client, upstream = _proxy_with_stubborn_upstream(env, tmp_path)
    try:
        client.call(3, "sleep", {"s": 30})
        time.sleep(0.5)
        client.proc.send_signal(signal.SIGINT)
        code = _exit_code_within(client.proc, 4)
        assert code == 128 + signal.SIGINT, (code, client.stderr())
        assert not _gone_within([upstream], 1), f"upstream {upstream} outlived the proxy; {client.stderr()}"
        assert "jupyter-scratchpad: usage" in client.stderr()
    finally:
        client.close()
        _kill([upstream])


def test_a_sql_worker_outlives_the_thread_that_started_it() -> None:
    # (guard) Linux's PDEATHSIG fires when the *thread* that forked the child ends: a worker started
    # from a pool thread (anyio's end after 10 s idle) must not die under a live parent
    from jupyter_scratchpad.explore import _sqlworker

    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(_sqlworker._Worker()))
    thread.start()
    thread.join()
    worker = box[0]
    try:
        time.sleep(1.0)
        assert worker.alive()
        _sqlworker._send(worker.proc.stdin, {"relations": [], "notes": [], "query": "SELECT 42 AS x", "max_rows": 5})
        assert _sqlworker._recv(worker.proc.stdout)["rows"] == [[42]]
    finally:
        worker.kill()


def _ephemeral_dir(said: str) -> Path:
    """The temporary store's directory, from the server's start line ('… in /tmp/jupyter-scratchpad-…;')."""
    where = said.split("jupyter-scratchpad: run '")[1].split(" in ", 1)[1].split(";")[0]
    assert "jupyter-scratchpad-" in where, said
    return Path(where)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signalled_ephemeral_server_removes_its_store(env: dict[str, str], tmp_path: Path, sig: int) -> None:
    # probe Y: "a temporary store, deleted on exit" stayed in /tmp, spilled bodies and all, when
    # the server was stopped by a signal (only a closed stdin removed it)
    client = Client(env, tmp_path, "mcp", "serve", "--ephemeral")
    try:
        client.call(2, "scratch_write", {"key": "secret", "value": "a private note " * 300})
        assert not client.reply(2, 60)["result"].get("isError")
        where = _ephemeral_dir(client.stderr())
        assert where.is_dir() and "removed when this process exits" in client.stderr()
        client.proc.send_signal(sig)
        code = _exit_code_within(client.proc, 10)
        assert code == 128 + sig, (code, client.stderr())
        assert not where.exists(), f"{where} left behind; {client.stderr()}"
    finally:
        client.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_an_http_server_stopped_by_a_signal_exits_with_its_code_and_removes_its_store(
    env: dict[str, str], tmp_path: Path, sig: int
) -> None:
    # probe Y: SIGTERM killed it (exit -15, no usage line, the --ephemeral store left); SIGINT exited 0
    port = free_port()
    errlog = (tmp_path / "stderr.txt").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_scratchpad.cli", "mcp", "serve", "--ephemeral", "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog, env=env,
    )  # fmt: skip
    try:
        wait_for_port(proc, port)
        said = (tmp_path / "stderr.txt").read_text()
        where = _ephemeral_dir(said)
        assert where.is_dir()
        proc.send_signal(sig)
        code = _exit_code_within(proc, 20)
        said = (tmp_path / "stderr.txt").read_text()
        assert code == 128 + sig, (code, said)
        assert not where.exists() and "jupyter-scratchpad: usage" in said, said
        assert "Traceback" not in said, said
    finally:
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait(10)
        errlog.close()
