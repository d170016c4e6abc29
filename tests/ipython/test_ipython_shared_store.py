"""Two real kernels on one shared store (a PostgreSQL catalog, bodies in a directory): what one kernel
spills, the other reads back while both hold the store open; a store URL that cannot be used is one
clear message, not a traceback, and the kernel keeps the store it had."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ipython_helpers import CHILD_ENV, START_TIMEOUT_S, message_text
from jupyter_client.manager import KernelManager

from jupyter_scratchpad.ipython import STUB_MIME

RUN, AGENT = "shared-run", "analyst"
ROWS = 4000
LOG_LINES = 6000
# The objects the kernels build; the test computes the same ones to compare with what comes back.
DATA_EXPR = f"{{'rows': [{{'id': i, 'name': f'row-{{i}}', 'ok': i % 7 > 0}} for i in range({ROWS})]}}"
LOG_CODE = f"for i in range({LOG_LINES}):\n    print(f'log line {{i}}: worker {{i % 13}} handled job {{i * 7}}')"


def expected_data() -> Any:
    return eval(DATA_EXPR)  # our own literal: the one the kernel evaluates


def expected_log() -> str:
    return "".join(f"log line {i}: worker {i % 13} handled job {i * 7}\n" for i in range(LOG_LINES))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# In the kernels: a canonical digest of a value, so 100 KB need not cross iopub (which would spill it).
DIGEST_FN = (
    "import hashlib, json\n"
    "def _digest(v):\n"
    "    t = v if isinstance(v, str) else json.dumps(v, sort_keys=True)\n"
    "    return hashlib.sha256(t.encode()).hexdigest()\n"
)


def canonical(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class Kernel:
    """A python3 kernel in its own process (jupyter_client); ``execute`` returns the reply and messages."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=env)
        self.client = self.manager.client()
        self.client.start_channels()

    def wait(self) -> Kernel:
        self.client.wait_for_ready(timeout=START_TIMEOUT_S)
        return self

    def execute(self, code: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        messages: list[dict[str, Any]] = []
        reply = self.client.execute_interactive(code, output_hook=messages.append, timeout=START_TIMEOUT_S)
        return reply["content"], messages

    def run(self, code: str) -> str:
        """Run ``code``; its stdout, stderr and results' text (an error reply fails the test)."""
        reply, messages = self.execute(code)
        text = text_of(messages)
        assert reply["status"] == "ok", (reply, text)
        return text

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def text_of(messages: list[dict[str, Any]]) -> str:
    return "".join(message_text(msg) for msg in messages)


def stub_of(messages: list[dict[str, Any]]) -> dict[str, Any]:
    [stub] = [
        m["content"]["data"][STUB_MIME]
        for m in messages
        if m["msg_type"] in ("execute_result", "display_data") and STUB_MIME in m["content"]["data"]
    ]
    return stub


def kernel_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    # A default bodies directory would go under XDG_CACHE_HOME: point it into tmp_path to see it stay unused.
    env = {k: v for k, v in CHILD_ENV.items() if k not in ("SCRATCHPAD_STORE_URL", "SCRATCHPAD_BODIES")}
    return {**env, "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), **extra}


def use_shared_store(kernel: Kernel, url: str, bodies: Path) -> None:
    # The agent comes from the configuration the extension loads with (as ipython_config.py would set it):
    # once loaded, the pad's run is owned by its agent, so %config ScratchMagics.agent_id is refused.
    # The bodies go before the URL, else the URL opens with the default bodies directory.
    out = kernel.run(
        f"get_ipython().config.ScratchMagics.agent_id = {AGENT!r}\n"
        "%load_ext jupyter_scratchpad\n"
        f"%config ScratchMagics.store_bodies = {str(bodies)!r}\n"
        f"%config ScratchMagics.store_url = {url!r}\n"
        f"%config ScratchMagics.run_id = {RUN!r}\n"
    )
    assert "not applied" not in out and "ERROR" not in out, out
    # %config logs a value it could not apply instead of raising: check what is in force.
    state = kernel.run(
        DIGEST_FN + "from jupyter_scratchpad.ipython import get_session\n"
        "_s = get_session()\nprint(_s.store.shared, _s.magics.store_url == "
        f"{url!r}, _s.pad.run_id, _s.pad.agent_id)"
    )
    assert state.split() == ["True", "True", RUN, AGENT]


@pytest.fixture
def pair(tmp_path: Path, pg_url: str) -> Iterator[tuple[Kernel, Kernel]]:
    """Two kernels of one machine on the same shared store, run and agent, both open at once."""
    env = kernel_env(tmp_path)
    kernels = [Kernel(tmp_path, env), Kernel(tmp_path, env)]  # started together, then waited for
    try:
        for k in kernels:
            k.wait()
            use_shared_store(k, pg_url, tmp_path / "bodies")
        yield kernels[0], kernels[1]
    finally:
        for k in kernels:
            k.close()


def test_what_one_kernel_spills_the_other_reads_back(pair: tuple[Kernel, Kernel], tmp_path: Path) -> None:
    k1, k2 = pair
    # kernel 1: a huge result auto-spills; the handle is in the stub that crossed iopub
    reply, messages = k1.execute(DATA_EXPR)
    assert reply["status"] == "ok"
    stub = stub_of(messages)
    handle = stub["handle"]
    assert stub["format"] == "json" and handle.startswith("cell_")
    wire = json.dumps([m["content"] for m in messages])
    assert f"row-{ROWS // 2}" not in wire and len(wire) < 12_000  # the payload stayed out of the notebook
    # kernel 1: %%scratch --name stores a cell's stdout under a chosen handle
    reply, messages = k1.execute(f"%%scratch --name shared_log --force\n{LOG_CODE}")
    assert reply["status"] == "ok" and stub_of(messages)["handle"] == "shared_log"
    assert f"log line {LOG_LINES // 2}:" not in text_of(messages)
    bodies = tmp_path / "bodies"
    assert (bodies / "STORE_ID").is_file() and len(list((bodies / "bodies").iterdir())) == 2
    assert not (tmp_path / "xdg-cache" / "jupyter-scratchpad").exists()  # the configured bodies dir, only

    # kernel 2 (open since before the spills) reads both back: the magics, then the Python API
    reply, messages = k2.execute("%scratch head shared_log -n 3")
    assert reply["status"] == "ok", reply
    [result] = [m for m in messages if m["msg_type"] == "execute_result"]
    head = result["content"]["data"]["text/plain"]
    assert head.splitlines()[:3] == [f"{n + 1}\t{line}" for n, line in enumerate(expected_log().splitlines()[:3])]
    assert f"of {LOG_LINES:,}" in head
    last = k2.run(f"r = %scratch get {handle} rows[{ROWS - 1}]\nprint(json.dumps(r))")
    assert json.loads(last) == expected_data()["rows"][ROWS - 1]
    got = k2.run(f"_v = get_session().pad.get({handle!r})\nprint(len(_v['rows']), _digest(_v))").split()
    assert got == [str(ROWS), digest(canonical(expected_data()))]
    got = k2.run("_t = get_session().pad.get('shared_log')\nprint(len(_t), _digest(_t))").split()
    assert got == [str(len(expected_log())), digest(expected_log())]
    listed = k2.run("print(sorted(e['handle'] for e in get_session().pad.entries('handle')))")
    assert listed.strip() == repr(sorted([handle, "shared_log"]))

    # and back: kernel 2 writes, kernel 1 (still open) reads
    k2.run(f"get_session().pad.scratch_write('from_k2', {{'step': 2, 'seen': {handle!r}}})")
    assert json.loads(k1.run("print(json.dumps(get_session().pad.scratch_read('from_k2')))")) == {
        "step": 2,
        "seen": handle,
    }

    # the sharing is by run: kernel 2 on another run sees none of it
    assert k2.run("%config ScratchMagics.run_id = 'another-run'\nprint(get_session().pad.entries())").strip() == "[]"
    reply, messages = k2.execute(f"%scratch head {handle}")
    assert reply["status"] == "error" and reply["ename"] == "UsageError" and "no live handle" in reply["evalue"]


def test_a_store_url_that_cannot_be_used_is_one_clear_message(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-socket-dir"
    bad = f"postgresql://postgres@/nodb?host={missing}&port=5999"
    k = Kernel(
        tmp_path, kernel_env(tmp_path, SCRATCHPAD_STORE_URL=bad, SCRATCHPAD_BODIES=str(tmp_path / "bodies"))
    ).wait()
    try:
        # $SCRATCHPAD_STORE_URL is the default: loading fails with a UsageError, no traceback
        reply, messages = k.execute("%load_ext jupyter_scratchpad")
        shown = text_of(messages)
        assert reply["status"] == "error" and reply["ename"] == "UsageError" and reply["traceback"] == []
        assert reply["evalue"].startswith(f"jupyter-scratchpad: the shared store's PostgreSQL ({bad}) is unavailable")
        assert str(missing) in reply["evalue"] and "retry when it is back" in reply["evalue"]
        assert shown.startswith("UsageError: jupyter-scratchpad: ") and "Traceback" not in shown
        assert len(shown) < 1000
        assert k.run("print(get_ipython().find_line_magic('scratch'))").strip() == "None"  # nothing half-loaded

        # without the variable the extension loads (an embedded temporary store) ...
        out = k.run("import os\ndel os.environ['SCRATCHPAD_STORE_URL']\n%load_ext jupyter_scratchpad")
        assert "outputs of 5,120+ tokens" in out
        k.run("%scratch write kept 41")
        # ... and setting the bad URL then says why in one logged message, keeping the store it had
        out = k.run(f"%config ScratchMagics.store_url = {bad!r}")
        assert f"ScratchMagics.store_url = {bad!r} was not applied: jupyter-scratchpad: the shared store's" in out
        assert "is unavailable" in out and "Kept: a temporary store at " in out
        assert "Traceback" not in out and len(out) < 1000
        state = (
            "from jupyter_scratchpad.ipython import get_session\n_s = get_session()\n"
            "print(_s.magics.store_url, _s.store.shared, _s.pad.scratch_read('kept'))"
        )
        assert k.run(state).split() == ["None", "False", "41"]

        # another database is refused before anything is opened, naming what is accepted
        out = k.run("%config ScratchMagics.store_url = 'mysql://x'")
        assert "ScratchMagics.store_url must be a postgresql:// URL or None, not 'mysql://x'" in out
        assert "Traceback" not in out and out.count("\n") == 1
        # ... without its password (it was echoed into the notebook's output as written)
        for url in ("postgresql+psycopg://alice:S3cr3tPW@db/x", "host=db user=alice password=S3cr3tPW"):
            out = k.run(f"%config ScratchMagics.store_url = {url!r}")
            assert "must be a postgresql:// URL" in out and "S3cr3tPW" not in out, out
        assert k.run(state).split() == ["None", "False", "41"]
    finally:
        k.close()
