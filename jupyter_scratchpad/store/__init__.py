"""The DuckDB-backed scratch store: catalog, scoped entries, TTL, bodies on disk."""

from ._bodies import BodyReader
from ._entry import Entry, Scope, validate_handle, validate_key, validate_ttl
from ._format import Normalised, as_text, normalise
from ._store import ScratchStore

__all__ = [
    "BodyReader",
    "Entry",
    "Normalised",
    "Scope",
    "ScratchStore",
    "as_text",
    "normalise",
    "validate_handle",
    "validate_key",
    "validate_ttl",
]
