"""Shared fixtures: every store a test opens is closed by the fixture."""

from __future__ import annotations

import os
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


class FakeClock:
    """A clock tests move by hand, so TTLs need no sleeping."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[ScratchStore]:
    s = ScratchStore(tmp_path / "store", sweep_interval_s=None, clock=clock)
    yield s
    s.close()


@pytest.fixture
def pad(store: ScratchStore) -> Scratchpad:
    return store.scratchpad(run_id="run-1", agent_id="agent-1", model="gpt-4o")
