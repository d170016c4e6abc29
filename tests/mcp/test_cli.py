"""The ``jupyter-scratchpad`` command line end to end, in subprocesses: a pipe into ``spill``, the
person's reads, notes, export, rm, sweep, exit codes and one-line errors (issue 13 §4)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

PODS = {"apiVersion": "v1", "items": [
    {"metadata": {"name": f"pod-{i}", "namespace": "prod" if i % 4 else "dev"},
     "status": {"phase": "Running" if i % 9 else "Pending"}} for i in range(3000)]}


def _run(
    env: dict[str, str], *args: str, stdin: bytes | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "jupyter_scratchpad.cli", *args], env=env, input=stdin,
                          capture_output=True, timeout=120, cwd=cwd)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def spilled(tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, str], str]:
    env = {**env, "SCRATCHPAD_STORE": str(tmp_path / "store")}
    out = _run(env, "spill", "--tool", "k8s", "--json", stdin=json.dumps(PODS).encode())
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["spilled"] and info["handle"].startswith("k8s_")
    return env, info["handle"]


def test_a_pipe_into_spill_prints_the_stub_and_the_reads_follow(spilled: tuple[dict[str, str], str]) -> None:
    env, h = spilled
    again = _run(env, "spill", "--tool", "k8s", stdin=json.dumps(PODS).encode())
    assert again.returncode == 0 and f'"{h}"' in again.stdout and "already stored" in again.stdout
    show = _run(env, "show", h)
    assert show.returncode == 0 and "Schema:" in show.stdout and h in show.stdout
    assert h in _run(env, "ls").stdout
    rows = _run(env, "iter", h, "items", "metadata.name,status.phase", "3")
    assert rows.returncode == 0 and '[0,"pod-0","Pending"]' in rows.stdout and "pod-3" not in rows.stdout
    keys = _run(env, "item-schema", h, "items")
    assert keys.returncode == 0 and "status.phase" in keys.stdout
    got = _run(env, "get", h, "items[9].status.phase")
    assert got.returncode == 0 and got.stdout.startswith('"Pending"')
    lines = _run(env, "slice", h, "2", "4")
    assert lines.returncode == 0 and len(lines.stdout.strip().split("\n")) >= 3
    sql = _run(env, "sql", "--json", f"SELECT count(*) AS n FROM {h}.items WHERE status.phase = 'Pending'")
    assert json.loads(sql.stdout)["data"] == [{"n": 334}]
    # exit codes as the README says (and grep(1) does): 0 found, 1 found nothing
    assert _run(env, "grep", h, "pod-2999").returncode == 0
    nothing = _run(env, "grep", h, "no-such-pod")
    assert nothing.returncode == 1 and "No matches" in nothing.stdout


def test_the_store_can_come_before_the_subcommand(tmp_path: Path, env: dict[str, str]) -> None:
    store = tmp_path / "elsewhere"
    put = _run(env, "--store", str(store), "spill", "--tool", "logs", stdin=b"ERROR one\nok\n" * 5000)
    assert put.returncode == 0, put.stderr
    assert "logs_" in _run(env, "ls", "--store", str(store)).stdout
    assert (store / "catalog.duckdb").exists() or any(store.iterdir())


def test_errors_are_one_line_with_a_hint_and_exit_codes_say_what_happened(
    spilled: tuple[dict[str, str], str],
) -> None:
    env, h = spilled
    miss = _run(env, "get", h, "items[0].nope")
    assert miss.returncode == 1 and not miss.stdout
    assert miss.stderr.count("\n") == 1 and "key_path_not_found" in miss.stderr and "(try: " in miss.stderr
    unknown = _run(env, "show", "no_such_handle_1")
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1 and "Traceback" not in unknown.stderr
    usage = _run(env, "slice", h, "1", "2", "3")
    assert usage.returncode == 2 and "slice takes START END" in usage.stderr
    empty = _run(env, "spill", stdin=b"")
    assert empty.returncode != 0 and "stdin" in empty.stderr


def _run_hint(env: dict[str, str], stderr: str) -> subprocess.CompletedProcess[str]:
    """Run the command line a refusal's ``(try: …)`` names, as a person would paste it."""
    import shlex

    hint = stderr.rsplit("(try: ", 1)[1].rstrip().removesuffix(")")
    words = shlex.split(hint)
    assert words[0] == "jupyter-scratchpad", hint
    return _run(env, *words[1:])


def test_every_hint_is_a_command_line_that_runs(spilled: tuple[dict[str, str], str], tmp_path: Path) -> None:
    # the hints were tool calls (try: slice(handle="k8s_…", start=1, end=1740)), which a shell
    # user had to translate into this command's words
    env, h = spilled
    refusals = {
        "head_too_large": ("head", h, "900000"),
        "iterate_over_too_large": ("iter", h, "items", "metadata.name,status.phase", "100000"),
        "get_in_too_large": ("get", h, "items"),
        "sql_error": ("sql", f"SELECT *\nFROM {h}.itemz"),  # a newline: the hint stays one line
        "unknown_tool": ("call", "heads", json.dumps({"handle": h, "lines": 3})),
    }
    for code, argv in refusals.items():
        refused = _run(env, *argv)
        assert refused.returncode == (2 if code == "unknown_tool" else 1), (code, refused.returncode)  # a usage error
        assert code in refused.stderr and "(try: jupyter-scratchpad " in refused.stderr, refused.stderr
        assert refused.stderr.count("\n") == 1, refused.stderr
        ran = _run_hint(env, refused.stderr)
        assert ran.returncode == 0 and ran.stdout.strip(), (argv, refused.stderr, ran.stderr)
    # the store options of the refused command come along (a store given by --store, a smaller page)
    store = str(tmp_path / "given")
    bare = {k: v for k, v in env.items() if k != "SCRATCHPAD_STORE"}
    put = _run(bare, "spill", "--store", store, "--tool", "k8s", "--json", stdin=json.dumps(PODS).encode())
    h2 = json.loads(put.stdout)["handle"]
    refused = _run(bare, "iter", "--store", store, "--max-tokens", "2000", h2, "items", "metadata.name", "3000")
    assert f"--store {store} --max-tokens 2000" in refused.stderr, refused.stderr
    ran = _run_hint(bare, refused.stderr)
    assert ran.returncode == 0 and '[0,"pod-0"]' in ran.stdout, ran.stderr
    # a --store given before the subcommand (documented) comes along too: the hint read the default store
    refused = _run(bare, "--store", store, "head", h2, "900000")
    assert f"--store {store}" in refused.stderr and _run_hint(bare, refused.stderr).returncode == 0, refused.stderr
    # --json: each suggestion also carries its command line
    as_json = json.loads(_run(env, "head", h, "900000", "--json").stdout)
    assert all(s["cli"].startswith("jupyter-scratchpad ") for s in as_json["error"]["suggestions"])


def test_a_closed_pipe_and_bad_numbers(spilled: tuple[dict[str, str], str]) -> None:
    env, h = spilled
    # | head -1: "[Errno 32] Broken pipe" and exit 2 (a usage or store problem) before
    cli = [sys.executable, "-m", "jupyter_scratchpad.cli", "slice", h, "1", "30000", "--max-tokens", "0"]
    piped = subprocess.run(f"{shlex.join(cli)} | head -1; echo rc=${{PIPESTATUS[0]}}", shell=True,
                           executable="/bin/bash", env=env, capture_output=True, text=True, timeout=60)
    assert piped.stdout.endswith("rc=141\n") and piped.stdout.count("\n") == 2 and piped.stderr == "", piped
    negative = _run(env, "head", h, "5", "--max-tokens", "-5")  # was taken: "over the page of -5 tokens"
    assert negative.returncode == 2 and "0 or more" in negative.stderr
    superscript = _run(env, "head", h, "²")  # was: invalid literal for int()
    assert superscript.returncode == 2 and "invalid literal" not in superscript.stderr and "lines" in superscript.stderr


def test_notes_rm_and_sweep(spilled: tuple[dict[str, str], str]) -> None:
    env, h = spilled
    assert _run(env, "notes", "plan", '{"step": 2}').returncode == 0
    read = _run(env, "notes", "plan", "--json")
    assert json.loads(read.stdout)["data"] == {"step": 2}
    assert "plan" in _run(env, "notes").stdout
    assert _run(env, "notes", "plan", "--delete").returncode == 0
    assert _run(env, "notes", "plan").returncode == 1
    assert _run(env, "rm", h).returncode == 0
    assert _run(env, "rm", h).returncode == 1
    swept = _run(env, "sweep", "--json")
    assert swept.returncode == 0 and json.loads(swept.stdout)["removed"] >= 0


def test_small_mistakes_are_said_not_guessed(spilled: tuple[dict[str, str], str], tmp_path: Path) -> None:
    env, h = spilled
    assert _run(env, "notes", "plan", "1").returncode == 0
    # --delete without a key listed the notes; with a value, deleted and ignored the value
    bare = _run(env, "notes", "--delete")
    assert bare.returncode == 2 and "needs the KEY" in bare.stderr and "plan" not in bare.stdout
    assert _run(env, "notes", "plan", "2", "--delete").returncode == 2
    assert json.loads(_run(env, "notes", "plan", "--json").stdout)["data"] == 1  # nothing was changed
    # --run-id "" read the run "default" without a word
    empty = _run(env, "ls", "--run-id", "")
    assert empty.returncode == 2 and "--run-id needs a name" in empty.stderr and h not in empty.stdout
    # rm stopped at an invalid handle: the valid ones after it stayed
    two = _run(env, "rm", "nope", "BAD!", h)
    assert two.returncode == 2 and "invalid handle 'BAD!'" in two.stderr  # (an invalid one: a usage error)
    assert "no live handle 'nope'" in two.stderr
    assert h not in _run(env, "ls").stdout
    # a misspelt --store was made, tree and all, and listed as empty
    typo = tmp_path / "no" / "such" / "store"
    for words in (["ls"], ["show", h], ["head", h], ["usage"], ["notes"]):
        out = _run(env, *words, "--store", str(typo))
        assert out.returncode == 2 and "no store at" in out.stderr, (words, out.stderr)
    assert not (tmp_path / "no").exists()
    wrote = _run(env, "notes", "k", "v", "--store", str(typo))  # a write makes it
    assert wrote.returncode == 0 and typo.exists()


def test_an_empty_pipe_into_spill_is_said_as_such(spilled: tuple[dict[str, str], str]) -> None:
    # probe Y: `failing-command | jupyter-scratchpad spill` answered with how to use spill
    env, h = spilled
    out = _run(env, "spill", "--tool", "k8s", stdin=b"")
    assert out.returncode == 2 and "stdin was empty: nothing to store" in out.stderr, out.stderr
    assert h in _run(env, "ls").stdout  # (what was stored stays)


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".parquet", ".csv"])
def test_export_writes_files_others_can_read(spilled: tuple[dict[str, str], str], tmp_path: Path,
                                             suffix: str) -> None:
    env, h = spilled
    dest = tmp_path / f"out{suffix}"
    out = _run(env, "export", h, "--to", str(dest))
    assert out.returncode == 0, out.stderr
    if suffix == ".json":
        assert json.loads(dest.read_text()) == PODS  # the output's own bytes
        dest.write_text("mine")
        kept = _run(env, "export", h, "--to", str(dest))  # an existing file is kept, as the help says
        assert kept.returncode != 0 and "--overwrite" in kept.stderr and dest.read_text() == "mine"
        assert _run(env, "export", h, "--to", str(dest), "--overwrite").returncode == 0
        assert json.loads(dest.read_text()) == PODS
        return
    if suffix == ".jsonl":
        rows = [json.loads(line) for line in dest.read_text().splitlines()]
        assert len(rows) == 3000 and rows[5]["metadata"]["name"] == "pod-5"
        return
    reader = "read_parquet" if suffix == ".parquet" else "read_csv"
    n = duckdb.sql(f"SELECT count(*) FROM {reader}('{dest}')").fetchall()
    assert n == [(3000,)]
    bad = _run(env, "export", h, "--to", str(tmp_path / "out.xlsx"))
    assert bad.returncode == 2 and ".parquet" in bad.stderr and not (tmp_path / "out.xlsx").exists()


def test_replay_runs_the_policy_lab_on_a_trace(env: dict[str, str]) -> None:
    data = Path(__file__).parent.parent / "lab" / "data"
    table = _run(env, "replay", str(data / "trace.jsonl"), "--policy", str(data / "aura.toml"))
    assert table.returncode == 0, table.stderr
    assert "spills" in table.stdout and "tokens_saved" in table.stdout
    rows = _run(env, "replay", str(data / "trace.jsonl"), "--json")
    assert rows.returncode == 0 and all("decision" in r for r in json.loads(rows.stdout))


def test_a_store_held_by_another_process_is_named_not_a_traceback(tmp_path: Path, env: dict[str, str]) -> None:
    import os

    from jupyter_scratchpad import ScratchStore

    with ScratchStore(tmp_path / "held"):
        out = _run(env, "ls", "--store", str(tmp_path / "held"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert f"open in process {os.getpid()}" in out.stderr


def test_a_store_url_comes_along_in_hints_but_never_a_password(monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from jupyter_scratchpad.cli._main import _cli_hint

    monkeypatch.delenv("SCRATCHPAD_STORE_URL", raising=False)
    call = {"tool": "head", "arguments": {"handle": "h1", "lines": 3}}
    for url, shown in (("postgresql://me@db/s", True), ("postgresql://me:pw@db/s", False),
                       ("postgresql://db/s?password=pw", False)):
        hint = _cli_hint(argparse.Namespace(store_url=url), call)
        assert (f"--store-url {url}" in hint) is shown and "pw" not in hint, hint
    monkeypatch.setenv("SCRATCHPAD_STORE_URL", "postgresql://me@db/s")  # from the environment: it still is
    assert "--store-url" not in _cli_hint(argparse.Namespace(store_url="postgresql://me@db/s"), call)


def test_a_url_in_the_wrong_option_is_refused_and_its_password_never_printed(tmp_path: Path, env: dict[str, str]) -> None:
    """--store takes a directory: a URL there made folders named after it (the password in a path)
    and said the store was empty; --store-url echoed a URL it refused, password and all."""
    secret = "S3cretPW"
    for args in (
        ["--store", f"postgresql+psycopg://app:{secret}@db.internal/x"],
        ["--store", f"postgresql://app:{secret}@db.internal/x"],
        ["--store-url", f"postgresql+psycopg://app:{secret}@db/x"],
        ["--store-url", f"app:{secret}@db/x"],
        ["--store-url", f" mysql://app:{secret}@db/x"],
    ):
        out = _run({**env, "HOME": str(tmp_path)}, "ls", *args, cwd=tmp_path)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert secret not in out.stdout + out.stderr and out.stderr.count("\n") == 1, out.stderr
        assert list(tmp_path.iterdir()) == [], args  # nothing created
    both = _run(env, "ls", "--store", str(tmp_path / "a"), "--store-url", "postgresql://u@h/d")
    assert both.returncode == 2 and "one store" in both.stderr
    bodies = _run(env, "ls", "--store", str(tmp_path / "a"), "--bodies", str(tmp_path / "b"))
    assert bodies.returncode == 2 and "--bodies goes with --store-url" in bodies.stderr


def test_a_terminal_is_shown_stored_escapes_never_obeys_them(tmp_path: Path, env: dict[str, str]) -> None:
    import os
    import pty

    env = {**env, "SCRATCHPAD_STORE": str(tmp_path / "store")}
    logs = b"".join(b"%d ok\n" % i for i in range(3000)) + b"x \x1b]0;PWNED\x07 \x1b[31mRED\n"
    out = _run(env, "spill", "--tool", "logs", "--json", stdin=logs)
    h = json.loads(out.stdout)["handle"]
    piped = _run(env, "grep", h, "RED")
    assert "\x1b]0;PWNED\x07" in piped.stdout  # a pipe gets the stored text
    leader, follower = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "jupyter_scratchpad.cli", "grep", h, "RED"], env=env,
                          stdout=follower, stderr=subprocess.PIPE, timeout=120)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0 and b"RED" in shown
    assert b"\x1b" not in shown and b"\x07" not in shown and "\ufffd".encode() in shown


@pytest.mark.parametrize(("option", "value"), [
    ("--http", "127.0.0.1:99999"), ("--http", "8765"), ("--http", "[::1]:0"), ("--prefix", "bad prefix!"),
])
def test_serve_options_are_checked_before_anything_starts(env: dict[str, str], option: str, value: str) -> None:
    """A port out of range was a uvicorn traceback (exit 3) after the store was opened; a prefix
    with a space made tool names MCP clients refuse."""
    out = _run(env, "mcp", "serve", "--ephemeral", option, value)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"argument {option}:" in out.stderr and repr(value) in out.stderr


def test_rm_says_what_it_deleted(spilled: tuple[dict[str, str], str]) -> None:
    # rm printed nothing, even with --json: neither a person nor a script could tell
    env, h = spilled
    again = _run(env, "spill", "--tool", "k8s", "--json", stdin=(json.dumps(PODS) + " ").encode())
    other = json.loads(again.stdout)["handle"]
    out = _run(env, "rm", h)
    assert out.returncode == 0 and out.stdout == f"deleted {h}\n", out
    both = _run(env, "rm", other, h, "--json")
    assert both.returncode == 1 and json.loads(both.stdout) == {
        "ok": False, "data": {"deleted": [other]}, "error": "1 of 2 not deleted",
    }  # fmt: skip


def test_cli_grep_takes_the_magics_flags_and_no_option_is_abbreviated(spilled: tuple[dict[str, str], str]) -> None:
    # --max 2 (as %scratch grep takes it) was read as --max-tokens 2: the grep was refused
    env, h = spilled
    out = _run(env, "grep", h, "RUNNING", "-i", "--max", "2", "-C", "0")
    assert out.returncode == 0, out.stderr
    assert "2 of " in out.stdout and "(max_matches=2)" in out.stdout and "\n--\n" not in out.stdout
    shown = [line for line in out.stdout.splitlines() if not line.startswith("---")]
    assert len(shown) == 2 and all('"phase": "Running"' in line for line in shown), out.stdout
    short = _run(env, "grep", h, "Running", "--max-tok", "5")
    assert short.returncode == 2 and "unrecognized arguments: --max-tok" in short.stderr


def test_a_stubs_next_steps_here_are_command_lines_that_run(spilled: tuple[dict[str, str], str]) -> None:
    # probe Y: the CLI's stub said `schema → item_schema path="$.items" → iterate_over / get_in`, a
    # model's tool syntax, where a person at a shell runs commands
    env, h = spilled
    shown = _run(env, "show", h)
    assert shown.returncode == 0 and "Next, with this handle" not in shown.stdout
    steps = [line.strip() for line in shown.stdout.split("\nNext:\n")[1].splitlines()]
    assert steps and all(s.startswith("jupyter-scratchpad ") and "…" not in s for s in steps), steps
    assert any(" item-schema " in s for s in steps)
    for step in steps:
        words = shlex.split(step)[1:]
        ran = _run(env, *words)
        assert ran.returncode == 0, (step, ran.stderr)
