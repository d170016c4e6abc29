"""Probe Z: a person's query over a handle that expired is said as the tools say it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.errors import InvalidArgumentError


def test_a_persons_query_over_an_expired_handle_says_it_expired(tmp_path: Path, clock: Any) -> None:
    # the explorer's SQL tab and %scratch sql said "Catalog Error: Table with name … does not exist!"
    with ScratchStore(tmp_path / "s", sweep_interval_s=None, clock=clock) as store:
        pad = store.scratchpad("r", "a")
        handle = pad.spill([{"i": i, "v": "abc" * 5} for i in range(3000)], tool="t", ttl_s=60).handle
        assert len(pad.sql_df(f"SELECT count(*) AS n FROM {handle}")) == 1  # (live: read)
        clock.advance(120)
        with pytest.raises(InvalidArgumentError) as gone:
            pad.sql_df(f"SELECT count(*) AS n FROM {handle}")
        assert f"{handle!r} expired 60 s ago" in str(gone.value) and "spill the output again" in str(gone.value)
        assert gone.value.code == "expired_handle"
        assert "Catalog Error" not in str(gone.value)
        model = pad.call_tool("sql", {"query": f"SELECT count(*) AS n FROM {handle}"})
        assert model.error is not None and model.error["error"] == "expired_handle"  # (the same words)
