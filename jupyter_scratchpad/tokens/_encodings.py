"""Offline, verified tiktoken encodings.

``tiktoken.get_encoding`` downloads its ``.tiktoken`` files on first use, which must never happen
here. The ``bpe-openai`` wheel ships the same files gzipped; we decompress them, check them against
the sha256 that tiktoken itself pins (in ``tiktoken_ext/openai_public.py``) and build a
``tiktoken.Encoding`` with tiktoken's own pattern and special tokens.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.machinery
import importlib.util
import sys
import threading
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import TokenizerDataError

__all__ = ["EXPECTED_SHA256", "load_encoding", "load_linear_counter", "read_verified_ranks"]

# The hashes tiktoken pins for these files; tests/tokens checks they still equal the ones in
# tiktoken_ext/openai_public.py of the installed tiktoken.
EXPECTED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

_construct_lock = threading.Lock()


def read_verified_ranks(name: str) -> dict[bytes, int]:
    """The mergeable ranks of encoding ``name``, from bpe-openai's data, hash-checked."""
    expected = EXPECTED_SHA256.get(name)
    if expected is None:
        raise TokenizerDataError(
            f"no offline data for encoding {name!r}; available: {sorted(EXPECTED_SHA256)}",
            encoding=name,
        )
    try:
        packed = (_bpe_openai_dir() / "data" / f"{name}.tiktoken.gz").read_bytes()
        raw = gzip.decompress(packed)
    except (ModuleNotFoundError, FileNotFoundError, OSError, EOFError) as exc:
        raise TokenizerDataError(
            f"tokenizer data for {name!r} not found: install the pinned 'bpe-openai' package "
            "(pip install 'bpe-openai==0.1.4'); nothing is downloaded at run time",
            encoding=name,
        ) from exc
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected:
        raise TokenizerDataError(
            f"tokenizer data for {name!r} has sha256 {actual}, expected {expected} (tiktoken's "
            "pin); reinstall 'bpe-openai==0.1.4'",
            encoding=name,
            sha256=actual,
        )
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _bpe_openai_dir() -> Path:
    """Where bpe-openai is installed, found without importing it.

    Importing ``bpe_openai`` itself builds Python rank tables for every encoding (slow, and it
    warns); we only need its data files and its compiled counter.
    """
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bpe_openai")
    return Path(next(iter(spec.submodule_search_locations)))


def _tiktoken_spec(name: str, ranks: dict[bytes, int]) -> dict[str, Any]:
    """tiktoken's own constructor arguments for ``name``, with our verified ranks.

    The constructors in ``tiktoken_ext.openai_public`` call ``load_tiktoken_bpe(url, hash)``; we
    hand them our ranks instead (after checking the hash they ask for equals ours), so the pattern
    and the special tokens are exactly tiktoken's.
    """
    from tiktoken_ext import openai_public

    def offline_loader(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if expected_hash != EXPECTED_SHA256[name]:
            raise TokenizerDataError(
                f"tiktoken pins {expected_hash} for {name!r} but our data is "
                f"{EXPECTED_SHA256[name]}; pin tiktoken to the tested version",
                encoding=name,
            )
        return ranks

    with _construct_lock:
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = offline_loader
        try:
            spec: dict[str, Any] = getattr(openai_public, name)()
        finally:
            openai_public.load_tiktoken_bpe = original
    return spec


@cache
def load_encoding(name: str) -> Any:
    """A ``tiktoken.Encoding`` for ``name`` built offline (cached per process)."""
    import tiktoken

    spec = _tiktoken_spec(name, read_verified_ranks(name))
    return tiktoken.Encoding(
        spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
        explicit_n_vocab=spec.get("explicit_n_vocab"),
    )


@cache
def load_linear_counter(name: str) -> Any:
    """bpe-openai's linear-time exact counter for ``name`` (same data, compiled in)."""
    module = sys.modules.get("bpe_openai._bindings")
    if module is None:
        try:
            path = next(_bpe_openai_dir().glob("_bindings*.so"))
        except (ModuleNotFoundError, StopIteration) as exc:  # pragma: no cover - a hard dependency
            raise TokenizerDataError(
                "bpe-openai's compiled counter was not found; install 'bpe-openai==0.1.4'", encoding=name
            ) from exc
        loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(path))
        spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    return module.tokenizer_for_encoding(name)
