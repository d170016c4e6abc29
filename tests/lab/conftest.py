"""Fixtures of the policy-lab tests: the committed sample data and a generated trace with known answers."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
from lab_known import DATA, KnownTrace, write_known_trace

matplotlib.use("Agg")  # figures are rendered headless, as in CI


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def known_trace(tmp_path: Path) -> KnownTrace:
    return write_known_trace(tmp_path)
