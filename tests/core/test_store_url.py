"""A URL given as the store is PostgreSQL's or refused, and nothing is created for a refused one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.errors import InvalidArgumentError


@pytest.mark.parametrize("url", [
    "postgresql+psycopg://app:s3cret@db.internal/scratch",  # was ./postgresql+psycopg:/app:s3cret@…/
    " postgresql+psycopg://app:s3cret@db.internal/scratch",
    "mysql://app:s3cret@db/x",  # was ./mysql:/app:s3cret@db/x/{bodies,tmp}, then a DuckDB error
    "pg://app:s3cret@db/x",
])
def test_another_scheme_is_refused_and_nothing_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          url: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentError) as refused:
        ScratchStore(url)
    assert "postgresql://" in str(refused.value) and "s3cret" not in str(refused.value) + repr(refused.value.context)
    assert os.listdir(tmp_path) == []


def test_the_scheme_of_a_postgresql_url_is_read_in_any_case(pg_url: str, tmp_path: Path) -> None:
    upper = " POSTGRESQL" + pg_url[pg_url.index("://"):] + " "
    with ScratchStore(upper, bodies=tmp_path / "bodies") as store:
        assert store.url is not None and store.url.startswith("postgresql://")
        pad = store.scratchpad(run_id="r", agent_id="a")
        assert pad.intercept("x\n" * 5000, tool="t", force=True).spilled
