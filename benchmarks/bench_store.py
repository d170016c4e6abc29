"""Why bodies are files: the store's body layout against keeping the body as a DuckDB BLOB.

``jupyter_scratchpad/store/_store.py`` keeps each body as files (raw bytes, normalised body, a
sparse line index) beside the DuckDB catalog, and says so because of these numbers. Ours is the
store's own ``write_body_dir`` and ``BodyReader``; the alternative is a ``BLOB`` column in a
DuckDB table (on disk, checkpointed). Both sides read the same range (the file side finds it
through its line index; the DuckDB side is handed the offsets). DuckDB has no substring of a
BLOB, so the read compares against a ``VARCHAR`` column (the body is ASCII: characters = bytes).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._data import log_text
from benchmarks._harness import check, result, time_side_by_side


def run(quick: bool) -> list[dict[str, Any]]:
    import duckdb

    from jupyter_scratchpad.store._bodies import BodyReader, write_body_dir

    size = (10 if quick else 100) << 20
    runs = 3 if quick else 5
    body = log_text(size, seed=61).encode()
    data = f"service log, {size >> 20} MB"
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        root = Path(tmp)
        conn = duckdb.connect(str(root / "blobs.duckdb"))
        try:
            conn.execute("CREATE TABLE bodies (id INTEGER PRIMARY KEY, body BLOB)")
            conn.execute("CREATE TABLE texts (id INTEGER PRIMARY KEY, body VARCHAR)")
            conn.execute("INSERT INTO texts VALUES (0, ?)", [body.decode()])
            conn.execute("CHECKPOINT")

            def write_files(i: int) -> int:
                directory = root / f"body-{i}"
                stats = write_body_dir(directory, body, None)
                # the same durability as the baseline's CHECKPOINT: every file and the directory
                # on disk before the call returns
                for path in directory.iterdir():
                    fd = os.open(path, os.O_RDONLY)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                fd = os.open(directory, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                return stats.body_bytes

            def write_blob(i: int) -> int:
                conn.execute("INSERT INTO bodies VALUES (?, ?)", [i, body])
                conn.execute("CHECKPOINT")
                return size

            ours_s, base_s, failure = time_side_by_side(write_files, write_blob, runs)
            rows.append(
                result(
                    "write a body",
                    ours_s,
                    "INSERT as a DuckDB BLOB + CHECKPOINT",
                    base_s,
                    data,
                    notes=(
                        "Ours writes the raw file and builds the sparse line index (numpy), then fsyncs "
                        "the files and their directory; the baseline's CHECKPOINT syncs its file: the "
                        "same durability on both sides."
                    ),
                    failure=failure,
                )
            )
            reader = BodyReader(root / "body-0")
            middle = reader.line_count // 2
            start, end = reader.line_span(middle, middle + 49)

            def read_files(i: int) -> bytes:
                a, b = reader.line_span(middle, middle + 49)
                return reader.read_body(a, b)

            def read_blob(i: int) -> bytes:
                row = conn.execute(
                    "SELECT substr(body, ?, ?) FROM texts WHERE id = 0", [start + 1, end - start]
                ).fetchone()
                check(row is not None, "no row 0 in texts")
                return str(row[0]).encode()

            def same(a: bytes, b: bytes) -> None:
                check(a == b, "the file and the BLOB returned different bytes")

            ours_s, base_s, failure = time_side_by_side(read_files, read_blob, runs, check_pair=same)
            rows.append(
                result(
                    "read 50 lines from the middle of a body",
                    ours_s,
                    "substr() of a DuckDB VARCHAR",
                    base_s,
                    data,
                    notes=(
                        f"{end - start:,} bytes. Ours finds the lines through the index, then seeks "
                        "and reads; the DuckDB side is given the offsets, and reads the whole "
                        "value to take a substring of it (its time grows with the body)."
                    ),
                    failure=failure,
                )
            )
        finally:
            conn.close()
    return rows
