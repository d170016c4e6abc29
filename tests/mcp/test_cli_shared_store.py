"""The command line on a shared store (``--store-url URL --bodies DIR`` or $SCRATCHPAD_STORE_URL /
$SCRATCHPAD_BODIES): what one process spills, another reads back byte for byte, while others hold the
same store open (``mcp serve``, concurrent spills): no lock, unlike the embedded store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

CLI = [sys.executable, "-m", "jupyter_scratchpad.cli"]
RUN, AGENT = "shared-run", "triage"  # the CLI's own defaults are run 'default' (reads) and agent 'main'
# Indented, non-ASCII, a trailing newline: bytes that only come back the same if kept as they were.
PODS = (
    json.dumps(
        {
            "kind": "PodList",
            "items": [
                {
                    "metadata": {"name": f"pod-{i}", "namespace": "prod" if i % 4 else "dev", "owner": "équipe-ü"},
                    "status": {"phase": "Running" if i % 9 else "Pending"},
                }
                for i in range(3000)
            ],
        },
        indent=1,
        ensure_ascii=False,
    )
    + "\n"
).encode()


def _run(env: dict[str, str], *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*CLI, *args], env=env, input=stdin, capture_output=True, timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def base_env(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The CLI's environment without a shared store of its own; a default bodies dir would go under tmp_path."""
    clean = {k: v for k, v in env.items() if not k.startswith("SCRATCHPAD_")}
    return {**clean, "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "XDG_DATA_HOME": str(tmp_path / "xdg-data")}


@pytest.fixture
def flags(pg_url: str, tmp_path: Path) -> list[str]:
    return ["--store-url", pg_url, "--bodies", str(tmp_path / "bodies"), "--run-id", RUN, "--agent-id", AGENT]


def _spill(env: dict[str, str], *args: str, data: bytes = PODS, tool: str = "k8s") -> str:
    out = _run(env, "spill", "--tool", tool, "--json", *args, stdin=data)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["spilled"] and info["handle"].startswith(f"{tool}_") and not info["failure"]
    return str(info["handle"])


def _assert_only_shared_store_used(tmp_path: Path) -> None:
    assert (tmp_path / "bodies" / "STORE_ID").is_file()
    assert not (tmp_path / "xdg-cache" / "jupyter-scratchpad").exists()  # no default bodies directory
    assert not (tmp_path / "xdg-data" / "jupyter-scratchpad").exists()  # no embedded store either


def test_one_process_spills_another_reads_the_same_bytes(
    base_env: dict[str, str], flags: list[str], tmp_path: Path
) -> None:
    handle = _spill(base_env, *flags)
    _assert_only_shared_store_used(tmp_path)

    show = _run(base_env, "show", handle, "--json", *flags)
    assert show.returncode == 0, show.stderr
    stub = json.loads(show.stdout)
    assert stub["handle"] == handle and stub["format"] == "json" and stub["size"] == len(PODS)
    assert stub["lines"] == PODS.count(b"\n")
    listing = _run(base_env, "ls", *flags)
    assert listing.returncode == 0, listing.stderr
    [row] = [json.loads(line) for line in listing.stdout.splitlines()]
    assert (row["handle"], row["run_id"], row["agent_id"], row["size"]) == (handle, RUN, AGENT, len(PODS))
    exported = tmp_path / "back.json"
    out = _run(base_env, "export", handle, "--to", str(exported), *flags)
    assert out.returncode == 0, out.stderr
    assert exported.read_bytes() == PODS  # the exact bytes that went in
    got = _run(base_env, "get", handle, "items[2999].metadata", *flags)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout.split("\n---")[0]) == {"name": "pod-2999", "namespace": "prod", "owner": "équipe-ü"}

    # the run is the scope: another run of the same store does not have it
    other = _run(base_env, "show", handle, *flags, "--run-id", "another-run")
    assert other.returncode == 1 and "no live handle" in other.stderr and "Traceback" not in other.stderr
    # the run is its agent's: another agent listing it gets a refusal, not the owner's entries
    intruder = _run(base_env, "ls", *flags, "--agent-id", "intruder")
    assert intruder.returncode != 0 and handle not in intruder.stdout + intruder.stderr
    assert "Traceback" not in intruder.stderr and intruder.stderr.count("\n") == 1


def test_the_environment_variables_name_the_store(base_env: dict[str, str], pg_url: str, tmp_path: Path) -> None:
    ids = ["--run-id", RUN, "--agent-id", AGENT]
    by_env = {**base_env, "SCRATCHPAD_STORE_URL": pg_url, "SCRATCHPAD_BODIES": str(tmp_path / "bodies")}
    handle = _spill(by_env, *ids)
    _assert_only_shared_store_used(tmp_path)
    # flags in another process read what the variables spilled, and the other way round
    flags = ["--store-url", pg_url, "--bodies", str(tmp_path / "bodies"), *ids]
    out = _run(base_env, "export", handle, "--to", str(tmp_path / "a.json"), *flags)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "a.json").read_bytes() == PODS
    logs = b"".join(b"%d ERROR disk full on node-%d\n" % (i, i % 5) for i in range(8000))
    text_handle = _spill(base_env, *flags, data=logs, tool="logs")
    head = _run(by_env, "head", text_handle, "2", *ids)
    assert head.returncode == 0, head.stderr
    assert head.stdout.splitlines()[:2] == [
        "1\t0 ERROR disk full on node-0",
        "2\t1 ERROR disk full on node-1",
    ]
    listing = _run(by_env, "ls", *ids)
    assert sorted(json.loads(line)["handle"] for line in listing.stdout.splitlines()) == sorted([handle, text_handle])
    # without the variables (and no flags) the CLI is on its embedded store, which has none of it
    alone = _run(base_env, "ls", *ids)
    assert alone.returncode == 1 and handle not in alone.stdout and text_handle not in alone.stdout
    assert "no live handle or note in run" in alone.stderr  # (an unknown run is said, and not made)
    # a store named on the command line beats the variable: --store, --ephemeral
    for chosen in (["--store", str(tmp_path / "mine")], ["--ephemeral"]):
        assert _run(by_env, "notes", "k", "1", *ids, *chosen).returncode == 0  # (a write makes a store)
        mine = _run(by_env, "ls", *ids, *chosen)
        assert mine.returncode == (1 if "--ephemeral" in chosen else 0) and handle not in mine.stdout, mine.stderr
    assert (tmp_path / "mine" / "catalog.duckdb").exists()


def test_processes_spill_into_one_store_at_once(base_env: dict[str, str], flags: list[str]) -> None:
    other = PODS.replace(b"pod-", b"job-")
    procs = [
        subprocess.Popen(
            [*CLI, "spill", "--tool", "k8s", "--json", *flags],
            env=base_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    results = []
    for proc, data in zip(procs, [PODS, PODS, other], strict=True):
        out, err = proc.communicate(data, timeout=120)
        assert proc.returncode == 0, err.decode()
        assert b"Traceback" not in err and b"open in process" not in err
        results.append(json.loads(out))
    same, again, different = (r["handle"] for r in results)
    assert same == again and different != same  # the same output, spilled twice at once, is one entry
    listing = _run(base_env, "ls", *flags)
    assert sorted(json.loads(line)["handle"] for line in listing.stdout.splitlines()) == sorted([same, different])


def test_mcp_serve_reads_what_the_cli_spills_while_it_runs(
    base_env: dict[str, str], flags: list[str], tmp_path: Path
) -> None:
    before = _spill(base_env, *flags)

    async def run() -> None:
        server = StdioServerParameters(command=CLI[0], args=[*CLI[1:], "mcp", "serve", *flags], env=base_env)
        async with stdio_client(server, errlog=errlog) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            # the CLI spills while the server holds the store open: no lock to wait for
            logs = b"".join(b"%d ERROR disk full on node-%d\n" % (i, i % 5) for i in range(8000))
            proc = await anyio.run_process(
                [*CLI, "spill", "--tool", "logs", "--json", *flags], input=logs, env=base_env, check=False
            )
            assert proc.returncode == 0, proc.stderr.decode()
            during = json.loads(proc.stdout)["handle"]

            got = await s.call_tool("get_in", {"handle": before, "path": "$.items[2999].metadata"})
            assert not got.is_error, got.content
            assert got.structured_content == {"name": "pod-2999", "namespace": "prod", "owner": "équipe-ü"}
            rows = await s.call_tool(
                "sql", {"query": f"SELECT count(*) AS n FROM {before}.items WHERE status.phase = 'Pending'"}
            )
            assert rows.structured_content == {"rows": [{"n": 334}]}
            head = await s.call_tool("head", {"handle": during, "lines": 2})
            assert not head.is_error, head.content
            assert "0 ERROR disk full on node-0\n2\t1 ERROR disk full on node-1" in head.content[0].text
            assert "of 8,000" in head.content[0].text
            # (its data as JSON, 57 tokens, is over the 54 of its text: the text alone is sent)
            assert head.structured_content is None
            # and the other way: the server writes a note, a CLI process reads it
            wrote = await s.call_tool("scratch_write", {"key": "plan", "value": {"step": 3, "handle": during}})
            assert not wrote.is_error, wrote.content
            note = await anyio.run_process([*CLI, "notes", "plan", "--json", *flags], env=base_env, check=False)
            assert note.returncode == 0, note.stderr.decode()
            assert json.loads(note.stdout)["data"] == {"step": 3, "handle": during}

    with (tmp_path / "serve-stderr.txt").open("w+") as errlog:
        anyio.run(run)
        errlog.seek(0)
        said = errlog.read()
    _assert_only_shared_store_used(tmp_path)
    # probe AC: the server's first line said its handles could be read "once this process exits (an
    # embedded store …)", and without the agent the CLI then refused the run
    assert f"its handles are read with --run-id {RUN} --agent-id {AGENT}" in said and "once this process exits" not in said


def test_a_store_url_that_cannot_be_used_is_one_line(base_env: dict[str, str], tmp_path: Path) -> None:
    missing = tmp_path / "no-such-socket-dir"
    bad = f"postgresql://postgres@/nodb?host={missing}&port=5999"
    down = _run(base_env, "ls", "--store-url", bad, "--bodies", str(tmp_path / "bodies"))
    assert down.returncode == 2 and down.stderr.count("\n") == 1 and "Traceback" not in down.stderr
    assert f"the shared store's PostgreSQL ({bad}) is unavailable" in down.stderr and str(missing) in down.stderr
    other = _run(base_env, "ls", "--store-url", "mysql://x")
    assert other.returncode == 2 and "not a mysql:// URL" in other.stderr and other.stderr.count("\n") == 1


def test_runs_on_a_shared_store_lists_one_agents_runs_and_says_so(base_env: dict[str, str], pg_url: str,
                                                                   tmp_path: Path) -> None:
    env = {**base_env, "SCRATCHPAD_STORE_URL": pg_url, "SCRATCHPAD_BODIES": str(tmp_path / "bodies")}
    _spill(env, "--run-id", "inc-2", "--agent-id", "bot")
    none = _run(env, "runs")  # main has none yet: said with what a shared store shows
    assert none.returncode == 0 and "no run of agent 'main'" in none.stdout, none.stdout
    assert "another's with --agent-id AGENT" in none.stdout, none.stdout  # (read as an empty store)
    _spill(env, "--run-id", "inc-1")
    mine = _run(env, "runs")  # row-level security: main's own, and said so
    assert mine.returncode == 0 and "inc-1" in mine.stdout and "inc-2" not in mine.stdout, mine.stdout
    assert "a shared store shows each agent its own" in mine.stdout
    bots = json.loads(_run(env, "runs", "--agent-id", "bot", "--json").stdout)["data"]["runs"]
    assert [(r["run_id"], r["agent_id"], r["handles"]) for r in bots] == [("inc-2", "bot", 1)]
    missing = _run(env, "ls", "--run-id", "inc-0")
    assert missing.returncode == 1 and "(no such run)" in missing.stderr and "inc-1" in missing.stderr
