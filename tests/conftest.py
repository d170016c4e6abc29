"""Shared fixtures: every store a test opens is closed by the fixture."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# Keep Jupyter, IPython and matplotlib from writing under ~ during tests.
_WORK = Path(os.environ.get("SCRATCHPAD_TEST_HOME", "/tmp/jupyter-scratchpad-test-home"))
for var, sub in (
    ("IPYTHONDIR", "ipython"),
    ("JUPYTER_CONFIG_DIR", "jupyter-config"),
    ("JUPYTER_DATA_DIR", "jupyter-data"),
    ("JUPYTER_RUNTIME_DIR", "jupyter-runtime"),
    ("MPLCONFIGDIR", "mpl"),
):
    os.environ.setdefault(var, str(_WORK / sub))
    Path(os.environ[var]).mkdir(parents=True, exist_ok=True)
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

from jupyter_scratchpad import Scratchpad, ScratchStore  # noqa: E402
from tests.pgserver import PgServer, start_server  # noqa: E402


class FakeClock:
    """A clock tests move by hand, so TTLs need no sleeping."""

    # (in the past: a shared store's sweep never runs ahead of its database's own clock)
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL server for the whole session: started here, stopped by PID at the end."""
    server = start_server()
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """A fresh database on the session's server (a scratch layout per test, nothing shared)."""
    return pg_server.create_database(f"t_{uuid.uuid4().hex[:16]}")


#: The backends the store contract runs on; a module opts in with ``store = backend_store``.
BACKENDS = ("embedded", "postgres")


def open_backend_store(backend: str, request: pytest.FixtureRequest, tmp_path: Path, **kw: object) -> ScratchStore:
    if backend == "embedded":
        return ScratchStore(tmp_path / "store", **kw)  # type: ignore[arg-type]
    return ScratchStore(request.getfixturevalue("pg_url"), bodies=tmp_path / "bodies", **kw)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def backend_store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[ScratchStore]:
    """The ``store`` fixture on every backend: the embedded DuckDB catalog and shared PostgreSQL."""
    s = open_backend_store(request.param, request, tmp_path, sweep_interval_s=None, clock=clock)
    yield s
    s.close()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[ScratchStore]:
    s = ScratchStore(tmp_path / "store", sweep_interval_s=None, clock=clock)
    yield s
    s.close()


@pytest.fixture
def pad(store: ScratchStore) -> Scratchpad:
    return store.scratchpad(run_id="run-1", agent_id="agent-1", model="gpt-4o")
