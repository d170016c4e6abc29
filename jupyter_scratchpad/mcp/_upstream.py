"""What an upstream MCP server sends, bounded and made readable before the proxy passes it on.

The proxy reads each upstream through ``repairing_session``: a ``ClientSession`` whose dispatcher
looks at a reply's ``result`` before the SDK validates it (and refuses all of it for one bad part):

- ``tools/list``: every tool's definition is bounded (``bounded_tool``). Its description is cut to
  ``DESCRIPTION_MAX_BYTES`` (head and tail, the cut said in it) and its titles to
  ``TITLE_MAX_BYTES``; an ``inputSchema`` that is not a JSON Schema object (``"type": "object"``
  and valid against its metaschema) or is over ``INPUT_SCHEMA_MAX_BYTES`` is replaced by
  ``ANY_ARGUMENTS`` (any object: the upstream still checks the arguments it gets), with a note at
  the end of the description saying why and naming the arguments it had; its ``_meta`` and
  ``icons`` over ``META_MAX_BYTES`` are left out. A tool the SDK still refuses is left out of the
  list (logged), where the whole list was refused. (A 2 MB description reached the model whole,
  and a schema with ``"type": "nonsense"`` in it made strict clients refuse the whole list.)
- ``tools/call``: a content block the SDK refuses (a type MCP does not define, ``{"type":
  "video"}``, or a known type without its fields) is replaced by a text note, the block carried in
  the note's ``_meta`` under ``LEFT_OUT_KEY`` for the proxy to store (``left_out``); the other
  blocks pass on. All of the result was dropped, and the model read pydantic's validation errors.
- ``prompts/get``: a message whose content the SDK refuses gets a text note in its place.
- ``prompts/list``, ``resources/list``, ``resources/templates/list``: an entry the SDK refuses (a
  resource without its ``uri``) is left out (logged); the server's other entries are listed. One
  such entry hid every prompt or resource of its server.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from typing import Any

from .._bounded import clip_middle
from ..store._jsontext import dumps_compact

__all__ = [
    "ANY_ARGUMENTS",
    "DESCRIPTION_MAX_BYTES",
    "INPUT_SCHEMA_MAX_BYTES",
    "LEFT_OUT_KEY",
    "META_MAX_BYTES",
    "TITLE_MAX_BYTES",
    "argument_names",
    "bounded_tool",
    "clipped",
    "invalid_result_said",
    "json_bytes",
    "left_out",
    "repaired",
    "repairing_session",
    "schema_problem",
]

log = logging.getLogger("jupyter_scratchpad.mcp")

# A tool's (or a prompt's) description: the model reads every tool's on every turn. Head and tail
# are kept (usage notes are often last); a 2 MB one was passed whole.
DESCRIPTION_MAX_BYTES = 8 * 1024
TITLE_MAX_BYTES = 1024  # a title or name shown beside it (as a resource link's, LINK_TEXT_MAX_BYTES)
# An inputSchema larger than this is replaced (a large real one, a few hundred arguments, is ~30 KB).
INPUT_SCHEMA_MAX_BYTES = 64 * 1024
# What a replaced inputSchema becomes: valid JSON Schema that every client accepts and any object
# matches, so the tool stays callable; the upstream checks the arguments (its error comes back).
ANY_ARGUMENTS: dict[str, Any] = {"type": "object", "additionalProperties": True}
META_MAX_BYTES = 16 * 1024  # an upstream's _meta (on a result, a block or a listed entry), or its icons
ARGUMENT_NAMES_SHOWN = 40  # of a replaced schema, named in the note

# In the _meta of the note that stands for a refused block: {"what": ..., "block": the block}. The
# key is new per process, so an upstream cannot send a note of its own for the proxy to act on.
LEFT_OUT_KEY = f"jupyter-scratchpad/left-out-{secrets.token_hex(6)}"
KNOWN_BLOCKS = ("text", "image", "audio", "resource", "resource_link")
SDK_FALLBACK_VERSION = "2025-11-25"  # what the SDK validates a result against before a version is agreed

# the list in a method's result whose items are repaired one by one
_ITEMS = {
    "tools/call": "content",
    "tools/list": "tools",
    "prompts/get": "messages",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
# listings whose entries the SDK refuses are left out of the list (each logged), not the list
_LISTED = {
    "tools/list": "tool",
    "prompts/list": "prompt",
    "resources/list": "resource",
    "resources/templates/list": "resource template",
}


def json_bytes(value: Any) -> int | None:
    """The bytes of ``value`` as compact JSON; None for what cannot be written (nested too deep)."""
    try:
        return len(dumps_compact(value).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        return None


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def clipped(value: Any, limit: int, what: str = "") -> Any:
    """``value`` itself unless it is text over ``limit`` bytes of UTF-8: then its head and tail
    within ``limit``, with the cut said in it (``[… 1,991,808 of 2,000,000 bytes of this
    description cut …]``)."""
    if not isinstance(value, str) or _utf8_len(value) <= limit:
        return value
    unit = f"bytes of this {what}" if what else "bytes"
    return clip_middle(value, max(64, limit - len(unit) + len("bytes")), unit=unit)


_METASCHEMA_CHECKS: dict[str, Any] = {}  # draft -> compiled check (None: its metaschema was not found)


def _metaschema_check(draft: str) -> Any:
    """fastjsonschema's check of a schema against the metaschema of ``draft`` (4, 6 or 7), from
    ``jsonschema_specifications`` (the SDK's jsonschema's data; read as a file, not imported:
    importing jsonschema took 1.7 s, its format checkers' grammars, and held the proxy's start).
    None when it is not there."""
    if draft not in _METASCHEMA_CHECKS:
        import importlib.util
        import json
        from pathlib import Path

        import fastjsonschema

        check = None
        try:
            spec = importlib.util.find_spec("jsonschema_specifications")
            if spec is not None and spec.origin:
                path = Path(spec.origin).parent / "schemas" / f"draft{draft}" / "metaschema.json"
                meta = json.loads(path.read_text("utf-8"))
                # (use_default=False: its defaults were written into the schema it checked)
                check = fastjsonschema.compile(meta, use_default=False, use_formats=False)
        except Exception as exc:  # (then only the shape is checked: an object of type "object")
            log.debug("no JSON Schema metaschema draft %s to check upstream schemas with: %s", draft, exc)
        _METASCHEMA_CHECKS[draft] = check
    return _METASCHEMA_CHECKS[draft]


def _metaschema_error(schema: dict[str, Any]) -> str | None:
    """What is wrong with ``schema`` as JSON Schema, in one short line; None when it is valid.

    Checked against draft 4 or 6 when its ``$schema`` says so, else draft 7, whose metaschema
    also passes the 2019-09 and 2020-12 keywords tools use (``$defs``, ``prefixItems`` are names
    it does not know, so allowed). Formats are not checked: a ``pattern`` Python's ``re`` does not
    read (``\\p{L}``) is still a valid ECMA regex."""
    import fastjsonschema

    declared = schema.get("$schema")
    declared = declared if isinstance(declared, str) else ""
    draft = "4" if "draft-04" in declared else "6" if "draft-06" in declared else "7"
    check = _metaschema_check(draft)
    if check is None:
        return None
    try:
        check(schema)
    except fastjsonschema.JsonSchemaValueException as exc:
        path = [str(p) for p in (exc.path or [])][1:]  # (its first is "data", the schema itself)
        where = "/".join(path) or "its root"
        said = str(exc.message)
        if exc.name and said.startswith(str(exc.name)):
            said = said[len(str(exc.name)) :].strip()
        return f"at {clip_middle(where, 200)}: {clip_middle(said, 200)}"
    return None


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be passed on as a tool's inputSchema (words that follow "it"), or
    None: a JSON object, ``"type": "object"`` (MCP's rule), at most ``INPUT_SCHEMA_MAX_BYTES``,
    and valid JSON Schema."""
    if not isinstance(schema, dict):
        return "was not a JSON object"
    if schema.get("type") != "object":
        return 'did not say "type": "object"'
    size = json_bytes(schema)
    if size is None:
        return "could not be read as JSON"
    if size > INPUT_SCHEMA_MAX_BYTES:
        return f"was {size:,} bytes of JSON, over the proxy's {INPUT_SCHEMA_MAX_BYTES:,}"
    try:
        error = _metaschema_error(schema)
    except RecursionError:
        return "was nested too deep to check"
    except Exception as exc:  # (a schema the checker itself fails on)
        return f"could not be checked ({type(exc).__name__})"
    return None if error is None else f"was not valid JSON Schema ({error})"


def argument_names(schema: Any) -> str:
    """The top-level arguments a replaced schema named, ``q (required), limit``, bounded."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return ""
    required = schema.get("required")
    required = set(required) if isinstance(required, list) and all(isinstance(r, str) for r in required) else set()
    names = [
        clip_middle(str(name), 64) + (" (required)" if name in required else "")
        for name in list(props)[:ARGUMENT_NAMES_SHOWN]
    ]
    more = f" and {len(props) - ARGUMENT_NAMES_SHOWN:,} more" if len(props) > ARGUMENT_NAMES_SHOWN else ""
    return ", ".join(names) + more


def bounded_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """An upstream's tool definition (its JSON) as the proxy lists it: see the module docstring."""
    out = dict(tool)
    name = out.get("name")
    for key, limit in (("description", DESCRIPTION_MAX_BYTES), ("title", TITLE_MAX_BYTES)):
        if key in out:
            out[key] = clipped(out[key], limit, key)
    notes = out.get("annotations")
    if isinstance(notes, dict) and "title" in notes:
        out["annotations"] = {**notes, "title": clipped(notes["title"], TITLE_MAX_BYTES, "title")}
    for key in ("_meta", "icons"):
        if key in out and ((size := json_bytes(out[key])) is None or size > META_MAX_BYTES):
            del out[key]
            log.info("upstream tool %.100r: its %s (over %s bytes) was left out", name, key, f"{META_MAX_BYTES:,}")
    schema = out.get("inputSchema")
    why = schema_problem(schema)
    if why is not None:
        out["inputSchema"] = dict(ANY_ARGUMENTS)
        names = argument_names(schema)
        note = (
            f"[the proxy replaced this tool's input schema, which {why}, with one any object matches; "
            "the upstream server checks the arguments" + (f". Its arguments were: {names}]" if names else "]")
        )
        before = out.get("description")
        out["description"] = f"{before}\n\n{note}" if isinstance(before, str) and before else note
        log.info("upstream tool %.100r: its inputSchema %s; it is listed as any object", name, why)
    return out


def _block_said(block: Any) -> str:
    """The words for a content block the SDK refused: ``a content block of type 'video', which
    MCP does not define (3,000,023 bytes of JSON)``."""
    kind = block.get("type") if isinstance(block, dict) else None
    if isinstance(kind, str) and kind in KNOWN_BLOCKS:
        article = "an" if kind in ("image", "audio") else "a"
        what = f"{article} {kind!r} content block that is not valid MCP (a field is missing or of the wrong type)"
    elif isinstance(kind, str):
        what = f"a content block of type {clip_middle(kind, 64)!r}, which MCP does not define"
    elif isinstance(block, dict):
        what = "a content block without a type"
    else:
        what = "a content block that is not a JSON object"
    size = json_bytes(block)
    return f"{what} ({size:,} bytes of JSON)" if size is not None else what


def _note_for(block: Any, carry: bool) -> dict[str, Any]:
    what = _block_said(block)
    note: dict[str, Any] = {"type": "text", "text": f"[{what} was left out by the proxy]"}
    if carry:  # (the proxy stores it: left_out)
        note["_meta"] = {LEFT_OUT_KEY: {"what": what, "block": block}}
    return note


def left_out(meta: Mapping[str, Any] | None) -> tuple[str, Any] | None:
    """``(what, block)`` when ``meta`` is the ``_meta`` of a note standing for a refused block."""
    found = (meta or {}).get(LEFT_OUT_KEY)
    if isinstance(found, dict) and isinstance(found.get("what"), str):
        return found["what"], found.get("block")
    return None


def _refusal(method: str, version: str, raw: Mapping[str, Any]) -> list[Any] | None:
    """The SDK's validation errors of ``raw`` as ``method``'s result; None when it reads it (or
    does not check this method or version)."""
    from mcp_types import methods
    from pydantic import ValidationError

    try:
        methods.validate_server_result(method, version, raw)
    except ValidationError as exc:
        return list(exc.errors(include_url=False, include_input=False))
    except (KeyError, ValueError):
        return None
    return None


def _bad_items(errors: list[Any], field: str) -> dict[int, set[str]]:
    """The indexes of ``field``'s items the errors are about, each with the keys they name."""
    out: dict[int, set[str]] = {}
    for error in errors:
        loc = tuple(error.get("loc") or ())
        for i in range(len(loc) - 1):
            if loc[i] == field and isinstance(loc[i + 1], int):
                out.setdefault(loc[i + 1], set()).update(str(k) for k in loc[i + 2 :])
                break
    return out


def _fixed(method: str, items: list[Any], bad: dict[int, set[str]]) -> list[Any]:
    if method in _LISTED:  # an entry still refused is left out of the list
        what = _LISTED[method]
        for i in sorted(bad):
            entry = items[i]
            name = entry.get("name") if isinstance(entry, dict) else None
            log.warning("upstream %s %.100r is not a valid MCP %s; it is left out of the list", what, name, what)
        return [t for i, t in enumerate(items) if i not in bad]
    out = list(items)
    for i, keys in bad.items():
        if method == "tools/call":
            out[i] = _note_for(items[i], carry=True)
        else:  # prompts/get: the message's content (or a role that is neither user nor assistant)
            message = items[i] if isinstance(items[i], dict) else {}
            role = message.get("role") if message.get("role") in ("user", "assistant") else "user"
            content = message.get("content")
            if "content" in keys or not keys:
                content = _note_for(content, carry=False)
            out[i] = {**message, "role": role, "content": content}
    return out


def _plain_texts(content: Any) -> bool:
    """Whether ``content`` is a list of text blocks the SDK surely reads (nothing else in them)."""
    return isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and len(b) == 2
        for b in content
    )


def repaired(method: str, version: str | None, raw: dict[str, Any]) -> dict[str, Any]:
    """An upstream's result as the proxy's session reads it: see the module docstring. Anything
    else the SDK refuses (a result whose ``content`` is not a list) is left for it to refuse."""
    field = _ITEMS.get(method)
    if field is None or not isinstance(raw, dict):
        return raw
    if method == "tools/list" and isinstance(raw.get("tools"), list):
        raw = {**raw, "tools": [bounded_tool(t) if isinstance(t, dict) else t for t in raw["tools"]]}
    if method == "tools/call" and _plain_texts(raw.get("content")):
        return raw  # (the usual result, checked once by the SDK: 60,000 blocks checked twice took 0.5 s more)
    for _ in range(3):  # (a second look: a union's errors can name one part at a time)
        errors = _refusal(method, version or SDK_FALLBACK_VERSION, raw)
        items = raw.get(field)
        bad = _bad_items(errors, field) if errors else {}
        if not bad or not isinstance(items, list) or any(i >= len(items) for i in bad):
            return raw
        raw = {**raw, field: _fixed(method, items, bad)}
    return raw


def invalid_result_said(exc: BaseException) -> str | None:
    """A pydantic ValidationError of an upstream's result in a few words: where and what,
    ``content: Input should be a valid list``, never its dump and link; None for anything else."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return "it does not match the MCP schema"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc") or ()) or "the result"
    more = f" (and {len(errors) - 1:,} more problems)" if len(errors) > 1 else ""
    return f"{clip_middle(where, 200)}: {clip_middle(str(first.get('msg')), 200)}{more}"


def repairing_session(read: Any, write: Any, **kwargs: Any) -> Any:
    """A ``ClientSession`` over ``read``/``write`` whose results are ``repaired`` before the SDK
    validates them; a plain one when the SDK has no ``JSONRPCDispatcher`` to build it on."""
    from mcp import ClientSession

    try:
        from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
    except ImportError:  # (an SDK built otherwise: nothing is repaired)
        return ClientSession(read, write, **kwargs)

    class RepairingDispatcher(JSONRPCDispatcher[Any]):
        session: Any = None

        async def send_raw_request(self, method: str, params: Any, opts: Any = None, **more: Any) -> dict[str, Any]:
            raw = await super().send_raw_request(method, params, opts, **more)
            version = getattr(self.session, "protocol_version", None)
            return repaired(method, version if isinstance(version, str) else None, raw)

    dispatcher = RepairingDispatcher(read, write)
    session = ClientSession(dispatcher=dispatcher, **kwargs)
    dispatcher.session = session
    return session
