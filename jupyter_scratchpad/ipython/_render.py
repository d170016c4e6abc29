"""How the extension shows things: the stub MIME bundle, tool results, rows and the budget.

>>> bundle = stub_bundle({"handle": "h_1", "format": "text", "size": 10, "lines": 1, "tokens": 3,
...                       "preview": "x", "note": "preview: lines 1-1 of 1", "source_tool": "t"})
>>> sorted(bundle)
['application/vnd.jupyter.scratchpad.stub+json', 'text/html', 'text/plain']
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from ..explore._base import fmt_bytes
from ..store._format import dumps_compact

__all__ = ["STUB_MIME", "next_commands", "rows_html", "stub_bundle", "stub_html", "stub_text", "tool_result_html"]

STUB_MIME = "application/vnd.jupyter.scratchpad.stub+json"

_CARD = (
    "border:1px solid #b9c4d0;border-left:4px solid #4a7ab5;border-radius:3px;padding:6px 10px;"
    "margin:2px 0;font-family:var(--jp-ui-font-family,sans-serif);font-size:var(--jp-ui-font-size1,13px);"
    "max-width:72em"
)
_PRE = (
    "margin:4px 0;padding:4px 6px;background:var(--jp-layout-color2,#f5f5f5);max-height:18em;"
    "overflow:auto;font-size:var(--jp-code-font-size,12px)"
)
_MUTED = "color:var(--jp-ui-font-color2,#666)"


def next_commands(stub: dict[str, Any]) -> list[str]:
    """The ``%scratch`` commands worth running next on this stub's handle."""
    h = stub["handle"]
    if stub.get("format") in ("json", "jsonl"):
        path = _first_array_path(stub.get("schema") or []) or "PATH"
        rel = (stub.get("relations") or [{}])[-1].get("name") or h  # H.items counts the items, H one document
        fields = _item_keys(stub.get("schema") or [], path)
        return [
            f"%scratch schema {h}",
            f"%scratch items {h} {path}",
            *([f"%scratch iter {h} {path} --fields {','.join(fields[:2])} --limit 20"] if fields else []),
            f"%scratch grep {h} PATTERN",
            f"%scratch sql SELECT count(*) FROM {rel}",
            f"%scratch explore {h}",
        ]
    return [
        f"%scratch grep {h} PATTERN",
        f"%scratch head {h} -n 50",
        f"%scratch slice {h} START END",
        f"%scratch schema {h}",
        f"%scratch explore {h}",
    ]


def _first_array_path(sketch: list[str]) -> str | None:
    """``$.items`` from a schema-sketch line like ``$.items: array(3,000 items)``."""
    for line in sketch:
        path, _, kind = line.partition(": ")
        if kind.startswith("array(") and not path.endswith("[*]"):
            return path
    return None


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _item_keys(sketch: list[str], path: str) -> list[str]:
    """The keys of the objects in the array at ``path``, from a sketch line like
    ``$.items[*]: objects with keys id, status`` (only keys a ``--fields`` list can name as typed):
    the card suggested ``--fields a,b``, which fails on every real spill."""
    for line in sketch:
        where, _, kind = line.partition(": ")
        if where == f"{path}[*]" and kind.startswith("objects with keys "):
            said = kind.removeprefix("objects with keys ").split(" (")[0]
            return [k for k in (w.strip() for w in said.split(",")) if _PLAIN_KEY.fullmatch(k)]
    return []


def _headline(stub: dict[str, Any]) -> str:
    est = " (estimate)" if stub.get("tokens_estimate") else ""
    model = f" for {stub['tokens_model']}" if stub.get("tokens_model") else ""
    tokens = f"{stub.get('tokens') or 0:,} tokens{est}{model}"
    if not stub.get("tokens_exact", True):
        # a large output's exact count lands later: JupyterLab then rewrites this headline in the
        # notebook's outputs (labextension/src/tokens.ts, kept to this wording by
        # tests/comm/test_token_updates.py); elsewhere it stays, so it says where the exact count is
        tokens = f"≥ {tokens} (still counting; %scratch show {stub['handle']} has the exact count)"
    return f"{stub.get('format')}, {fmt_bytes(stub.get('size'))}, {_lines(stub.get('lines') or 0)}, {tokens}"


def stub_text(stub: dict[str, Any], where: str | None = None) -> str:
    """``text/plain`` of a stub: what was stored, a preview with what was cut, what to run next."""
    source = stub.get("source_tool") or "output"
    stored = "was already stored (same bytes)" if stub.get("reused") else "was stored"
    lines = [f'[scratchpad] The output of {source} {stored} as handle "{stub["handle"]}": {_headline(stub)}.']
    note = str(stub.get("note") or "preview")
    lines.append(f"{note[:1].upper()}{note[1:]}:")
    lines += ["  " + line for line in str(stub.get("preview") or "").split("\n")]
    if stub.get("schema"):
        lines.append("Schema sketch:")
        lines += ["  " + s for s in stub["schema"]]
    lines.append("Next:")
    lines += ["  " + c for c in next_commands(stub)]
    if where:
        lines.append(where)
    return "\n".join(lines)


def stub_html(stub: dict[str, Any], where: str | None = None) -> str:
    """``text/html`` of a stub: the same facts as a compact card."""
    esc = html.escape
    preview = str(stub.get("preview") or "")
    parts = [
        f'<div class="jp-scratchpad-stub" style="{_CARD}">',
        f"<div><b>scratchpad</b> · <code>{esc(stub['handle'])}</code> · {esc(_headline(stub))}</div>",
        f'<div style="{_MUTED}">from <code>{esc(str(stub.get("source_tool") or "output"))}</code>'
        f" · {esc(str(stub.get('note') or ''))}</div>",
        f'<details><summary>preview</summary><pre style="{_PRE}">{esc(preview)}</pre></details>',
    ]
    if stub.get("schema"):
        parts.append(f'<pre style="{_PRE}">{esc(chr(10).join(stub["schema"]))}</pre>')
    cmds = " ".join(f"<code>{esc(c)}</code>" for c in next_commands(stub))
    parts.append(f'<div style="{_MUTED}">next: {cmds}</div>')
    if where:
        parts.append(f'<div style="{_MUTED}">{esc(where)}</div>')
    parts.append("</div>")
    return "".join(parts)


def stub_bundle(stub: dict[str, Any], where: str | None = None) -> dict[str, Any]:
    """The MIME bundle that replaces a spilled output (all three parts, always).

    ``where`` (why it is held here, e.g. after the 256 lines of a stream shown above) ends the
    text and HTML, and is the stub JSON's ``where``: JupyterLab's card renders from the JSON alone.
    """
    data = {**stub, "where": where} if where else stub
    return {"text/plain": stub_text(stub, where), "text/html": stub_html(stub, where), STUB_MIME: _jsonable(data)}


def _jsonable(stub: dict[str, Any]) -> dict[str, Any]:
    """The stub as plain JSON data (what the JupyterLab renderer reads)."""
    return json.loads(json.dumps(stub, default=str))


HTML_MAX_CHARS = 100_000  # a longer result is displayed as its plain text alone


def tool_result_html(result: Any) -> str | None:
    """``text/html`` of a ``ToolResult``: its text, preformatted, errors marked; None (plain text
    only) for a long one: the same megabyte again as HTML doubled what the browser and the
    notebook file hold (``%scratch head H -n 300000``: ~2 MB for one read)."""
    shown = result.shown_text()
    if len(shown) > HTML_MAX_CHARS:
        return None
    style = _PRE + ";max-height:40em" + ("" if result.ok else ";border-left:3px solid #c33")
    return f'<pre style="{style}">{html.escape(shown)}</pre>'


def rows_html(rows: list[dict[str, Any]], max_cell_chars: int = 200) -> str:
    """A list of dicts as an HTML table (columns: the union of keys, in first-seen order)."""
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)

    def cell(value: Any) -> str:
        text = value if isinstance(value, str) else dumps_compact(value)
        if len(text) > max_cell_chars:
            text = text[: max_cell_chars - 1] + "…"
        return f"<td>{html.escape(text)}</td>"

    body = "".join("<tr>" + "".join(cell(row.get(c)) for c in columns) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _lines(n: int) -> str:
    return f"{n:,} line" + ("" if n == 1 else "s")
