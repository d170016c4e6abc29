"""``%scratch export H [PATH] --to parquet|csv|json|jsonl [-o FILE]``: write a handle out to a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from .._args import ScratchArgumentParser
from ._base import Command, require_stub

FORMATS = ("parquet", "csv", "json", "jsonl")

PARSER = ScratchArgumentParser(
    "export",
    "Write handle H (or the array at PATH in it) to a file: parquet, csv, json or jsonl. The file "
    "is FILE (-o), else <H>.<format> in the current directory; the format is --to, else FILE's "
    "extension; an existing file is kept unless --overwrite. Same as session.pad.export(H, FILE, fmt=..., "
    "path=...).",
    epilog="example: %scratch export cell_3_ab12 items --to parquet -o pods.parquet",
)
PARSER.add_argument("handle", metavar="H")
PARSER.add_argument("path", metavar="PATH", nargs="?", default=None, help="a JSON path (default: the whole value)")
PARSER.add_argument("--to", choices=FORMATS, default=None, dest="fmt", help="the file format")
PARSER.add_argument("-o", "--output", default=None, metavar="FILE", help="where to write")
PARSER.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")


def _format_of(output: str | None, fmt: str | None) -> str:
    if fmt is not None:
        return fmt
    suffix = Path(output).suffix.lstrip(".").lower() if output else ""
    if suffix in FORMATS:
        return suffix
    raise UsageError(
        "%scratch export: say the format with --to parquet|csv|json|jsonl (or give -o FILE with "
        "one of those extensions)"
    )


def run(session: Any, text: str, cell: str | None) -> Any:
    args = PARSER.parse(text)
    require_stub(session, "export", args.handle)
    fmt = _format_of(args.output, args.fmt)
    dest = Path(args.output).expanduser() if args.output else Path(f"{args.handle}.{fmt}")
    done = session.pad.export(args.handle, dest, fmt=fmt, path=args.path, overwrite=args.overwrite)
    rows = f"{done['rows']:,} rows, " if done.get("rows") is not None else ""
    print(
        f"%scratch export: wrote {args.handle}{' ' + args.path if args.path else ''} as {done['format']} "
        f"({rows}{done['bytes']:,} bytes) to {done['path']}"
    )
    return None


COMMAND = Command(
    "export", "export H [PATH] --to FMT", "write a handle to parquet/csv/json/jsonl", run, completes=("handle",)
)
