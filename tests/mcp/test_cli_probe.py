"""What a newcomer probe and a shared-store probe found in the command line: usage errors exit 2
and say the command's words, help says what each command does, reads never claim a run, and
``notes read KEY`` reads. Real subprocesses on a real store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_scratchpad import ScratchStore


def _run(env: dict[str, str], *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "jupyter_scratchpad.cli", *args], env=env, input=stdin,
                          capture_output=True, timeout=120)  # fmt: skip
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def text_handle(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, str], str]:
    env = {**env, "SCRATCHPAD_STORE": str(tmp_path / "store")}
    lines = b"".join(b"%d ok\n" % i for i in range(300))
    out = _run(env, "spill", "--tool", "logs", "--json", stdin=lines)
    assert out.returncode == 0, out.stderr
    return env, json.loads(out.stdout)["handle"]


@pytest.mark.parametrize(("words", "said"), [
    (["head", "H", "0"], "lines"),
    (["slice", "H", "100"], "slice needs END"),
    (["grep", "H"], "grep needs PATTERN: jupyter-scratchpad grep HANDLE PATTERN [PATH]"),
    (["iter", "H", "items"], "iterate_over needs FIELDS"),
    (["notes", "--ttl", "-1", "k", "v"], "--ttl takes seconds"),
    (["rm", "../../etc/passwd"], "invalid handle"),
    (["head", "H", "abc"], "whole number"),
    (["show", "../../etc/passwd"], "invalid handle"),
])  # fmt: skip
def test_any_bad_or_missing_argument_exits_2_in_the_commands_words(
    text_handle: tuple[dict[str, str], str], words: list[str], said: str
) -> None:
    # these exited 1, and named tool things: scratch_write's 'ttl_s', scratch_list, "(Regex (at most …).)"
    env, h = text_handle
    out = _run(env, *[h if w == "H" else w for w in words])
    assert out.returncode == 2 and said in out.stderr, (words, out.returncode, out.stderr)
    assert "scratch_list" not in out.stderr and "ttl_s" not in out.stderr and "call scratch_write" not in out.stderr


def test_export_over_a_file_names_the_option(text_handle: tuple[dict[str, str], str], tmp_path: Path) -> None:
    env, h = text_handle
    (tmp_path / "there.json").write_text("kept")
    out = _run(env, "export", h, "--to", str(tmp_path / "there.json"))
    assert out.returncode == 2 and "--overwrite" in out.stderr and "overwrite=True" not in out.stderr


def test_help_says_what_each_command_does(env: dict[str, str]) -> None:
    top = _run(env, "--help").stdout
    assert "``" not in top
    head = _run(env, "head", "--help").stdout
    assert "the first lines of a handle" in head and "HANDLE [LINES]" in head and "sql QUERY" not in head
    assert "--ephemeral" not in head and "--policy" not in head and "a new one per server session" not in head
    for cmd in ("ls", "show", "head", "export", "notes", "spill"):
        assert "print JSON for machines" in _run(env, cmd, "--help").stdout, cmd


def test_reads_never_claim_a_run_and_an_unknown_run_is_said(tmp_path: Path, env: dict[str, str]) -> None:
    # ls --run-id incident-42 printed nothing, exit 0, and made the run main's: its agent was refused it
    store = tmp_path / "store"
    assert _run(env, "notes", "k", "1", "--store", str(store)).returncode == 0  # a store with something in it
    for words in (["ls"], ["usage"], ["notes"], ["head", "logs_0123456789ab"], ["show", "logs_0123456789ab"]):
        out = _run(env, *words, "--store", str(store), "--run-id", "incident-42")
        assert out.returncode == 1 and "no live handle or note in run 'incident-42'" in out.stderr, (words, out)
    with ScratchStore(store) as opened:
        pad = opened.scratchpad(run_id="incident-42", agent_id="triage")  # (was: ScopeError, owned by 'main')
        pad.store.put_note(pad.scope, "plan", "triage's")
    other = _run(env, "ls", "--store", str(store), "--run-id", "incident-42")
    assert other.returncode == 2 and "--agent-id triage" in other.stderr, other.stderr


def test_notes_read_and_write_are_verbs(tmp_path: Path, env: dict[str, str]) -> None:
    # `notes read plan` printed "saved note 'read'": it wrote read="plan"
    env = {**env, "SCRATCHPAD_STORE": str(tmp_path / "store")}
    assert _run(env, "notes", "write", "plan", '{"step": 1}').returncode == 0
    read = _run(env, "notes", "read", "plan", "--json")
    assert read.returncode == 0 and json.loads(read.stdout)["data"] == {"step": 1}, read
    assert _run(env, "notes", "read", "--json").returncode == 2  # a verb without its KEY: never a write
    listed = _run(env, "notes")
    assert listed.returncode == 0 and listed.stdout.startswith("plan\t") and "read" not in listed.stdout
    assert _run(env, "notes", "plan", "--json").stdout == read.stdout  # KEY alone still reads
    assert _run(env, "notes", "delete", "plan").returncode == 0
    assert _run(env, "notes", "plan").returncode == 1


def test_runs_lists_the_live_runs_and_a_handle_in_another_run_is_pointed_to(tmp_path: Path, env: dict[str, str]) -> None:
    # the CLI could not list runs: a wrong --run-id said "no such run" with nothing to try, and a
    # handle of another run read as "never spilled here"
    env = {**env, "SCRATCHPAD_STORE": str(tmp_path / "store")}
    lines = b"".join(b"%d ok\n" % i for i in range(300))
    spilled = _run(env, "spill", "--tool", "logs", "--run-id", "incident-41", "--json", stdin=lines)
    h = json.loads(spilled.stdout)["handle"]
    assert _run(env, "notes", "write", "plan", "1", "--run-id", "incident-42").returncode == 0
    assert _run(env, "spill", "--run-id", "bots-run", "--agent-id", "bot", stdin=lines[:900]).returncode == 0
    listed = _run(env, "runs", "--json")
    runs = {r["run_id"]: r for r in json.loads(listed.stdout)["data"]["runs"]}
    assert set(runs) == {"incident-41", "incident-42", "bots-run"}, listed
    assert (runs["incident-41"]["handles"], runs["incident-41"]["notes"], runs["incident-42"]["notes"]) == (1, 0, 1)
    assert runs["incident-41"]["tokens"] > 0 and runs["bots-run"]["agent_id"] == "bot"
    table = _run(env, "runs", "--agent-id", "bot").stdout
    assert "bots-run" in table and "incident-41" not in table and "--run-id RUN" in table
    # a run that does not exist names those that do
    missing = _run(env, "ls", "--run-id", "incident-40")
    assert missing.returncode == 1 and "(no such run)" in missing.stderr and "incident-41" in missing.stderr
    # the handle, read from the wrong run: where it is, and the same command there
    wrong = _run(env, "head", h, "3", "--run-id", "incident-42")
    assert wrong.returncode == 1 and "live in run 'incident-41'" in wrong.stderr, wrong.stderr
    again = wrong.stderr.split("(try: jupyter-scratchpad ")[1].rstrip(")\n").split()
    assert again == ["head", h, "3", "--run-id", "incident-41"], again
    assert _run(env, *again).stdout.splitlines()[:1] == ["1\t0 ok"]


def test_words_after_the_options_are_the_commands(tmp_path: Path, env: dict[str, str]) -> None:
    # `notes write --store DIR k v` failed "unrecognized arguments: k v"
    store = str(tmp_path / "store")
    assert _run(env, "notes", "write", "--store", store, "plan", "v1").returncode == 0
    assert _run(env, "notes", "read", "--store", store, "plan").stdout.strip() == "v1"
    assert _run(env, "notes", "--store", store, "--bogus").returncode == 2


def test_spill_prints_the_exact_count_it_waited_for_and_help_says_the_default_run(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # spill waited for the exact count, then exited having printed "≥ 5,120 tokens"; the help said
    # its run defaulted to "a new one per server session"; an unknown tool exited 1
    env = {**env, "SCRATCHPAD_STORE": str(tmp_path / "store")}
    lines = b"".join(b"line %d of the log\n" % i for i in range(20_000))
    out = _run(env, "spill", "--tool", "logs", stdin=lines)
    assert out.returncode == 0 and "≥" not in out.stdout, out.stdout[:300]
    listed = json.loads(_run(env, "ls", "--json").stdout.splitlines()[0])
    assert f"{listed['tokens']:,} tokens" in out.stdout and listed["tokens_exact"] is True
    assert "(default 'default')" in _run(env, "spill", "--help").stdout
    assert "a new one per server session" in _run(env, "mcp", "serve", "--help").stdout
    unknown = _run(env, "call", "no_such_tool", "{}")
    assert unknown.returncode == 2 and "unknown_tool" in unknown.stderr
