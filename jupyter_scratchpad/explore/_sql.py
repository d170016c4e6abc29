"""SQL over spills, in a sandbox that is read-only in fact and bounded in memory and time.

1. The statement is checked before anything runs: exactly one statement, of a read-only type
   (SELECT, WITH, VALUES, FROM, DESCRIBE, SUMMARIZE, SHOW, UNPIVOT, a static PIVOT, EXPLAIN of
   one of those), decided by DuckDB's own parser (``duckdb.extract_statements``); anything else
   is ``sql_not_read_only``. COPY, EXPORT, ATTACH, INSTALL/LOAD, SET, PRAGMA, CALL, CREATE,
   DROP, INSERT, UPDATE, DELETE never reach DuckDB.
2. The query runs in a worker process (``_sqlworker``) on a fresh in-memory DuckDB connection
   that knows only the relations of the handles the query names (``_sqlviews``), and is locked
   down there (``allowed_paths`` = those bodies, no external access, locked configuration). The
   worker's address space is capped (an allocation past it is ``sql_out_of_memory``), rows are
   fetched in batches with every cell clipped and stop at a byte cap, and a query past the
   call's time limit is stopped by killing the worker (``timeout``).
3. What comes back shows handles, never host paths.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import functools
import itertools
import os
import re
import threading
from dataclasses import dataclass
from typing import Any, NamedTuple

import re2

from .._bounded import clip_middle, redact_paths
from ..errors import ScratchpadError
from ..store import Entry
from ..store._bodies import removed_while_read
from ._base import Output, Suggestion, ToolContext, ToolError, ToolTimeout, expired_error, fmt_bytes, suggestion
from ._csv import ROWS_RELATION, shape_of
from ._segments import array_bytes
from ._sqlviews import build_views
from ._sqlworker import CELL_CHARS, SqlBusy, SqlTimeout, SqlWorkerError, run_job
from ._text import budget_footer

__all__ = [
    "SQL_MAX_ROWS", "SQL_NOTES_MAX_BYTES", "check_read_only", "names_notes", "relation_names", "sql",
    "without_trailing_comment",
]  # fmt: skip

SQL_MAX_ROWS = 200
SQL_TIMEOUT_S = 30.0
QUERY_RESERVE_S = 2.0  # of a call's time, kept for the query after its tables were loaded
MIN_BUILD_WAIT_S = 0.2  # however short the call, the worker waits this long for a load
MAX_QUERY_CHARS = 20_000
READ_ONLY_FORMS = "SELECT, WITH … SELECT, VALUES, FROM …, DESCRIBE, SUMMARIZE, SHOW, UNPIVOT, PIVOT … IN (…), EXPLAIN"
_EXPLAIN = re.compile(r"^\s*explain(\s+analyze)?\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_read_only(query: str, suggest: bool = True) -> None:
    """Refuse, before anything runs, what is not exactly one read-only statement. ``suggest``:
    offer the read-only query a refused statement holds (checked with ``suggest=False``: a
    writing CTE's candidate was the query itself, checked again 333 levels deep)."""
    import duckdb

    _check_grouping_sets(query)
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as exc:
        raise ToolError("sql_error", str(exc).split("\n")[0], [_describe_suggestion()]) from None
    if len(statements) != 1:
        first = [statements[0].query.strip()] if statements else []
        raise ToolError(
            "sql_not_read_only",
            f"send exactly one statement (got {len(statements)}); allowed: {READ_ONLY_FORMS}",
            _read_only_suggestions(first, "the first statement alone") if suggest else [],
            statements=len(statements),
        )
    try:
        kind = statements[0].type
    except ValueError:  # (a type the Python enum does not know: UPDATE EXTENSIONS raised here)
        kind = None
    if kind == duckdb.StatementType.EXPLAIN:
        inner = _EXPLAIN.sub("", query, count=1)
        if inner == query:
            raise ToolError("sql_not_read_only", f"unrecognised EXPLAIN form; allowed: {READ_ONLY_FORMS}")
        check_read_only(inner, suggest)
        return
    if kind == duckdb.StatementType.SELECT:
        _check_query_nodes(query, suggest)
        return
    name = str(kind).rsplit(".", 1)[-1] if kind is not None else _first_words(query)
    if name == "LOAD":  # (DuckDB parses INSTALL as a LOAD statement)
        name = "INSTALL/LOAD"
    hint = (
        " (a PIVOT whose ON values are not listed creates types first: write PIVOT … ON col IN ('a', 'b'))"
        if name == "MULTI"
        else ""
    )
    raise ToolError(
        "sql_not_read_only",
        f"this sandbox is read-only: {'an' if name[:1] in 'AEIOU' else 'a'} {name} statement is not allowed{hint}; "
        f"allowed: {READ_ONLY_FORMS}",
        _read_only_suggestions(_inner_queries(query), "its query alone (nothing is stored: a query reads handles)")
        if suggest
        else [],
        statement_type=name,
    )


def _first_words(query: str) -> str:
    """The statement's first two words, upper-cased (``UPDATE EXTENSIONS``), for its name."""
    return " ".join(_WORD.findall(query)[:2]).upper() or "unknown"


def _check_query_nodes(query: str, suggest: bool = True) -> None:
    """Refuse a SELECT whose parse tree holds a query that writes: DuckDB types ``WITH w AS
    (INSERT … RETURNING …) SELECT …`` as a SELECT, and a CTE may hold an INSERT, UPDATE, DELETE
    or COPY … TO (which wrote over a body file given its path, and put rows in the notes table).
    A SELECT whose tree cannot be read (nested past what can be walked) is refused too."""
    parsed = _functions_in(query)
    if parsed is None:
        raise ToolError(
            "sql_not_read_only",
            "this query could not be checked as read-only (DuckDB gave no parse tree of it, or it is "
            f"nested too deeply to read): write it with less nesting; allowed: {READ_ONLY_FORMS}",
            [_describe_suggestion()],
        )
    if parsed.writes:
        what = parsed.writes[0].removesuffix("_QUERY_NODE").removesuffix("_NODE").replace("_", " ")
        raise ToolError(
            "sql_not_read_only",
            f"this sandbox is read-only: a WITH … AS ({what} …) writes, and is not allowed; allowed: {READ_ONLY_FORMS}",
            _read_only_suggestions(
                _cte_inner_queries(query), "the query it holds, alone (nothing is stored: a query reads handles)"
            )
            if suggest
            else [],
            statement_type=what,
        )


MAX_GROUPING_SETS = 256  # (a CUBE of 8; beside 1,500 columns, a CUBE of 10 took 1.5 s and 210 MB to parse)


MAX_EXPANDED_TOKENS = 50_000  # (a simple CASE nested 11 deep: ~0.05 s and 100 MB to parse; each level doubles)


def _expanded_tokens(texts: list[str], kinds: list[Any]) -> int:
    """How many tokens the query becomes once DuckDB's parser has copied each simple CASE's
    operand (``CASE x WHEN 1 … WHEN 2 … END``) once per WHEN: nested in its own operand, that
    doubles per level (715 characters took 35 s and 3.7 GB in the calling process, outside the
    worker's bounds). From the tokens, linear in the query; capped, never overflowing."""
    import duckdb

    keyword = duckdb.token_type.keyword
    counts = [0]  # tokens of each open CASE (innermost last), the query's own first
    frames: list[list[Any]] = []  # [simple, operand's tokens (None until its first WHEN), WHENs]
    for i, word in enumerate(texts):
        if kinds[i] == keyword and word == "case":
            frames.append([not (i + 1 < len(texts) and texts[i + 1] == "when"), None, 0])
            counts.append(1)
        elif frames and kinds[i] == keyword and word == "when":
            frame = frames[-1]
            if frame[0] and frame[1] is None:  # the operand ends here
                frame[1], counts[-1] = counts[-1] - 1, 1
            frame[2] += 1
            counts[-1] += 1
        elif frames and kinds[i] == keyword and word == "end":
            simple, operand, whens = frames.pop()
            copies = max(whens, 1) * operand if simple and operand is not None else 0
            inner = counts.pop() + 1 + copies
            counts[-1] = min(counts[-1] + inner, 1 << 40)
        else:
            counts[-1] += 1
    return sum(counts)


def _check_grouping_sets(query: str) -> None:
    """Refuse a GROUP BY whose CUBE, ROLLUP and GROUPING SETS make more than ``MAX_GROUPING_SETS``
    grouping sets (their product), counted from DuckDB's tokens before its parser expands them:
    that expansion ran in the calling process, outside the worker's bounds (CUBE of 14 beside
    1,500 columns: 15 s and 3.2 GB before the query was even checked)."""
    import duckdb

    lowered = query.lower()
    grouping = "cube" in lowered or "rollup" in lowered or "grouping" in lowered
    if not grouping and "case" not in lowered:
        return
    try:
        tokens = _tokens(query)
    except duckdb.Error:
        return
    texts = [
        query[at : tokens[i + 1][0] if i + 1 < len(tokens) else len(query)].strip().lower()
        for i, (at, _) in enumerate(tokens)
    ]
    kinds = [kind for _, kind in tokens]
    # (a comment is a token: "CUBE /*x*/ (…)" hid the CUBE's parenthesis from the count below)
    kept = [i for i, kind in enumerate(kinds) if kind != duckdb.token_type.comment]
    texts, kinds = [texts[i] for i in kept], [kinds[i] for i in kept]
    if "case" in lowered and _expanded_tokens(texts, kinds) > MAX_EXPANDED_TOKENS:
        raise ToolError(
            "sql_error",
            "this query nests CASE x WHEN … (a simple CASE) so deep that parsing it copies x once per WHEN at "
            f"every level, more than {MAX_EXPANDED_TOKENS:,} tokens in all: compute x once (a column of a "
            "subquery or CTE) and compare that, or use CASE WHEN x = … (a searched CASE)",
            [_describe_suggestion()],
        )
    if not grouping:
        return
    sets = 1
    for i, word in enumerate(texts):
        if kinds[i] != duckdb.token_type.keyword or word not in ("cube", "rollup", "sets"):
            continue
        if word == "sets" and (i == 0 or texts[i - 1] != "grouping"):
            continue
        if i + 1 >= len(texts) or not texts[i + 1].startswith("("):
            continue
        depth, items, j = 0, 1, i + 1
        while j < len(texts):  # the items at the first level of its parentheses
            if kinds[j] == duckdb.token_type.operator:  # (not a "(" in a string)
                depth += texts[j].count("(") - texts[j].count(")")
                if depth <= 0:
                    break
                if depth == 1 and texts[j].startswith(","):
                    items += 1
            j += 1
        sets *= 2 ** min(items, 64) if word == "cube" else items + 1 if word == "rollup" else items
        if sets > MAX_GROUPING_SETS:
            raise ToolError(
                "sql_error",
                f"this GROUP BY makes more than {MAX_GROUPING_SETS:,} grouping sets (a CUBE of n expressions "
                f"makes 2^n): group by fewer expressions, or run several smaller queries",
                [_describe_suggestion()],
            )


_FIRST_QUERY_WORD = re.compile(r"\b(?:select|with|from|values)\b", re.IGNORECASE)
_WRITING_BODY = re.compile(r"\(\s*(?:copy|insert|update|delete)\b", re.IGNORECASE)
_RETURNING = re.compile(r"\s+returning\b.*\Z", re.IGNORECASE | re.DOTALL)


def _closing(text: str) -> int | None:
    """Where the parenthesis open before ``text`` closes in it (outside strings), else None."""
    depth, quote = 1, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "()":
            depth += 1 if ch == "(" else -1
            if depth == 0:
                return i
    return None


def _inner_queries(query: str) -> list[str]:
    """The query a refused statement may hold, most likely first: CREATE … AS (SELECT …),
    INSERT INTO … SELECT …, COPY (SELECT …) TO …"""
    found = _FIRST_QUERY_WORD.search(query)
    if found is None:
        return []
    rest = query[found.start() :].strip().rstrip(";").rstrip()
    out = [rest]
    if query[: found.start()].rstrip().endswith("("):
        end = _closing(rest)
        if end is not None:
            out.insert(0, rest[:end].strip())
    return out


def _cte_inner_queries(query: str) -> list[str]:
    """The queries the writing CTEs of a query hold: ``WITH w AS (COPY (SELECT …) TO …)`` holds
    ``SELECT …``, ``WITH w AS (INSERT INTO t SELECT … RETURNING …)`` holds ``SELECT …``."""
    out: list[str] = []
    for found in itertools.islice(_WRITING_BODY.finditer(query), 4):  # (each reads to its end)
        body = query[found.start() + 1 :]
        end = _closing(body)
        if end is None:
            continue
        for inner in _inner_queries(body[:end]):
            out += [inner, _RETURNING.sub("", inner)]
    return list(dict.fromkeys(out))


def _read_only_suggestions(candidates: list[str], why: str) -> list[Suggestion]:
    """The read-only query a refused statement holds, when it holds one the sandbox runs."""
    for query in candidates:
        try:
            check_read_only(query, suggest=False)
        except (ToolError, RecursionError):
            continue
        return [suggestion("sql", why, query=query)]
    return []


# Names a query could read a host path through as a value (the store's directory in a database's
# path, a setting, a view's SQL), where it can be transformed past the redaction of text
# (replace(path, '/', '|') showed the path whole), and what runs SQL given as a string (it would
# hide such a name in a literal). DuckDB's own lock-down cannot refuse these: they read no file.
# Named here are those outside DuckDB's catalog families; ``_host_metadata()`` adds, from DuckDB
# itself, every catalog view and function of those families (so a name a newer DuckDB adds is
# refused too): information_schema and pg_catalog (``views.view_definition``, ``pg_settings``,
# ``pg_get_viewdef``), ``sqlite_master``, ``duckdb_*`` and ``pragma_*``.
HOST_METADATA = frozenset(
    {
        "current_setting", "query", "query_table", "json_execute_serialized_sql", "json_serialize_plan",
        "which_secret", "getvariable", "information_schema", "pg_catalog",
        # DuckDB 2.0's external resources call a function named as text: destroy_external_resource(
        # 'query', '<SQL>') ran any SQL, its error carrying a host path out
        "create_external_resource", "destroy_external_resource", "register_external_resource",
        "register_external_resource_type", "deregister_external_resource",
    }
)  # fmt: skip
# The table functions (FROM f(...)) a query may call: an allow-list, as each DuckDB release adds
# some (2.0 added five that run a function named as text). Readers of files are here because the
# sandbox's allowed_paths bounds them to the query's own bodies; what lists files (glob) or shows
# a file's path (sniff_csv, parquet_metadata) is not.
TABLE_FUNCTIONS = frozenset(
    {
        "range", "generate_series", "unnest", "json_each", "json_tree", "repeat", "repeat_row", "summary",
        "read_json", "read_json_auto", "read_json_objects", "read_json_objects_auto", "read_ndjson",
        "read_ndjson_auto", "read_ndjson_objects", "read_csv", "read_csv_auto", "read_text", "read_blob",
        "read_parquet", "parquet_scan", "pragma_table_info", "duckdb_keywords", "duckdb_types",
        "duckdb_functions", "duckdb_columns", "duckdb_schemas", "icu_calendar_names",
    }
)  # fmt: skip
# catalog names of those families that show nothing of the host, kept for what they are good for
_HARMLESS_CATALOG = frozenset(
    {
        "pragma_table_info", "pg_typeof", "format_type", "format_pg_type", "pg_size_pretty", "current_database",
        "current_schema", "current_schemas", "current_query", "duckdb_keywords", "duckdb_types", "duckdb_functions",
        "duckdb_columns", "duckdb_schemas",
    }
)  # fmt: skip
_NAME = re.compile(r'"((?:[^"]|"")*)"|([A-Za-z_][A-Za-z0-9_$]*)')
# read_csv's options that write tables (the rows it rejects, and their scan), which a kept
# connection then carried into the next query (a table named scratch_notes hid the notes)
_WRITING_OPTIONS = frozenset({"store_rejects", "rejects_table", "rejects_scan", "rejects_limit"})


@dataclass(frozen=True)
class _HostMetadata:
    refused: frozenset[str]  # names refused wherever they are used as a name
    settings: frozenset[str]  # what SHOW must not be given
    # table macros that run SQL on a table named as text (histogram('duckdb_databases', path));
    # their names are also ordinary functions (the aggregate histogram(x)): refused as a table
    # function only, found in the query's parse tree
    text_tables: frozenset[str]


@functools.cache
def _host_metadata() -> _HostMetadata:
    """What a query must not name, read once from an empty DuckDB's own catalog."""
    import duckdb

    with duckdb.connect(":memory:") as conn:
        views = conn.execute(
            "SELECT view_name FROM duckdb_views() WHERE internal AND schema_name <> 'information_schema'"
        ).fetchall()
        functions = conn.execute(
            "SELECT DISTINCT function_name FROM duckdb_functions() WHERE schema_name = 'pg_catalog' "
            "OR starts_with(function_name, 'duckdb_') OR starts_with(function_name, 'pragma_') "
            "OR starts_with(function_name, 'pg_')"
        ).fetchall()
        settings = conn.execute("SELECT name FROM duckdb_settings()").fetchall()
        macros = conn.execute(
            "SELECT function_name, function_type, macro_definition FROM duckdb_functions() "
            "WHERE macro_definition IS NOT NULL"
        ).fetchall()
        plain_rows = conn.execute("SELECT function_name FROM duckdb_functions() WHERE macro_definition IS NULL")
        plain = {str(r[0]).lower() for r in plain_rows.fetchall()}
    names = (HOST_METADATA | {str(r[0]).lower() for r in views + functions}) - _HARMLESS_CATALOG
    # a macro that uses one of them is one of them: histogram_values('duckdb_databases', path)
    # runs query_table() on a table named as text, which no tokenizer sees
    uses: dict[str, set[str]] = {}
    tables: set[str] = set()
    for name, kind, body in macros:
        uses.setdefault(str(name).lower(), set()).update(re.findall(r"[a-z_][a-z0-9_]*", str(body).lower()))
        if kind == "table_macro":
            tables.add(str(name).lower())
    tainted: set[str] = set()
    grew = True
    while grew:
        # (through a name that is also a plain function, the aggregate histogram(x), nothing spreads)
        spreads = names | (tainted - plain)
        more = {n for n, words in uses.items() if n not in tainted and n not in names and words & spreads}
        tainted |= more
        grew = bool(more)
    return _HostMetadata(
        refused=frozenset((names | (tainted - plain)) - _HARMLESS_CATALOG),
        settings=frozenset(str(r[0]).lower() for r in settings),
        text_tables=frozenset(tainted & tables & plain),
    )


_PARSER_LOCK = threading.Lock()
_PARSER: list[Any] = []  # one in-memory connection that only parses (json_serialize_sql)


# the query nodes of a read-only statement: a CTE may also hold an INSERT, UPDATE, DELETE or COPY
_READ_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})


class _Parsed(NamedTuple):
    tables: tuple[str, ...]  # the table functions called (FROM f(...)), lower-cased
    every: tuple[str, ...]  # every function called
    writes: tuple[str, ...]  # query nodes that are not a read (INSERT_QUERY_NODE, COPY_QUERY_NODE)


@functools.lru_cache(maxsize=16)
def _functions_in(query: str) -> _Parsed | None:
    """What DuckDB's parse tree of ``query`` calls and holds; None when it cannot say (a statement
    other than a SELECT). Read with the iterative JSON reader: any depth."""
    import duckdb

    from ..store._jsontext import loads

    try:
        with _PARSER_LOCK:
            if not _PARSER:
                _PARSER.append(duckdb.connect(":memory:"))
            row = _PARSER[0].execute("SELECT json_serialize_sql(?)", [query]).fetchone()
        tree = loads(row[0]) if row and row[0] else None
    except (duckdb.Error, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(tree, dict) or tree.get("error"):
        return None
    tables: list[str] = []
    every: list[str] = []
    writes: list[str] = []
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            kind, function = node.get("type"), node.get("function")
            if kind == "TABLE_FUNCTION" and isinstance(function, dict):
                tables.append(str(function.get("function_name", "")).lower())
            elif isinstance(kind, str) and kind.endswith("_NODE") and kind not in _READ_NODES:
                writes.append(kind)
            if isinstance(node.get("function_name"), str):
                every.append(node["function_name"].lower())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return _Parsed(tuple(tables), tuple(every), tuple(writes))


def _table_functions_in(query: str) -> list[str] | None:
    """The table functions ``query`` calls (``FROM f(...)``); None when it cannot say."""
    found = _functions_in(query)
    return None if found is None else list(found.tables)


def _tokens(query: str) -> list[tuple[int, Any]]:
    """DuckDB's tokens of ``query`` as ``(character offset, kind)``: its tokenizer gives offsets in
    UTF-8 bytes, and read as character offsets, every token after a non-ASCII character was read at
    the wrong place (``SELECT 'é' AS p, * FROM duckdb_settings()`` hid the refused name, and a
    handle named after ``'é'`` was not found). Raises ``duckdb.Error`` as the tokenizer does."""
    import duckdb

    tokens = duckdb.tokenize(query)
    if query.isascii():
        return list(tokens)
    starts: dict[int, int] = {}
    at = 0
    for i, ch in enumerate(query):  # byte offset of each character's start -> its index
        starts[at] = i
        at += len(ch.encode("utf-8", "surrogatepass"))
    starts[at] = len(query)
    return [(starts.get(offset, len(query)), kind) for offset, kind in tokens]


@functools.lru_cache(maxsize=16)
def _names_in(query: str) -> tuple[str, ...]:
    """The names ``query`` uses (identifiers and keywords, quoted ones unquoted), lower-cased, in
    order; what is inside a string literal or a comment is not a name. DuckDB's own tokenizer,
    once per query (the host-metadata check, the handles named and SHOW TABLES all ask)."""
    import duckdb

    names = []
    try:
        tokens = _tokens(query)
    except duckdb.Error:  # (its parser says what is wrong, later)
        return tuple(w.lower() for w in _WORD.findall(query))
    for offset, kind in tokens:
        if kind in (duckdb.token_type.identifier, duckdb.token_type.keyword):
            found = _NAME.match(query, offset)
            if found is not None:
                quoted = found.group(1)
                names.append((quoted.replace('""', '"') if quoted is not None else found.group(2)).lower())
    return tuple(names)


def check_no_host_metadata(query: str) -> None:
    """Refuse a query that names host metadata (as a name, not inside a string or comment): a
    catalog view or function that can show a path or a setting, or ``SHOW`` of a setting."""
    meta = _host_metadata()
    refused, settings = meta.refused, meta.settings
    names = _names_in(query)
    writing = _WRITING_OPTIONS.intersection(names)
    if writing:
        raise ToolError(
            "sql_not_read_only",
            f"{SANDBOX_RULES} (read_csv's {', '.join(sorted(writing))} write the rows it rejects into tables: "
            "leave them out; ignore_errors=true skips such rows)",
            [_describe_suggestion()],
            name=sorted(writing)[0],
        )
    # (a second reading: the parse tree's own function names; of EXPLAIN's, its query's)
    parsed = _functions_in(query) or _functions_in(_EXPLAIN.sub("", query, count=1))
    if parsed is not None:
        names = names + parsed.every
        for name in parsed.tables:
            if name not in TABLE_FUNCTIONS:
                raise ToolError(
                    "sql_forbidden",
                    f"{SANDBOX_RULES} (the table function {clip_middle(name, 64)} is not available here; "
                    "range, generate_series, unnest, json_each and json_tree are)",
                    [_describe_suggestion()],
                    name=clip_middle(name, 64),
                )
    if meta.text_tables.intersection(names):
        called = _table_functions_in(query)
        # (of a statement the parse tree cannot show, any use of the name is refused)
        text_tables = meta.text_tables.intersection(called if called is not None else names)
        refused = refused | text_tables
    after_show = False
    for name in names:
        if name in refused or (after_show and name in settings):
            what = (
                "is a setting"
                if after_show and name in settings
                else "describes the machine's files and settings, or runs SQL given as text"
            )
            raise ToolError(
                "sql_forbidden",
                f"{SANDBOX_RULES} ({name} {what}; DESCRIBE a relation to see its columns)",
                [_describe_suggestion()],
                name=name,
            )
        after_show = name == "show"


def _describe_suggestion(name: str | None = None) -> dict[str, Any]:
    if name:
        return suggestion("sql", "list the columns of a relation", query=f"DESCRIBE {name}")
    return suggestion("scratch_list", "see the live handles")


def relation_names(ctx: ToolContext, entries: list[Entry] | None = None) -> list[dict[str, Any]]:
    """The relations a query of this caller can see, with their formats (``entries``: the live
    handles, when the caller has read them already)."""
    out = []
    for e in ctx.store.entries(ctx.pad.scope, "handle") if entries is None else entries:
        out.append({"name": e.key, "format": e.format, "source_tool": e.source_tool})
        for name, keys in e.meta.get("sql_arrays") or []:
            out.append(
                {"name": f"{e.key}.{name}", "format": "rows of $." + ".".join(keys), "source_tool": e.source_tool}
            )
        for doc in e.meta.get("embedded") or []:
            if doc.get("relation"):
                out.append(
                    {
                        "name": f"{e.key}.{doc['relation']}",
                        "format": f"the JSON inside {doc['path']}",
                        "source_tool": e.source_tool,
                    }
                )
                for name, keys in doc.get("arrays") or []:
                    out.append(
                        {
                            "name": f"{e.key}.{name}",
                            "format": f"rows of {doc['path']} → $." + ".".join(keys),
                            "source_tool": e.source_tool,
                        }
                    )
        shape = shape_of(e.meta)
        if shape is not None:
            out.append({"name": f"{e.key}.{ROWS_RELATION}", "format": shape.describe(), "source_tool": e.source_tool})
    out.append({"name": "scratch_notes", "format": "notes", "source_tool": None})
    return out


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
# an integer token DuckDB reads as DOUBLE: past UBIGINT (20+ digits) or below BIGINT (-19+ digits)
# (RE2: 100 MB in 0.15 s, where re takes 0.9 s)
_BIG_INT = re2.compile(rb"[:\[,]\s*(-[0-9]{19,}|[0-9]{20,})(?:[^0-9.eE]|$)", _RE2_OPTIONS)


@functools.lru_cache(maxsize=512)
def _rounded_ints(path: str, body_id: str) -> bool:
    """Whether the JSON at ``path`` (of body ``body_id``: a body never changes) holds an integer
    SQL reads rounded (as DOUBLE); digits in strings rarely look like a value after ``:``."""
    import mmap

    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            for match in _BIG_INT.finditer(mm):
                if not -(1 << 63) <= int(match.group(1)) < (1 << 64):
                    return True
    except (OSError, ValueError):  # (an empty file cannot be mapped)
        return False
    return False


def _rounded_note(relations: list[dict[str, Any]]) -> str:
    rounded = [
        rel["name"]
        for rel in relations
        if rel["format"] in ("json", "jsonl") and _rounded_ints(rel["raw_path"], str(rel["body_id"]))
    ]
    if not rounded:
        return ""
    return (
        f"\n(note: {', '.join(rounded[:3])} holds integers beyond 64 bits; SQL reads them as DOUBLE, rounded to "
        "about 16 digits; get_in shows them exactly)"
    )


def relation_spec(ctx: ToolContext, entry: Entry) -> dict[str, Any]:
    """What the worker needs to build ``entry``'s view: plain values, paths of our own files."""
    reader = ctx.reader(entry)
    arrays: list[Any] = []
    if entry.format == "json":
        known = entry.meta.get("sql_arrays")
        if isinstance(known, list):
            arrays = known  # found at spill time
        else:  # an entry spilled before relations per array existed
            from ._relations import array_relations

            try:
                arrays = array_relations(ctx.json_value(entry))
            except ToolError:
                arrays = []
    embedded = [
        {k: doc[k] for k in ("relation", "pointer", "rows", "arrays")}
        for doc in entry.meta.get("embedded") or []
        if doc.get("relation") and doc.get("pointer") is not None
    ]
    streamed = array_bytes(reader.directory, entry.body_id) if entry.format == "json" and entry.body_id else None
    return {
        "arrays": arrays,
        "streamed": streamed,
        "embedded": embedded,
        "name": entry.key,
        "format": entry.format,
        "body_id": entry.body_id,
        "raw_path": str(reader.raw_path),
        "body_path": str(reader.body_path),
        "body_bytes": reader.body_bytes,
        "longest_line": reader.longest_line,
        "csv": entry.meta.get("csv"),
    }


NOTES_RELATION = "scratch_notes"
# What a model's query naming scratch_notes may load into it: the bytes of the scope's note
# values, read, shipped to the worker and inserted for each such query. Measured end to end on
# the PostgreSQL store (a count over scratch_notes): 20,000 notes of 2 KB (40 MB) 1.0 s;
# 1,600 of 40 KB (63 MB) 1.8 s; 4,000 of 40 KB (158 MB) 3 s; 10,000 of 40 KB (396 MB) ran the
# worker out of memory after 8 s. The cap keeps an answer well within the default 10 s call (and
# a shorter tool_timeout_s); past it the query is refused before anything is shipped
# (sql_notes_too_large, 0.8 s at 75 MB, 2 s at 378 MB: the store's read of the notes), offering
# the notes' listing, and every query that does not name scratch_notes still runs.
SQL_NOTES_MAX_BYTES = 64 << 20


def names_notes(query: str) -> bool:
    """Whether ``query`` may read ``scratch_notes``, whose rows are then loaded (else it is empty).

    Its name among the query's names (DuckDB's tokens: quoted or not, any case, in a CTE or a
    subquery alike), or anywhere in its text, a string or a comment included
    (``pragma_table_info('scratch_notes')``; a word the tokenizer reads otherwise): when unsure
    the notes are loaded, which costs time only, where leaving them out would answer wrongly.
    >>> names_notes('WITH n AS (FROM "SCRATCH_NOTES") SELECT 1'), names_notes("SELECT 1")
    (True, False)
    """
    return NOTES_RELATION in _names_in(query) or NOTES_RELATION in query.lower()


def _notes(ctx: ToolContext, max_bytes: int | None = None) -> list[tuple[Any, ...]]:
    """The scope's notes as ``scratch_notes`` rows; more than ``max_bytes`` of values (None: no
    bound, a person's own query) is ``sql_notes_too_large``."""
    entries = ctx.store.entries(ctx.pad.scope, "note")
    held = sum(e.size_bytes or 0 for e in entries)
    if max_bytes is not None and held > max_bytes:
        raise ToolError(
            "sql_notes_too_large",
            f"scratch_notes would hold {len(entries):,} notes with {fmt_bytes(held)} of values, more than the "
            f"{fmt_bytes(max_bytes)} a query may load (they are loaded for each query that names scratch_notes): "
            "list their keys and sizes with scratch_list (kind 'note'), read one with scratch_read, delete "
            "those no longer needed with scratch_delete; a query that does not name scratch_notes runs as usual",
            [suggestion("scratch_list", "the notes' keys and sizes, a page at a time", kind="note")],
            notes=len(entries),
            notes_bytes=held,
            max_bytes=max_bytes,
        )
    return [(e.key, e.value_json, _dt.datetime.fromtimestamp(e.expires_at, tz=_dt.timezone.utc)) for e in entries]


def named_entries(ctx: ToolContext, query: str, entries: list[Entry] | None = None) -> list[Entry]:
    """The live handles (of ``entries``, when the caller has read them) that ``query`` names (as a
    name: a word in a string or a comment names nothing): views are built for those only."""
    words = set(_names_in(query))
    live = ctx.store.entries(ctx.pad.scope, "handle") if entries is None else entries
    return [e for e in live if e.key in words]


def _connect(ctx: ToolContext, entries: list[Entry], query: str | None = None) -> tuple[Any, list[str]]:
    """An in-process sandbox connection (the person's ``sql_df``: uncharged, unclipped rows), and
    the handles DuckDB could not read (left out of it). ``scratch_notes`` holds the notes when
    ``query`` names it (or no query is given), unbounded: a person's own notes are not rationed."""
    import duckdb

    conn = duckdb.connect(
        ":memory:",
        config={
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
            "memory_limit": "2GB",
            "threads": "2",
            "temp_directory": "",
        },
    )
    # a first query of a large JSON handle loads its tables here (a gigabyte: ~13 s): the pad's
    # progress listeners (a notebook's progress line) hear how it goes
    listeners = ctx.pad.listeners_here()
    failed, _fresh = build_views(
        conn,
        [relation_spec(ctx, e) for e in entries],
        _notes(ctx) if query is None or names_notes(query) else [],
        _PERSON_INFERRED,
        listeners=listeners,
    )
    return conn, failed


_PERSON_INFERRED: dict[str, Any] = {}


def _table(columns: list[str], rows: list[list[Any]]) -> str:
    head = "| " + " | ".join(c.replace("|", "\\|") for c in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_show(v) for v in row) + " |" for row in rows]
    return "\n".join([head, rule, *body])


def _show(value: Any) -> str:
    import json

    if value is None:
        text = "NULL"
    elif isinstance(value, str):  # (the text 'NULL' quoted: it is not SQL's NULL)
        text = json.dumps(value, ensure_ascii=False) if value.strip() == "NULL" else value
    else:
        text = json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n").replace("\r", "\\r").replace("|", "\\|")
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def _unique(names: list[str]) -> list[str]:
    """Column names made unique (``a``, ``a_2``), so that rows as dicts lose nothing."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        if name in seen:
            seen[name] += 1
            candidate = f"{name}_{seen[name]}"
            while candidate in seen:
                seen[name] += 1
                candidate = f"{name}_{seen[name]}"
            name = candidate
        seen.setdefault(name, 1)
        out.append(name)
    return out


def _error_kind(exc: Exception) -> str:
    import duckdb

    if isinstance(exc, duckdb.PermissionException):
        return "sql_forbidden"
    if isinstance(exc, duckdb.OutOfMemoryException):
        return "sql_out_of_memory"
    if isinstance(exc, duckdb.InterruptException):
        return "sql_timeout"
    return "sql_error"


def _roots(ctx: ToolContext) -> list[str]:
    """The store's host directories, which nothing a model reads names."""
    store = ctx.store
    return [str(p) for p in (getattr(store, "path", None), getattr(store, "bodies_path", None)) if p is not None]


def _redact(ctx: ToolContext, text: str) -> str:
    roots = _roots(ctx)
    return redact_paths(text, roots) if roots else text


def sql(ctx: ToolContext, query: str, max_rows: int = SQL_MAX_ROWS) -> Output:
    if not isinstance(query, str) or not query.strip():
        raise ToolError("invalid_argument", "'query' must be a non-empty SQL string", argument="query")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError("invalid_argument", f"'query' is longer than {MAX_QUERY_CHARS:,} characters", argument="query")
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= 10_000:
        raise ToolError("invalid_argument", "'max_rows' must be an integer in 1..10000", argument="max_rows")
    try:
        check_read_only(query)
    except ToolError as exc:
        if exc.code == "sql_error":  # DuckDB's parser refused it: say so with the relations
            named = [e.key for e in named_entries(ctx, query)]
            _raise_query_error(ctx, {"error": "sql_error", "message": exc.message}, named, query)
        raise
    check_no_host_metadata(query)
    entries = named_entries(ctx, query)
    # (the notes' rows only for a query that names scratch_notes: each note's value was read and
    # shipped for every query, and 20,000 notes of 2 KB made even SELECT 1 time out)
    notes = _notes(ctx, SQL_NOTES_MAX_BYTES) if names_notes(query) else []
    ctx.used.extend(entries)  # a handle a query reads lives on (sliding TTL)
    relations = [relation_spec(ctx, e) for e in entries]
    for rel in relations:  # (read_text of a removed file is no rows: a count of 0, not an error)
        if not os.path.exists(rel["raw_path"]) or not os.path.exists(rel["body_path"]):
            raise removed_while_read()
    job = {
        "relations": relations,
        "notes": notes,
        "scope": repr(ctx.pad.scope),  # (a connection serves one run and agent: never another's query)
        "query": query,
        "max_rows": max_rows,
        "redact": _roots(ctx),  # (in the cells before they are clipped)
    }
    budget_s = min(SQL_TIMEOUT_S, max(0.5, ctx.time_left()))
    # loading a large handle's tables may take longer than a call: the worker waits for it this
    # long, leaving the query the rest, then answers sql_loading while the load goes on
    job["build_wait_s"] = max(MIN_BUILD_WAIT_S, budget_s - QUERY_RESERVE_S)
    try:
        reply = run_job(job, budget_s)
    except SqlBusy:
        raise ToolError(
            "sql_busy",
            f"this query did not run: another query (this agent's or another's, sharing this process) held "
            f"the SQL worker for all of the {budget_s:.3g} s this call may take. Send the same query again",
            [suggestion("sql", "the same query, once the other one is done", query=query)],
        ) from None
    except SqlTimeout:
        raise ToolTimeout(budget_s, "the query was stopped (its worker process was ended)") from None
    except SqlWorkerError as exc:
        raise ToolError("sql_error", f"the query's worker process stopped: {exc}"[:300]) from None
    if _removed_meanwhile(ctx, entries, relations, reply):
        raise removed_while_read()
    if "error" in reply:
        _raise_query_error(ctx, reply, [e.key for e in entries], query)
    columns = _unique(reply["columns"])
    rows = reply["rows"]
    if columns == _DESCRIBE_COLUMNS and all(r[2] == "YES" and r[3:] == [None] * 3 for r in rows):
        columns, rows = columns[:2], [r[:2] for r in rows]  # (the other four say nothing of a view)
    ctx.result_rows, ctx.result_columns = len(rows), len(columns)
    if not columns:
        return Output("(statement ran; it returns no rows)", [], budget_footer("0 rows"))
    truncated = bool(reply["truncated"])
    text = _redact(ctx, _table(columns, rows)) + _rounded_note(relations)
    if not entries and _lists_tables(query):
        # (a relation exists for the handles a query names: SHOW TABLES alone shows scratch_notes)
        live = len(ctx.store.entries(ctx.pad.scope, "handle"))
        if live:
            text += (
                f"\n(and {live:,} handle{'s' if live != 1 else ''}: each is a relation, made when a query "
                "names it; scratch_list lists them)"
            )
    total = reply.get("total_rows")
    counted = isinstance(total, int) and total > len(rows)
    # (a cut result's total, counted in the worker's time left; "more than" when it was not)
    of = (f"{total:,}" if counted else f"more than {len(rows):,}") + " " if truncated else ""
    more = f" ({'' if counted else 'not counted; '}add LIMIT/OFFSET or aggregate)" if truncated else ""
    data = [dict(zip(columns, row, strict=True)) for row in rows]
    if text is not None and "<store>" in text:  # a host path was in a cell: redact the data alike
        data = [{k: _redact(ctx, v) if isinstance(v, str) else v for k, v in row.items()} for row in data]
    meta = {
        "columns": columns,
        "rows": len(rows),
        "truncated": truncated,
        "total_rows": total if counted else None if truncated else len(rows),
        "max_rows": max_rows,
        "inferred_now": reply.get("inferred_now", []),
    }
    noun = f"{'of ' + of if truncated else ''}row{'s' if len(rows) != 1 or truncated else ''}"
    short = f"{len(rows)} {noun}" + (": LIMIT/OFFSET" if truncated else "")
    return Output(text, data, budget_footer(f"{len(rows):,} {noun} × {len(columns)} columns{more}", short), meta)


_DESCRIBE_COLUMNS = ["column_name", "column_type", "null", "key", "default", "extra"]


# what a forbidden statement's error says first (the agent's tool and a person's sql_df alike);
# read_blob/read_text of a handle's own body file is allowed, hence "other"
SANDBOX_RULES = (
    "this is a sandbox: only the relations named by your handles (and scratch_notes) can be read; "
    "no other files, URLs, ATTACH, COPY, extensions or settings."
)


def _lists_tables(query: str) -> bool:
    """Whether ``query`` asks which tables there are (SHOW [ALL] TABLES, duckdb_columns())."""
    names = _names_in(query)
    return ("show" in names and "tables" in names) or "duckdb_columns" in names


def _removed_meanwhile(
    ctx: ToolContext, entries: list[Entry], relations: list[dict[str, Any]], reply: dict[str, Any]
) -> bool:
    """Whether a handle the query read was removed while it ran (deleted, swept or replaced, by
    this process or another): its files are gone, or, for a query that failed reading a file, its
    row no longer names its body (a delete takes the rows first, then the files one by one). The
    query then failed as "DuckDB cannot read this handle", or with the worker's own error, or (a
    text handle, read_text of no file) answered over no rows."""
    for rel in relations:
        if not os.path.exists(rel["raw_path"]) or not os.path.exists(rel["body_path"]):
            return True
    if "error" not in reply or not (reply.get("file_removed") or reply.get("unreadable")):
        return False
    suspects = set(reply.get("unreadable") or []) if not reply.get("file_removed") else None
    for entry in entries:
        if suspects is not None and entry.key not in suspects:
            continue
        try:
            now = ctx.store.get_entry(ctx.pad.scope, "handle", entry.key)
        except ScratchpadError:
            return False
        if now is None or now.body_id != entry.body_id:
            return True
    return False


def _raise_query_error(ctx: ToolContext, reply: dict[str, Any], named: list[str], query: str = "") -> None:
    kind = reply["error"]
    message = _redact(ctx, error_text(str(reply.get("message") or "")))[:400]
    live_entries = ctx.store.entries(ctx.pad.scope, "handle")
    live = [e.key for e in live_entries]
    unreadable = reply.get("unreadable") or []
    every, relations = relations_to_show(ctx, named, live_entries, exclude=unreadable)
    read = _relation_read(query, every)  # the relation the query reads (h.items, not h)
    # DESCRIBE what the query reads; of a query naming none, the one handle there is (of 400, the
    # first would be a guess the model pays for)
    about = read or (named[0] if named else (live[0] if len(live) == 1 else None))
    sugg = [_describe_suggestion(about)] if about else []
    if not (about and named):  # (a query over live handles: listing the handles tells nothing new)
        sugg.append(_describe_suggestion())
    if kind == "sql_error" and "configuration has been locked" in message:  # (enable_profiling(), say)
        kind = "sql_forbidden"
    bad_line = _CSV_LINE.search(message) if kind == "sql_error" else None
    if bad_line and read and read.endswith(".rows") and read[:-5] in live:
        # a line DuckDB cannot read as a row (a cut last line): every aggregate over h.rows failed,
        # and DESCRIBE (its columns are fine) did not help
        handle, n = read[:-5], int(bad_line.group(1))
        message += (
            f" (line {n:,} of {handle} is not a row of its CSV; {read} cannot be read past it, "
            f"{handle}(line_no, line) holds every line)"
        )
        sugg = [suggestion("slice", "the line it cannot read", handle=handle, start=max(1, n - 1), end=n + 1)]
    if kind == "sql_forbidden":
        message = f"{SANDBOX_RULES} ({message})"
    elif kind == "sql_out_of_memory":
        message = (
            "the query needed more memory than the sandbox allows; select fewer or shorter columns "
            "(left(col, 200)), aggregate, or add a LIMIT"
        )
        rows_of = _array_relation_instead(ctx, named, query)
        if rows_of:
            relation, path = rows_of
            message += f"; its rows are the relation {relation} (a row per record of {path}), no list to unnest"
            sugg.insert(0, suggestion("sql", f"the columns of {path}'s records", query=f"DESCRIBE {relation}"))
    elif kind == "sql_loading":
        loading = reply.get("loading") or []
        parts = [
            f"{x['name']} ({fmt_bytes(int(x['size_bytes']))}, "
            + (
                f"waiting {float(x['elapsed_s']):.0f} s behind another handle's load)"
                if x.get("queued")
                else f"started {float(x['elapsed_s']):.0f} s ago)"
            )
            for x in loading
        ]
        message = (
            f"{', '.join(parts)}: being loaded into DuckDB tables, once per handle, and not done within this "
            "call's time; the load goes on. Ask again in a few seconds: the same query then runs on the loaded "
            "tables. Meanwhile the JSON tools answer without SQL"
        )
        # (no SQL among them: it would wait for the same load)
        sugg = [*(s for x in loading[:2] for s in _instead_of_sql(ctx, str(x["name"]))), _describe_suggestion()]
    if unreadable:
        short = any(why.startswith("memory:") for why in (reply.get("unreadable_why") or {}).values())
        cause = "DuckDB ran out of its memory reading this handle" if short else "DuckDB cannot read this handle"
        message += f" ({', '.join(unreadable)}: {cause}; use the JSON and text tools on it)"
        sugg = [*(s for handle in unreadable[:2] for s in _instead_of_sql(ctx, handle)), *sugg]
    if kind == "sql_error":
        _raise_if_expired(ctx, query, message)
        types = reply.get("types")
        message, fixed = missing_relation(query, message, every, relations, listed=False, types=types, max_rows=20)
        if fixed is not None:
            sugg = [fixed, *(s for s in sugg if s["arguments"].get("query") != fixed["arguments"]["query"])]
            meant = _relation_read(fixed["arguments"]["query"], every)
            if meant and meant != read and "does not exist" not in message:  # (its columns, not h's)
                sugg = [fixed, _describe_suggestion(meant)]
        elif types:
            message = _redact(ctx, _struct_keys_note(query, message, types, read))
    if kind == "sql_error" and message.startswith("Binder Error: Referenced column"):
        raise ToolError(kind, message, sugg)  # (DuckDB names the columns there are; DESCRIBE lists them)
    if "does not exist" not in message and (named or kind != "sql_error"):
        # (out of memory, a timeout, a syntax error in a query over named handles: which
        # relations there are is not what went wrong, and 400 handles' names cost the model)
        raise ToolError(kind, message, sugg)
    total = {"relations_total": len(every) + 1} if len(every) + 1 > len(relations) else {}
    raise ToolError(kind, message, sugg, relations=relations, **total)


def _raise_if_expired(ctx: ToolContext, query: str, message: str) -> None:
    """DuckDB's "does not exist" of a handle that expired: said as the other tools say it."""
    found = _MISSING_TABLE.search(message)
    if found is None:
        return
    wrong = found.group(1).strip('"')
    qualified = re.search(rf"(?<![\w.])([A-Za-z_]\w*)\.{re.escape(wrong)}(?![\w])", query)
    for name in dict.fromkeys([qualified.group(1) if qualified else wrong, wrong.split(".")[0]]):
        try:
            gone = ctx.store.expired_entry(ctx.pad.scope, "handle", name)
        except (ValueError, ScratchpadError):  # (not a handle's form)
            continue
        if gone is not None and ctx.store.get_entry(ctx.pad.scope, "handle", name) is None:
            raise expired_error(ctx, gone, [suggestion("scratch_list", "see every live handle")], "query")


def relations_to_show(
    ctx: ToolContext, named: list[str], entries: list[Entry], exclude: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """``(every, shown)`` for an error: every relation of the live handles (h, h.items,
    h.content_0_text…) but ``exclude`` (handles DuckDB could not read), those of the handles the
    query named first; ``shown`` is the first 20 of them and scratch_notes."""
    left_out = {"scratch_notes", *(exclude or [])}
    every = [r["name"] for r in relation_names(ctx, entries) if r["name"] not in left_out]
    every.sort(key=lambda n: 0 if n.split(".")[0] in named else 1)
    return every, [*every[:20], "scratch_notes"]


def missing_relation(
    query: str,
    message: str,
    every: list[str],
    shown: list[str],
    listed: bool = True,
    types: dict[str, list[list[str]]] | None = None,
    **call: Any,
) -> tuple[str, dict[str, Any] | None]:
    """For DuckDB's "does not exist": the message with the relations there are (``listed``; the
    agent's error lists them in its own field), and the same query over the relation most likely
    meant (a suggestion with ``call``'s extra arguments), or None. ``types`` (the columns of the
    query's relations, ``{relation: [[column, type]]}``): DuckDB's "not found" of a column of a
    handle ``h`` whose records are a relation (``h.items``, ``h.rows``) is given the same query
    over the one that has that column. Any other message comes back as it is."""
    if "does not exist" not in message:
        return _in_records(query, message, every, types, call) if types is not None else (message, None)
    found = _MISSING_TABLE.search(message)
    named = {r.lower(): r for r in every}.get(found.group(1).strip('"').lower()) if found else None
    # pragma_table_info('h'): a relation is made where a query names it, not in a string
    if named is not None and re.search(rf"'{re.escape(named)}'", query, re.IGNORECASE):
        message += f" ({named} is a relation where a query names it outside a string; DESCRIBE {named} shows columns)"
        return message, suggestion("sql", f"the columns of {named}", query=f"DESCRIBE {named}", **call)
    if listed:
        message += f" (relations: {', '.join(shown)}{' …' if len(every) + 1 > len(shown) else ''})"
    fixed = _query_with_the_relation_meant(query, message, every)
    if fixed is None:
        return message, None
    return message, suggestion("sql", f"the same query over {fixed[1]}", query=fixed[0], **call)


def error_text(message: str) -> str:
    """DuckDB's error in one line: its first, and the columns or struct keys it offers for a
    misspelt one ("Candidate bindings: …", "Candidate Entries: …"); never the query echoed back
    with a caret under it."""
    lines = message[:MESSAGE_CHARS].split("\n", 40)  # (a query's error(repeat(' ', 1e6)) is a message too)
    candidates = next((line.strip() for line in lines[1:] if line.startswith(_CANDIDATES)), "")
    first = lines[0]
    at = first.find('Use "SET ')
    advice = _SET_ADVICE.match(first, at) if at >= 0 else None
    if advice is not None:
        fixed = " (the sandbox's settings are fixed: make the query simpler)"
        first = first[:at].rstrip() + fixed + first[advice.end() :]
    return f"{first} {candidates[:200]}".rstrip()


MESSAGE_CHARS = 4_000  # of an error message read at all (the worker sends no more either)
_CANDIDATES = ("Candidate bindings:", "Candidate Entries:")
# DuckDB's advice to change a setting ('Use "SET max_expression_depth TO x" to increase ...'):
# SET is refused here, so the advice is replaced rather than passed on. Matched where the advice
# starts (its leading r'\s*' made a message of n spaces O(n²): 97 s at 200,000, the GIL held)
_SET_ADVICE = re.compile(r'Use "SET [^"]*" to [^.]*\.?')


_MISSING_TABLE = re.compile(r"Table with name (\S+?) does not exist")
_CSV_LINE = re.compile(r"CSV Error on Line: (\d{1,15})")


_MISSING_KEY = re.compile(r'Binder Error: Could not find key "((?:[^"]|"")*)" in struct')
_SEGMENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_]\w*)(?:\[[^\]]*\])*'
KEYS_SHOWN = 30


def _struct_keys_note(query: str, message: str, types: dict[str, list[list[str]]], read: str | None) -> str:
    """For DuckDB's 'Could not find key "nam" in struct': the keys of that struct, closest first, in
    place of DuckDB's few candidates; found by reading the query's ``a.b[1].nam`` against the
    column types of the relations (the one the query reads first). The message as it is when the
    struct cannot be told (an unnest's alias, say)."""
    found = _MISSING_KEY.match(message)
    if found is None:
        return message
    key = found.group(1).replace('""', '"')
    columns = {r: {str(c).lower(): str(t) for c, t in types[r]} for r in sorted(types, key=lambda r: r != read)}
    for path in _paths_to_key(query, key):
        for start, of in itertools.product(range(len(path)), columns.values()):  # (i.metadata.nam: i first)
            keys = _keys_at(of, path[start:])
            if keys is not None and key.lower() not in {k.lower() for k in keys}:
                close = difflib.get_close_matches(key, keys, n=3, cutoff=0.5)
                ordered = list(dict.fromkeys([*close, *keys]))
                shown = ", ".join(clip_middle(k, 40) for k in ordered[:KEYS_SHOWN])
                more = f" … {len(ordered) - KEYS_SHOWN:,} more" if len(ordered) > KEYS_SHOWN else ""
                what = clip_middle(".".join(path[start:]), 80)
                return f"{message[: found.end()]} (keys of {what}{', closest first' if close else ''}: {shown}{more})"
    return message


def _paths_to_key(query: str, key: str) -> list[list[str]]:
    """What comes before ``.key`` where the query uses it (``['status', 'containerStatuses[1]']``),
    read back a bounded way (a regex over the whole query could take quadratic time)."""
    quoted = '"' + key.replace('"', '""') + '"'
    uses = re.finditer(rf"\.(?:{re.escape(quoted)}|{re.escape(key)}(?![\w\"]))", query)
    out = []
    for use in itertools.islice(uses, 4):
        chain = re.search(rf"{_SEGMENT}(?:\.{_SEGMENT})*\Z", query[max(0, use.start() - 400) : use.start()])
        if chain:
            out.append(re.findall(_SEGMENT, chain.group(0)))
    return out


def _keys_at(columns: dict[str, str], path: list[str]) -> list[str] | None:
    """The keys of the struct at ``path`` (``['metadata']``, ``['status', 'containerStatuses[1]']``)
    of a relation whose columns have these DuckDB types; None when it is not a struct there."""
    name, _, index = path[0].partition("[")
    node = _parse_type(columns.get(_unquote(name).lower(), ""))
    for step, segment in enumerate(path):
        if step:
            name, _, index = segment.partition("[")
            if not isinstance(node, dict):
                return None
            node = {k.lower(): v for k, v in node.items()}.get(_unquote(name).lower())
        for subscript in re.findall(r"\[([^\]]*)\]", "[" + index if index else ""):
            if not (isinstance(node, tuple) and ":" not in subscript):  # (a slice is still a list)
                return None
            node = node[0]
    return list(node) if isinstance(node, dict) else None


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name


_TYPE_KEY = re.compile(r'\s*("(?:[^"]|"")*"|[^\s]+)\s+')
_SCALAR_TYPE = re.compile(r'(?:"(?:[^"]|"")*"|[^,()\["])+')


def _parse_type(text: str, depth: int = 0) -> Any:
    """A DuckDB type's shape: a dict of a STRUCT's keys, ``(element,)`` of a list, None otherwise."""
    node, _ = _type_at(text, 0, depth)
    return node


def _type_at(text: str, at: int, depth: int) -> tuple[Any, int]:
    node: Any = None
    if text.startswith("STRUCT(", at) and depth < 64:
        at += len("STRUCT(")
        keys: dict[str, Any] = {}
        while at < len(text) and text[at] != ")":
            name = _TYPE_KEY.match(text, at)
            if name is None:
                return None, len(text)
            keys[_unquote(name.group(1))], at = _type_at(text, name.end(), depth + 1)
            at += 2 if text.startswith(", ", at) else 0
        node, at = keys, at + 1
    else:
        scalar = _SCALAR_TYPE.match(text, at)
        at = scalar.end() if scalar else at
        if text.startswith("(", at):  # (MAP(…), DECIMAL(…), UNION(…): nothing to open)
            depth_here, quote = 0, False
            while at < len(text):
                ch = text[at]
                quote = quote != (ch == '"')
                depth_here += 0 if quote else (ch == "(") - (ch == ")")
                at += 1
                if depth_here == 0:
                    break
    while text.startswith("[", at):
        end = text.find("]", at)
        node, at = (node,), (len(text) if end < 0 else end + 1)
    return node, at


def _relation_read(query: str, relations: list[str]) -> str | None:
    """The longest relation name the query text holds as a word (``h.items`` before ``h``)."""
    lowered = query.lower()
    for name in sorted(relations, key=len, reverse=True):
        if re.search(rf"(?<![\w.]){re.escape(name.lower())}(?![\w])", lowered):
            return name
    return None


def _query_with_the_relation_meant(query: str, message: str, relations: list[str]) -> tuple[str, str] | None:
    """``(query, relation)``: the query with the relation DuckDB did not find replaced by the one it
    most likely meant ("h.items" quoted as one name, h_items, h.item), or None."""
    found = _MISSING_TABLE.search(message)
    if found is None:
        return None
    wrong = found.group(1).strip('"')
    qualified = re.search(rf"(?<!\w)([A-Za-z_]\w*)\.{re.escape(wrong)}(?![\w])", query)  # (one try per word)
    if "." not in wrong and qualified:  # h.item: DuckDB names the table part only
        wrong = qualified.group(0)
    key = wrong.lower().replace('"', "").replace("_", ".")
    keys = {r.lower().replace("_", "."): r for r in relations}
    close = difflib.get_close_matches(key, list(keys), n=1, cutoff=0.8)
    if not close and "." not in wrong:  # items, bare: the one relation whose last part it is
        last = [r for r in relations if r.lower().rsplit(".", 1)[-1] == wrong.lower() and "." in r]
        close = [last[0].lower().replace("_", ".")] if len(last) == 1 else []
    if not close:
        return None
    meant = keys[close[0]]
    fixed = _swap_relation(query, wrong, meant)
    return None if fixed is None else (fixed, meant)


def _swap_relation(query: str, wrong: str, meant: str) -> str | None:
    """``query`` with the relation ``wrong`` (as a word, or quoted as one name) read as ``meant``;
    None unless it is there exactly once, as written."""
    pattern = re.compile(rf'"{re.escape(wrong)}"|(?<![\w.]){re.escape(wrong)}(?![\w])', re.IGNORECASE)
    if len(pattern.findall(query)) != 1:
        return None
    return pattern.sub(lambda _: meant, query)


_NOT_FOUND = re.compile(r'Binder Error: Referenced (?:table|column) "((?:[^"]|"")+)" not found')


def _in_records(
    query: str, message: str, every: list[str], types: dict[str, list[list[str]]], call: dict[str, Any]
) -> tuple[str, dict[str, Any] | None]:
    """DuckDB's "Referenced table/column "status" not found" of a query over a handle ``h`` whose
    records are a relation (a PodList's ``h.items``, a CSV's ``h.rows``): the message says which
    has the column, and the suggestion is the same query over it."""
    found = _NOT_FOUND.match(message) or _MISSING_KEY.match(message)
    read = _relation_read(query, every)
    if found is None or read is None or "." in read:
        return message, None
    name = found.group(1).replace('""', '"')
    under = [r for r in every if r.startswith(read + ".")]
    if found.re is _MISSING_KEY:  # (metadata.nam over h: h.items's metadata has the key)
        paths = _paths_to_key(query, name)
        having = [r for r in under if any(_has_key(types.get(r, []), path, name) for path in paths)]
        said = ".".join(paths[0] + [name]) if paths else name
    else:
        having = [r for r in under if name.lower() in {str(c[0]).lower() for c in types.get(r, [])}]
        said = name
        if not having and not types and len(under) == 1:  # (the worker could not say: the one there is)
            having = under
    fixed = _swap_relation(query, read, having[0]) if having else None
    if fixed is None:
        return message, None
    if found.re is _MISSING_KEY:  # (DuckDB's candidates are keys of h's struct, not of the one meant)
        message = f"{message[: found.end()]} ({said} is in {having[0]})"
    else:
        message += f" ({said} is a column of {having[0]})"
    return message, suggestion("sql", f"the same query over {having[0]}", query=fixed, **call)


def _has_key(columns: list[list[str]], path: list[str], key: str) -> bool:
    """Whether the struct at ``path`` of a relation with these columns has ``key``."""
    types = {str(c).lower(): str(t) for c, t in columns}
    keys = _keys_at(types, path) if path else None
    return keys is not None and key.lower() in {k.lower() for k in keys}


def _arrays_of(ctx: ToolContext, handle: str) -> tuple[Entry | None, list[Any]]:
    """A live handle's entry and its arrays of records (``[name, keys]``, found at spill time)."""
    entry = ctx.store.get_entry(ctx.pad.scope, "handle", handle)
    return entry, (entry.meta.get("sql_arrays") or []) if entry is not None and entry.format == "json" else []


def _array_relation_instead(ctx: ToolContext, named: list[str], query: str) -> tuple[str, str] | None:
    """``(h.items, "$.items")`` when the query reads a document ``h`` whose array of records has a
    relation the query does not use (unnest(items) holds the whole list in memory; h.items does not)."""
    lowered = query.lower()
    for handle in named:
        for name, keys in _arrays_of(ctx, handle)[1]:
            relation = f"{handle}.{name}"
            if relation.lower() not in lowered:
                return relation, "$." + ".".join(str(k) for k in keys)
    return None


def _instead_of_sql(ctx: ToolContext, handle: str) -> list[dict[str, Any]]:
    """The tools that answer what SQL would have from a handle DuckDB cannot read (a single JSON
    document too large for its reader, say): its records' keys and values, or its structure."""
    entry, arrays = _arrays_of(ctx, handle)
    if entry is None:
        return []
    if entry.format in ("json", "jsonl") and (arrays or entry.format == "jsonl"):
        path = "$." + ".".join(arrays[0][1]) if arrays else "$"
        return [suggestion("item_schema", "the keys and values of its records, without SQL", handle=handle, path=path)]
    return [suggestion("schema", "its structure, without SQL", handle=handle)]


def without_trailing_comment(query: str) -> str:
    """The query without what ends it: comments and ``;`` (wrapped as ``(query) AS q`` a trailing
    ``-- comment`` would swallow the rest of the line)."""
    import duckdb

    try:
        tokens = _tokens(query)
    except duckdb.Error:
        return query.rstrip().rstrip(";")
    end = len(query)
    for offset, kind in reversed(tokens):
        if kind == duckdb.token_type.comment or (kind == duckdb.token_type.operator and query[offset] == ";"):
            end = offset
        else:
            break
    return query[:end].rstrip()


def sql_suggestions(
    args: dict[str, Any], estimated: int, limit: int, rows: int | None, columns: int | None = None
) -> list[dict[str, Any]]:
    query = without_trailing_comment(str(args.get("query") or ""))
    fit = max(1, int((rows or args.get("max_rows") or SQL_MAX_ROWS) * limit * 0.8 / max(estimated, 1)))
    out = [
        # (past the default max_rows, the call says so: LIMIT 1630 alone showed 200 rows)
        suggestion("sql", f"about {fit} rows fit", query=f"SELECT * FROM ({query}) AS q LIMIT {fit}",
                   **({"max_rows": fit} if fit > SQL_MAX_ROWS else {})),
        suggestion("sql", "aggregate instead of listing", query=f"SELECT count(*) FROM ({query}) AS q"),
    ]
    if (columns or 0) > 12 and estimated / max(rows or 1, 1) > limit * 0.2:  # rows too wide: pick columns
        out.insert(0, suggestion("sql", f"its {columns:,} columns, to pick a few", query=f"DESCRIBE {query}"))
    return out
