"""The command line says things one way: a spill's exact token count lands before ``spill``
exits (``ls``/``usage`` say it, not "≥ 5,120"), a bad argument is a usage error (2) whichever
command it went to, a missing handle points at ``jupyter-scratchpad ls``, and a proxy that cannot
start says one line. Subprocesses, as a shell runs them."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

PODS = {"items": [{"id": i, "name": f"pod-{i}"} for i in range(5000)]}


def _run(env: dict[str, str], *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "jupyter_scratchpad.cli", *args], env=env, input=stdin,
                          capture_output=True, timeout=120)  # fmt: skip
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def store_env(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    return {**env, "SCRATCHPAD_STORE": str(tmp_path / "store")}


def test_a_spill_leaves_its_exact_token_count_even_into_head(store_env: dict[str, str], tmp_path: Path) -> None:
    many = {"items": [{"id": i, "name": f"pod-{i}", "phase": "Running"} for i in range(60_000)]}  # (a while to count)
    (tmp_path / "pods.json").write_text(json.dumps(many))
    spill = shlex.join([sys.executable, "-m", "jupyter_scratchpad.cli", "spill", "--tool", "k8s"])
    piped = subprocess.run(f"{spill} < {shlex.quote(str(tmp_path / 'pods.json'))} | head -1", shell=True,
                           env=store_env, capture_output=True, text=True, timeout=120)  # fmt: skip
    # the stub: with the exact count when it is in within 5 s, else the bound (then the wait)
    assert " tokens" in piped.stdout and piped.stdout.startswith("[scratchpad] k8s output stored"), piped.stdout
    listed = _run(store_env, "ls")
    assert "≥" not in listed.stdout and " tokens " in listed.stdout, listed.stdout  # (was: ≥ 5,120 tokens)
    usage = json.loads(_run(store_env, "usage").stdout)
    assert usage["tokens_intercepted"] > 5120 and usage["tokens_exact"] and usage["handles"] == 1, usage


def test_bad_arguments_are_usage_errors_and_pointers_name_commands(store_env: dict[str, str]) -> None:
    spilled = _run(store_env, "spill", "--tool", "k8s", "--json", stdin=json.dumps(PODS).encode())
    h = json.loads(spilled.stdout)["handle"]
    missing = _run(store_env, "show", "nosuch")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert "(try: jupyter-scratchpad ls)" in missing.stderr and "scratch_list" not in missing.stderr, missing.stderr
    word = _run(store_env, "head", h, "abc")
    assert word.returncode == 2 and "lines takes a whole number" in word.stderr, word.stderr  # (was: 1)
    listed = _run(store_env, "call", "head", "[1, 2]")
    assert listed.returncode == 2 and "must be a JSON object" in listed.stderr  # as '{bad' is (was: 1)
    assert _run(store_env, "call", "head", "{bad").returncode == 2
    for argv in (["head", "../../etc/passwd"], ["show", "../../etc"], ["call", "grep", '{"handle": "A/b", "pattern": "x"}']):
        bad = _run(store_env, *argv)  # an invalid handle is a bad argument whichever command took it (head said 1)
        assert bad.returncode == 2 and "invalid handle" in bad.stderr, (argv, bad.stderr)
        assert "scratch_list" not in bad.stderr and "(try: jupyter-scratchpad ls)" in bad.stderr, bad.stderr


def test_a_proxy_that_cannot_start_says_one_line(store_env: dict[str, str], tmp_path: Path) -> None:
    config = _run(store_env, "mcp", "proxy", "--ephemeral", "--config", str(tmp_path / "nonexistent.toml"))
    assert config.returncode == 2 and "cannot read --config" in config.stderr
    assert "policy file" not in config.stderr  # (it is the servers' file)
    down = _run(store_env, "mcp", "proxy", "--ephemeral", "--name", "x", "--", "false", stdin=b"")
    assert down.returncode == 1 and "upstream 'x' could not start" in down.stderr
    assert down.stderr.count("\n") == 1 and "usage {" not in down.stderr, down.stderr  # (was: and a usage line)
    # a command that is not an MCP server: cat echoes initialize back, and the SDK's "Method not found"
    # was all the proxy said
    echoing = _run(store_env, "mcp", "proxy", "--ephemeral", "--name", "cat", "--", "cat", stdin=b"")
    assert echoing.returncode == 1 and "upstream 'cat' could not start" in echoing.stderr, echoing.stderr
    assert "answered initialize with an error" in echoing.stderr and "MCP server" in echoing.stderr
    assert echoing.stderr.count("\n") == 1, echoing.stderr


def test_listings_are_bounded_and_page_on(store_env: dict[str, str]) -> None:
    # `ls --run-id big` printed every entry (6 MB for 12,000) and `notes` every note, into a shell agent
    from jupyter_scratchpad import ScratchStore

    with ScratchStore(store_env["SCRATCHPAD_STORE"]) as store:
        pad = store.scratchpad("big", "main")
        for i in range(200):
            store.put_note(pad.scope, f"k{i:03d}", f"value {i} " + "v" * 300)
        default = store.scratchpad("default", "main")
        for i in range(60):
            store.put_note(default.scope, f"d{i}", i)
    keys: list[str] = []
    argv = ["notes", "--run-id", "big", "--json", "--max-tokens", "6000"]
    for _ in range(20):
        page = _run(store_env, *argv)
        assert page.returncode == 0, page.stderr
        keys += [json.loads(line)["key"] for line in page.stdout.splitlines()]
        assert len(page.stdout) < 6000 * 6  # (a token is a few characters)
        if not page.stderr:
            break
        assert "more notes not printed (--max-tokens 6,000)" in page.stderr, page.stderr
        argv = shlex.split(page.stderr.split("the next: ")[1].split(" (or")[0])[1:]  # as it says
    assert keys == [f"k{i:03d}" for i in range(200)]  # each once, in order
    listed = _run(store_env, "ls", "--run-id", "big", "--max-tokens", "6000")
    assert 0 < len(listed.stdout.splitlines()) < 200 and "ls --run-id big --max-tokens 6000 --offset " in listed.stderr
    assert len(_run(store_env, "ls", "--run-id", "big", "--max-tokens", "0").stdout.splitlines()) == 200
    plain = _run(store_env, "ls").stdout  # the tool's page: its next page as the command that prints it
    assert "next: jupyter-scratchpad ls --offset 50" in plain and "next: offset=" not in plain, plain[-300:]
    assert "d59" in _run(store_env, "ls", "--offset", "50").stdout
    text = _run(store_env, "ls", "--run-id", "big", "--offset", "0")  # (a named run: JSON rows, as before)
    assert json.loads(text.stdout.splitlines()[0])["key"] == "k000"
