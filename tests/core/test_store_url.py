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


@pytest.mark.parametrize("store", [
    "host=db port=5432 dbname=x user=app password=s3cret",  # libpq's key=value form
    "postgresql//app:s3cret@db/x",  # a ':' short: was ./postgresql/app:s3cret@db/x, embedded
    "postgresql:/app:s3cret@db/x",  # a '/' short
])
def test_a_postgresql_lookalike_is_refused_and_nothing_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  store: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentError) as refused:
        ScratchStore(store)
    assert "postgresql://" in str(refused.value) and "s3cret" not in str(refused.value) + repr(refused.value.context)
    assert os.listdir(tmp_path) == []


def test_directories_named_like_the_words_stay_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("postgres", "postgresdata", "my-host=dir"):
        ScratchStore(name).close()
    assert sorted(os.listdir(tmp_path)) == ["my-host=dir", "postgres", "postgresdata"]


@pytest.mark.parametrize("password", ["s3c/r3t", "s3cr@t", "s3c?r:t"])
def test_a_password_holding_url_characters_is_redacted_whole(password: str) -> None:
    # "s3c/r3t" was shown whole ("…alice:s3c/r3t@/x…"), "s3cr@t" as "…alice:***@t@db…"
    from jupyter_scratchpad.store._pgcatalog import redact_url

    shown = redact_url(f"postgresql://alice:{password}@db.internal:5432/x?sslmode=require")
    assert shown == "postgresql://alice:***@db.internal:5432/x?sslmode=require"
