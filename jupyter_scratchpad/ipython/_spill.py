"""Deciding, for one cell output, whether it spills, and building the stub bundle that replaces it.

Every decision is the core's (``Scratchpad.intercept``, i.e. the ``SpillPolicy``); this module only
picks *what* to hand it (the value itself when it is JSON-like, else the largest text of a MIME
bundle) and skips, without tokenizing, outputs too short to reach any threshold.
"""

from __future__ import annotations

import html
import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..store._format import as_text
from ..store._jsontext import dumps_compact
from ..tools import ToolResult
from ._render import STUB_MIME, stub_bundle

if TYPE_CHECKING:
    from ._session import ScratchSession

__all__ = [
    "NATIVE_TYPES",
    "RICH_TEXT_MAX_BYTES",
    "RICH_TEXT_MIMES",
    "SPILLABLE_MIMES",
    "OutputSpiller",
    "frame_records",
]

log = logging.getLogger("jupyter_scratchpad.ipython")

# Values stored as themselves (JSON or text) rather than as their printed repr.
NATIVE_TYPES = (str, bytes, bytearray, dict, list, tuple)
# A bundle is spilled only when all its parts are text: images, widgets, plots, maps and other
# rich renderings are left alone, however large (they are meant to be looked at).
SPILLABLE_MIMES = ("application/json", "text/plain", "text/markdown", "text/html")
# ... but a rich part that is text (a formula, a vector picture, a script) is bounded by its size:
# a sympy matrix's 4 MB of LaTeX or a 300,000-point SVG scatter (13 MB) went to the notebook whole.
# Past RICH_TEXT_MAX_BYTES such a part is stored (always, whatever the threshold) and the bundle
# shows a note with its handle instead; binary images (PNG, JPEG, ...) are left alone, however large.
RICH_TEXT_MIMES = ("text/latex", "image/svg+xml", "application/javascript", "text/javascript")
RICH_TEXT_MAX_BYTES = 2 << 20  # 2 MiB of UTF-8
# Tokens of a text never exceed its UTF-8 bytes (times the largest provider factor, Claude's 1.1),
# and a character is at most 4 bytes: below this bound nothing needs tokenizing.
_MAX_TOKENS_PER_CHAR = 4 * 1.1
# pandas' own defaults for the display options that decide how much of a frame is shown
_PANDAS_DISPLAY_DEFAULTS = (
    ("display.max_rows", 60),
    ("display.min_rows", 10),
    ("display.max_columns", 20),
    ("display.max_colwidth", 50),
)


def _bundle(stub: dict[str, Any], where: str | None) -> dict[str, Any]:
    if "pointer" in stub:
        return {"text/plain": stub["pointer"] + (f"\n{where}" if where else "")}
    return stub_bundle(stub, where)


def _shown_bounded(data: Any, metadata: Any, where: str | None) -> tuple[Any, Any]:
    """A person's read as displayed: each text part whole up to ``DISPLAY_MAX_CHARS``; past it
    the plain text as its head and tail, and a larger rich part (a table's HTML) left out.
    ``%scratch df`` with ``display.max_rows = None`` and ``%scratch iter --limit 200000`` sent
    41 MB to the browser; the value itself stays whole."""
    from ..tools import DISPLAY_MAX_CHARS, display_cut

    def fits(mime: str, value: Any) -> bool:  # (markup around the same text: twice the room; images are left alone)
        if mime not in SPILLABLE_MIMES or not isinstance(value, str):
            return True
        return len(value) <= DISPLAY_MAX_CHARS * (1 if mime == "text/plain" else 2)

    if not isinstance(data, dict) or all(fits(k, v) for k, v in data.items()):
        return data, metadata
    whole = where or "the object displayed holds the whole"
    shown = {k: v for k, v in data.items() if fits(k, v)}
    shown["text/plain"] = display_cut(str(data.get("text/plain", "")), whole)
    return shown, {k: v for k, v in (metadata or {}).items() if k in shown}


class OutputSpiller:
    """Spill cell outputs through the session's pad (never raises into the user's cell)."""

    def __init__(self, session: ScratchSession) -> None:
        self.session = session

    def could_spill(self, chars: int, tool: str) -> bool:
        """Whether an output of ``chars`` characters might reach ``tool``'s threshold."""
        policy = self.session.pad.policy
        if not policy.enabled:
            return False
        if policy.min_bytes is not None and 4 * chars >= policy.min_bytes:
            return True
        return chars * _MAX_TOKENS_PER_CHAR + 1 >= policy.threshold_for(tool)

    def _too_large(self, value: Any, tool: str) -> bool:
        text = value if isinstance(value, str) else as_text(value)
        if not self.could_spill(len(text), tool):
            return False
        pad = self.session.pad
        return pad.policy.explain(value, tool=tool, model=pad.model, text=text).spill

    def _intercept(self, payload: Any, tool: str, text: str) -> dict[str, Any] | None:
        pad = self.session.pad
        # Decide on the text already serialised (most outputs do not spill: one serialisation, one
        # count up to the threshold); only a spill goes through intercept, which decides again.
        if not pad.policy.explain(payload, tool=tool, result_class="query", model=pad.model, text=text).spill:
            return None
        from ..spill._withheld import notebook_wording

        with notebook_wording():  # (a failed spill's advice: re-run the cell, not "run the tool again")
            result = pad.intercept(payload, tool=tool, result_class="query")
        if result.failure:  # fail closed: the pointer stands in for the output (the value stays in Out)
            return {"failure": result.failure, "pointer": str(result.content)}
        return result.stub if result.spilled else None

    def spill_value(self, value: Any, tool: str, where: str | None = None) -> dict[str, Any] | None:
        """The stub bundle for a JSON-like value or text, or None when it stays."""
        text = value if isinstance(value, str) else as_text(value)
        if not self.could_spill(len(text), tool):
            return None
        stub = self._intercept(value, tool, text)
        return _bundle(stub, where) if stub else None

    def spill_bundle(self, data: Mapping[str, Any], tool: str, where: str | None = None) -> dict[str, Any] | None:
        """The stub bundle replacing a MIME bundle, or None when it stays as it is."""
        if not data or STUB_MIME in data:  # (a stub card, as a stream's: stored already; below a
            return None  # low threshold its own text was stored again as cell_N_display)
        data, notes = self._store_oversized_rich(data, tool)
        if not data:
            data = {"text/plain": ""}
        if any(mime not in SPILLABLE_MIMES for mime in data):
            bundle = self._beside_rich(data, tool, where)
        else:
            found = self._spill_text(data, tool)
            bundle = _bundle(found[1], where) if found else None
        if not notes:
            return bundle
        shown = dict(bundle if bundle is not None else data)
        note = "\n".join(notes)
        shown["text/plain"] = f"{shown.get('text/plain') or ''}\n{note}".lstrip("\n")
        if isinstance(shown.get("text/html"), str):
            shown["text/html"] += "".join(f"<p><small>{html.escape(n)}</small></p>" for n in notes)
        return shown

    def _store_oversized_rich(self, data: Mapping[str, Any], tool: str) -> tuple[dict[str, Any], list[str]]:
        """``data`` without its text-encoded rich parts (LaTeX, SVG, JavaScript) larger than
        ``RICH_TEXT_MAX_BYTES``, each stored, and the notes that say so."""
        large = [
            mime
            for mime, value in data.items()
            if mime in RICH_TEXT_MIMES
            and isinstance(value, str)
            and len(value) * 4 > RICH_TEXT_MAX_BYTES  # (cheap first: a character is at most 4 bytes)
            and len(value.encode("utf-8", "surrogatepass")) > RICH_TEXT_MAX_BYTES
        ]
        if not large:
            return dict(data), []
        from ..explore._base import fmt_bytes
        from ..spill._withheld import notebook_wording

        kept = {k: v for k, v in data.items() if k not in large}
        notes = []
        for mime in large:
            value = data[mime]
            size = fmt_bytes(len(value.encode("utf-8", "surrogatepass")))
            what = "picture" if mime.startswith("image/") else "formula" if mime == "text/latex" else "script"
            with notebook_wording():
                result = self.session.pad.intercept(value, tool=tool, result_class="query", force=True)
            if result.spilled and result.stub is not None:
                handle = result.stub["handle"]
                notes.append(
                    f"[scratchpad] The {mime} part of this output ({what}, {size}) was too large to show "
                    f"(over {fmt_bytes(RICH_TEXT_MAX_BYTES)}): it was stored as handle \"{handle}\". "
                    f"Get it back with %scratch get {handle} (e.g. text = %scratch get {handle}, then write it "
                    "to a file)."
                )
            else:  # (the store failed: the part is withheld all the same, never the flood)
                why = result.failure or "it was not stored"
                notes.append(
                    f"[scratchpad] The {mime} part of this output ({what}, {size}) was too large to show "
                    f"(over {fmt_bytes(RICH_TEXT_MAX_BYTES)}) and storing it failed ({why}); "
                    "re-run the cell once the store works, or %scratch auto off to show it whole."
                )
        return kept, notes

    def _spill_text(self, data: Mapping[str, Any], tool: str) -> tuple[str, dict[str, Any]] | None:
        """``(mime, stub)`` of the first text part of ``data`` that spills (structured first, then
        the plainest text), or None."""
        for mime in SPILLABLE_MIMES:
            if mime not in data:
                continue
            payload = data[mime]
            text = payload if isinstance(payload, str) else as_text(payload)
            if not self.could_spill(len(text), tool):
                continue
            stub = self._intercept(payload if mime == "application/json" else text, tool, text)
            if stub:
                return mime, stub
        return None

    def _beside_rich(self, data: Mapping[str, Any], tool: str, where: str | None) -> dict[str, Any] | None:
        """A bundle with a rich part (an image, a plot): that part is left alone, however large,
        but not a flood of text beside it. ``_repr_png_`` with a 20,000-line ``__repr__`` saved
        300 KB of ``text/plain`` next to a 96-byte image. The text part that spills is stored and
        replaced by the stub's text (other text parts as large are left out, smaller ones stay);
        text too long to show that does not spill (no threshold applies) is cut as a person's
        reads are."""
        found = self._spill_text({k: v for k, v in data.items() if k in SPILLABLE_MIMES}, tool)
        if found is None:
            shown, _ = _shown_bounded(dict(data), {}, where)
            return shown if shown != data else None
        mime, stub = found
        rich = ", ".join(k for k in data if k not in SPILLABLE_MIMES)

        def stays(k: str, v: Any) -> bool:  # (a rich part always; a text part too small to spill)
            if k not in SPILLABLE_MIMES:
                return True
            return k != mime and not self._too_large(v if isinstance(v, str) else as_text(v), tool)

        kept = {k: v for k, v in data.items() if stays(k, v)}
        note = f"(Only the {mime} beside the {rich} was stored; the {rich} is shown as it is.)"
        kept["text/plain"] = _bundle(stub, where)["text/plain"] + "\n" + note
        return kept

    def for_result(
        self, result: Any, tool: str, where: str | None, format_data: Any
    ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Displayhook: ``(bundle, metadata)`` replacing ``result``'s display, or None.

        A JSON-like value is decided on before it is formatted, so a spilled 100 MB list is never
        pretty-printed; so is a DataFrame pandas shows whole (``frame_first``); anything else is
        formatted first and its bundle decided on.
        """
        own = self.session.own_result(result)
        if own is not None:  # returned by %scratch itself
            handle, store_if_large = own
            too_large = isinstance(result, NATIVE_TYPES) and self._too_large(result, tool)
            if handle and too_large:  # a whole handle's value: never stored a second time
                note = f"This is the value of {handle}, already in the scratchpad (not stored again)."
                return stub_bundle(self.session.pad.stub(handle), note), {}
            if not too_large or not store_if_large:  # what a read asked for is whole (a person's reads are)
                if isinstance(result, ToolResult):
                    return None  # (its formatters show ToolResult.shown_text)
                data, metadata = self._frame_bounded(result, tool, where, format_data) or format_data(result)
                return _shown_bounded(data, metadata, where)  # ... and its display bounded
            # a part of one (get H PATH) or a note too large to show: stored like any large value
            # (the same bytes as a handle's are that handle), never printed whole
        if isinstance(result, NATIVE_TYPES):
            bundle = self.spill_value(result, tool, where)
            return (bundle, {}) if bundle else None
        bundle, tried = self.frame_first(result, tool, where)
        if bundle:
            return bundle, {}
        data, metadata = format_data(result)
        bundle = None if tried else self.frame_bundle(result, tool, (data, metadata), where)
        if bundle:
            return bundle, {}
        bundle = self.spill_bundle(data, tool, where)
        return (bundle, {}) if bundle else (data, metadata)

    def _frame_bounded(self, frame: Any, tool: str, where: str | None, format_data: Any) -> tuple[Any, Any] | None:
        """A DataFrame (or Series) ``%scratch`` returned, displayed as pandas' defaults bound it
        (head and tail rows) when the display the options ask for is large enough to spill;
        None when ``frame`` is not one. With ``display.max_rows = None``, ``%scratch df`` and
        ``%scratch sql`` sent a 2 MB result to the notebook; the value itself stays whole."""
        pd = sys.modules.get("pandas")
        if pd is None or not isinstance(frame, (pd.DataFrame, pd.Series)):
            return None
        data, metadata = format_data(frame)
        text = data.get("text/plain") if isinstance(data, Mapping) else None
        if not isinstance(text, str) or not self._could_spill_any(data, tool) or not self._too_large(text, tool):
            return data, metadata
        with pd.option_context(*(item for pair in _PANDAS_DISPLAY_DEFAULTS for item in pair)):
            data, metadata = format_data(frame)
        rows = f"{len(frame):,} rows" + (f" × {frame.shape[1]:,} columns" if frame.ndim == 2 else "")
        note = (
            f"[scratchpad] {rows}: shown as pandas' default head and tail, whatever display.max_rows says "
            f"(all of them would be {len(text):,} characters of text); {where or 'the value returned holds every row'}"
        )
        shown = dict(data)
        if isinstance(shown.get("text/plain"), str):
            shown["text/plain"] = f"{shown['text/plain']}\n{note}"
        if isinstance(shown.get("text/html"), str):
            shown["text/html"] = f"{shown['text/html']}<p><small>{html.escape(note)}</small></p>"
        return shown, metadata

    def frame_first(self, value: Any, tool: str, where: str | None = None) -> tuple[dict[str, Any] | None, bool]:
        """``(the stub bundle or None, whether it was decided)`` for a DataFrame pandas shows whole
        (``display.max_rows`` None or at least its length), decided on its rows before pandas
        formats it: with ``display.max_rows = None`` a 1,000,000-row frame was formatted first
        (``to_html`` and ``to_string``: 40 s, 2 GB, no progress line) and then stored as its rows
        all the same. ``(None, False)``: not such a frame (it is formatted and decided as before)."""
        records = frame_records(value, shown_whole=True)
        if records is None:
            return None, False
        return self.spill_value(records, tool, where), True

    def frame_bundle(self, value: Any, tool: str, formatted: Any, where: str | None = None) -> dict[str, Any] | None:
        """The stub bundle of a DataFrame shown whole (``formatted``: its ``(data, metadata)``)
        that spills, stored as its rows: a table for SQL and ``%scratch df``; else None."""
        data = formatted[0] if isinstance(formatted, tuple) and formatted else None
        if not self._could_spill_any(data, tool):
            return None
        records = frame_records(value, shown_whole=True)
        return None if records is None else self.spill_value(records, tool, where)

    def _could_spill_any(self, data: Any, tool: str) -> bool:
        return isinstance(data, Mapping) and any(
            self.could_spill(len(v), tool) for k, v in data.items() if k in SPILLABLE_MIMES and isinstance(v, str)
        )


def frame_records(value: Any, shown_whole: bool = False) -> str | None:
    """A pandas DataFrame as the JSON text of its rows (its index a column unless it is the
    default 0..n-1), or None: not a DataFrame, one whose rows JSON cannot name (its columns
    repeat), or with ``shown_whole`` one the notebook displays cut to a few rows (that text is
    what spills). With ``display.max_rows = None`` a large one was spilled as its printed table,
    a text that SQL and ``%scratch df`` could not read back as rows."""
    pd = sys.modules.get("pandas")
    if pd is None or not isinstance(value, pd.DataFrame):
        return None
    shown = pd.get_option("display.max_rows")
    if shown_whole and shown is not None and len(value) > shown:
        return None
    if not value.columns.is_unique:  # (rows JSON cannot name as they are: the printed table spills)
        return None
    # the core's records (the index a column unless the default, NaN/NaT null, times ISO): floats
    # exact, where DataFrame.to_json rounded them to 10 significant digits
    text = dumps_compact(value)
    return text if text.startswith("[") else None
