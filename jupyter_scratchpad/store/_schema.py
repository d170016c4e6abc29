"""The catalog's tables (DuckDB). Every query of the store names ``run_id`` and ``agent_id``."""

LAYOUT_VERSION = 1

DDL = """
CREATE TABLE IF NOT EXISTS scratch_meta (
    name  VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS agents (
    agent_id   VARCHAR PRIMARY KEY,
    created_at DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id     VARCHAR PRIMARY KEY,
    agent_id   VARCHAR NOT NULL,   -- the one agent that owns the run
    created_at DOUBLE NOT NULL
);
CREATE TABLE IF NOT EXISTS scratch_entries (
    run_id        VARCHAR NOT NULL,
    agent_id      VARCHAR NOT NULL,
    kind          VARCHAR NOT NULL CHECK (kind IN ('handle', 'note')),
    key           VARCHAR NOT NULL,    -- the handle, or the note's key
    body_id       VARCHAR,             -- directory under bodies/ (handles only)
    value_json    VARCHAR,             -- the note's value as JSON (notes only)
    format        VARCHAR,
    size_bytes    BIGINT NOT NULL,     -- raw bytes of the output / of the note's JSON
    body_bytes    BIGINT,
    line_count    BIGINT,
    tokens        BIGINT,
    preview       VARCHAR,
    source_tool   VARCHAR,
    server        VARCHAR,
    content_hash  VARCHAR,
    meta_json     VARCHAR,
    created_at    DOUBLE NOT NULL,
    expires_at    DOUBLE NOT NULL,
    PRIMARY KEY (run_id, agent_id, kind, key)
);
"""
