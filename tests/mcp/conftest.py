"""Real MCP servers for the proxy tests: ours (python -m jupyter_scratchpad.cli), mcp-server-git
(PyPI) and @modelcontextprotocol/server-filesystem (npm, installed by scripts/test into
.work/npm-mcp). Every server is a real process the official client starts and stops."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPM_SERVERS = ROOT / ".work" / "npm-mcp" / "node_modules" / ".bin"
# a client's first line on stdio: what a proxy that cannot start is sent before it says why
INITIALIZE_LINE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}) + "\n"  # fmt: skip


def git_server() -> str:
    path = Path(sys.executable).parent / "mcp-server-git"
    if not path.exists():
        found = shutil.which("mcp-server-git")
        assert found, "mcp-server-git is missing: pip install -e '.[test]' installs it"
        return found
    return str(path)


def filesystem_server() -> str:
    path = NPM_SERVERS / "mcp-server-filesystem"
    assert path.exists(), (
        f"{path} is missing: scripts/test installs it (npm ci --prefix .work/npm-mcp from tests/mcp/npm)"
    )
    return str(path)


@pytest.fixture(scope="session")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with 3,000 commits, made in a second with git fast-import."""
    repo = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    parts = []
    for i in range(3000):
        msg = f"commit {i}: change module {i % 17} to handle case {i}\n"
        data = f"line {i}\n"
        parts.append(
            f"commit refs/heads/master\nmark :{i + 1}\ncommitter Dev {i % 5} <dev{i % 5}@example.com> "
            f"{1700000000 + i * 60} +0000\ndata {len(msg)}\n{msg}"
        )
        if i:
            parts.append(f"from :{i}\n")
        parts.append(f"M 644 inline file{i % 50}.txt\ndata {len(data)}\n{data}\n")
    subprocess.run(["git", "fast-import", "--quiet"], input="".join(parts).encode(), cwd=repo, check=True)
    subprocess.run(["git", "checkout", "-q", "master"], cwd=repo, check=True)
    return repo


def cli(*args: str) -> tuple[str, list[str]]:
    """The command and arguments that start our CLI under this interpreter."""
    return sys.executable, ["-m", "jupyter_scratchpad.cli", *args]


@pytest.fixture
def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(proc: subprocess.Popen[bytes], port: int, timeout_s: float = 40) -> None:
    """Until something listens on ``port``; a server that exits first fails with its stderr."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


async def session_usage(session: Any) -> dict[str, Any]:
    """What ``scratchpad_usage`` answers a client session: its run, budget and counts."""
    return dict(json.loads((await session.call_tool("scratchpad_usage", {})).content[0].text))
