"""Fixtures of the comm tests."""

from __future__ import annotations

import pytest
from comm_helpers import pods

from jupyter_scratchpad import Scratchpad


@pytest.fixture
def spilled(pad: Scratchpad) -> str:
    """The handle of a spilled pod listing."""
    result = pad.intercept(pods(800), tool="k8s_list_pods")
    assert result.spilled
    assert result.handle is not None
    return result.handle
